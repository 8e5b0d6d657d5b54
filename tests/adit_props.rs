//! Property tests of Adit: exactness on unique verbatim matches, and no panic
//! on arbitrary input.
#![cfg(not(target_arch = "wasm32"))]

use atelier_agent::adit::{
    apply_edits, apply_search_replace, parse_edits_json, parse_search_replace, Edit, MatchLevel,
};
use proptest::prelude::*;

/// Documents over a small alphabet so that repeats and near-misses are common.
fn doc_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![Just("a"), Just("b"), Just(" "), Just("\n"), Just("\t"), Just("あ"), Just("\u{3000}"), Just("🦀"),],
        0..60,
    )
    .prop_map(|parts| parts.concat())
}

fn overlapping_count(hay: &str, needle: &str) -> usize {
    (0..hay.len()).filter(|&i| hay.is_char_boundary(i) && hay[i..].starts_with(needle)).count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// An edit whose search occurs exactly once verbatim is `replacen`.
    #[test]
    fn unique_verbatim_search_is_replacen(
        doc in doc_text(),
        start in 0usize..80,
        len in 1usize..12,
        replace in "[ab \tあ\n]{0,8}",
    ) {
        let chars: Vec<(usize, char)> = doc.char_indices().collect();
        prop_assume!(!chars.is_empty());
        let from = chars[start % chars.len()].0;
        let to = chars.get((start % chars.len()) + len).map_or(doc.len(), |c| c.0);
        let search = &doc[from..to];
        prop_assume!(overlapping_count(&doc, search) == 1);
        // A search ending in a newline must also start a line to be exact.
        prop_assume!(!search.ends_with('\n') || from == 0 || doc.as_bytes()[from - 1] == b'\n');
        let applied = apply_edits(&doc, &[Edit::new(search, replace.clone())]).unwrap();
        prop_assert_eq!(applied.text, doc.replacen(search, &replace, 1));
        prop_assert_eq!(applied.reports[0].level, MatchLevel::Exact);
    }

    /// Arbitrary documents, edits and replies never panic, and a failure
    /// names an edit that exists.
    #[test]
    fn arbitrary_input_never_panics(
        doc in any::<String>(),
        edits in proptest::collection::vec((any::<String>(), any::<String>()), 0..4),
        reply in any::<String>(),
    ) {
        let edits: Vec<Edit> = edits.into_iter().map(|(s, r)| Edit::new(s, r)).collect();
        if let Err(e) = apply_edits(&doc, &edits) {
            prop_assert!(e.index() < edits.len());
        }
        let _ = apply_search_replace(&doc, &reply);
        let _ = parse_edits_json(&reply);
    }

    /// Edits drawn from the document's own alphabet (many near-misses) never
    /// panic and, when they apply, keep the text valid and report every edit.
    #[test]
    fn near_miss_edits_never_panic(
        doc in doc_text(),
        edits in proptest::collection::vec((doc_text(), doc_text()), 1..4),
    ) {
        let edits: Vec<Edit> = edits.into_iter().map(|(s, r)| Edit::new(s, r)).collect();
        match apply_edits(&doc, &edits) {
            Ok(applied) => prop_assert_eq!(applied.reports.len(), edits.len()),
            Err(e) => prop_assert!(e.index() < edits.len()),
        }
    }

    /// A block written the way an LLM writes it parses back to the same edit.
    #[test]
    fn rendered_blocks_parse_back(
        search in "([ab\tあ]{0,6}\n){0,4}",
        replace in "([ab\tあ]{0,6}\n){0,4}",
        prose in "[a-z .]{0,20}",
    ) {
        let reply = format!("{prose}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n{prose}\n");
        let edits = parse_search_replace(&reply).unwrap();
        prop_assert_eq!(edits, vec![Edit::new(search, replace)]);
    }
}
