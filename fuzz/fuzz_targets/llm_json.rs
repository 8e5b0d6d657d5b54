//! Tolerant JSON extraction, stream-chunk assembly, think-block splitting
//! and written tool calls on arbitrary model text: never a panic; whatever
//! is extracted is valid JSON, a written call names an offered tool with
//! JSON-object arguments, and the chunking of a stream never changes the
//! answer it assembles to.
#![no_main]

use atelier_agent::llm::{
    extract_json, parse_completion, split_text_calls, split_think, SseDecoder, StreamAssembler, TextCallFilter,
};
use libfuzzer_sys::fuzz_target;

fn assemble(bytes: &[u8], split: usize) -> Option<(String, Option<String>, Vec<(String, String)>)> {
    let mut filter = TextCallFilter::new(vec!["web_search".to_owned()]);
    let mut assembler = StreamAssembler::new();
    let mut decoder = SseDecoder::new();
    let mut sink = |d| filter.delta(d, &mut |_| {});
    for part in [&bytes[..split], &bytes[split..]] {
        for event in decoder.feed(part).ok()? {
            assembler.push_event(&event, &mut sink).ok()?;
        }
    }
    if let Some(event) = decoder.finish() {
        assembler.push_event(&event, &mut sink).ok()?;
    }
    let outcome = assembler.finish_with(&mut sink).ok()?;
    let outcome = filter.finish(outcome, &mut |_| {});
    let calls = outcome.message.tool_calls().iter().map(|c| (c.function.name.clone(), c.function.arguments.clone()));
    Some((outcome.message.text().to_owned(), outcome.reasoning, calls.collect()))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Some(value) = extract_json(text) {
        assert!(serde_json::to_string(&value).is_ok());
    }
    let (_, answer) = split_think(text);
    assert!(answer.len() <= text.len());
    let tools = vec!["web_search".to_owned()];
    if let Some((_, calls)) = split_text_calls(text, &tools) {
        for call in calls {
            assert_eq!(call.function.name, "web_search");
            assert!(serde_json::from_str::<serde_json::Value>(&call.function.arguments).unwrap().is_object());
        }
    }
    let mut assembler = StreamAssembler::new();
    for line in text.lines() {
        if assembler.push(line, &mut |_| {}).is_err() {
            break;
        }
    }
    let _ = assembler.finish();
    let _ = parse_completion(text);
    // The same bytes in two pieces assemble to the same answer (the ids of
    // calls made here are random, so only names and arguments compare).
    if !data.is_empty() {
        let split = data[0] as usize % data.len();
        if text.is_char_boundary(split) {
            assert_eq!(assemble(data, split), assemble(data, data.len()));
        }
    }
});
