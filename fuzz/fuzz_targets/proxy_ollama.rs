//! The proxy's translation of Ollama's native answers (NDJSON lines, or one
//! JSON object) into OpenAI's, on arbitrary bytes split at an arbitrary
//! point: never a panic, the chunking never changes the output, and a
//! streamed translation always ends with `data: [DONE]`.
#![no_main]

use atelier_proxy::ollama::Translator;
use libfuzzer_sys::fuzz_target;

mod common;

fn translate(stream: bool, parts: &[&[u8]]) -> Vec<u8> {
    let request = serde_json::json!({ "stream": stream, "stream_options": { "include_usage": true } });
    let mut translator = Translator::new(&request, "m");
    let mut out = Vec::new();
    for part in parts {
        out.extend(translator.feed(part));
    }
    out.extend(translator.finish());
    out
}

/// The output with each chunk's id and timestamp (different per
/// translator, and per second) taken out.
fn comparable(out: Vec<u8>) -> String {
    let text = String::from_utf8(out).expect("the translation is UTF-8");
    let unstamped = |json: &str| match serde_json::from_str::<serde_json::Value>(json) {
        Ok(mut value) => {
            if let Some(fields) = value.as_object_mut() {
                fields.remove("id");
                fields.remove("created");
            }
            value.to_string()
        }
        Err(_) => json.to_owned(),
    };
    text.split("\n\n")
        .map(|event| match event.strip_prefix("data: ") {
            Some(data) => format!("data: {}", unstamped(data)),
            None => unstamped(event),
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fuzz_target!(|data: &[u8]| {
    let Some((body, split)) = common::body_and_split(data) else {
        return;
    };
    for stream in [true, false] {
        let whole = translate(stream, &[body]);
        let halves = translate(stream, &[&body[..split], &body[split..]]);
        if stream {
            assert!(whole.ends_with(b"data: [DONE]\n\n"));
        }
        // Made call ids are random: compare only when the answer made none.
        if !String::from_utf8_lossy(&whole).contains("tool_calls") {
            assert_eq!(comparable(whole), comparable(halves));
        }
    }
});
