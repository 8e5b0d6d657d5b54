// A small MCP server (the official SDK's server over Streamable HTTP, JSON
// answers) that records the headers of every request it receives, so a test
// can prove which tokens reached it. On 127.0.0.1, on a port the system
// picks; prints {"port": N} once it listens.
//
//   POST/GET/DELETE /mcp   the MCP endpoint (sessions, as most servers have)
//   GET  /__seen           [{method, path, headers}] of every /mcp request
//   POST /__reset          forgets them
//
// Tools: `echo_headers` answers with the headers of the request that called
// it (as a careless or hostile server might: the relay must cut the token
// out), `add` adds two numbers.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

let seen = [];
const sessions = new Map();

function mcpServer() {
  const server = new Server({ name: "atelier-recorder", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: "echo_headers",
        description: "The HTTP headers of this call",
        inputSchema: { type: "object", properties: {} },
        annotations: { readOnlyHint: true },
      },
      {
        name: "add",
        description: "a + b",
        inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    if (name === "echo_headers") {
      return { content: [{ type: "text", text: JSON.stringify(extra.requestInfo?.headers ?? {}) }] };
    }
    if (name === "add") {
      return { content: [{ type: "text", text: String(Number(args.a) + Number(args.b)) }], structuredContent: { sum: args.a + args.b } };
    }
    return { content: [{ type: "text", text: `no tool ${name}` }], isError: true };
  });
  return server;
}

async function mcp(req, res) {
  const id = req.headers["mcp-session-id"];
  let transport = id ? sessions.get(id) : undefined;
  if (!transport) {
    if (id || req.method !== "POST") {
      res.writeHead(id ? 404 : 400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sid) => sessions.set(sid, transport),
      onsessionclosed: (sid) => sessions.delete(sid),
    });
    await mcpServer().connect(transport);
  }
  await transport.handleRequest(req, res);
}

const http = createServer((req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  if (path === "/__seen") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(seen));
    return;
  }
  if (path === "/__reset") {
    seen = [];
    res.writeHead(204).end();
    return;
  }
  seen.push({ method: req.method, path: req.url, headers: req.headers });
  // A cookie the relay must drop.
  res.setHeader("set-cookie", "recorder-session=1; HttpOnly");
  if (path !== "/mcp") {
    res.writeHead(404, { "content-type": "text/plain" }).end(`Cannot ${req.method} ${req.url}`);
    return;
  }
  mcp(req, res).catch((e) => {
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end(String(e));
  });
});
http.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => console.log(JSON.stringify({ port: http.address().port })));
