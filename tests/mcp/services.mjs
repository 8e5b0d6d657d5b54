// The processes the MCP relay's test and benchmark start, all on 127.0.0.1:
// the reference MCP server, the recorder and the real proxy binary. Each is
// ended (by its own pid) with stopAll().
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import net from "node:net";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const started = [];

/** Starts `node script`; resolves to {child, port} once it prints {"port": N}. */
export function startNode(script, args = []) {
  const child = spawn(process.execPath, [script, ...args], { cwd: here, stdio: ["ignore", "pipe", "pipe"] });
  started.push(child);
  child.stderr.resume();
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error(`${script} did not report its port`)), 20_000);
    lines.on("line", (line) => {
      if (!line.startsWith('{"port"')) return;
      clearTimeout(timer);
      resolve({ child, port: JSON.parse(line).port });
    });
    child.once("exit", (code) => reject(new Error(`${script} exited (${code}) before listening`)));
  });
}

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts the proxy binary (ATELIER_PROXY_BIN, else target/debug) with `env`;
 * resolves to {url, log()} once it listens. `log()` is its stderr so far.
 */
export async function startProxy(env) {
  const port = await freePort();
  const bin = process.env.ATELIER_PROXY_BIN ?? new URL("../../target/debug/atelier-proxy", import.meta.url).pathname;
  const child = spawn(bin, [], {
    env: {
      PATH: process.env.PATH,
      ATELIER_BIND: `127.0.0.1:${port}`,
      ATELIER_AUTODETECT: "false",
      ATELIER_STATIC_DIR: "/nonexistent-atelier-static",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  started.push(child);
  let log = "";
  child.stderr.on("data", (chunk) => (log += chunk));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const up = await new Promise((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => (socket.end(), resolve(true)));
      socket.on("error", () => resolve(false));
    });
    if (up) break;
    if (child.exitCode !== null) throw new Error(`the proxy exited (${child.exitCode}): ${log}`);
    if (Date.now() > deadline) throw new Error(`the proxy did not listen: ${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `http://127.0.0.1:${port}`, port, log: () => log };
}

/** Ends every process this module started. */
export function stopAll() {
  for (const child of started.splice(0)) {
    if (child.exitCode === null) child.kill();
  }
}
