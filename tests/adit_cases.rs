//! The Adit case table: each row is a document, the edits (as pairs or as a
//! raw LLM reply) and the expected text with the ladder level of every edit,
//! or the expected error code and failing index. Add rows, not functions.
#![cfg(not(target_arch = "wasm32"))]

use atelier_agent::adit::{apply_edits, apply_search_replace, Edit, MatchLevel};
use MatchLevel::*;

enum Input {
    Pairs(&'static [(&'static str, &'static str)]),
    Reply(&'static str),
}

enum Expect {
    Text(&'static str, &'static [MatchLevel]),
    Fails(&'static str, usize),
}

struct Case {
    name: &'static str,
    doc: &'static str,
    input: Input,
    expect: Expect,
}

const fn ok(
    name: &'static str,
    doc: &'static str,
    pairs: &'static [(&'static str, &'static str)],
    text: &'static str,
    levels: &'static [MatchLevel],
) -> Case {
    Case { name, doc, input: Input::Pairs(pairs), expect: Expect::Text(text, levels) }
}

const fn err(
    name: &'static str,
    doc: &'static str,
    pairs: &'static [(&'static str, &'static str)],
    code: &'static str,
    index: usize,
) -> Case {
    Case { name, doc, input: Input::Pairs(pairs), expect: Expect::Fails(code, index) }
}

const fn reply_ok(
    name: &'static str,
    doc: &'static str,
    reply: &'static str,
    text: &'static str,
    levels: &'static [MatchLevel],
) -> Case {
    Case { name, doc, input: Input::Reply(reply), expect: Expect::Text(text, levels) }
}

const fn reply_err(
    name: &'static str,
    doc: &'static str,
    reply: &'static str,
    code: &'static str,
    index: usize,
) -> Case {
    Case { name, doc, input: Input::Reply(reply), expect: Expect::Fails(code, index) }
}

const BLOCK: &str = "<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n";

#[rustfmt::skip]
const CASES: &[Case] = &[
    // --- level 1: exact ---
    ok("word mid-line", "hello world\n", &[("world", "there")], "hello there\n", &[Exact]),
    ok("whole line", "a\nb\nc\n", &[("b\n", "B\n")], "a\nB\nc\n", &[Exact]),
    ok("several lines", "a\nb\nc\n", &[("a\nb\n", "x\n")], "x\nc\n", &[Exact]),
    ok("whole-line search skips mid-line hits", "xb\nb\n", &[("b\n", "B\n")], "xb\nB\n", &[Exact]),
    ok("delete a line", "a\nb\nc\n", &[("b\n", "")], "a\nc\n", &[Exact]),
    ok("delete mid-line", "foo bar baz", &[("bar ", "")], "foo baz", &[Exact]),
    ok("insert after a line", "a\nc\n", &[("a\n", "a\nb\n")], "a\nb\nc\n", &[Exact]),
    ok("exact keeps replacement verbatim", "    x = 1\n", &[("x = 1", "x = 2\ny = 3")], "    x = 2\ny = 3\n", &[Exact]),
    ok("japanese mid-line", "吾輩は猫である。名前はまだ無い。\n", &[("猫", "犬")], "吾輩は犬である。名前はまだ無い。\n", &[Exact]),
    ok("emoji", "I ❤️ Rust 🦀\n", &[("🦀", "🐙")], "I ❤️ Rust 🐙\n", &[Exact]),
    ok("tabs exact", "\tfoo\n\tbar\n", &[("\tfoo\n", "\tbaz\n")], "\tbaz\n\tbar\n", &[Exact]),
    ok("lone CR is ordinary text", "a\rb\n", &[("a\rb", "c")], "c\n", &[Exact]),
    ok("exact beats trimmed", "foo\n  foo\n", &[("foo\n", "bar\n")], "bar\n  foo\n", &[Exact]),
    ok("whole document", "abc", &[("abc", "xyz")], "xyz", &[Exact]),
    ok("replace with same text", "keep\n", &[("keep", "keep")], "keep\n", &[Exact]),
    // --- line endings of the replacement follow the document ---
    ok("CRLF doc converts replacement", "a\r\nb\r\n", &[("a\r\n", "x\ny\n")], "x\r\ny\r\nb\r\n", &[Exact]),
    ok("LF doc converts CRLF replacement", "a\nb\n", &[("a\n", "x\r\n")], "x\nb\n", &[Exact]),
    ok("CRLF doc keeps CRLF replacement", "a\r\nb\r\n", &[("b", "c\r\nd")], "a\r\nc\r\nd\r\n", &[Exact]),
    // --- empty search: append ---
    ok("empty doc takes the replacement", "", &[("", "hello\n")], "hello\n", &[Append]),
    ok("append after final newline", "a\n", &[("", "b\n")], "a\nb\n", &[Append]),
    ok("append on a new line", "a", &[("", "b")], "a\nb", &[Append]),
    ok("append to CRLF doc", "a\r\n", &[("", "b\n")], "a\r\nb\r\n", &[Append]),
    // --- several edits, each on the previous result ---
    ok("chain", "a\n", &[("a", "b"), ("b", "c")], "c\n", &[Exact, Exact]),
    ok("second sees the first", "one two\n", &[("one", "1"), ("1 two", "1 2")], "1 2\n", &[Exact, Exact]),
    ok("first makes second unique", "x\nx\n", &[("x\nx\n", "x\ny\n"), ("y", "z")], "x\nz\n", &[Exact, Exact]),
    ok("three in a manuscript", "Chapter 1\nIt was dark.\nThe end.\n",
        &[("Chapter 1", "第一章"), ("dark", "light"), ("The end.\n", "")], "第一章\nIt was light.\n", &[Exact, Exact, Exact]),
    ok("mixed levels in one call", "  a\nb \n", &[("a\n", "A\n"), ("b\n", "B\n")], "  A\nB\n", &[Trimmed, TrailingWhitespace]),
    // --- ambiguity refuses ---
    err("two exact hits", "a\na\n", &[("a", "b")], "ambiguous", 0),
    err("overlapping hits", "aaa", &[("aa", "b")], "ambiguous", 0),
    err("second edit ambiguous", "a b\n", &[("a", "b"), ("b", "c")], "ambiguous", 1),
    err("ambiguous when trimmed", "  x\n\tx\n", &[("x\n", "y\n")], "ambiguous", 0),
    err("ambiguous without trailing space", "x  \nx\t\n", &[("x\n", "y\n")], "ambiguous", 0),
    err("ambiguous after CRLF folding", "a\r\nb\r\na\r\nb\r\n", &[("a\nb", "x")], "ambiguous", 0),
    err("ambiguous japanese", "\u{3000}はい。\n\u{3000}はい。\n", &[("はい。\n", "いいえ。\n")], "ambiguous", 0),
    // --- no match refuses ---
    err("absent", "hello\n", &[("bye", "x")], "no_match", 0),
    err("second edit absent", "a\n", &[("a", "b"), ("a", "c")], "no_match", 1),
    err("empty doc", "", &[("x", "y")], "no_match", 0),
    err("blank search absent", "a\n", &[("   ", "x")], "no_match", 0),
    err("longer than doc", "ab", &[("abc", "x")], "no_match", 0),
    err("indent inside a line is not a line match", "a  b\n", &[("a b", "x")], "no_match", 0),
    err("third of three fails", "a\nb\n", &[("a", "A"), ("b", "B"), ("c", "C")], "no_match", 2),
    err("lines out of order", "one\ntwo\n", &[("two\none\n", "x\n")], "no_match", 0),
    // --- level 2: CRLF read as LF ---
    ok("CRLF doc, LF search mid-line", "ab\r\ncd\r\n", &[("b\nc", "X")], "aXd\r\n", &[LineEndings]),
    ok("LF doc, CRLF search", "ab\ncd\n", &[("b\r\nc", "X")], "aXd\n", &[LineEndings]),
    ok("CRLF doc, LF whole lines", "a\r\nb\r\nc\r\n", &[("a\nb\n", "x\n")], "x\r\nc\r\n", &[LineEndings]),
    ok("mixed endings", "a\r\nb\nc\r\n", &[("a\nb\nc\n", "z\n")], "z\r\n", &[LineEndings]),
    ok("CRLF delete", "a\r\nb\r\nc\r\n", &[("b\n", "")], "a\r\nc\r\n", &[LineEndings]),
    // --- level 3: trailing whitespace ---
    ok("doc has trailing spaces", "x = 1   \ny = 2\n", &[("x = 1\ny = 2\n", "x = 3\n")], "x = 3\n", &[TrailingWhitespace]),
    ok("search has trailing spaces", "a\nb\n", &[("a  \nb\n", "c\n")], "c\n", &[TrailingWhitespace]),
    ok("trailing space with CRLF", "a \r\nb\r\n", &[("a\nb\n", "c\n")], "c\r\n", &[TrailingWhitespace]),
    ok("no final newline in search", "  foo  \n  bar\n", &[("  foo\n  bar", "  baz")], "  baz\n", &[TrailingWhitespace]),
    ok("tab vs space at line end", "a\t\nb\n", &[("a \n", "c\n")], "c\nb\n", &[TrailingWhitespace]),
    ok("level 3 wins over ambiguous level 4", "x \n  x\n", &[("x\n", "y\n")], "y\n  x\n", &[TrailingWhitespace]),
    // --- level 4: trimmed lines, indentation re-based ---
    ok("ideographic indent", "\u{3000}吾輩は猫である。\n\u{3000}名前はまだ無い。\n",
        &[("吾輩は猫である。\n名前はまだ無い。\n", "吾輩は犬である。\n名前はもうある。\n")],
        "\u{3000}吾輩は犬である。\n\u{3000}名前はもうある。\n", &[Trimmed]),
    ok("python block re-based", "def f():\n    if x:\n        return 1\n",
        &[("if x:\n    return 1\n", "if y:\n    return 2\n")], "def f():\n    if y:\n        return 2\n", &[Trimmed]),
    // Each replaced line keeps the document line's own indentation (not "\t" + 4 spaces).
    ok("tabs in doc, spaces in search", "\tif x:\n\t\treturn 1\n",
        &[("    if x:\n        return 1\n", "    if x:\n        return 2\n")], "\tif x:\n\t\treturn 2\n", &[Trimmed]),
    ok("blank lines left alone", "  a\n\n  b\n", &[("a\n\nb\n", "a\n\n  \nb2\n")], "  a\n\n  \n  b2\n", &[Trimmed]),
    ok("outdent kept relative", "    if x:\n        y\n", &[("    y\n", "    y\n  z\n")], "    if x:\n        y\n      z\n", &[Trimmed]),
    ok("missing final newline stays missing", "a\n  b", &[("b\n", "c\n")], "a\n  c", &[Trimmed]),
    ok("delete last line without final newline", "a\n  b", &[("b\n", "")], "a", &[Trimmed]),
    ok("delete indented line", "x\n  y\nz\n", &[("y\n", "")], "x\nz\n", &[Trimmed]),
    ok("line search gets its newline back", "  a\nb\n", &[("a\n", "c")], "  c\nb\n", &[Trimmed]),
    ok("leading blank search line", "a\n\n  b\n", &[("\nb\n", "\nc\n")], "a\n\n  c\n", &[Trimmed]),
    ok("japanese dialogue indent", "「こんにちは」\n\u{3000}彼は言った。\n",
        &[("彼は言った。", "彼女は言った。")], "「こんにちは」\n\u{3000}彼女は言った。\n", &[Exact]),
    ok("full-width indent re-based to replacement lines", "\u{3000}一行目。\n",
        &[("一行目。\n", "一行目。\n二行目。\n")], "\u{3000}一行目。\n\u{3000}二行目。\n", &[Trimmed]),
    ok("trimmed with CRLF doc", "  a\r\n  b\r\n", &[("a\nb\n", "c\nd\n")], "  c\r\n  d\r\n", &[Trimmed]),
    // --- level 4, line by line: the matched lines are not one uniform shift of the search ---
    ok("narration and dialogue: the model dropped U+3000",
        "\u{3000}吾輩は猫である。\n「名前は？」\n\u{3000}名前はまだ無い。\n",
        &[("吾輩は猫である。\n「名前は？」\n名前はまだ無い。\n", "吾輩は犬である。\n「名前は何？」\n名前はもうある。\n")],
        "\u{3000}吾輩は犬である。\n「名前は何？」\n\u{3000}名前はもうある。\n", &[Trimmed]),
    ok("dialogue first: the anchor line has no indent",
        "「雨だ」\n\u{3000}彼は空を見た。\n「傘は？」\n",
        &[("「雨だ」\n彼は空を見た。\n「傘は？」\n", "「雪だ」\n彼は空を見上げた。\n「傘は？」\n")],
        "「雪だ」\n\u{3000}彼は空を見上げた。\n「傘は？」\n", &[Trimmed]),
    ok("a line dropped and one added: kept lines keep their own indent, the added one the uniform shift",
        "\u{3000}一。\n「二」\n\u{3000}三。\n",
        &[("一。\n「二」\n三。\n", "一。\n三。\n四。\n")],
        "\u{3000}一。\n\u{3000}三。\n\u{3000}四。\n", &[Trimmed]),
    ok("mixed tab and space indents, search without any",
        "\tif x:\n    y = 1\n\t\tz = 2\n",
        &[("if x:\ny = 1\nz = 2\n", "if x:\ny = 10\nz = 20\n")],
        "\tif x:\n    y = 10\n\t\tz = 20\n", &[Trimmed]),
    ok("mixed widths keep each line's own",
        "    a\n  b\n      c\n",
        &[("a\nb\nc\n", "A\nB\nC\n")],
        "    A\n  B\n      C\n", &[Trimmed]),
    ok("indent the model adds beyond the search line's is kept",
        "\u{3000}一。\n「二」\n",
        &[("一。\n「二」\n", "一。\n  「二」\n")],
        "\u{3000}一。\n  「二」\n", &[Trimmed]),
    // --- raw LLM replies ---
    reply_ok("block in prose, fences and a file name", "old\n",
        "Sure!\nchapter1.md\n```\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\nDone.\n", "new\n", &[Exact]),
    reply_ok("CRLF reply on LF doc", "a\nold\n",
        "<<<<<<< SEARCH\r\nold\r\n=======\r\nnew\r\n>>>>>>> REPLACE\r\n", "a\nnew\n", &[LineEndings]),
    reply_ok("5 and 9 marker characters", "old\n",
        "<<<<< SEARCH\nold\n=====\nnew\n>>>>>>>>> REPLACE\n", "new\n", &[Exact]),
    reply_ok("trailing whitespace on markers", "old\n",
        "<<<<<<< SEARCH  \nold\n=======\t\nnew\n>>>>>>> REPLACE \n", "new\n", &[Exact]),
    reply_ok("empty replace deletes", "a\nb\nc\n",
        "<<<<<<< SEARCH\nb\n=======\n>>>>>>> REPLACE\n", "a\nc\n", &[Exact]),
    reply_ok("empty search appends", "a\n",
        "<<<<<<< SEARCH\n=======\nnew line\n>>>>>>> REPLACE\n", "a\nnew line\n", &[Append]),
    reply_ok("two dependent blocks", "x\n",
        "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\nthen\n<<<<<<< SEARCH\ny\n=======\nz\n>>>>>>> REPLACE\n", "z\n", &[Exact, Exact]),
    reply_ok("reply without final newline", "old\n",
        "<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE", "new\n", &[Exact]),
    reply_ok("japanese reply on indented manuscript", "\u{3000}雨が降っていた。\n",
        "修正します。\n<<<<<<< SEARCH\n雨が降っていた。\n=======\n雪が降っていた。\n>>>>>>> REPLACE\n", "\u{3000}雪が降っていた。\n", &[Trimmed]),
    reply_err("second block fails, nothing applies", "x\n",
        "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nq\n=======\nz\n>>>>>>> REPLACE\n", "no_match", 1),
    // --- malformed replies ---
    reply_err("truncated block", "a\n", "<<<<<<< SEARCH\na\n=======\nb\n", "parse", 0),
    reply_err("truncated before separator", "a\n", "<<<<<<< SEARCH\na\n", "parse", 0),
    reply_err("separator outside a block", "a\n", "text\n=======\n", "parse", 0),
    reply_err("REPLACE outside a block", "a\n", ">>>>>>> REPLACE\n", "parse", 0),
    reply_err("second separator", "a\n", "<<<<<<< SEARCH\na\n=======\nb\n=======\nc\n>>>>>>> REPLACE\n", "parse", 0),
    reply_err("truncated second block", "old\n", "<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nx\n", "parse", 1),
    reply_err("REPLACE before separator", "a\n", "<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n", "parse", 0),
    reply_err("nested SEARCH", "a\n", "<<<<<<< SEARCH\na\n<<<<<<< SEARCH\n", "parse", 0),
    reply_err("no block at all", "a\n", "I could not find anything to change.\n", "parse", 0),
    // --- marker variants: the union of what aider, Cline and Roo-Code accept ---
    reply_ok("aider: 5 to 9 characters, trailing whitespace", "old\n",
        "<<<<< SEARCH \nold\n=========\nnew\n>>>>>>>>> REPLACE\t\n", "new\n", &[Exact]),
    reply_ok("Cline: ------- SEARCH / +++++++ REPLACE", "old\n",
        "------- SEARCH\nold\n=======\nnew\n+++++++ REPLACE\n", "new\n", &[Exact]),
    reply_ok("Cline: 3 characters", "old\n", "--- SEARCH\nold\n===\nnew\n+++ REPLACE\n", "new\n", &[Exact]),
    reply_ok("Cline: legacy 3-character < and >", "old\n", "<<< SEARCH\nold\n===\nnew\n>>> REPLACE\n", "new\n", &[Exact]),
    reply_ok("Cline: more than 9 characters", "old\n",
        "<<<<<<<<<<<< SEARCH\nold\n============\nnew\n>>>>>>>>>>>> REPLACE\n", "new\n", &[Exact]),
    reply_ok("Cline and Roo-Code: a > after the word", "old\n",
        "<<<<<<< SEARCH>\nold\n=======\nnew\n>>>>>>> REPLACE>\n", "new\n", &[Exact]),
    reply_ok("Roo-Code: start line and separator before the search text", "a\nold\n",
        "<<<<<<< SEARCH\n:start_line: 2\n-------\nold\n=======\nnew\n>>>>>>> REPLACE\n", "a\nnew\n", &[Exact]),
    reply_ok("Roo-Code: start and end lines, no separator", "a\nold\n",
        "<<<<<<< SEARCH\n:start_line:2\n:end_line:2\nold\n=======\nnew\n>>>>>>> REPLACE\n", "a\nnew\n", &[Exact]),
    reply_ok("a Markdown rule opening the search text is text", "---\nold\n",
        "<<<<<<< SEARCH\n---\nold\n=======\n---\nnew\n>>>>>>> REPLACE\n", "---\nnew\n", &[Exact]),
    reply_err("two marker characters are content, block truncated", "a\n", "<<<<<<< SEARCH\na\n==\nb\n", "parse", 0),
];

#[test]
fn case_table() {
    assert!(CASES.len() >= 60, "the table should keep at least 60 cases");
    let mut failures = Vec::new();
    for case in CASES {
        let outcome = match &case.input {
            Input::Pairs(pairs) => {
                let edits: Vec<Edit> = pairs.iter().map(|(s, r)| Edit::new(*s, *r)).collect();
                apply_edits(case.doc, &edits)
            }
            Input::Reply(reply) => apply_search_replace(case.doc, reply),
        };
        let verdict = match (&case.expect, outcome) {
            (Expect::Text(text, levels), Ok(applied)) => {
                let got: Vec<MatchLevel> = applied.reports.iter().map(|r| r.level).collect();
                (applied.text != *text || got != *levels)
                    .then(|| format!("got {:?} {:?}, want {:?} {:?}", applied.text, got, text, levels))
            }
            (Expect::Fails(code, index), Err(e)) => ((e.code().as_str(), e.index()) != (*code, *index))
                .then(|| format!("got {}@{} ({e}), want {code}@{index}", e.code(), e.index())),
            (Expect::Text(text, _), Err(e)) => {
                Some(format!("want {text:?}, got error {}@{}: {e}", e.code(), e.index()))
            }
            (Expect::Fails(code, index), Ok(applied)) => Some(format!("want {code}@{index}, got {:?}", applied.text)),
        };
        if let Some(why) = verdict {
            failures.push(format!("{}: {why}", case.name));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), CASES.len(), failures.join("\n"));
}

#[test]
fn ambiguity_lists_candidate_lines() {
    let err = apply_edits("a\nx\nb\nx\n", &[Edit::new("x", "y")]).unwrap_err();
    match err {
        atelier_agent::adit::AditError::Ambiguous { lines, level, .. } => {
            assert_eq!(lines, vec![2, 4]);
            assert_eq!(level, Exact);
        }
        other => panic!("expected ambiguity, got {other:?}"),
    }
}

#[test]
fn no_match_quotes_the_closest_region() {
    let doc = "# Chapter 1\n\nThe rain fell on the town.\nNobody was awake.\n\n# Chapter 2\n";
    let err = apply_edits(doc, &[Edit::new("The rain fell on the city.\nNobody was awake.\n", "x\n")]).unwrap_err();
    let message = err.to_string();
    match err {
        atelier_agent::adit::AditError::NoMatch { closest: Some(region), index } => {
            assert_eq!(index, 0);
            assert_eq!((region.start_line, region.end_line), (3, 4));
            assert_eq!(region.text, "The rain fell on the town.\nNobody was awake.");
            assert!(message.contains("closest region (lines 3-4)"), "{message}");
        }
        other => panic!("expected a closest region, got {other:?}"),
    }
}

#[test]
fn no_match_finds_a_region_from_a_later_line() {
    let doc = "alpha\nbeta gamma\ndelta\n";
    let err = apply_edits(doc, &[Edit::new("ALPHA\nbeta gamma\n", "x")]).unwrap_err();
    match err {
        atelier_agent::adit::AditError::NoMatch { closest: Some(region), .. } => {
            assert_eq!((region.start_line, region.end_line), (1, 2));
        }
        other => panic!("expected a closest region, got {other:?}"),
    }
}

#[test]
fn reports_name_the_line_of_each_edit() {
    let applied = apply_edits("a\nb\nc\n", &[Edit::new("c", "C"), Edit::new("a", "A")]).unwrap();
    let lines: Vec<usize> = applied.reports.iter().map(|r| r.line).collect();
    assert_eq!(lines, vec![3, 1]);
}

#[test]
fn parse_errors_name_the_line() {
    let err = apply_search_replace("x\n", "intro\n<<<<<<< SEARCH\nx\n=======\ny\n=======\n").unwrap_err();
    match err {
        atelier_agent::adit::AditError::Parse { line, index, .. } => {
            assert_eq!((line, index), (6, 0))
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    let err = apply_search_replace("x\n", &format!("{BLOCK}\n<<<<<<< SEARCH\nx\n")).unwrap_err();
    assert!(err.to_string().contains("line 7"), "{err}");
}

#[test]
fn no_match_region_when_a_line_differs_in_the_middle() {
    let err = apply_edits("one\ntwo words here\nthree\n", &[Edit::new("two words there\n", "x")]).unwrap_err();
    match err {
        atelier_agent::adit::AditError::NoMatch { closest: Some(region), .. } => {
            assert_eq!((region.start_line, region.text.as_str()), (2, "two words here"));
        }
        other => panic!("expected a closest region, got {other:?}"),
    }
}
