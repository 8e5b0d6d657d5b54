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
    tx.onerror = () => reject(tx.error ?? new DOMException("transaction failed", "UnknownError"));
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
 * open then rejects and the old schema stays).
 *
 * @param {string} name
 * @param {number} version
 * @param {(db: IDBDatabase, tx: IDBTransaction, oldVersion: number, newVersion: number) => void} upgrade
 * @returns {Promise<IDBDatabase>}
 */
export function openDatabase(name, version, upgrade) {
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
  return requestPromise(request);
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
