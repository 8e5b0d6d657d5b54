import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The demo imports the package as an npm consumer would (`atelier-agent`);
// in this repository that name points at the freshly built `pkg/web`.
// The package's .wasm is loaded with `new URL(..., import.meta.url)`, which
// Vite turns into an asset.
export default defineConfig({
  resolve: {
    alias: { "atelier-agent": fileURLToPath(new URL("../pkg/web/atelier_agent.js", import.meta.url)) },
  },
  build: { target: "es2022" },
});
