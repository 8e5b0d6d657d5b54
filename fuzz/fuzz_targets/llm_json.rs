//! Tolerant JSON extraction and stream-chunk assembly on arbitrary model
//! text: never a panic, and whatever is extracted is valid JSON.
#![no_main]

use atelier_agent::llm::{extract_json, parse_completion, StreamAssembler};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Some(value) = extract_json(text) {
        assert!(serde_json::to_string(&value).is_ok());
    }
    let mut assembler = StreamAssembler::new();
    for line in text.lines() {
        if assembler.push(line, &mut |_| {}).is_err() {
            break;
        }
    }
    let _ = assembler.finish();
    let _ = parse_completion(text);
});
