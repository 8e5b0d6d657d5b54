// @ts-check
// What a JS value handed to the package may look like, checked before it is
// converted: conversion walks values recursively, so a cyclic or very deeply
// nested object would exhaust the stack, and a `__proto__` key would reach
// objects the package builds. Loaded by `src/wasm/convert.rs`.

/**
 * Checks that `value` is plain data within the limits. Walks with its own
 * stack (no recursion), so no input can overflow it.
 *
 * @param {unknown} value
 * @param {number} maxDepth deepest nesting of arrays and objects
 * @param {number} maxNodes most values in all
 * @param {number} maxChars most string characters in all
 * @returns {string | null} null when acceptable, else where and why not
 */
export function shapeProblem(value, maxDepth, maxNodes, maxChars) {
  /** @type {Array<[unknown, number, string]>} */
  const stack = [[value, 0, ""]];
  let nodes = 0;
  let chars = 0;
  while (stack.length > 0) {
    const [v, depth, path] = /** @type {[unknown, number, string]} */ (stack.pop());
    nodes += 1;
    if (nodes > maxNodes) return `${path || "the value"}: more than ${maxNodes} values`;
    if (typeof v === "string") {
      chars += v.length;
      if (chars > maxChars) return `${path || "the value"}: more than ${maxChars} characters of text`;
      continue;
    }
    if (v === null || typeof v !== "object") continue;
    if (depth >= maxDepth) return `${path || "the value"}: nested deeper than ${maxDepth} levels (or cyclic)`;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], depth + 1, `${path}[${i}]`]);
      continue;
    }
    if (Object.prototype.hasOwnProperty.call(v, "__proto__")) return `${path ? `${path}.` : ""}__proto__: not allowed`;
    for (const key of Object.keys(v)) {
      stack.push([/** @type {Record<string, unknown>} */ (v)[key], depth + 1, path ? `${path}.${key}` : key]);
    }
  }
  return null;
}

/**
 * `agent.search`'s options read once, each field checked (see
 * `SearchOptions` in `src/search/mod.rs`): `[scope, projectId,
 * sessionId, limit]` (null where absent or null; a limit that is not
 * finite counts as absent, as JSON has it), or the name of the field of the
 * wrong type (`options` when they are not an object).
 *
 * @param {unknown} options
 * @returns {[string[], string | null, string | null, number | null] | string}
 */
export function searchOptions(options) {
  if (options == null) return [[], null, null, null];
  if (typeof options !== "object" || Array.isArray(options)) return "options";
  const o = /** @type {Record<string, unknown>} */ (options);
  const { scope, projectId, sessionId, limit } = o;
  if (scope != null && !(Array.isArray(scope) && scope.every((s) => typeof s === "string"))) return "scope";
  if (limit != null && typeof limit !== "number") return "limit";
  for (const [name, v] of [["projectId", projectId], ["sessionId", sessionId]]) {
    if (v != null && typeof v !== "string") return /** @type {string} */ (name);
  }
  return [
    /** @type {string[]} */ (scope ?? []),
    /** @type {string | null} */ (projectId ?? null),
    /** @type {string | null} */ (sessionId ?? null),
    typeof limit === "number" && Number.isFinite(limit) ? limit : null,
  ];
}

/** A search hit's fields, in the order of its numbers (see `searchHits`). */
const HIT_FIELDS = ["kind", "id", "title", "snippet", "score", "projectId", "sessionId", "start", "end", "byMeaning"];

/**
 * `agent.search`'s hits, built here from one text and its numbers (one
 * crossing instead of one per field): ten numbers a hit, one per field of
 * `HIT_FIELDS`, -1 for an absent one; for a text field its UTF-16 length,
 * the texts following one another in `texts`; else the value.
 *
 * @param {string} texts
 * @param {Float64Array} numbers
 * @param {boolean} complete
 * @param {number} pending
 * @param {boolean} meaning whether a ranking by meaning took part
 * @returns {Array<Record<string, unknown>> & { complete: boolean, pending: number, meaning: boolean }}
 */
export function searchHits(texts, numbers, complete, pending, meaning) {
  const hits = [];
  let at = 0;
  for (let j = 0; j + 10 <= numbers.length; j += 10) {
    /** @type {Record<string, unknown>} */
    const hit = {};
    HIT_FIELDS.forEach((name, k) => {
      const n = numbers[j + k];
      if (n >= 0) hit[name] = k > 8 || (k === 4 || k > 6 ? n : texts.slice(at, (at += n)));
    });
    hits.push(hit);
  }
  return Object.assign(hits, { complete, pending, meaning });
}
