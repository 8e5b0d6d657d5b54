//! A light English stemmer: the word forms a reader expects one search to
//! find (sail, sails, sailed, sailing; lighthouse, lighthouses; keeper's),
//! not a linguist's roots. Index and query go through the same rules, so a
//! stem only has to be consistent, never a real word. Words other than
//! lower-case ASCII letters are left as they are.

use std::borrow::Cow;

fn vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// The stem of `word` (already in lower case).
pub fn stem(word: &str) -> Cow<'_, str> {
    let bytes = word.as_bytes();
    if bytes.len() <= 3 || !bytes.iter().all(|b| b.is_ascii_lowercase() || *b == b'\'') {
        return Cow::Borrowed(word);
    }
    let mut w = word.strip_suffix("'s").unwrap_or(word);
    if w.contains('\'') {
        return Cow::Borrowed(w);
    }
    let has_vowel = |s: &str| s.bytes().any(vowel);
    let mut suffix_gone = false;
    // Plurals.
    if let Some(s) = w.strip_suffix("ies").filter(|s| s.len() >= 2) {
        return Cow::Owned(format!("{s}y"));
    } else if let Some(s) = w.strip_suffix("sses") {
        w = &w[..s.len() + 2];
    } else if let Some(s) =
        w.strip_suffix("es").filter(|s| s.ends_with(['s', 'x', 'z']) || s.ends_with("ch") || s.ends_with("sh"))
    {
        w = s;
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w = &w[..w.len() - 1];
    }
    // Past and progressive forms.
    if let Some(s) = w.strip_suffix("ied").filter(|s| s.len() >= 2) {
        return Cow::Owned(format!("{s}y"));
    }
    for suffix in ["ing", "ed"] {
        if let Some(s) = w.strip_suffix(suffix).filter(|s| s.len() >= 3 && has_vowel(s)) {
            w = s;
            suffix_gone = true;
            break;
        }
    }
    let b = w.as_bytes();
    let n = b.len();
    if suffix_gone && n >= 4 && b[n - 1] == b[n - 2] && !vowel(b[n - 1]) && !matches!(b[n - 1], b'l' | b's' | b'z') {
        // running → run, stopped → stop
        w = &w[..n - 1];
    } else if !suffix_gone && n > 3 && b[n - 1] == b'e' {
        // make, making → mak; lighthouse, lighthouses → lighthous
        w = &w[..n - 1];
    }
    Cow::Borrowed(w)
}

#[cfg(test)]
mod tests {
    #[test]
    fn word_forms_a_reader_expects_share_a_stem() {
        let groups: &[&[&str]] = &[
            &["sail", "sails", "sailed", "sailing", "sail's"],
            &["lighthouse", "lighthouses"],
            &["keeper", "keepers", "keeper's"],
            &["run", "runs", "running"],
            &["stop", "stops", "stopped", "stopping"],
            &["make", "makes", "making"],
            &["story", "stories"],
            &["carry", "carried", "carries"],
            &["box", "boxes"],
            &["church", "churches"],
            &["compass", "compasses"],
            &["fall", "falls", "falling"],
        ];
        for group in groups {
            let stems: Vec<_> = group.iter().map(|w| super::stem(w)).collect();
            assert!(stems.iter().all(|s| *s == stems[0]), "{group:?} → {stems:?}");
        }
        let apart: &[(&str, &str)] = &[("harbour", "harp"), ("bus", "bu"), ("this", "thi"), ("sing", "s")];
        for (a, b) in apart {
            assert_ne!(super::stem(a), super::stem(b), "{a} {b}");
        }
        for short in ["the", "a", "is", "was"] {
            assert_eq!(super::stem(short), short);
        }
    }
}
