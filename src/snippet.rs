//! The snippet rule, one home for everything that cuts a text short (the
//! artifact index entries the store writes, the index the agent injects):
//! the first N characters, never ending inside a grapheme.

/// The first `max_chars` characters of `text`, cut on a grapheme boundary
/// (never inside a UTF-8 sequence, an emoji sequence or a combining mark).
pub fn snippet(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        // Only the cut point is examined: inside a grapheme, the cut steps
        // back to that grapheme's start.
        Some((cut, _)) => &text[..crate::platform::grapheme_start(text, cut)],
        None => text,
    }
}

/// About `max_chars` characters of `text` around the bytes `from..to` (a
/// search hit), starting `before` characters ahead of it; both cuts on
/// grapheme boundaries, each marked with `…` when text was left out there.
pub fn around(text: &str, from: usize, to: usize, before: usize, max_chars: usize) -> String {
    let back = text[..from].char_indices().rev().nth(before.saturating_sub(1)).map_or(0, |(i, _)| i);
    let start = if before == 0 { from } else { crate::platform::grapheme_start(text, back) };
    let rest = &text[start..];
    let mut end = rest.char_indices().nth(max_chars).map_or(text.len(), |(i, _)| start + i).max(to);
    if end < text.len() {
        end = crate::platform::grapheme_start(text, end).max(to);
    }
    let mut out = String::with_capacity(end - start + 6);
    if start > 0 {
        out.push('…');
    }
    out.push_str(&text[start..end]);
    if end < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_snippet_around_a_hit_is_cut_on_graphemes_and_marked() {
        let text = format!("{}京都へ行く{}", "あ👍🏽".repeat(30), "い".repeat(300));
        let hit = text.find("京都").unwrap();
        let s = super::around(&text, hit, hit + "京都".len(), 5, 20);
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("京都へ行く"), "{s}");
        assert!(!s.contains("\u{1F3FD}") || s.contains("👍🏽"), "no lone skin-tone modifier: {s}");
        assert!(s.chars().count() <= 24, "{s}");
        assert_eq!(super::around("short", 0, 5, 40, 160), "short");
        assert_eq!(super::around("", 0, 0, 0, 10), "");
        let long = "x".repeat(500);
        assert_eq!(super::around(&long, 0, 0, 0, 10), format!("{}…", "x".repeat(10)));
    }
}
