//! The index on its own: a small corpus with planted answers and traps, a
//! table of queries with what they must and must not find (add rows, not
//! functions).

use super::*;

/// (id, kind, project, session, title, body)
const CORPUS: &[(&str, Kind, &str, &str, &str, &str)] = &[
    ("tokyo", Kind::Manuscript, "p1", "", "第一章", "\u{3000}祖母は東京都に住んでいる。\n「また来てね」\n"),
    ("kyoto", Kind::Manuscript, "p1", "", "第二章", "\u{3000}秋、二人は京都へ行った。紅葉が見事だった。\n"),
    ("tower", Kind::Manuscript, "p1", "", "第三章", "\u{3000}東京タワーの灯りが、雨に滲んでいた。\n"),
    ("hourglass", Kind::Manuscript, "p2", "", "第一章", "\u{3000}机の上の砂時計が、最後の一粒を落とした。\n"),
    ("fireworks", Kind::Manuscript, "p2", "", "第二章", "\u{3000}花火大会の夜、二人は橋の上にいた。\n"),
    (
        "fireworks-apart",
        Kind::Manuscript,
        "p2",
        "",
        "第三章",
        "\u{3000}夜になった。大会の準備で、花火師は忙しかった。\n",
    ),
    ("halfwidth", Kind::Manuscript, "p2", "", "第四章", "ﾊﾟｿｺﾝの画面に、ＡＢＣ１２３と表示された。\n"),
    (
        "keeper",
        Kind::Manuscript,
        "p3",
        "",
        "Chapter 1",
        "Everyone said the lighthouse keeper had not slept in a week.\n",
    ),
    ("keepers", Kind::Manuscript, "p3", "", "Chapter 2", "The keepers of the old lighthouses were sailing home.\n"),
    (
        "apart",
        Kind::Manuscript,
        "p3",
        "",
        "Chapter 3",
        "The keeper stood by the door. Far away, a lighthouse burned.\n",
    ),
    ("compass", Kind::Plot, "p3", "", "The brass compass", "He sets the compass on the chart table.\n"),
    ("note", Kind::Artifact, "", "s1", "Search: 京都 紅葉", "京都の紅葉の見頃は十一月下旬。\n"),
    ("memory", Kind::Memory, "", "", "2026-01-20 · preference", "The person prefers first-person narration.\n"),
    ("talk", Kind::Transcript, "", "s1", "", "雷鳴が聞こえた気がした、と彼女は書いた。\n"),
];

fn index() -> Index {
    let mut index = Index::new();
    for (id, kind, project, session, title, body) in CORPUS {
        let doc = Doc {
            key: format!("{}/{id}", kind.scope_name()),
            kind: *kind,
            id: (*id).into(),
            title: (*title).into(),
            body: (*body).into(),
            project: (!project.is_empty()).then(|| (*project).into()),
            session: (!session.is_empty()).then(|| (*session).into()),
            hash: text_hash(title, body),
        };
        index.add(doc, &text::segment_now(&[title, body]));
    }
    index
}

fn ids(index: &Index, query: &str, scope: &Scope) -> Vec<String> {
    run(index, &Query::parse(query).unwrap(), scope, 10, None).into_iter().map(|h| h.id).collect()
}

#[test]
fn planted_answers_are_found_first_and_traps_are_not() {
    // (query, scope, found first in this order (a prefix of the results), never found)
    let all = Scope::all();
    let p1 = Scope::of(&[], Some("p1".into()), None).unwrap();
    let manuscripts = Scope::of(&["manuscripts".into()], None, None).unwrap();
    let cases: &[(&str, &Scope, &[&str], &[&str])] = &[
        ("京都", &all, &["note", "kyoto"], &["tokyo", "tower"]),
        ("京都", &manuscripts, &["kyoto"], &["note", "tokyo"]),
        // 東京タワー is one word: a search for 東京 does not reach into it.
        ("東京", &all, &["tokyo"], &["kyoto", "tower"]),
        ("東京タワー", &all, &["tower"], &["tokyo"]),
        ("東京都", &all, &["tokyo"], &["kyoto", "tower"]),
        ("砂時計", &all, &["hourglass"], &[]),
        ("花火大会の夜", &all, &["fireworks", "fireworks-apart"], &[]),
        ("花火大会", &all, &["fireworks", "fireworks-apart"], &[]),
        ("パソコン", &all, &["halfwidth"], &[]),
        ("ﾊﾟｿｺﾝ", &all, &["halfwidth"], &[]),
        ("abc123", &all, &["halfwidth"], &[]),
        ("ＡＢＣ１２３", &all, &["halfwidth"], &[]),
        ("lighthouse keeper", &all, &["keeper", "keepers", "apart"], &[]),
        ("Lighthouses", &all, &["keepers"], &[]),
        ("sail", &all, &["keepers"], &["keeper"]),
        ("compass", &all, &["compass"], &[]),
        ("compass", &manuscripts, &[], &["compass"]),
        ("京都", &p1, &["kyoto"], &["note"]),
        ("雷鳴", &all, &["talk"], &[]),
        ("narration", &all, &["memory"], &[]),
        ("preference", &all, &["memory"], &[]),
        ("宇宙飛行士", &all, &[], &["tokyo", "kyoto"]),
        ("zeppelin", &all, &[], &[]),
        ("。、「」", &all, &[], &["tokyo"]),
    ];
    let index = index();
    for (query, scope, first, never) in cases {
        let found = ids(&index, query, scope);
        assert!(
            found.len() >= first.len() && found[..first.len()] == **first,
            "{query}: {found:?}, wanted {first:?} first"
        );
        for id in *never {
            assert!(!found.iter().any(|f| f == id), "{query}: {id} must not be found ({found:?})");
        }
    }
}

#[test]
fn a_hit_says_where_it_stands_and_its_snippet_holds_it() {
    let index = index();
    let scope = Scope::all();
    let hits = run(&index, &Query::parse("砂時計").unwrap(), &scope, 10, None);
    let hit = &hits[0];
    let body: Vec<u16> = CORPUS[3].5.encode_utf16().collect();
    let (start, end) = (hit.start.unwrap() as usize, hit.end.unwrap() as usize);
    assert_eq!(String::from_utf16(&body[start..end]).unwrap(), "砂時計");
    assert!(hit.snippet.contains("机の上の砂時計が"), "{}", hit.snippet);
    assert_eq!((hit.kind, hit.project_id.as_deref()), (Kind::Manuscript, Some("p2")));
    // A title-only hit has no offsets and shows the start of the text.
    let hits = run(&index, &Query::parse("brass").unwrap(), &scope, 10, None);
    assert_eq!((hits[0].start, hits[0].end), (None, None));
    assert!(hits[0].snippet.starts_with("He sets"), "{}", hits[0].snippet);
}

#[test]
fn an_edited_or_removed_document_is_found_by_its_new_text_only() {
    let mut index = index();
    let (title, body) = ("第二章", "\u{3000}秋、二人は奈良へ行った。\n");
    let doc = Doc {
        key: "manuscripts/kyoto".into(),
        kind: Kind::Manuscript,
        id: "kyoto".into(),
        title: title.into(),
        body: body.into(),
        project: Some("p1".into()),
        session: None,
        hash: text_hash(title, body),
    };
    index.add(doc, &text::segment_now(&[title, body]));
    let scope = Scope::all();
    assert_eq!(ids(&index, "京都", &scope), ["note"]);
    assert_eq!(ids(&index, "奈良", &scope), ["kyoto"]);
    assert!(index.remove("manuscripts/kyoto"));
    assert!(ids(&index, "奈良", &scope).is_empty());
    assert!(!index.remove("manuscripts/kyoto"));
    assert_eq!(index.len(), CORPUS.len() - 1);
}

#[test]
fn queries_of_any_content_answer_and_an_empty_one_is_refused() {
    let index = index();
    assert_eq!(Query::parse("").unwrap_err(), SearchError::EmptyQuery);
    assert_eq!(Query::parse(" \u{3000}\n").unwrap_err(), SearchError::EmptyQuery);
    let long = "京都 lighthouse ".repeat(20_000);
    for query in [long.as_str(), "\u{0}\u{FFFF}\u{10FFFF}", "🦀🦀", "'", "..", "x", "の", "\u{301}"] {
        let query = Query::parse(query).unwrap();
        assert!(query.parts.len() <= 32);
        let _ = run(&index, &query, &Scope::all(), 10, None);
    }
    assert_eq!(Scope::of(&["chapters".into()], None, None).unwrap_err(), SearchError::UnknownScope("chapters".into()));
    // Cut after its last whole word: no half word ("lightho") among its parts.
    let cut = Query::parse(&"京都 lighthouse ".repeat(200)).unwrap();
    assert!(cut.parts.iter().all(|p| p.text == "京都" || p.text.starts_with("lighthous")), "{:?}", cut.parts);
}

#[test]
fn an_edit_of_an_earlier_document_loses_no_other_document() {
    // The edit takes the slot it freed again: its words come last in each
    // term's list, after later documents' (found by review: an English word
    // then missed every document but the edited one).
    let mut index = index();
    for (id, text) in [("keeper", "The keepers of the lighthouse."), ("apart", "A lighthouse, and far off a keeper.")] {
        let doc = Doc {
            key: format!("manuscripts/{id}"),
            kind: Kind::Manuscript,
            id: id.into(),
            title: String::new(),
            body: text.into(),
            project: None,
            session: None,
            hash: text_hash("", text),
        };
        index.add(doc, &text::Breaks::default());
    }
    let mut found = ids(&index, "lighthouse", &Scope::all());
    found.sort();
    assert_eq!(found, ["apart", "keeper", "keepers"]);
}

#[test]
fn utf16_lengths_from_bytes_match_the_encoders() {
    for text in [
        "",
        "abc",
        "京都へ行った",
        "ｶﾞ\u{3000}「」",
        "🎌👨‍👩‍👧 e\u{301}",
        "\u{10ffff}\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}",
    ] {
        assert_eq!(crate::search::utf16_len(text) as usize, text.encode_utf16().count(), "{text:?}");
    }
    // Every prefix of a long mixed text: four-byte characters across the
    // eight-byte words the count reads, and every remainder length.
    let long = "a京🎌ｶﾞ\u{3000}é\u{10ffff}z".repeat(9);
    for (at, _) in long.char_indices() {
        assert_eq!(crate::search::utf16_len(&long[..at]) as usize, long[..at].encode_utf16().count(), "prefix {at}");
    }
}

#[test]
fn passages_tile_the_text_and_end_at_a_line_or_sentence() {
    for body in ["", "短い。", &"雨が降っていた。".repeat(200), &"x".repeat(2000), &"Line one.\nLine two! ".repeat(90)]
    {
        let cut: Vec<_> = meaning::passages(body).collect();
        // Whole, in order, no gaps, each within the size.
        assert_eq!(cut.first().map_or(0, |p| p.0), 0);
        assert_eq!(cut.last().map_or(0, |p| p.1), body.len());
        assert!(cut.windows(2).all(|w| w[0].1 == w[1].0 && w[0].0 < w[0].1));
        assert!(cut.iter().all(|(a, b)| body[*a..*b].chars().count() <= meaning::PASSAGE_CHARS));
    }
    let novel = "雨が降っていた。".repeat(200);
    assert!(meaning::passages(&novel).all(|(_, b)| novel[..b].ends_with('。')), "cut after a sentence");
    assert_eq!(meaning::passages(&"x".repeat(2000)).count(), 5, "no sentence end: cut at the size");
}

#[test]
fn a_meaning_ranking_adds_what_the_words_miss_and_never_hides_what_they_find() {
    let index = index();
    let query = |q: &str| Query::parse(q).unwrap();
    // The ranking an embedding model gave "a beacon at night": the English
    // chapter with "lighthouse" first (not a word of the query), then the
    // Tokyo tower's light, then a document no longer indexed.
    let ranked = meaning::Ranked {
        keys: vec!["manuscripts/apart".into(), "manuscripts/tower".into(), "manuscripts/gone".into()],
        passages: vec![0, 0, 0],
    };
    let hits = run(&index, &query("beacon"), &Scope::all(), 10, Some(&ranked));
    let found: Vec<(&str, bool)> = hits.iter().map(|h| (h.id.as_str(), h.by_meaning)).collect();
    assert_eq!(found, [("apart", true), ("tower", true)], "meaning only, in its order, the missing one skipped");
    let apart = &hits[0];
    assert_eq!((apart.start, apart.end), (Some(0), Some(61)), "the passage's offsets (UTF-16)");
    assert!(apart.snippet.starts_with("The keeper stood"));
    // A word hit keeps its place and snippet; a document in both lists rises.
    let ranked =
        meaning::Ranked { keys: vec!["manuscripts/keepers".into(), "manuscripts/tower".into()], passages: vec![0, 0] };
    let hits = run(&index, &query("keeper"), &Scope::all(), 10, Some(&ranked));
    let found: Vec<(&str, bool)> = hits.iter().map(|h| (h.id.as_str(), h.by_meaning)).collect();
    assert_eq!(found[0], ("keepers", false), "in both lists: first, as a word hit");
    assert!(
        found.contains(&("keeper", false)) && found.contains(&("apart", false)) && found.contains(&("tower", true))
    );
    // The scope holds for meaning hits too, and the limit for both.
    let p2 = Scope::of(&[], Some("p2".into()), None).unwrap();
    assert!(run(&index, &query("beacon"), &p2, 10, Some(&ranked)).is_empty());
    assert_eq!(run(&index, &query("keeper"), &Scope::all(), 2, Some(&ranked)).len(), 2);
    // 京都 never finds 東京都 by its words; a ranking that names nothing adds nothing.
    let empty = meaning::Ranked::default();
    let kyoto =
        |ranked| run(&index, &query("京都"), &Scope::all(), 10, ranked).into_iter().map(|h| h.id).collect::<Vec<_>>();
    assert_eq!(kyoto(Some(&empty)), kyoto(None));
    assert!(!kyoto(Some(&empty)).contains(&"tokyo".to_owned()));
}

#[test]
fn a_long_document_embeds_its_first_passages_only() {
    let mut index = Index::new();
    let body = "雨が降っていた。".repeat(20_000);
    let doc = Doc {
        key: "artifacts/page".into(),
        kind: Kind::Artifact,
        id: "page".into(),
        title: "A page".into(),
        body: body.clone(),
        project: None,
        session: Some("s1".into()),
        hash: text_hash("A page", &body),
    };
    index.add(doc, &text::Breaks::default());
    let texts = index.passage_texts("artifacts/page").unwrap();
    assert_eq!(texts.len(), meaning::MAX_PASSAGES);
    assert!(texts[0].starts_with("A page\n雨が"), "the title before the first passage");
    assert_eq!(index.passage_texts("artifacts/none"), None);
}
