//! Line and whitespace helpers shared by the matcher and the applier.
//!
//! A *line* is the text between two `\n` (its *content* excludes the `\n` and a
//! `\r` right before it). A document that ends in `\n` has no empty line after
//! it.

use memchr::{memchr, memrchr};

/// One line of a document, as byte offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset just past the content (before `\r\n` or `\n`).
    pub content_end: usize,
    /// Offset just past the terminator (equals `content_end` on a last line
    /// with no final newline).
    pub end: usize,
}

impl Line {
    /// The line that contains byte `pos` (which must be `< doc.len()` or a line start).
    pub fn containing(doc: &str, pos: usize) -> Line {
        let bytes = doc.as_bytes();
        let start = memrchr(b'\n', &bytes[..pos]).map_or(0, |p| p + 1);
        Line::starting_at(doc, start)
    }

    /// The line that starts at byte `start`.
    pub fn starting_at(doc: &str, start: usize) -> Line {
        let bytes = doc.as_bytes();
        match memchr(b'\n', &bytes[start..]) {
            Some(off) => {
                let nl = start + off;
                let content_end = if nl > start && bytes[nl - 1] == b'\r' { nl - 1 } else { nl };
                Line { start, content_end, end: nl + 1 }
            }
            None => Line { start, content_end: doc.len(), end: doc.len() },
        }
    }

    /// The line after this one, if the document has one.
    pub fn next(&self, doc: &str) -> Option<Line> {
        (self.end < doc.len()).then(|| Line::starting_at(doc, self.end))
    }

    /// The line before this one, if any.
    pub fn prev(&self, doc: &str) -> Option<Line> {
        (self.start > 0).then(|| Line::containing(doc, self.start - 1))
    }

    /// The line's content.
    pub fn content<'a>(&self, doc: &'a str) -> &'a str {
        &doc[self.start..self.content_end]
    }

    /// Whether the line ends with a newline.
    pub fn has_terminator(&self) -> bool {
        self.end > self.content_end
    }
}

/// 1-based number of the line that contains byte `pos`.
pub(crate) fn line_number(doc: &str, pos: usize) -> usize {
    memchr::memchr_iter(b'\n', &doc.as_bytes()[..pos]).count() + 1
}

/// Splits `text` into line contents: `\n` and `\r\n` both end a line, and a
/// final newline does not start an empty line.
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect()
}

/// Leading whitespace of a line (Unicode White_Space, so U+3000 counts).
pub(crate) fn indent_of(line: &str) -> &str {
    let rest = line.trim_start();
    &line[..line.len() - rest.len()]
}

/// Whether a line holds only whitespace.
pub(crate) fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// Rewrites the line endings of `text` to `\r\n` (when `crlf`) or `\n`.
pub(crate) fn with_line_endings(text: &str, crlf: bool) -> String {
    let lf = text.replace("\r\n", "\n");
    if crlf {
        lf.replace('\n', "\r\n")
    } else {
        lf
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub(crate) fn prefix_on_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The longest suffix of `s` of at most `max` bytes that starts on a char boundary.
pub(crate) fn suffix_on_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_walk_both_ways_with_crlf() {
        let doc = "a\r\nbb\nccc";
        let first = Line::starting_at(doc, 0);
        assert_eq!(first.content(doc), "a");
        let second = first.next(doc).unwrap();
        assert_eq!(second.content(doc), "bb");
        let third = second.next(doc).unwrap();
        assert_eq!(third.content(doc), "ccc");
        assert!(!third.has_terminator());
        assert!(third.next(doc).is_none());
        assert_eq!(third.prev(doc), Some(second));
        assert_eq!(second.prev(doc), Some(first));
        assert_eq!(Line::containing(doc, 5), second);
    }

    #[test]
    fn split_lines_drops_only_the_final_newline() {
        assert_eq!(split_lines("a\n\nb\n"), vec!["a", "", "b"]);
        assert_eq!(split_lines("a\r\nb"), vec!["a", "b"]);
        assert_eq!(split_lines("\n"), vec![""]);
        assert!(split_lines("").is_empty());
    }

    #[test]
    fn ideographic_space_is_indentation() {
        assert_eq!(indent_of("\u{3000}吾輩は猫である。"), "\u{3000}");
        assert!(is_blank("\u{3000} \t"));
    }

    #[test]
    fn cuts_respect_char_boundaries() {
        assert_eq!(prefix_on_char_boundary("日本語", 4), "日");
        assert_eq!(suffix_on_char_boundary("日本語", 4), "語");
    }
}
