// @ts-check
// The IndexedDB requests the Rust adapter (`src/store/idb/`) cannot make
// through web-sys without a closure per request, and the two callbacks an
// upgrade needs. No record logic lives here: index fields, snippets and the
// bulk rule are computed in Rust (one home, `store::model`).

/**
 * Settles with a request's result, or rejects with its error.
 *
 * @param {IDBRequest} request
 * @returns {Promise<any>}
 */
export function requestPromise(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/**
 * Settles when a transaction completes; rejects with its error when it
 * aborts. Never an unhandled rejection: the caller may drop it after an abort.
 *
 * @param {IDBTransaction} tx
 * @returns {Promise<void>}
 */
export function transactionPromise(tx) {
  const done = new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve(undefined);
    tx.onabort = () => reject(tx.error ?? new DOMException("transaction aborted", "AbortError"));
    // A failed request's error reaches the transaction first (its own `error`
    // is only set at the abort that follows): the request's names the cause.
    tx.onerror = (event) => {
      const failed = /** @type {IDBRequest | null} */ (event.target);
      reject(failed?.error ?? tx.error ?? new DOMException("transaction failed", "UnknownError"));
    };
  });
  done.catch(() => {});
  return done;
}

/**
 * A read-write transaction that commits only once the data is on disk
 * (`durability: "strict"`; the browser's default may report completion
 * earlier). Browsers without the option ignore it.
 *
 * @param {IDBDatabase} db
 * @param {string[]} stores
 * @returns {IDBTransaction}
 */
export function strictTransaction(db, stores) {
  return db.transaction(stores, "readwrite", { durability: "strict" });
}

/**
 * The keys of `index` between `lower` and `upper`, read by a key cursor
 * (no record is loaded: the artifact index lives in the keys).
 *
 * @param {IDBIndex} index
 * @param {IDBValidKey} lower
 * @param {IDBValidKey} upper
 * @returns {Promise<IDBValidKey[]>}
 */
export function indexKeys(index, lower, upper) {
  return new Promise((resolve, reject) => {
    /** @type {IDBValidKey[]} */
    const keys = [];
    const request = index.openKeyCursor(IDBKeyRange.bound(lower, upper));
    request.onsuccess = () => {
      const cursor = request.result;
      if (cursor === null) {
        resolve(keys);
        return;
      }
      keys.push(cursor.key);
      cursor.continue();
    };
    request.onerror = () => reject(request.error);
  });
}

/**
 * Inside an upgrade: marks every session that has artifacts as needing its
 * index built (`staleName` store), so the first read of a session's index
 * builds it in Rust. Runs in the upgrade's transaction.
 *
 * @param {IDBTransaction} tx
 * @param {string} storeName
 * @param {string} staleName
 */
export function markSessionsStale(tx, storeName, staleName) {
  const request = tx.objectStore(storeName).getAll();
  request.onsuccess = () => {
    const stale = tx.objectStore(staleName);
    /** @type {Set<string>} */
    const sessions = new Set();
    for (const record of request.result) {
      if (record !== null && typeof record === "object" && typeof record.sessionId === "string") {
        sessions.add(record.sessionId);
      }
    }
    for (const sessionId of sessions) stale.put({ sessionId });
  };
}

/**
 * Opens `name` at `version`, running `upgrade(db, tx, oldVersion,
 * newVersion)` inside `upgradeneeded`; a throwing upgrade aborts it (the
 * open then rejects and the old schema stays). When another connection
 * (an older copy of the app in another tab, another app on the same
 * database) keeps the database open and does not close for the upgrade
 * within `blockedMs`, the open rejects with a DOMException named
 * "BlockedError" instead of waiting forever; if the upgrade goes through
 * later, the connection it opens is closed at once.
 *
 * @param {string} name
 * @param {number} version
 * @param {(db: IDBDatabase, tx: IDBTransaction, oldVersion: number, newVersion: number) => void} upgrade
 * @param {number} blockedMs
 * @returns {Promise<IDBDatabase>}
 */
export function openDatabase(name, version, upgrade, blockedMs) {
  const factory = globalThis.indexedDB;
  if (!factory) return Promise.reject(new Error("IndexedDB is not available in this browser context"));
  const request = factory.open(name, version);
  request.onupgradeneeded = (event) => {
    const tx = /** @type {IDBTransaction} */ (request.transaction);
    try {
      upgrade(request.result, tx, event.oldVersion, event.newVersion ?? version);
    } catch (e) {
      console.error("atelier-agent: schema upgrade failed", e);
      tx.abort();
    }
  };
  return new Promise((resolve, reject) => {
    let settled = false;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    request.onblocked = () => {
      timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        reject(new DOMException(
          "another tab (an older copy of this app, or another app) keeps the database open and does not let it upgrade",
          "BlockedError",
        ));
      }, blockedMs);
    };
    request.onsuccess = () => {
      clearTimeout(timer);
      if (settled) {
        request.result.close();
        return;
      }
      settled = true;
      resolve(request.result);
    };
    request.onerror = () => {
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      reject(request.error);
    };
  });
}

/**
 * Closes `db` when another tab opens a newer version (so that tab is not
 * blocked) and calls `onClosed`.
 *
 * @param {IDBDatabase} db
 * @param {() => void} onClosed
 */
export function closeForUpgrades(db, onClosed) {
  db.onversionchange = () => {
    db.close();
    onClosed();
  };
}

/**
 * The channel on which the tabs of one database tell each other about
 * committed writes (`null` where BroadcastChannel does not exist).
 *
 * @param {string} name
 * @returns {BroadcastChannel | null}
 */
export function openChannel(name) {
  return typeof BroadcastChannel === "function" ? new BroadcastChannel(`atelier-agent:${name}`) : null;
}

/**
 * Tells the other tabs which stores a committed write changed, and which
 * searched records (`<store>/<id>`, so their search index reads them again).
 * A channel does not hear its own messages, so this tab is not told. A
 * write after a quiet spell is told at once; the writes of the 16 ms after
 * it in one message at the end of them (a message costs about as much as a
 * small write), or at once when the page is hidden.
 *
 * @param {BroadcastChannel | null} channel
 * @param {string[]} stores
 * @param {string[]} keys
 */
export function announce(channel, stores, keys) {
  if (!channel) return;
  const notice = notices.get(channel);
  if (notice) {
    notice.stores = notice.stores.concat(stores);
    notice.keys = notice.keys.concat(keys);
  } else {
    post(channel, stores, keys);
    notices.set(channel, { stores: [], keys: [] });
    setTimeout(sendNotices, 16);
  }
}

/** @type {Map<BroadcastChannel, { stores: string[], keys: string[] }>} */
const notices = new Map();

/**
 * @param {BroadcastChannel} channel
 * @param {string[]} stores
 * @param {string[]} keys
 */
function post(channel, stores, keys) {
  try {
    channel.postMessage({ stores: [...new Set(stores)], keys });
  } catch {
    // A closed channel (the page is going away): nobody to tell.
  }
}

function sendNotices() {
  for (const [channel, { stores, keys }] of notices) if (stores.length) post(channel, stores, keys);
  notices.clear();
}

if (typeof addEventListener === "function") addEventListener("pagehide", sendNotices);

/**
 * Calls `listener` with `{stores}` for every write another tab commits;
 * returns the function that stops it.
 *
 * @param {BroadcastChannel | null} channel
 * @param {(change: { stores: string[] }) => void} listener
 * @returns {() => void}
 */
export function listen(channel, listener) {
  if (!channel) return () => {};
  /** @param {MessageEvent} event */
  const onMessage = (event) => {
    const stores = event.data && Array.isArray(event.data.stores) ? event.data.stores.filter((/** @type {unknown} */ s) => typeof s === "string") : [];
    listener({ stores });
  };
  channel.addEventListener("message", onMessage);
  return () => channel.removeEventListener("message", onMessage);
}

/**
 * Calls `listener` with the searched records' keys another tab's write
 * changed (for this tab's search index); returns the function that stops it.
 *
 * @param {BroadcastChannel | null} channel
 * @param {(keys: string[]) => void} listener
 * @returns {() => void}
 */
export function listenForKeys(channel, listener) {
  if (!channel) return () => {};
  /** @param {MessageEvent} event */
  const onMessage = (event) => {
    const keys = event.data && Array.isArray(event.data.keys) ? event.data.keys.filter((/** @type {unknown} */ k) => typeof k === "string") : [];
    if (keys.length) listener(keys);
  };
  channel.addEventListener("message", onMessage);
  return () => channel.removeEventListener("message", onMessage);
}

/**
 * Up to `count` records of `store` after the key `after` (from the first
 * when `after` is null), in key order.
 *
 * @param {IDBObjectStore} store
 * @param {string | null | undefined} after
 * @param {number} count
 * @returns {IDBRequest}
 */
export function pageAfter(store, after, count) {
  return store.getAll(after == null ? null : IDBKeyRange.lowerBound(after, true), count);
}

/**
 * Deletes the database `name`.
 *
 * @param {string} name
 * @returns {Promise<void>}
 */
export function deleteDatabase(name) {
  const factory = globalThis.indexedDB;
  if (!factory) return Promise.reject(new Error("IndexedDB is not available in this browser context"));
  return requestPromise(factory.deleteDatabase(name)).then(() => undefined);
}
