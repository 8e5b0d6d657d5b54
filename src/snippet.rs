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
