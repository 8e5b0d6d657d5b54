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
