//! The in-memory inverted index: every document's words in order (term ids,
//! with where each word stands in the original text) and, per term, the
//! positions where it occurs. Built from a document's text and its
//! [`Breaks`] alone, so a document is segmented once (the breaks are kept in
//! storage) and indexed again on any page load in a few milliseconds.
//!
//! Matching (see [`Index::search`]): a word of letters or digits matches the
//! same stem; a run of Japanese (or another script written without spaces)
//! matches where the same characters stand in a document *starting and
//! ending on the document's word boundaries* — so 京都 is found in 京都へ
//! but not in 東京都 (東京|都), whatever the segmenter made of the query.
//! Ranking is BM25 (k1 1.2, b 0.75; a title occurrence counts twice), times
//! a proximity boost when the query has several parts (up to ×2 when they
//! stand side by side, in any order).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::text::{tokenize, Breaks, Word};
use super::{meaning, Hit, Kind, Query, Scope};

/// A fast hash for the index's many short keys (the FxHash mix): std's
/// SipHash took a third of the time of indexing a chapter.
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The one map type of the search code (term, document and queue keys).
pub type Keys = HashMap<Box<str>, u32, BuildHasherDefault<Fx>>;

/// Set on a word that follows something other than a word (space, punctuation).
const GAP: u32 = 1 << 31;
const TERM: u32 = !GAP;

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Characters of context shown before a hit; a snippet's length in characters.
const SNIPPET_BEFORE: usize = 40;
const SNIPPET_CHARS: usize = 160;

/// A document as given to the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// Unique over every kind (`store/id`).
    pub key: String,
    pub kind: Kind,
    pub id: String,
    pub title: String,
    pub body: String,
    pub project: Option<String>,
    pub session: Option<String>,
    /// Fingerprint of `title` and `body` (what the breaks were computed on).
    pub hash: u64,
}

/// The fingerprint a [`Doc`] carries: FNV-1a over the title, a NUL and the
/// body, cut to 53 bits (stored as a JS number, exactly).
pub fn text_hash(title: &str, body: &str) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for b in title.bytes().chain([0]).chain(body.bytes()) {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash & ((1 << 53) - 1)
}

struct Indexed {
    doc: Doc,
    /// Term ids in text order, [`GAP`]-flagged; the title's words first.
    words: Vec<u32>,
    /// Byte range of each word in the title (the first `title_words`) or the body.
    spans: Vec<(u32, u32)>,
    title_words: u32,
}

/// The inverted index (see the module documentation).
#[derive(Default)]
pub struct Index {
    terms: Keys,
    names: Vec<Box<str>>,
    /// Per term: (document slot, word position), a document's together.
    postings: Vec<Vec<(u32, u32)>>,
    docs: Vec<Option<Indexed>>,
    slots: Keys,
    free: Vec<u32>,
    words_total: u64,
    /// Documents added or removed so far (what changed since a count was taken).
    edits: u64,
}

/// Where a query part occurs in one document: word positions `[start, end)`.
type Occurrence = (u32, u32, u32);

impl Index {
    pub fn new() -> Index {
        Index::default()
    }

    /// Documents added or removed since the index was made.
    pub fn edits(&self) -> u64 {
        self.edits
    }

    /// Documents indexed.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The fingerprint of the indexed version of `key`.
    pub fn hash_of(&self, key: &str) -> Option<u64> {
        let slot = *self.slots.get(key)?;
        self.docs[slot as usize].as_ref().map(|d| d.doc.hash)
    }

    /// Indexes `doc` (replacing any document with its key), its dictionary
    /// runs cut by `breaks`.
    pub fn add(&mut self, doc: Doc, breaks: &Breaks) {
        self.remove(&doc.key);
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.docs.push(None);
                (self.docs.len() - 1) as u32
            }
        };
        let mut words = Vec::new();
        let mut spans = Vec::new();
        let mut run_char = 0;
        let mut title_words = 0;
        for (part, text) in [doc.title.as_str(), doc.body.as_str()].into_iter().enumerate() {
            let mut first = true;
            let mut emit = |w: Word| {
                let id = match self.terms.get(w.term) {
                    Some(id) => *id,
                    None => {
                        let id = self.names.len() as u32;
                        self.names.push(w.term.into());
                        self.terms.insert(w.term.into(), id);
                        self.postings.push(Vec::new());
                        id
                    }
                };
                self.postings[id as usize].push((slot, words.len() as u32));
                words.push(id | if w.after_gap || first { GAP } else { 0 });
                spans.push((w.start as u32, w.end as u32));
                first = false;
            };
            tokenize(text, breaks, &mut run_char, &mut emit);
            if part == 0 {
                title_words = words.len() as u32;
            }
        }
        self.words_total += words.len() as u64;
        self.edits += 1;
        self.slots.insert(doc.key.as_str().into(), slot);
        self.docs[slot as usize] = Some(Indexed { doc, words, spans, title_words });
    }

    /// Drops the document `key`, if indexed.
    pub fn remove(&mut self, key: &str) -> bool {
        let Some(slot) = self.slots.remove(key) else { return false };
        let Some(gone) = self.docs[slot as usize].take() else { return false };
        // Each of its terms once (a bit per term, not a sort of its words).
        let mut seen = vec![0u64; self.names.len().div_ceil(64)];
        for word in &gone.words {
            let term = (word & TERM) as usize;
            if seen[term / 64] & 1 << (term % 64) == 0 {
                seen[term / 64] |= 1 << (term % 64);
                self.postings[term].retain(|(s, _)| *s != slot);
            }
        }
        self.words_total -= gone.words.len() as u64;
        self.edits += 1;
        self.free.push(slot);
        true
    }

    /// Where a run of dictionary characters stands on word boundaries: it
    /// starts with a whole word (one of the terms `run` begins with) and the
    /// words after it, with no gap, spell the rest exactly.
    fn run_occurrences(&self, run: &str, out: &mut Vec<Occurrence>) {
        let ends = run.char_indices().skip(1).map(|(i, _)| i).chain([run.len()]);
        for prefix_end in ends {
            let Some(&term) = self.terms.get(&run[..prefix_end]) else { continue };
            for &(slot, pos) in &self.postings[term as usize] {
                let Some(doc) = &self.docs[slot as usize] else { continue };
                let (mut at, mut next) = (prefix_end, pos as usize + 1);
                while at < run.len() {
                    let Some(&word) = doc.words.get(next).filter(|w| *w & GAP == 0) else { break };
                    let name = &self.names[(word & TERM) as usize];
                    if !run[at..].starts_with(&**name) {
                        break;
                    }
                    at += name.len();
                    next += 1;
                }
                if at == run.len() {
                    out.push((slot, pos, next as u32));
                }
            }
        }
    }

    fn occurrences(&self, part: &super::Part) -> Vec<Occurrence> {
        let mut out = Vec::new();
        if part.dictionary {
            self.run_occurrences(&part.text, &mut out);
        } else if let Some(&term) = self.terms.get(part.text.as_str()) {
            out.extend(self.postings[term as usize].iter().map(|&(slot, pos)| (slot, pos, pos + 1)));
        }
        // By document: a run's prefixes come one after the other, and a
        // term's list is in the order written (a slot used again comes last).
        if !out.is_sorted() {
            out.sort_unstable();
        }
        out
    }

    /// The documents `scope` admits that hold every part of `query`, best
    /// first, at most `limit`; with a `meaning` ranking of the query, the
    /// two rankings fused (see [`meaning`]).
    pub fn search(&self, query: &Query, scope: &Scope, limit: usize, meaning: Option<&meaning::Ranked>) -> Vec<Hit> {
        if query.parts.is_empty() || self.is_empty() {
            return Vec::new();
        }
        let lists: Vec<Vec<Occurrence>> = query.parts.iter().map(|p| self.occurrences(p)).collect();
        let n = self.len() as f64;
        let avg = (self.words_total as f64 / n).max(1.0);
        // Per part: documents holding it (a document's occurrences are adjacent, sorted by slot).
        let doc_runs: Vec<Vec<(u32, &[Occurrence])>> = lists.iter().map(|l| by_document(l)).collect();
        let Some(rarest) = (0..doc_runs.len()).min_by_key(|i| doc_runs[*i].len()) else { return Vec::new() };
        let mut scored: Vec<(f64, u32)> = Vec::new();
        'docs: for (slot, _) in &doc_runs[rarest] {
            let Some(doc) = &self.docs[*slot as usize] else { continue };
            if !scope.admits(&doc.doc) {
                continue;
            }
            let mut score = 0.0;
            let mut found: Vec<&[Occurrence]> = Vec::with_capacity(doc_runs.len());
            for runs in &doc_runs {
                let Some(occurrences) = in_document(runs, *slot) else { continue 'docs };
                let df = runs.len() as f64;
                let idf = ln(1.0 + (n - df + 0.5) / (df + 0.5));
                let tf: f64 = occurrences.iter().map(|o| if o.1 < doc.title_words { 2.0 } else { 1.0 }).sum();
                let dl = doc.words.len() as f64;
                score += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avg));
                found.push(occurrences);
            }
            if found.len() > 1 {
                score *= 1.0 + 1.0 / (1.0 + closest(&found).1 as f64);
            }
            scored.push((score, *slot));
        }
        // Ties go by key, so an order survives a reload (slots do not).
        let key = |slot: u32| self.docs[slot as usize].as_ref().map(|d| d.doc.key.as_str());
        crate::store::order::sort_by(&mut scored, |a, b| b.0.total_cmp(&a.0).then_with(|| key(a.1).cmp(&key(b.1))));
        scored.truncate(limit);
        // (score, slot, the passage of a document found by meaning only)
        let mut ranked: Vec<(f64, u32, Option<u32>)> = scored.into_iter().map(|(s, slot)| (s, slot, None)).collect();
        if let Some(meaning) = meaning {
            for (rank, found) in ranked.iter_mut().enumerate() {
                found.0 = meaning::rrf(rank);
            }
            let admitted = meaning.keys.iter().zip(&meaning.passages).filter_map(|(key, passage)| {
                let slot = *self.slots.get(key.as_str())?;
                scope.admits(&self.docs[slot as usize].as_ref()?.doc).then_some((slot, *passage))
            });
            for (rank, (slot, passage)) in admitted.take(limit).enumerate() {
                match ranked.iter_mut().find(|r| r.1 == slot) {
                    Some(found) => found.0 += meaning::rrf(rank),
                    None => ranked.push((meaning::rrf(rank), slot, Some(passage))),
                }
            }
            // Stable: at equal scores the words' order stands.
            crate::store::order::sort_by(&mut ranked, |a, b| b.0.total_cmp(&a.0));
            ranked.truncate(limit);
        }
        ranked
            .into_iter()
            .filter_map(|(score, slot, passage)| match passage {
                None => self.hit(slot, score, &doc_runs),
                Some(passage) => {
                    let doc = &self.docs[slot as usize].as_ref()?.doc;
                    let at = meaning::passages(&doc.body).nth(passage as usize);
                    Some(Hit { by_meaning: true, ..hit_at(doc, score, at, 0) })
                }
            })
            .collect()
    }

    fn hit(&self, slot: u32, score: f64, doc_runs: &[Vec<(u32, &[Occurrence])>]) -> Option<Hit> {
        let doc = self.docs[slot as usize].as_ref()?;
        let found: Vec<&[Occurrence]> = doc_runs
            .iter()
            .filter_map(|runs| in_document(runs, slot))
            .map(|occ| {
                // Body occurrences only (offsets are the body's).
                let from = occ.partition_point(|o| o.1 < doc.title_words);
                &occ[from..]
            })
            .collect();
        let in_body = found.iter().all(|o| !o.is_empty());
        let (window, _) = if in_body { closest(&found) } else { ((0, 0), 0) };
        if in_body {
            let (from, to) = (doc.spans[window.0 as usize].0 as usize, doc.spans[window.1 as usize - 1].1 as usize);
            Some(hit_at(&doc.doc, score, Some((from, to)), SNIPPET_BEFORE))
        } else {
            Some(hit_at(&doc.doc, score, None, 0))
        }
    }

    /// The indexed documents' keys and fingerprints.
    pub fn fingerprints(&self) -> impl Iterator<Item = (&str, u64)> {
        self.docs.iter().flatten().map(|d| (d.doc.key.as_str(), d.doc.hash))
    }

    /// The texts of `key`'s passages, as they are embedded (the first with
    /// the title before it).
    pub fn passage_texts(&self, key: &str) -> Option<Vec<String>> {
        let doc = &self.docs[*self.slots.get(key)? as usize].as_ref()?.doc;
        let mut texts: Vec<String> =
            meaning::passages(&doc.body).take(meaning::MAX_PASSAGES).map(|(a, b)| doc.body[a..b].to_owned()).collect();
        match texts.first_mut() {
            Some(first) => first.insert_str(0, &format!("{}\n", doc.title)),
            None => texts.push(doc.title.clone()),
        }
        Some(texts)
    }
}

/// The hit of `doc`, its snippet around the byte range `at` of its body
/// (`before` characters of context), or its beginning.
fn hit_at(doc: &Doc, score: f64, at: Option<(usize, usize)>, before: usize) -> Hit {
    let body = &doc.body;
    let (from, to) = at.unwrap_or_default();
    let start = at.map(|_| utf16_len(&body[..from]));
    Hit {
        kind: doc.kind,
        id: doc.id.clone(),
        title: doc.title.clone(),
        snippet: crate::snippet::around(body, from, to, before, SNIPPET_CHARS),
        score,
        project_id: doc.project.clone(),
        session_id: doc.session.clone(),
        start,
        end: start.map(|s| s + utf16_len(&body[from..to])),
        by_meaning: false,
    }
}

/// The natural logarithm of `x` (> 0) to within 1%, monotonic: enough for a ranking
/// weight: the float's exponent and a cubic for the mantissa (the library's
/// `ln` costs the package more than the whole idf does).
fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as f64 - 1023.0;
    let m = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52)) - 1.0; // [0, 1)
    let log2_m = m * (1.4425449 + m * (-0.7181452 + m * 0.2754177));
    (exponent + log2_m) * std::f64::consts::LN_2
}

/// UTF-16 units of `text`, from its bytes: one per character (every byte
/// that does not continue one), two for a character of four bytes. Eight
/// bytes at a time (a hit's offset counts the text before it: a quarter of
/// a query's time byte by byte).
pub(crate) fn utf16_len(text: &str) -> u32 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let bytes = text.as_bytes();
    let mut words = bytes.chunks_exact(8);
    let mut units = 0;
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // A continuation byte is 10xxxxxx; a four-byte lead 11110xxx.
        let continuing = w & !(w << 1) & HIGH;
        let four = w & (w << 1) & (w << 2) & (w << 3) & HIGH;
        units += 8 - continuing.count_ones() + four.count_ones();
    }
    units + words.remainder().iter().map(|&b| u32::from(b & 0xc0 != 0x80) + u32::from(b >= 0xf0)).sum::<u32>()
}

/// The occurrences of one part in the document `slot`.
fn in_document<'a>(runs: &[(u32, &'a [Occurrence])], slot: u32) -> Option<&'a [Occurrence]> {
    runs.binary_search_by_key(&slot, |(s, _)| *s).ok().map(|at| runs[at].1)
}

/// Occurrences grouped by document (they come sorted by slot).
fn by_document(list: &[Occurrence]) -> Vec<(u32, &[Occurrence])> {
    let mut out = Vec::new();
    let mut from = 0;
    for i in 1..=list.len() {
        if i == list.len() || list[i].0 != list[from].0 {
            out.push((list[from].0, &list[from..i]));
            from = i;
        }
    }
    out
}

/// The smallest window of word positions holding one occurrence of every
/// part (`[start, end)`), and how many words in it belong to none of them.
fn closest(parts: &[&[Occurrence]]) -> ((u32, u32), u32) {
    let Some(first) = parts.first().and_then(|p| p.first()) else { return ((0, 0), 0) };
    if parts.len() == 1 {
        return ((first.1, first.2), 0);
    }
    let mut at = vec![0usize; parts.len()];
    let mut best = ((first.1, first.2), u32::MAX);
    loop {
        let (lo, lo_part) = (0..parts.len()).map(|i| (parts[i][at[i]].1, i)).min().unwrap_or((0, 0));
        let hi = (0..parts.len()).map(|i| parts[i][at[i]].2).max().unwrap_or(0);
        let inside: u32 = (0..parts.len()).map(|i| parts[i][at[i]].2 - parts[i][at[i]].1).sum();
        let extra = (hi - lo).saturating_sub(inside);
        if extra < best.1 {
            best = ((lo, hi), extra);
        }
        at[lo_part] += 1;
        if at[lo_part] == parts[lo_part].len() {
            return best;
        }
    }
}
