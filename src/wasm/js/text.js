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
 * Where words start in `runs` (runs of Japanese and the other scripts
 * written without spaces, each ended by a newline): one flag per code point
 * but the newlines, 1 where a word starts (Intl.Segmenter with word
 * granularity: the browser's dictionaries; each run's first character
 * starts a word). Without `Intl.Segmenter` every character is its own word.
 *
 * @param {string} runs
 * @returns {Uint8Array}
 */
export function wordBreaks(runs) {
  const flags = new Uint8Array(runs.length);
  let n = 0;
  let start = 1;
  const segments = typeof Intl.Segmenter === "function"
    ? (words ??= new Intl.Segmenter("ja", { granularity: "word" })).segment(runs)
    : Array.from(runs, (segment) => ({ segment }));
  for (const { segment } of segments) {
    let first = 1;
    for (const c of segment) {
      if (c === "\n") {
        start = 1;
      } else {
        flags[n++] = first | start;
        first = start = 0;
      }
    }
  }
  return flags.subarray(0, n);
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
