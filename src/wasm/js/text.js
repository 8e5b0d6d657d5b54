// @ts-check
// The browser's own Unicode for the package's text rules: grapheme
// boundaries from Intl.Segmenter, so the package does not carry Unicode
// tables of its own. Loaded by `src/platform.rs`.

/** @type {Intl.Segmenter | undefined} */
let graphemes;

/**
 * Where the grapheme that contains the UTF-16 position `index` starts:
 * `index` itself when it is a boundary. Without `Intl.Segmenter` (browsers
 * before 2024) the position is kept: a cut still never splits a UTF-8
 * sequence, only possibly a combining sequence.
 *
 * @param {string} text
 * @param {number} index
 * @returns {number}
 */
export function graphemeStart(text, index) {
  if (index <= 0 || index >= text.length) return Math.max(0, Math.min(index, text.length));
  if (typeof Intl.Segmenter !== "function") return index;
  graphemes ??= new Intl.Segmenter("en", { granularity: "grapheme" });
  const segment = graphemes.segment(text).containing(index);
  return segment ? segment.index : index;
}

/** @type {Intl.Segmenter | undefined} */
let words;

/**
 * The UTF-16 index of every word segment's start in `text` after the first
 * (Intl.Segmenter with word granularity: the browser's dictionaries for
 * Japanese, Chinese, Thai...). Without `Intl.Segmenter` every position
 * starts a segment (each character is its own word).
 *
 * @param {string} text
 * @returns {Uint32Array}
 */
export function wordStarts(text) {
  if (typeof Intl.Segmenter !== "function") return Uint32Array.from({ length: Math.max(0, text.length - 1) }, (_, i) => i + 1);
  words ??= new Intl.Segmenter("ja", { granularity: "word" });
  /** @type {number[]} */
  const starts = [];
  for (const segment of words.segment(text)) if (segment.index > 0) starts.push(segment.index);
  return Uint32Array.from(starts);
}

/**
 * Resolves in the browser's next task (after anything waiting, input and
 * rendering included), without setTimeout's 4 ms clamp: how background work
 * gives the page back between slices.
 *
 * @returns {Promise<void>}
 */
export function nextTask() {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve(undefined);
    };
    channel.port2.postMessage(0);
  });
}
