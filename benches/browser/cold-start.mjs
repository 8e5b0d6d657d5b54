// Cold start in Chromium: from a fresh page (a new browser context, so no
// HTTP or code cache) to the package's `init()` resolved and to
// `Agent.open()` resolved (a new IndexedDB database each time), beside the
// time to import LangGraph.js's browser bundle (the graph workload's anchor,
// bundled as the shared harness bundles it) in the same run.
//
//   node benches/browser/cold-start.mjs <pkg dir> <shared-bench copy> [pages]
//
// Prints one JSON line per implementation with every sample and the median.
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { createRequire } from "node:module";

const [pkgDir, harnessDir, pagesArg] = process.argv.slice(2);
if (!pkgDir || !harnessDir) {
  console.error("usage: node cold-start.mjs <pkg dir> <shared-bench copy> [pages]");
  process.exit(2);
}
const PAGES = Number(pagesArg ?? 10);
const here = path.dirname(new URL(import.meta.url).pathname);
const root = path.resolve(here, "../..");
const requireHarness = createRequire(path.join(path.resolve(harnessDir), "package.json"));
const { build } = requireHarness("esbuild");
const { chromium } = await import(path.join(root, "www/node_modules/playwright-core/index.mjs"));

// LangGraph.js's bundle, built with the harness's options.
const dist = fs.mkdtempSync(path.join(os.tmpdir(), "cold-start-"));
await build({
  entryPoints: { langgraph: path.join(path.resolve(harnessDir), "src/graph-langgraphjs.js") },
  outdir: dist,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "chrome120",
  minify: true,
  legalComments: "none",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
});
// The harness's workload module, which the anchor imports, is bundled in.

const PAGE = (body) =>
  `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module">${body}</script>`;
const pages = {
  "/atelier.html": PAGE(`
    const t = {};
    const mod = await import("/pkg/atelier_agent.js");
    await mod.default();
    t.init = performance.now();
    const agent = await mod.Agent.open({ proxyUrl: "/api", dbName: "cold-" + crypto.randomUUID() });
    t.open = performance.now();
    agent.free();
    window.__done = t;`),
  "/langgraph.html": PAGE(`
    await import("/dist/langgraph.js");
    window.__done = { import: performance.now() };`),
};
const MIME = { ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };
const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://x").pathname;
  if (pages[url]) {
    res.writeHead(200, { "content-type": "text/html" }).end(pages[url]);
    return;
  }
  const [prefix, dir] = url.startsWith("/pkg/") ? ["/pkg/", pkgDir] : url.startsWith("/dist/") ? ["/dist/", dist] : [];
  const file = dir && path.join(path.resolve(dir), url.slice(prefix.length));
  if (!file || !fs.existsSync(file)) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "content-type": MIME[path.extname(file)] ?? "application/octet-stream" });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-dev-shm-usage"],
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const samples = { atelier: { init: [], open: [] }, langgraph: { import: [] } };
// Alternate the two so drift on a shared machine hits both alike.
for (let i = 0; i < PAGES; i++) {
  for (const [name, file] of [["atelier", "/atelier.html"], ["langgraph", "/langgraph.html"]]) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(base + file);
    const done = await page.waitForFunction(() => window.__done, null, { timeout: 60000 });
    const t = await done.jsonValue();
    for (const [k, v] of Object.entries(t)) samples[name][k].push(v);
    await context.close();
  }
}
await browser.close();
server.close();
fs.rmSync(dist, { recursive: true, force: true });
const wasm = fs.readdirSync(pkgDir).find((f) => f.endsWith(".wasm"));
const lgBytes = fs.statSync(path.join(pkgDir, wasm)).size;
console.log(
  JSON.stringify({
    workload: "cold_start",
    impl: "atelier-agent",
    pages: PAGES,
    init_ms: median(samples.atelier.init),
    open_ms: median(samples.atelier.open),
    wasm_bytes: lgBytes,
    samples: samples.atelier,
  }),
);
console.log(
  JSON.stringify({
    workload: "cold_start",
    impl: "langgraphjs",
    pages: PAGES,
    import_ms: median(samples.langgraph.import),
    samples: samples.langgraph,
  }),
);
