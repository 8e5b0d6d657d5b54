// @ts-check
// Search by meaning, the browser's half (loaded by `src/wasm/meaning.rs`):
// the vectors of the search index's passages, from the proxy's embedding
// model (`POST <proxyUrl>/embeddings`, model "embed"), cached in an
// IndexedDB database of their own (`<database>-meaning`: derived data,
// made again when lost), and a query's ranking against them. Rust decides
// what to embed (the documents and their passages, `search::meaning`).
// Nothing here is on a write's path, and every failure only means "no
// ranking by meaning this time": the search answers by its words.

/** After a failure, or a proxy with no embedding model, ask again after this. */
const RECHECK_MS = 60000;
/** Below this cosine a passage is not called close... */
const MIN_SIMILARITY = 0.5;
/** ...nor below this share of the closest one's. */
const NEAR_BEST = 0.8;
/** Characters of a query embedded (a longer one is cut). */
const QUERY_CHARS = 2000;

/** @typedef {{ k: string, h: number, m: string, v: Float32Array[] }} Entry */

/**
 * `v` scaled to length 1 (a zero vector stays zero: close to nothing).
 * @param {unknown} v
 * @returns {Float32Array | null}
 */
function unit(v) {
  if (!Array.isArray(v) || !v.length || !v.every((x) => typeof x === "number" && Number.isFinite(x))) return null;
  const out = Float32Array.from(v);
  const norm = Math.hypot(...out) || 1;
  return out.map((x) => x / norm);
}

/**
 * The request `r` as a promise.
 * @param {IDBRequest} r
 * @returns {Promise<any>}
 */
function done(r) {
  return new Promise((ok, fail) => {
    r.onsuccess = () => ok(r.result);
    r.onerror = () => fail(r.error);
  });
}

export class Meaning {
  /**
   * @param {string} database the agent's IndexedDB database
   * @param {string} base the proxy's URL (`AgentConfig.proxyUrl`)
   * @param {string | undefined} token
   */
  constructor(database, base, token) {
    this.name = `${database}-meaning`;
    this.base = base.replace(/\/+$/, "");
    /** @type {Record<string, string>} */
    this.headers = { "content-type": "application/json" };
    if (token) this.headers.authorization = `Bearer ${token}`;
    /** The embedding model the proxy named, while it answers. */
    this.model = "";
    /** When to ask the proxy again. */
    this.until = 0;
    /** Documents are being embedded. */
    this.busy = false;
    /** The index's count of edits at the last pass that embedded everything, and at the pass running. */
    this.done = -1;
    this.pending = -1;
    /** @type {Map<string, Entry> | null} the cache, once read */
    this.map = null;
    /** @type {IDBDatabase | null} */
    this.db = null;
  }

  /**
   * Whether to hand the documents over now: the proxy has an embedding
   * model, nothing is being embedded, and the index changed since the last
   * pass that embedded everything (its count of edits is not that pass's).
   * When the model is not known, asks the proxy (at most once a minute)
   * and reads the cache, for the next time.
   * @param {number} edits
   */
  wanted(edits) {
    if (!this.model && !this.busy && Date.now() >= this.until) {
      this.until = Date.now() + RECHECK_MS;
      this.busy = true;
      void this.ask().finally(() => (this.busy = false));
    }
    return !!this.model && !!this.map && !this.busy && edits !== this.done;
  }

  async ask() {
    try {
      const health = await (await fetch(`${this.base}/health`, { headers: this.headers })).json();
      const embed = health?.chat?.upstream?.models?.embed;
      this.model = typeof embed === "string" ? embed : "";
      // The model may be another one now: look at every document again.
      this.done = -1;
    } catch {}
    if (this.model && !this.map) await this.read();
  }

  /** Reads the cache (an empty one when IndexedDB refuses: then kept in memory only). */
  async read() {
    /** @type {Map<string, Entry>} */
    const map = new Map();
    try {
      const open = indexedDB.open(this.name, 1);
      open.onupgradeneeded = () => open.result.createObjectStore("v", { keyPath: "k" });
      /** @type {IDBDatabase} */
      const db = await done(open);
      this.db = db;
      for (const e of await done(db.transaction("v").objectStore("v").getAll())) map.set(e.k, e);
    } catch {}
    this.map = map;
  }

  /**
   * Vectors of `texts`, or null when the request or its answer failed
   * (then the proxy is asked again in a minute).
   * @param {string[]} texts
   */
  async embed(texts) {
    try {
      const answer = await fetch(`${this.base}/embeddings`, {
        method: "POST",
        headers: this.headers,
        body: JSON.stringify({ model: "embed", input: texts }),
      });
      if (!answer.ok) throw answer.status;
      const data = (await answer.json())?.data;
      /** @type {Float32Array[]} */
      const out = [];
      for (const [i, item] of (Array.isArray(data) ? data : []).entries()) {
        const v = unit(item?.embedding);
        const at = Number.isInteger(item?.index) ? item.index : i;
        if (v && at >= 0 && at < texts.length) out[at] = v;
      }
      if (out.length !== texts.length || out.some((v) => !v || v.length !== out[0].length)) throw "shape";
      return out;
    } catch {
      this.model = "";
      this.until = Date.now() + RECHECK_MS;
      return null;
    }
  }

  /**
   * The indices of the documents whose vectors are missing or stale (made
   * from another text or by another model); the entries of documents no
   * longer indexed are dropped. `keep` must follow (it ends the work).
   * @param {string[]} keys
   * @param {Float64Array} hashes a view of the module's memory (read at once)
   * @param {number} edits the index's count of edits
   */
  missing(keys, hashes, edits) {
    this.busy = true;
    this.pending = edits;
    const map = this.map ?? new Map();
    const live = new Set(keys);
    for (const key of map.keys()) if (!live.has(key)) this.write(key, null);
    return keys.flatMap((key, i) => {
      const e = map.get(key);
      return e && e.h === hashes[i] && e.m === this.model ? [] : [i];
    });
  }

  /**
   * Embeds the documents given as [key, hash, passages] and keeps their
   * vectors, one document after another, in the background; stops at the
   * first failure (the next search starts again).
   * @param {[string, number, string[]][]} docs
   */
  async keep(docs) {
    try {
      for (const [k, h, texts] of docs) {
        const m = this.model;
        /** @type {Float32Array[]} */
        const v = [];
        for (let i = 0; i < texts.length; i += 32) {
          const got = await this.embed(texts.slice(i, i + 32));
          if (!got) return;
          v.push(...got);
        }
        this.write(k, { k, h, m, v });
      }
      this.done = this.pending;
    } finally {
      this.busy = false;
    }
  }

  /**
   * Puts (or with null deletes) an entry, in memory and then in storage
   * (a failed write — a full disk — leaves it in memory only).
   * @param {string} key
   * @param {Entry | null} entry
   */
  write(key, entry) {
    if (entry) this.map?.set(key, entry);
    else this.map?.delete(key);
    try {
      const store = this.db?.transaction("v", "readwrite").objectStore("v");
      if (entry) store?.put(entry);
      else store?.delete(key);
    } catch {}
  }

  /**
   * The documents closest to `query` by meaning, best first: their keys
   * and closest passages, at most `limit`. Null at once when there can be
   * no ranking (no embedding model known, nothing embedded yet); a null
   * answer when the query could not be embedded.
   * @param {string} query
   * @param {number} limit
   * @returns {Promise<[string[], number[]] | null> | null}
   */
  rank(query, limit) {
    if (!this.model || !this.map?.size) return null;
    return this.ranked(query, limit);
  }

  /**
   * @param {string} query
   * @param {number} limit
   * @returns {Promise<[string[], number[]] | null>}
   */
  async ranked(query, limit) {
    const q = (await this.embed([query.slice(0, QUERY_CHARS)]))?.[0];
    if (!q || !this.map) return null;
    /** @type {[number, string, number][]} */
    const close = [];
    for (const e of this.map.values()) {
      if (e.m !== this.model) continue;
      let best = -1;
      let at = 0;
      e.v.forEach((v, i) => {
        if (v.length !== q.length) return;
        let s = 0;
        for (let j = 0; j < q.length; j++) s += v[j] * q[j];
        if (s > best) [best, at] = [s, i];
      });
      if (best >= MIN_SIMILARITY) close.push([best, e.k, at]);
    }
    // Best first; at equal closeness by key, the same order every time.
    close.sort((a, b) => b[0] - a[0] || (a[1] < b[1] ? -1 : 1));
    const kept = close.filter((c) => c[0] >= close[0][0] * NEAR_BEST).slice(0, limit);
    return [kept.map((c) => c[1]), kept.map((c) => c[2])];
  }
}
