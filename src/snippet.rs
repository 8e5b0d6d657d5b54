//! The snippet rule, one home for everything that cuts a text short (the
//! artifact index entries the store writes, the index the agent injects):
//! the first N characters, never ending inside a grapheme.

use unicode_segmentation::GraphemeCursor;

/// The first `max_chars` characters of `text`, cut on a grapheme boundary
/// (never inside a UTF-8 sequence, an emoji sequence or a combining mark).
pub fn snippet(text: &str, max_chars: usize) -> &str {
    let Some((cut, _)) = text.char_indices().nth(max_chars) else {
        return text;
    };
    // Only the cut point is examined: if it falls inside a grapheme, step
    // back to that grapheme's start.
    let mut cursor = GraphemeCursor::new(cut, text.len(), true);
    match cursor.is_boundary(text, 0) {
        Ok(true) => &text[..cut],
        _ => match cursor.prev_boundary(text, 0) {
            Ok(Some(start)) => &text[..start],
            _ => "",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_cut_on_grapheme_boundaries() {
        assert_eq!(snippet("吾輩は猫である", 3), "吾輩は");
        // A family emoji is one grapheme of 7 chars: it is not split.
        let family = "ab👨‍👩‍👧‍👦cd";
        assert_eq!(snippet(family, 4), "ab");
        assert_eq!(snippet(family, 9), "ab👨‍👩‍👧‍👦");
        // e + combining acute stays together.
        assert_eq!(snippet("cafe\u{301}s", 4), "caf");
        assert_eq!(snippet("cafe\u{301}s", 5), "cafe\u{301}");
        // Flags are pairs of regional indicators.
        assert_eq!(snippet("🇯🇵🇫🇷", 3), "🇯🇵");
        assert_eq!(snippet("", 3), "");
        assert_eq!(snippet("short", 300), "short");
    }
}
