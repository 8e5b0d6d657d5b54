//! The package's text rules against the same cases natively and in the
//! browser: natively they run on unicode-segmentation and the standard
//! library, in the package on the browser's `Intl.Segmenter` and
//! `toLowerCase`, and both must give the same answers.

use atelier_agent::platform::{grapheme_start, lowercase};
use atelier_agent::snippet::snippet;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
use wasm_bindgen_test::{wasm_bindgen_test as test, wasm_bindgen_test_configure};
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
wasm_bindgen_test_configure!(run_in_browser);

#[test]
fn snippets_cut_on_grapheme_boundaries() {
    assert_eq!(snippet("吾輩は猫である", 3), "吾輩は");
    // A combining voiced mark after kana belongs to it.
    assert_eq!(snippet("あか\u{3099}い", 2), "あ");
    assert_eq!(snippet("あか\u{3099}い", 3), "あか\u{3099}");
    assert_eq!(snippet("ab\u{301}c", 2), "a");
    // A family emoji is one grapheme of 7 chars: it is not split.
    let family = "ab👨‍👩‍👧‍👦cd";
    assert_eq!(snippet(family, 4), "ab");
    assert_eq!(snippet(family, 9), "ab👨‍👩‍👧‍👦");
    // e + combining acute stays together.
    assert_eq!(snippet("cafe\u{301}s", 4), "caf");
    assert_eq!(snippet("cafe\u{301}s", 5), "cafe\u{301}");
    // Flags are pairs of regional indicators, however long the run.
    assert_eq!(snippet("🇯🇵🇫🇷", 3), "🇯🇵");
    assert_eq!(snippet("🇯🇵🇫🇷🇩🇪🇮🇹🇪🇸", 9), "🇯🇵🇫🇷🇩🇪🇮🇹");
    // CR LF is one grapheme; other ASCII pairs are not.
    assert_eq!(snippet("ab\r\ncd", 3), "ab");
    assert_eq!(snippet("ab\n\rcd", 3), "ab\n");
    // Hangul jamo (L V T) make one syllable.
    assert_eq!(snippet("x\u{1100}\u{1161}\u{11A8}y", 2), "x");
    assert_eq!(snippet("x\u{1100}\u{1161}\u{11A8}y", 4), "x\u{1100}\u{1161}\u{11A8}");
    // A variation selector and a skin tone stay with their emoji.
    assert_eq!(snippet("a\u{2764}\u{FE0F}b", 2), "a");
    assert_eq!(snippet("a👍🏽b", 2), "a");
    assert_eq!(snippet("", 3), "");
    assert_eq!(snippet("short", 300), "short");
}

#[test]
fn grapheme_starts_are_byte_offsets() {
    let text = "é\u{301}🇯🇵z";
    // Inside the flag (after its first regional indicator) → the flag's start.
    let flag = "é\u{301}".len();
    assert_eq!(grapheme_start(text, flag + 4), flag);
    assert_eq!(grapheme_start(text, flag), flag);
    assert_eq!(grapheme_start(text, "é".len()), 0);
    assert_eq!(grapheme_start(text, text.len()), text.len());
    assert_eq!(grapheme_start(text, 0), 0);
}

#[test]
fn lowercase_follows_unicode() {
    assert_eq!(lowercase("Chapter ONE"), "chapter one");
    assert_eq!(lowercase("ÄRGER Über"), "ärger über");
    // Final sigma.
    assert_eq!(lowercase("ΟΔΟΣ ΟΔΟΣ"), "οδος οδος");
    assert_eq!(lowercase("İ"), "i\u{307}");
    assert_eq!(lowercase("吾輩は猫"), "吾輩は猫");
}

/// Words as the search index cuts them: the segmenter for Japanese (the
/// browser's `Intl.Segmenter` in the package, the system ICU natively), the
/// package's own rules for the rest. Both builds must cut alike.
#[test]
fn words_are_cut_alike_natively_and_in_the_browser() {
    use atelier_agent::search::text::{segment_now, tokenize};
    let cases: &[(&str, &str)] = &[
        ("東京都に住む", "東京|都|に|住む"),
        ("京都へ行った", "京都|へ|行|っ|た"),
        ("\u{3000}吾輩は猫である。名前はまだ無い。", "吾輩|は|猫|で|ある/名前|は|まだ|無い"),
        ("「もう行かなくちゃ」", "もう|行|か|なく|ちゃ"),
        ("花火大会の夜、二人は橋の上にいた。", "花火|大会|の|夜/二人|は|橋|の|上|に|い|た"),
        ("東京タワーの灯り", "東京タワー|の|灯り"),
        ("ローカルファーストのエージェント", "ローカル|ファースト|の|エージェント"),
        ("ﾊﾟｿｺﾝとＡＢＣ１２３", "パソコン|と|abc123"),
        ("The keepers' lighthouses were sailing.", "the/keeper/lighthous/wer/sail"),
        ("IndexedDBにアーティファクトを保存する", "indexeddb|に|アーティファクト|を|保存|する"),
    ];
    for (text, expected) in cases {
        let breaks = segment_now(&[text]);
        let mut got = String::new();
        tokenize(text, &breaks, &mut 0, &mut |w| {
            if !got.is_empty() {
                got.push(if w.after_gap { '/' } else { '|' });
            }
            got.push_str(w.term);
        });
        assert_eq!(got, *expected, "{text}");
    }
}
