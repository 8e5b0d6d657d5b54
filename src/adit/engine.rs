//! The matching ladder and the atomic applier.
//!
//! [`apply_edits`] locates each edit in the current text (the result of the
//! edits before it), splices the replacement in, and only hands the text back
//! when every edit applied. Locating never allocates a copy of the document
//! unless its line endings must be normalised (level 2).

use std::fmt;
use std::ops::Range;

use memchr::memmem;
use serde::{Deserialize, Serialize};

use super::error::{AditError, ClosestRegion, Result};
use super::schema::Edit;
use super::text::{
    indent_of, is_blank, line_number, prefix_on_char_boundary, split_lines, suffix_on_char_boundary, with_line_endings,
    Line,
};

/// At most this many candidate lines are listed in an ambiguity error.
const MAX_LISTED_CANDIDATES: usize = 20;
/// Bytes of a trimmed search line used as the anchor of the line levels.
const ANCHOR_BYTES: usize = 48;
/// Bytes of a line's start and end used as anchors when looking for the
/// closest region (short, so a line that differs in the middle still hits).
const REGION_ANCHOR_BYTES: usize = 16;
/// Anchor hits scored when looking for the closest region.
const MAX_SCORED_HITS: usize = 64;
/// Non-blank search lines tried as anchors for the closest region.
const MAX_ANCHOR_LINES: usize = 3;

/// Which rung of the matching ladder located an edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchLevel {
    /// Level 1: the search text occurs verbatim.
    Exact,
    /// Level 2: it occurs once `\r\n` is read as `\n` on both sides.
    LineEndings,
    /// Level 3: whole lines match with trailing whitespace removed.
    TrailingWhitespace,
    /// Level 4: whole lines match trimmed on both sides (Unicode-aware).
    Trimmed,
    /// The search text was empty: the replacement was appended (or became
    /// the whole of an empty document).
    Append,
}

impl fmt::Display for MatchLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MatchLevel::Exact => "exact",
            MatchLevel::LineEndings => "line-ending-insensitive",
            MatchLevel::TrailingWhitespace => "trailing-whitespace-insensitive",
            MatchLevel::Trimmed => "trimmed-line",
            MatchLevel::Append => "append",
        })
    }
}

/// How one edit was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EditReport {
    /// The ladder level that located the edit.
    pub level: MatchLevel,
    /// 1-based line where the edit applied, in the text it was applied to.
    pub line: usize,
}

/// The outcome of a successful [`apply_edits`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// The edited text.
    pub text: String,
    /// One report per edit, in order.
    pub reports: Vec<EditReport>,
}

/// Applies `edits` to `text` in order, each on the previous result.
///
/// Atomic: if any edit fails, the error names it (`index`) and no text is
/// returned. The replacement's line endings follow the document (CRLF when
/// the input has any `\r\n`).
///
/// ```
/// use atelier_agent::adit::{apply_edits, Edit, MatchLevel};
/// let doc = "\u{3000}吾輩は猫である。\n名前はまだ無い。\n";
/// let edits = [Edit::new("吾輩は猫である。\n", "吾輩は犬である。\n")];
/// let applied = apply_edits(doc, &edits).unwrap();
/// assert_eq!(applied.text, "\u{3000}吾輩は犬である。\n名前はまだ無い。\n");
/// assert_eq!(applied.reports[0].level, MatchLevel::Trimmed);
/// ```
pub fn apply_edits(text: &str, edits: &[Edit]) -> Result<Applied> {
    let crlf = memmem::find(text.as_bytes(), b"\r\n").is_some();
    let mut doc = text.to_owned();
    let mut reports = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        let splice = locate(&doc, edit, crlf).map_err(|miss| miss.into_error(index))?;
        reports.push(EditReport { level: splice.level, line: splice.line });
        doc.replace_range(splice.range, &splice.replacement);
    }
    Ok(Applied { text: doc, reports })
}

/// Where and what to write for one edit.
struct Splice {
    range: Range<usize>,
    replacement: String,
    level: MatchLevel,
    line: usize,
}

/// Why one edit could not be located.
enum Miss {
    NotFound(Option<ClosestRegion>),
    Ambiguous(MatchLevel, Vec<usize>),
}

impl Miss {
    fn into_error(self, index: usize) -> AditError {
        match self {
            Miss::NotFound(closest) => AditError::NoMatch { index, closest },
            Miss::Ambiguous(level, lines) => AditError::Ambiguous { index, level, lines },
        }
    }
}

fn eol(crlf: bool) -> &'static str {
    if crlf {
        "\r\n"
    } else {
        "\n"
    }
}

fn locate(doc: &str, edit: &Edit, crlf: bool) -> std::result::Result<Splice, Miss> {
    let search = edit.search.as_str();
    if search.is_empty() {
        return Ok(append(doc, &edit.replace, crlf));
    }

    // Level 1: verbatim.
    let hits = find_all(doc, search);
    if let Some(start) = single_hit(doc, &hits, MatchLevel::Exact)? {
        return Ok(Splice {
            range: start..start + search.len(),
            replacement: with_line_endings(&edit.replace, crlf),
            level: MatchLevel::Exact,
            line: line_number(doc, start),
        });
    }

    // Level 2: CRLF read as LF on both sides (only when that changes anything).
    let doc_crlf = memmem::find(doc.as_bytes(), b"\r\n").is_some();
    if doc_crlf || search.contains("\r\n") {
        let norm_doc = LfView::new(doc);
        let norm_search = search.replace("\r\n", "\n");
        let hits = find_all(&norm_doc.text, &norm_search);
        if let Some(start) = single_hit(&norm_doc.text, &hits, MatchLevel::LineEndings)? {
            let range = norm_doc.original(start)..norm_doc.original(start + norm_search.len());
            return Ok(Splice {
                line: line_number(doc, range.start),
                range,
                replacement: with_line_endings(&edit.replace, crlf),
                level: MatchLevel::LineEndings,
            });
        }
    }

    // Levels 3 and 4: whole lines, compared loosely.
    let search_lines = split_lines(search);
    let Some(anchor_index) = search_lines.iter().position(|l| !is_blank(l)) else {
        return Err(Miss::NotFound(None));
    };
    let pass = LinePass::run(doc, &search_lines, anchor_index);
    for (level, windows) in [(MatchLevel::TrailingWhitespace, &pass.trailing), (MatchLevel::Trimmed, &pass.trimmed)] {
        match windows.as_slice() {
            [] => continue,
            [window] => {
                return Ok(line_splice(
                    doc,
                    window,
                    &search_lines,
                    anchor_index,
                    search.ends_with('\n'),
                    &edit.replace,
                    crlf,
                    level,
                ))
            }
            many => {
                let lines = many.iter().take(MAX_LISTED_CANDIDATES).map(|w| line_number(doc, w.first.start)).collect();
                return Err(Miss::Ambiguous(level, lines));
            }
        }
    }
    Err(Miss::NotFound(closest_region(doc, &search_lines, anchor_index, &pass.anchor_lines)))
}

/// Every start of `needle` in `hay`, overlapping ones included; a needle that
/// ends in `\n` is a run of whole lines and only counts at a line start.
fn find_all(hay: &str, needle: &str) -> Vec<usize> {
    let whole_lines = needle.ends_with('\n');
    let finder = memmem::Finder::new(needle.as_bytes());
    let bytes = hay.as_bytes();
    let mut hits = Vec::new();
    let mut from = 0;
    while let Some(off) = finder.find(&bytes[from..]) {
        let at = from + off;
        if !whole_lines || at == 0 || bytes[at - 1] == b'\n' {
            hits.push(at);
            if hits.len() > MAX_LISTED_CANDIDATES {
                break;
            }
        }
        from = at + 1;
    }
    hits
}

/// `Ok(Some)` for exactly one hit, `Ok(None)` for none, and the ambiguity otherwise.
fn single_hit(doc: &str, hits: &[usize], level: MatchLevel) -> std::result::Result<Option<usize>, Miss> {
    match hits {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        many => Err(Miss::Ambiguous(
            level,
            many.iter().take(MAX_LISTED_CANDIDATES).map(|&at| line_number(doc, at)).collect(),
        )),
    }
}

/// A document with every `\r\n` read as `\n`, mapping offsets back.
struct LfView {
    text: String,
    /// Offsets (in `text`) of the `\n`s that had a `\r` before them.
    dropped: Vec<usize>,
}

impl LfView {
    fn new(doc: &str) -> LfView {
        let mut text = String::with_capacity(doc.len());
        let mut dropped = Vec::new();
        let mut rest = doc;
        while let Some(at) = memmem::find(rest.as_bytes(), b"\r\n") {
            text.push_str(&rest[..at]);
            dropped.push(text.len());
            text.push('\n');
            rest = &rest[at + 2..];
        }
        text.push_str(rest);
        LfView { text, dropped }
    }

    /// The offset in the original document of offset `at` of the view.
    fn original(&self, at: usize) -> usize {
        at + self.dropped.partition_point(|&p| p < at)
    }
}

/// A run of document lines compared with the search lines.
#[derive(Debug, Clone, Copy)]
struct Window {
    first: Line,
    last: Line,
    /// The document line aligned with the search's anchor (first non-blank) line.
    anchor: Line,
}

/// The outcome of scanning the document for levels 3 and 4 at once (a level-3
/// match is always a level-4 match, so one scan serves both).
struct LinePass {
    trailing: Vec<Window>,
    trimmed: Vec<Window>,
    /// Document lines where the anchor occurred (for the closest region).
    anchor_lines: Vec<Line>,
}

impl LinePass {
    fn run(doc: &str, search_lines: &[&str], anchor_index: usize) -> LinePass {
        let anchor_full = search_lines[anchor_index].trim();
        let anchor = prefix_on_char_boundary(anchor_full, ANCHOR_BYTES);
        let mut pass = LinePass { trailing: Vec::new(), trimmed: Vec::new(), anchor_lines: Vec::new() };
        let mut checked_until = 0;
        for hit in memmem::find_iter(doc.as_bytes(), anchor.as_bytes()) {
            if hit < checked_until {
                continue;
            }
            let line = Line::containing(doc, hit);
            checked_until = line.end.max(hit + 1);
            if pass.anchor_lines.len() < MAX_SCORED_HITS {
                pass.anchor_lines.push(line);
            }
            if line.content(doc).trim() != anchor_full {
                continue;
            }
            let Some(first) = walk_back(doc, line, anchor_index) else {
                continue;
            };
            let (trailing, trimmed, last) = compare_window(doc, first, search_lines);
            let window = Window { first, last, anchor: line };
            if trailing {
                pass.trailing.push(window);
            }
            if trimmed {
                pass.trimmed.push(window);
            }
        }
        pass
    }
}

fn walk_back(doc: &str, mut line: Line, steps: usize) -> Option<Line> {
    for _ in 0..steps {
        line = line.prev(doc)?;
    }
    Some(line)
}

/// Compares the document lines from `first` with `search_lines`: whether they
/// match at level 3, at level 4, and the last document line compared.
fn compare_window(doc: &str, first: Line, search_lines: &[&str]) -> (bool, bool, Line) {
    let (mut trailing, mut trimmed) = (true, true);
    let mut line = first;
    for (k, wanted) in search_lines.iter().enumerate() {
        if k > 0 {
            match line.next(doc) {
                Some(next) => line = next,
                None => return (false, false, line),
            }
        }
        let have = line.content(doc);
        trailing &= have.trim_end() == wanted.trim_end();
        trimmed &= trailing || have.trim() == wanted.trim();
        if !trimmed {
            return (false, false, line);
        }
    }
    (trailing, trimmed, line)
}

/// Builds the splice for a line-level match: the replacement is re-based from
/// the search's indentation to the document's, blank lines are kept as they
/// are, and line endings follow the document.
#[allow(clippy::too_many_arguments)]
fn line_splice(
    doc: &str,
    window: &Window,
    search_lines: &[&str],
    anchor_index: usize,
    search_ends_in_newline: bool,
    replace: &str,
    crlf: bool,
    level: MatchLevel,
) -> Splice {
    let from_indent = indent_of(search_lines[anchor_index]);
    let to_indent = indent_of(window.anchor.content(doc));
    let newline = eol(crlf);
    let no_final_newline = search_ends_in_newline && !window.last.has_terminator();

    let mut range = window.first.start..if search_ends_in_newline { window.last.end } else { window.last.content_end };
    let replace_lines = split_lines(replace);
    let doc_lines = window_lines(doc, window, search_lines.len());
    // When the document's lines are not one uniform shift of the search's
    // (Japanese prose: narration opens with U+3000, dialogue with none, and
    // a model drops the U+3000), each replaced line keeps the indentation of
    // the line it replaces; only added lines take the uniform shift.
    let pairs =
        (!uniform_shift(search_lines, &doc_lines, from_indent, to_indent)).then(|| align(search_lines, &replace_lines));
    let mut replacement = String::with_capacity(replace.len() + 16);
    for (i, line) in replace_lines.iter().enumerate() {
        if i > 0 {
            replacement.push_str(newline);
        }
        match pairs.as_ref().and_then(|p| p[i]) {
            Some(k) => replacement.push_str(&reindent(line, indent_of(search_lines[k]), indent_of(doc_lines[k]))),
            None => replacement.push_str(&rebase(line, from_indent, to_indent)),
        }
    }
    let keeps_newline = if search_ends_in_newline { !no_final_newline } else { replace.ends_with('\n') };
    if !replace_lines.is_empty() && keeps_newline {
        replacement.push_str(newline);
    }
    // Deleting the last lines of a document with no final newline: take the
    // newline before them too, so the document still ends without one.
    if replacement.is_empty() && no_final_newline {
        if let Some(prev) = window.first.prev(doc) {
            range.start = prev.content_end;
        }
    }
    Splice { line: line_number(doc, window.first.start), range, replacement, level }
}

/// The `count` document lines of a window, from its first.
fn window_lines<'d>(doc: &'d str, window: &Window, count: usize) -> Vec<&'d str> {
    let mut lines = Vec::with_capacity(count);
    let mut line = Some(window.first);
    while let Some(current) = line.filter(|_| lines.len() < count) {
        lines.push(current.content(doc));
        line = current.next(doc);
    }
    lines
}

/// Whether re-basing every non-blank search line from the anchor's
/// indentation gives the matched document line's indentation.
fn uniform_shift(search_lines: &[&str], doc_lines: &[&str], from: &str, to: &str) -> bool {
    search_lines
        .iter()
        .zip(doc_lines)
        .all(|(s, d)| is_blank(s) || is_blank(d) || indent_of(&rebase(s, from, to)) == indent_of(d))
}

/// Pairs each replacement line with the search line it replaces: equal
/// lines (ignoring indentation) by their longest common subsequence, the
/// lines between two such pairs by position; `None` for an added line.
fn align(search: &[&str], replace: &[&str]) -> Vec<Option<usize>> {
    let (n, m) = (search.len(), replace.len());
    if n.saturating_mul(m) > 250_000 {
        return (0..m).map(|i| (i < n).then_some(i)).collect();
    }
    let same = |i: usize, j: usize| search[i].trim() == replace[j].trim();
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] =
                if same(i, j) { lcs[at(i + 1, j + 1)] + 1 } else { lcs[at(i + 1, j)].max(lcs[at(i, j + 1)]) };
        }
    }
    let mut pairs = vec![None; m];
    let (mut gap_search, mut gap_replace) = (Vec::new(), Vec::new());
    let flush = |gs: &mut Vec<usize>, gr: &mut Vec<usize>, pairs: &mut Vec<Option<usize>>| {
        for (k, j) in gs.iter().zip(gr.iter()) {
            pairs[*j] = Some(*k);
        }
        gs.clear();
        gr.clear();
    };
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if same(i, j) {
            flush(&mut gap_search, &mut gap_replace, &mut pairs);
            pairs[j] = Some(i);
            i += 1;
            j += 1;
        } else if lcs[at(i + 1, j)] >= lcs[at(i, j + 1)] {
            gap_search.push(i);
            i += 1;
        } else {
            gap_replace.push(j);
            j += 1;
        }
    }
    gap_search.extend(i..n);
    gap_replace.extend(j..m);
    flush(&mut gap_search, &mut gap_replace, &mut pairs);
    pairs
}

/// One replacement line given the indentation of the document line it
/// replaces: the search line's indentation becomes the document line's,
/// and indentation the model added beyond it is kept.
fn reindent(line: &str, search_indent: &str, doc_indent: &str) -> String {
    if is_blank(line) {
        return line.to_owned();
    }
    let own = indent_of(line);
    let body = &line[own.len()..];
    match own.strip_prefix(search_indent) {
        Some(extra) => format!("{doc_indent}{extra}{body}"),
        None => format!("{doc_indent}{body}"),
    }
}

/// Moves one replacement line from the search's indentation to the document's,
/// keeping its indentation relative to the search's anchor line.
fn rebase(line: &str, from: &str, to: &str) -> String {
    if is_blank(line) || from == to {
        return line.to_owned();
    }
    if let Some(rest) = line.strip_prefix(from) {
        return format!("{to}{rest}");
    }
    let own = indent_of(line);
    if let Some(outdent) = from.strip_prefix(own) {
        // The line sits left of the anchor: keep that distance if the
        // document's indentation has room for it.
        let body = line.trim_start();
        return match to.strip_suffix(outdent) {
            Some(base) => format!("{base}{body}"),
            None => body.to_owned(),
        };
    }
    line.to_owned()
}

/// Empty search: the replacement becomes an empty document's content or is
/// appended on a line of its own.
fn append(doc: &str, replace: &str, crlf: bool) -> Splice {
    let mut replacement = String::new();
    if !doc.is_empty() && !doc.ends_with('\n') {
        replacement.push_str(eol(crlf));
    }
    replacement.push_str(&with_line_endings(replace, crlf));
    let line = if doc.is_empty() { 1 } else { line_number(doc, doc.len()) + usize::from(!doc.ends_with('\n')) };
    Splice { range: doc.len()..doc.len(), replacement, level: MatchLevel::Append, line }
}

/// Finds the document region that looks most like the search lines: anchored
/// on where the search's first lines (or their ends) occur, scored by how much
/// of each aligned line agrees.
fn closest_region(
    doc: &str,
    search_lines: &[&str],
    anchor_index: usize,
    anchor_lines: &[Line],
) -> Option<ClosestRegion> {
    let mut candidates: Vec<(usize, Line)> = anchor_lines.iter().map(|l| (anchor_index, *l)).collect();
    if candidates.is_empty() {
        let anchors =
            search_lines.iter().enumerate().filter(|(_, l)| !is_blank(l)).take(MAX_ANCHOR_LINES).flat_map(|(j, l)| {
                let t = l.trim();
                // At most half the line, so a line that differs anywhere but
                // at both ends still yields an anchor that occurs.
                let len = REGION_ANCHOR_BYTES.min(t.len().div_ceil(2));
                let head = prefix_on_char_boundary(t, len);
                let tail = suffix_on_char_boundary(t, len);
                [(j, head), (j, tail)]
            });
        for (j, anchor) in anchors.filter(|(_, a)| !a.is_empty()) {
            let mut checked_until = 0;
            for hit in memmem::find_iter(doc.as_bytes(), anchor.as_bytes()) {
                if hit < checked_until {
                    continue;
                }
                let line = Line::containing(doc, hit);
                checked_until = line.end.max(hit + 1);
                candidates.push((j, line));
                if candidates.len() >= MAX_SCORED_HITS {
                    break;
                }
            }
            if !candidates.is_empty() {
                break;
            }
        }
    }

    let mut best: Option<(usize, Line, Line)> = None;
    for (j, line) in candidates {
        let mut first = line;
        for _ in 0..j {
            match first.prev(doc) {
                Some(prev) => first = prev,
                None => break,
            }
        }
        let mut score = 0;
        let mut cur = first;
        let mut last = first;
        for (k, wanted) in search_lines.iter().enumerate() {
            if k > 0 {
                match cur.next(doc) {
                    Some(next) => cur = next,
                    None => break,
                }
            }
            score += agreement(cur.content(doc).trim(), wanted.trim());
            last = cur;
        }
        if best.as_ref().is_none_or(|(s, _, _)| score > *s) {
            best = Some((score, first, last));
        }
    }
    best.map(|(_, first, last)| ClosestRegion {
        start_line: line_number(doc, first.start),
        end_line: line_number(doc, last.start),
        text: prefix_on_char_boundary(&doc[first.start..last.content_end], ClosestRegion::MAX_BYTES).to_owned(),
    })
}

/// Bytes two lines share at their start plus at their end (bounded by the
/// shorter one): cheap, and it rewards a line that differs only in the middle.
fn agreement(a: &str, b: &str) -> usize {
    let head = a.char_indices().zip(b.chars()).find(|((_, x), y)| x != y).map_or(a.len().min(b.len()), |((i, _), _)| i);
    let tail =
        a.chars().rev().zip(b.chars().rev()).take_while(|(x, y)| x == y).map(|(x, _)| x.len_utf8()).sum::<usize>();
    (head + tail).min(a.len().min(b.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lf_view_maps_offsets_back() {
        let view = LfView::new("ab\r\ncd\r\n");
        assert_eq!(view.text, "ab\ncd\n");
        assert_eq!(view.original(0), 0);
        assert_eq!(view.original(2), 2); // before the first \r
        assert_eq!(view.original(3), 4); // after the first \r\n
        assert_eq!(view.original(6), 8);
    }

    #[test]
    fn find_all_counts_overlapping_hits() {
        assert_eq!(find_all("aaa", "aa"), vec![0, 1]);
        assert_eq!(find_all("x\nab\nab\n", "ab\n"), vec![2, 5]);
        assert_eq!(find_all("xab\n", "ab\n"), Vec::<usize>::new());
    }

    #[test]
    fn rebase_keeps_relative_indentation() {
        assert_eq!(rebase("  b", "", "\t"), "\t  b");
        assert_eq!(rebase("    x", "    ", "\t"), "\tx");
        assert_eq!(rebase("x", "    ", "\t\t"), "x");
        assert_eq!(rebase("x", "\t\t", "\t\t\t"), "\tx");
        assert_eq!(rebase("", "  ", "\t"), "");
    }

    #[test]
    fn agreement_scores_shared_ends() {
        assert_eq!(agreement("hello world", "hello there world"), 11);
        assert_eq!(agreement("abc", "xyz"), 0);
    }
}
