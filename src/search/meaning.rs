//! Search by meaning, beside the words: when the proxy has an embedding
//! model, each document is cut into passages, each passage gets a vector
//! (computed in the background and cached in IndexedDB by
//! `src/wasm/js/meaning.js`, never on a write's path), and a query's vector
//! ranks the documents by their closest passage. This module is the part
//! that needs no browser: the passages of a text, and the fusion of the two
//! rankings (reciprocal rank fusion, which needs no common scale between a
//! BM25 score and a cosine).

/// Characters a passage holds at most; it ends early at a line or sentence
/// end in its last third.
pub const PASSAGE_CHARS: usize = 480;
/// Passages of one document embedded at most (about 30,000 characters: a
/// long chapter; a 1 MB web page kept as an artifact is found by the meaning
/// of its beginning and by all of its words).
pub const MAX_PASSAGES: usize = 64;
/// Reciprocal rank fusion's constant (the usual 60): a document's fused
/// score is the sum of `1 / (K + rank)` over the lists it is in.
const K: f64 = 60.0;

/// The passages of `body`, as byte ranges that tile it, cut as they are
/// asked for (a hit needs one passage, the embedder the first few).
pub fn passages(body: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= body.len() {
            return None;
        }
        let rest = &body[start..];
        let Some((hard, _)) = rest.char_indices().nth(PASSAGE_CHARS) else {
            let last = (start, body.len());
            start = body.len();
            return Some(last);
        };
        // The last line or sentence end after two thirds of the passage.
        let soft = rest.char_indices().nth(PASSAGE_CHARS * 2 / 3).map_or(0, |(i, _)| i);
        let end = rest[soft..hard]
            .char_indices()
            .rfind(|(_, c)| matches!(c, '\n' | '。' | '.' | '!' | '?' | '！' | '？' | '」'))
            .map_or(hard, |(i, c)| soft + i + c.len_utf8());
        let passage = (start, start + end);
        start += end;
        Some(passage)
    })
}

/// What the meaning ranking found: documents by key with their closest
/// passage, best first (one entry a document).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranked {
    pub keys: Vec<String>,
    pub passages: Vec<u32>,
}

/// A document's share of the fused score for its `rank` (from 0) in one list.
pub fn rrf(rank: usize) -> f64 {
    1.0 / (K + rank as f64)
}
