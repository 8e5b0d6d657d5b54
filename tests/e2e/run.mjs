// End-to-end checks in headless Chromium (playwright-core, Debian chromium):
//  1. the demo app, bundled by Vite and served by the real proxy binary,
//     loads the package and applies an Adit edit;
//  2. the package as a plain <script type="module"> (no bundler) works;
//  3. the generated .d.ts has no `any`.
// Screenshots go to test-output/e2e/.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, readFileSync, existsSync } from "node:fs";
import { dirname, extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const require = createRequire(join(root, "www/package.json"));
const { chromium } = require("playwright-core");
const out = join(root, "test-output/e2e");
mkdirSync(out, { recursive: true });

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}\n  ${String(e && e.stack || e).split("\n").join("\n  ")}`);
  }
}
function assert(cond, message) {
  if (!cond) throw new Error(message);
}

function freePort() {
  return new Promise((ok) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

async function waitFor(url, ms = 15000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer`);
}

function proxyBinary() {
  for (const profile of ["release", "debug"]) {
    const p = join(root, "target", profile, "atelier-proxy");
    if (existsSync(p)) return p;
  }
  throw new Error("build atelier-proxy first (cargo build -p atelier-proxy)");
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css" };
function staticServer(dir) {
  return createServer((req, res) => {
    const path = normalize(join(dir, decodeURIComponent(new URL(req.url, "http://x").pathname)));
    if (!path.startsWith(dir) || !existsSync(path)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": TYPES[extname(path)] ?? "application/octet-stream" });
    res.end(readFileSync(path));
  });
}

// launch() gives the browser a fresh temporary profile (--user-data-dir) itself.
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});

const port = await freePort();
const proxy = spawn(proxyBinary(), ["--bind", `127.0.0.1:${port}`, "--static-dir", join(root, "www/dist")], {
  stdio: ["ignore", "inherit", "inherit"],
});
const plainPort = await freePort();
const plain = staticServer(root);
await new Promise((ok) => plain.listen(plainPort, "127.0.0.1", ok));

try {
  await waitFor(`http://127.0.0.1:${port}/api/health`);

  await check("demo app (Vite bundle, served by the proxy) applies an Adit edit", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.getByRole("button", { name: "Apply edit" }).click();
    const result = await page.locator("#result").textContent();
    // The reply quotes line 2 without its ideographic-space indent: the
    // trimmed level finds it and the replacement takes the indent back.
    assert(result === "\u3000吾輩は猫である。名前はまだ無い。\n\u3000生まれは薄暗い台所である。\n", `unexpected result: ${result}`);
    const report = await page.locator("#report").textContent();
    assert(report.includes("trimmed match at line 2"), `unexpected report: ${report}`);
    await page.screenshot({ path: join(out, "01-demo-applied.png") });

    await page.locator("#reply").fill("<<<<<<< SEARCH\n存在しない文。\n=======\nx\n>>>>>>> REPLACE\n");
    await page.getByRole("button", { name: "Apply edit" }).click();
    const refused = await page.locator("#report").textContent();
    assert(refused.includes("Refused (no_match, edit 1)"), `unexpected report: ${refused}`);
    await page.screenshot({ path: join(out, "02-demo-refused.png") });
    assert(errors.length === 0, `page errors: ${errors.join("; ")}`);
    await page.close();
  });

  await check("package as a plain <script type=module> throws coded Errors", async () => {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${plainPort}/tests/e2e/plain.html`);
    await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 15000 });
    const result = await page.evaluate(() => window.__result);
    assert(result.text === "Hello there\n", `text: ${JSON.stringify(result)}`);
    assert(result.code === "ambiguous" && result.index === 1, `error: ${JSON.stringify(result)}`);
    assert(result.isError === true, "a real Error is thrown");
    await page.close();
  });

  await check("generated .d.ts has no `any`", async () => {
    // The public surface: everything before wasm-bindgen's internal InitOutput.
    const dts = readFileSync(join(root, "pkg/web/atelier_agent.d.ts"), "utf8").split("export type InitInput")[0];
    const anys = dts.split("\n").filter((l) => /\bany\b/.test(l) && !l.trim().startsWith("*") && !l.trim().startsWith("//"));
    assert(anys.length === 0, `lines with any:\n${anys.join("\n")}`);
  });
} finally {
  await browser.close();
  proxy.kill();
  plain.close();
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
