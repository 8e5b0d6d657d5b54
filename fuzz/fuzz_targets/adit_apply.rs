//! Arbitrary document and edits: applying never panics, failures name an
//! existing edit, and a successful edit reports one level per edit.
#![no_main]

use atelier_agent::adit::{apply_edits, apply_search_replace, Edit};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Layout: doc \0 search \0 replace \0 search \0 replace ...
    let mut parts = text.split('\0');
    let doc = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    let edits: Vec<Edit> = rest.chunks(2).map(|c| Edit::new(c[0], *c.get(1).unwrap_or(&""))).collect();
    match apply_edits(doc, &edits) {
        Ok(applied) => assert_eq!(applied.reports.len(), edits.len()),
        Err(e) => assert!(e.index() < edits.len()),
    }
    if let Some(reply) = rest.first() {
        let _ = apply_search_replace(doc, reply);
    }
});
