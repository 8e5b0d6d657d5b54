import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

// Emits sw.js (from sw/service-worker.js) with the list of every built file
// and a version derived from their (content-hashed) names, so each build
// gets a new cache and the old one is dropped.
function serviceWorker(): Plugin {
  return {
    name: "atelier-service-worker",
    apply: "build",
    generateBundle(_options, bundle) {
      const assets = Object.keys(bundle).filter((name) => name !== "index.html").sort().map((name) => `/${name}`);
      const version = createHash("sha256").update(assets.join("\n")).digest("hex").slice(0, 12);
      const template = readFileSync(fileURLToPath(new URL("./sw/service-worker.js", import.meta.url)), "utf8");
      const source = template.replace('"__VERSION__"', JSON.stringify(version)).replace("__ASSETS__", JSON.stringify(assets));
      this.emitFile({ type: "asset", fileName: "sw.js", source });
    },
  };
}

// The demo imports the package as an npm consumer would (`atelier-agent`);
// in this repository that name points at the freshly built `pkg/web`.
// The package's .wasm is loaded with `new URL(..., import.meta.url)`, which
// Vite turns into an asset.
export default defineConfig({
  resolve: {
    alias: { "atelier-agent": fileURLToPath(new URL("../pkg/web/atelier_agent.js", import.meta.url)) },
  },
  build: { target: "es2022" },
  plugins: [serviceWorker()],
});
