// The MCP relay's added latency per call: the official MCP client calls a
// tool on each server directly and through the proxy's relay, interleaved
// in one run (the order flips every round), and prints one JSON line per
// server with p50/p90 of both and the difference. Servers: the reference
// server's `echo` (answers as an SSE stream) and the recorder's `add` (a JSON
// answer). The relay runs with a client token, as an exposed proxy would,
// and no rate limit (the calls would exceed it).
//
//   cargo xtask bench mcp       (release proxy; ROUNDS overrides 500)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startNode, startProxy, stopAll } from "./services.mjs";

const rounds = Number(process.env.ROUNDS ?? 500);
const token = "bench-client-token";

async function connect(url, headers = {}) {
  const client = new Client({ name: "atelier-relay-bench", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

const percentile = (sorted, p) => sorted[Math.round((sorted.length - 1) * p)];

try {
  const [everything, recorder] = await Promise.all([startNode("everything.mjs"), startNode("recorder.mjs")]);
  const direct = { everything: `http://127.0.0.1:${everything.port}/mcp`, recorder: `http://127.0.0.1:${recorder.port}/mcp` };
  const proxy = await startProxy({
    ATELIER_MCP_SERVERS: `everything=${direct.everything},recorder=${direct.recorder}`,
    ATELIER_CLIENT_TOKEN: token,
    ATELIER_RATE_LIMIT: "0",
  });
  const calls = {
    everything: { name: "echo", arguments: { message: "bench" } },
    recorder: { name: "add", arguments: { a: 1, b: 2 } },
  };
  for (const server of Object.keys(calls)) {
    const clients = {
      direct: await connect(direct[server]),
      relay: await connect(`${proxy.url}/api/mcp/${server}`, { Authorization: `Bearer ${token}` }),
    };
    const times = { direct: [], relay: [] };
    for (let i = 0; i < rounds + 20; i++) {
      const order = i % 2 ? ["direct", "relay"] : ["relay", "direct"];
      for (const way of order) {
        const started = performance.now();
        await clients[way].callTool(calls[server]);
        if (i >= 20) times[way].push(performance.now() - started); // the first 20 rounds warm up
      }
    }
    const figure = {};
    for (const way of ["direct", "relay"]) {
      const sorted = times[way].sort((a, b) => a - b);
      figure[way] = { p50_ms: +percentile(sorted, 0.5).toFixed(3), p90_ms: +percentile(sorted, 0.9).toFixed(3) };
    }
    const added = +(figure.relay.p50_ms - figure.direct.p50_ms).toFixed(3);
    console.log(JSON.stringify({ bench: "mcp_relay", server, tool: calls[server].name, rounds, ...figure, added_p50_ms: added }));
    await clients.direct.close();
    await clients.relay.close();
  }
} finally {
  stopAll();
}
