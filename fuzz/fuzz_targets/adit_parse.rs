//! Arbitrary LLM output: the block parser and the JSON edit parser never
//! panic, and the sections they return are whole lines.
#![no_main]

use atelier_agent::adit::{parse_edits_json, parse_search_replace};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(edits) = parse_search_replace(text) {
        for edit in &edits {
            // Sections hold whole lines: each is empty or ends with a newline.
            assert!(edit.search.is_empty() || edit.search.ends_with('\n'));
            assert!(edit.replace.is_empty() || edit.replace.ends_with('\n'));
        }
    }
    let _ = parse_edits_json(text);
});
