// @ts-check
// Web Locks for the agent: one run per session across every tab of the
// origin. Loaded by `src/platform.rs` (the browser's platform shims).

/**
 * Takes the lock `name` if no one holds it, without waiting for a holder.
 * A lock released a moment ago (a run that just ended in this tab) is let
 * go by the browser asynchronously, so a taken lock is asked for again a
 * few times over about 50 ms before it counts as held.
 *
 * @param {string} name
 * @returns {Promise<(() => void) | null>} the release function, or null when
 *   the lock is held (by another tab, or another call in this one). Where the
 *   Web Locks API is missing (an insecure context), a release function that
 *   does nothing: the caller falls back to its in-page guard.
 */
export async function tryLock(name) {
  const locks = globalThis.navigator?.locks;
  if (!locks) return () => {};
  for (let attempt = 0; attempt < 6; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const release = await requestIfAvailable(locks, name);
    if (release) return release;
  }
  return null;
}

/**
 * @param {LockManager} locks
 * @param {string} name
 * @returns {Promise<(() => void) | null>}
 */
function requestIfAvailable(locks, name) {
  return new Promise((resolve, reject) => {
    locks
      .request(name, { ifAvailable: true }, (lock) => {
        if (!lock) {
          resolve(null);
          return undefined;
        }
        // Held until the returned promise settles: until `release` is called.
        return new Promise((release) => resolve(() => release(undefined)));
      })
      .catch(reject);
  });
}

/**
 * Whether someone (another tab, or a call in this one) holds the lock `name`.
 *
 * @param {string} name
 * @returns {Promise<boolean>}
 */
export async function isLocked(name) {
  const locks = globalThis.navigator?.locks;
  if (!locks) return false;
  const state = await locks.query();
  return (state.held ?? []).some((lock) => lock.name === name);
}
