//! The SSE decoder on arbitrary bytes split at an arbitrary point: it never
//! panics, and chunking never changes the events.
#![no_main]

use atelier_agent::llm::SseDecoder;
use libfuzzer_sys::fuzz_target;

mod common;

fn decode(parts: &[&[u8]]) -> Vec<(String, String)> {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for part in parts {
        events.extend(decoder.feed(part).expect("small inputs fit"));
    }
    events.extend(decoder.finish());
    events.into_iter().map(|e| (e.event, e.data)).collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((body, split)) = common::body_and_split(data) else {
        return;
    };
    let whole = decode(&[body]);
    let halves = decode(&[&body[..split], &body[split..]]);
    // A split between the two bytes of a UTF-8 sequence is reassembled, so
    // the events are identical.
    assert_eq!(whole, halves);
});
