// The demo's service worker: the built app opens with no network.
//
// The build (vite.config.ts) fills in VERSION (a hash of the build's file
// names) and ASSETS (every file of the build). On install it caches them all
// under a cache named for the version; on activate it deletes the caches of
// other versions, so a new build replaces the old one cleanly. Page loads go
// to the network first (a new build is picked up at once) and fall back to
// the cached app; the build's files, whose names carry content hashes, come
// from the cache. The API (/api/*, /v1/*) is never cached: chat and web tools
// need the proxy, and the app says so when it cannot be reached.

const VERSION = "__VERSION__";
/** @type {string[]} */
const ASSETS = __ASSETS__;
const CACHE = `atelier-app-${VERSION}`;

/** @param {string} pathname */
const isApi = (pathname) => pathname.startsWith("/api/") || pathname.startsWith("/v1/");

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches.open(CACHE).then((cache) => cache.addAll(["/", ...ASSETS])).then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((n) => n.startsWith("atelier-app-") && n !== CACHE).map((n) => caches.delete(n))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin || isApi(url.pathname)) return;
  if (request.mode === "navigate") {
    event.respondWith(
      fetch(request).catch(() => caches.match("/", { cacheName: CACHE }).then((hit) => hit ?? Response.error())),
    );
    return;
  }
  event.respondWith(
    caches.match(request, { cacheName: CACHE }).then((hit) => hit ?? fetch(request)),
  );
});
