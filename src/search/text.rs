//! Text as the search index sees it: folded (full-width and half-width
//! forms, the ideographic space, kana voicing marks), cut into words, in
//! lower case, English words reduced to a stem.
//!
//! Words of the scripts written without spaces (Han, kana, Thai, Lao, Khmer,
//! Myanmar: *dictionary runs*) are where the segmenter puts them: the
//! browser's `Intl.Segmenter` in the package, ICU natively
//! (`platform::word_starts`), asked once per document about the document's
//! runs joined by newlines (a run's words do not depend on what surrounds
//! it: checked over the benchmark corpus, none differs). The segmenter's
//! answer is kept as [`Breaks`], one bit per run character, so a document is
//! segmented once and read back from storage after that. Every other word
//! (letters, digits, `don't`, `3.14`, `snake_case`) is found here, by the
//! rules Unicode's word boundaries give those characters (with a compact
//! stand-in for the letter tables: see `word_char`).

/// Whether `c` belongs to a dictionary run: its words are found by the segmenter.
pub fn dictionary(c: char) -> bool {
    matches!(c,
        '\u{3005}'..='\u{3007}' | '\u{3031}'..='\u{3035}' | '\u{303B}' // 々 〆 〇, kana repeat marks
        | '\u{3041}'..='\u{3096}' | '\u{3099}'..='\u{309F}'           // hiragana and voicing marks
        | '\u{30A1}'..='\u{30FA}' | '\u{30FC}'..='\u{30FF}'           // katakana, ー (not the middle dot)
        | '\u{31F0}'..='\u{31FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{3FFFF}' | '\u{1B000}'..='\u{1B16F}'
        | '\u{0E00}'..='\u{0EFF}' | '\u{1000}'..='\u{109F}' | '\u{1780}'..='\u{17FF}')
}

/// A character of a word of letters or digits: ASCII letters, digits and
/// `_`, and every other character outside the dictionary scripts but for the
/// blocks of punctuation, symbols, emoji and private use. (Unicode's
/// Alphabetic and Numeric tables would cost the package 3 KB; this answers
/// the same for the letters, digits and marks of every script.)
fn word_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    !dictionary(c)
        && !matches!(c as u32,
            0x80..=0xBF | 0xD7 | 0xF7                 // Latin-1 controls, punctuation and signs, × ÷
            | 0x2000..=0x2BFF | 0x2E00..=0x2E7F       // punctuation, arrows, maths, shapes, dingbats
            | 0x3000..=0x303F | 0x30FB                // CJK punctuation, the katakana middle dot
            | 0xE000..=0xF8FF | 0xFE00..=0xFE0F       // private use, variation selectors
            | 0xFE30..=0xFE6F | 0xFF00..=0xFF65       // CJK compatibility and small forms, full-width punctuation
            | 0xFFF0..=0xFFFF | 0x1F000..=0x1FAFF | 0xE0000..=0xE007F) // specials, emoji, tags
}

/// Half-width katakana U+FF61..=U+FF9F as their full-width forms (less 0x3000).
const HALF_KANA: [u8; 63] = [
    0x02, 0x0C, 0x0D, 0x01, 0xFB, 0xF2, 0xA1, 0xA3, 0xA5, 0xA7, 0xA9, 0xE3, 0xE5, 0xE7, 0xC3, 0xFC, 0xA2, 0xA4, 0xA6,
    0xA8, 0xAA, 0xAB, 0xAD, 0xAF, 0xB1, 0xB3, 0xB5, 0xB7, 0xB9, 0xBB, 0xBD, 0xBF, 0xC1, 0xC4, 0xC6, 0xC8, 0xCA, 0xCB,
    0xCC, 0xCD, 0xCE, 0xCF, 0xD2, 0xD5, 0xD8, 0xDB, 0xDE, 0xDF, 0xE0, 0xE1, 0xE2, 0xE4, 0xE6, 0xE8, 0xE9, 0xEA, 0xEB,
    0xEC, 0xED, 0xEF, 0xF3, 0x99, 0x9A,
];

/// `c` folded alone: full-width ASCII to ASCII, the ideographic space to a
/// space, half-width katakana to full-width (NFKC does the same to them).
fn fold_char(c: char) -> char {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        '\u{3000}' => ' ',
        '\u{FF61}'..='\u{FF9F}' => char::from_u32(0x3000 + u32::from(HALF_KANA[c as usize - 0xFF61])).unwrap_or(c),
        _ => c,
    }
}

/// The kana `base` with a voicing mark (`'゛'` or `'゜'`, spacing or
/// combining), when that kana has such a form (か゛ → が, ﾊﾟ → パ).
fn voiced(base: char, mark: char) -> Option<char> {
    let semi = matches!(mark, '\u{309A}' | '\u{309C}');
    let hira = match base {
        '\u{30EF}'..='\u{30F2}' if !semi => return char::from_u32(base as u32 + 8), // ワ゛ → ヷ
        '\u{30A1}'..='\u{30F6}' => base as u32 - 0x60,
        '\u{3041}'..='\u{3096}' => base as u32,
        _ => return None,
    };
    let kata = base as u32 != hira;
    let shift = |c: u32| char::from_u32(if kata { c + 0x60 } else { c });
    match hira {
        0x304B..=0x3062 if !semi && (hira - 0x304B) % 2 == 0 => shift(hira + 1),
        0x3064 | 0x3066 | 0x3068 if !semi => shift(hira + 1),
        0x306F..=0x307D if (hira - 0x306F) % 3 == 0 => shift(hira + if semi { 2 } else { 1 }),
        0x3046 if !semi => char::from_u32(if kata { 0x30F4 } else { 0x3094 }),
        _ => None,
    }
}

fn voicing_mark(c: char) -> bool {
    matches!(c, '\u{3099}' | '\u{309A}' | '\u{309B}' | '\u{309C}' | '\u{FF9E}' | '\u{FF9F}')
}

/// The characters of `text` folded, each with the byte range of the
/// original characters it stands for (a kana and its voicing mark fold into one).
pub struct Folded<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Folded<'a> {
    pub fn new(text: &'a str) -> Folded<'a> {
        Folded { text, at: 0 }
    }
}

impl Iterator for Folded<'_> {
    type Item = (char, usize, usize);

    fn next(&mut self) -> Option<(char, usize, usize)> {
        let start = self.at;
        let mut chars = self.text[start..].chars();
        let c = fold_char(chars.next()?);
        self.at += self.text[start..].chars().next().map_or(1, char::len_utf8);
        if let Some(mark) = chars.next().filter(|m| voicing_mark(*m)) {
            let mark = match mark {
                '\u{FF9E}' => '\u{309B}',
                '\u{FF9F}' => '\u{309C}',
                m => m,
            };
            if let Some(v) = voiced(c, mark) {
                self.at += self.text[self.at..].chars().next().map_or(1, char::len_utf8);
                return Some((v, start, self.at));
            }
        }
        Some((c, start, self.at))
    }
}

/// The folded dictionary runs of `text`, each followed by a newline, as the
/// segmenter is asked about them.
pub fn dictionary_runs(text: &str, out: &mut String) {
    let mut in_run = false;
    for (c, _, _) in Folded::new(text) {
        if dictionary(c) {
            out.push(c);
            in_run = true;
        } else if in_run {
            out.push('\n');
            in_run = false;
        }
    }
    if in_run {
        out.push('\n');
    }
}

/// Where words start in the dictionary runs of a document: bit `i` is set
/// when a word starts at the run's `i`-th character (counted over all runs,
/// newlines left out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Breaks {
    bits: Vec<u8>,
    len: usize,
}

/// The alphabet of the stored form: 6 bits a character, none that JSON escapes.
const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl Breaks {
    /// The breaks the segmenter finds in `runs` (as [`dictionary_runs`] writes them).
    pub fn segment(runs: &str) -> Breaks {
        let starts = crate::platform::word_starts(runs);
        let mut breaks = Breaks::default();
        let mut next = starts.into_iter().peekable();
        let mut run_start = true;
        for (offset, c) in runs.char_indices() {
            if c == '\n' {
                run_start = true;
                continue;
            }
            let mut starts_here = run_start;
            while next.next_if(|s| *s <= offset).is_some() {
                starts_here = true;
            }
            breaks.push(starts_here);
            run_start = false;
        }
        breaks
    }

    /// Appends `more` (the breaks of the runs that follow).
    pub fn extend(&mut self, more: &Breaks) {
        for i in 0..more.len {
            self.push(more.starts(i));
        }
    }

    fn push(&mut self, bit: bool) {
        if self.len % 8 == 0 {
            self.bits.push(0);
        }
        if bit {
            self.bits[self.len / 8] |= 1 << (self.len % 8);
        }
        self.len += 1;
    }

    /// Whether a word starts at run character `i` (past the end: yes).
    pub fn starts(&self, i: usize) -> bool {
        i >= self.len || self.bits[i / 8] & (1 << (i % 8)) != 0
    }

    /// Run characters covered.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The stored form: the length, `.`, then the bits 6 to a character.
    pub fn encode(&self) -> String {
        let mut out = self.len.to_string();
        out.push('.');
        let mut acc = 0u32;
        let mut have = 0;
        for byte in &self.bits {
            acc |= u32::from(*byte) << have;
            have += 8;
            while have >= 6 {
                out.push(DIGITS[(acc & 63) as usize] as char);
                acc >>= 6;
                have -= 6;
            }
        }
        if have > 0 {
            out.push(DIGITS[(acc & 63) as usize] as char);
        }
        out
    }

    /// Reads [`Breaks::encode`]'s form back; `None` for anything else.
    pub fn decode(text: &str) -> Option<Breaks> {
        let (len, digits) = text.split_once('.')?;
        let len: usize = len.parse().ok()?;
        let mut bits = Vec::with_capacity(len.div_ceil(8));
        let (mut acc, mut have) = (0u32, 0);
        for d in digits.bytes() {
            let value = match d {
                b'A'..=b'Z' => d - b'A',
                b'a'..=b'z' => d - b'a' + 26,
                b'0'..=b'9' => d - b'0' + 52,
                b'-' => 62,
                b'_' => 63,
                _ => return None,
            };
            acc |= u32::from(value) << have;
            have += 6;
            if have >= 8 {
                bits.push((acc & 255) as u8);
                acc >>= 8;
                have -= 8;
            }
        }
        if have > 0 && acc != 0 {
            bits.push(acc as u8);
        }
        bits.resize(len.div_ceil(8), 0);
        (digits.len() == (len.div_ceil(8) * 8).div_ceil(6)).then_some(Breaks { bits, len })
    }
}

/// One word of a text as [`tokenize`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word<'t> {
    /// The folded, lower-cased (and for English, stemmed) form that is indexed.
    pub term: &'t str,
    /// Byte range of the word in the original text.
    pub start: usize,
    pub end: usize,
    /// Something other than a word stands between this word and the one
    /// before (a space, punctuation): a dictionary run's match may not
    /// reach across it.
    pub after_gap: bool,
    /// A word of a dictionary run.
    pub dictionary: bool,
}

/// Longest term kept (bytes): a longer word (a base64 blob) is indexed by its start.
const MAX_TERM: usize = 64;

/// Calls `emit` with each word of `text`, in order. `breaks` are the
/// document's dictionary-run breaks; `run_char` counts the run characters
/// already used (the title's, before the body's), and is moved on.
pub fn tokenize(text: &str, breaks: &Breaks, run_char: &mut usize, emit: &mut dyn FnMut(Word)) {
    let mut term = String::new();
    let (mut start, mut end) = (0, 0);
    let mut kind = None::<bool>; // Some(true): a dictionary word, Some(false): letters and digits
    let mut gap = true;
    let mut chars = Folded::new(text).peekable();
    while let Some((c, from, to)) = chars.next() {
        let is_dict = dictionary(c);
        let continues = match kind {
            Some(true) => is_dict && !breaks.starts(*run_char),
            Some(false) => {
                word_char(c)
                    || (matches!(c, '\'' | '\u{2019}' | '.' | ',')
                        && chars.peek().is_some_and(|(n, _, _)| word_char(*n))
                        && (c != ','
                            || (term.ends_with(|p: char| p.is_ascii_digit())
                                && chars.peek().is_some_and(|(n, _, _)| n.is_ascii_digit()))))
            }
            None => false,
        };
        if !continues && kind.is_some() {
            finish(&mut term, start, end, &mut gap, kind == Some(true), emit);
            kind = None;
        }
        if is_dict {
            *run_char += 1;
        }
        if kind.is_none() {
            if is_dict || word_char(c) {
                kind = Some(is_dict);
                start = from;
            } else {
                gap = true;
                continue;
            }
        }
        if term.len() < MAX_TERM {
            if c.is_ascii_uppercase() {
                term.push(c.to_ascii_lowercase());
            } else {
                term.push(if c == '\u{2019}' { '\'' } else { c });
            }
        }
        end = to;
    }
    if kind.is_some() {
        finish(&mut term, start, end, &mut gap, kind == Some(true), emit);
    }
}

fn finish(term: &mut String, start: usize, end: usize, gap: &mut bool, dictionary: bool, emit: &mut dyn FnMut(Word)) {
    let lowered;
    let mut word: &str = term;
    if !dictionary && !word.is_ascii() {
        lowered = crate::platform::lowercase(word);
        word = &lowered;
    }
    let stemmed = if dictionary { std::borrow::Cow::Borrowed(word) } else { super::stem::stem(word) };
    emit(Word { term: &stemmed, start, end, after_gap: *gap, dictionary });
    *gap = false;
    term.clear();
}

/// The breaks of a text that is segmented on the spot (a query, a test).
pub fn segment_now(texts: &[&str]) -> Breaks {
    let mut runs = String::new();
    for text in texts {
        dictionary_runs(text, &mut runs);
    }
    if runs.is_empty() {
        return Breaks::default();
    }
    Breaks::segment(&runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let breaks = segment_now(&[text]);
        let mut out = Vec::new();
        tokenize(text, &breaks, &mut 0, &mut |w| out.push(format!("{}{}", if w.after_gap { "|" } else { "" }, w.term)));
        out
    }

    #[test]
    fn japanese_is_cut_where_the_segmenter_cuts_and_spaces_punctuation_and_brackets_part_words() {
        let cases: &[(&str, &[&str])] = &[
            ("東京都に住む", &["|東京", "都", "に", "住む"]),
            ("京都へ行く", &["|京都", "へ", "行く"]),
            (
                "\u{3000}吾輩は猫である。名前はまだ無い。",
                &["|吾輩", "は", "猫", "で", "ある", "|名前", "は", "まだ", "無い"],
            ),
            ("「もう行かなくちゃ」", &["|もう", "行", "か", "なく", "ちゃ"]),
            ("ﾊﾟｿｺﾝで ＡＢＣ１２３を", &["|パソコン", "で", "|abc123", "を"]),
            ("IndexedDBにアーティファクトを保存する", &["|indexeddb", "に", "アーティファクト", "を", "保存", "する"]),
            (
                "Don't stop: 3.14, 1,000 and snake_case e.g. here",
                &["|don't", "|stop", "|3.14", "|1,000", "|and", "|snake_case", "|e.g", "|her"],
            ),
            ("The keepers' lighthouses were sailing", &["|the", "|keeper", "|lighthous", "|wer", "|sail"]),
            ("Ärger ÜBER Straße", &["|ärger", "|über", "|straße"]),
            ("か゛き\u{3099}", &["|が", "ぎ"]),
        ];
        for (text, expected) in cases {
            assert_eq!(words(text), *expected, "{text}");
        }
    }

    #[test]
    fn word_ranges_point_into_the_original_text() {
        let text = "ﾊﾟｿｺﾝ、ＡＢＣ";
        let breaks = segment_now(&[text]);
        let mut out = Vec::new();
        tokenize(text, &breaks, &mut 0, &mut |w| out.push((w.term.to_owned(), &text[w.start..w.end])));
        assert_eq!(out, [("パソコン".to_owned(), "ﾊﾟｿｺﾝ"), ("abc".to_owned(), "ＡＢＣ")]);
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn folding_agrees_with_nfkc_on_the_forms_it_folds() {
        use unicode_normalization::UnicodeNormalization;
        for c in ('\u{FF01}'..='\u{FF5E}').chain('\u{FF61}'..='\u{FF9F}').chain(['\u{3000}']) {
            assert_eq!(fold_char(c).to_string(), c.to_string().nfkc().collect::<String>(), "{c:?} U+{:04X}", c as u32);
        }
        for base in ('\u{3041}'..='\u{3096}').chain('\u{30A1}'..='\u{30F6}').chain('\u{FF66}'..='\u{FF9D}') {
            for mark in ['\u{FF9E}', '\u{FF9F}', '\u{3099}', '\u{309A}'] {
                let text = format!("{base}{mark}");
                let nfkc: String = text.nfkc().collect();
                let ours: String = Folded::new(&text).map(|(c, _, _)| c).collect();
                if nfkc.chars().count() == 1 {
                    assert_eq!(ours, nfkc, "{text:?}");
                } else {
                    assert_eq!(ours.chars().count(), 2, "{text:?} stays two characters: {ours:?}");
                }
            }
        }
    }

    #[test]
    fn breaks_survive_their_stored_form_and_garbage_is_refused() {
        for n in [0, 1, 5, 8, 9, 63, 64, 65, 1000] {
            let mut b = Breaks::default();
            for i in 0..n {
                b.push(i % 3 == 0 || i % 7 == 0);
            }
            assert_eq!(Breaks::decode(&b.encode()), Some(b.clone()), "{n}");
        }
        for bad in ["", ".", "x.AA", "3.", "3.AAAA", "100.A", "2.*"] {
            assert_eq!(Breaks::decode(bad), None, "{bad:?}");
        }
    }
}
