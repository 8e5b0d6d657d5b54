// A small MCP server (the official SDK's server over Streamable HTTP, JSON
// answers) that records the headers of every request it receives, so a test
// can prove which tokens reached it. On 127.0.0.1, on a port the system
// picks; prints {"port": N} once it listens.
//
//   POST/GET/DELETE /mcp   the MCP endpoint (sessions, as most servers have)
//   GET  /__seen           [{method, path, headers, body, at}] of every /mcp request
//                          (at: when it arrived, ms since the epoch)
//   POST /__reset          forgets them (and undoes the settings below)
//   POST /__pages N        tools/list answers N tools a page (0: all at once)
//   POST /__forget         forgets every session (their next request: 404)
//   POST /__down           every /mcp connection is cut at once (a crashed
//                          server); /__up ends that
//   POST /__silent         every /mcp request is held unanswered (a hung
//                          server); /__up cuts them and ends that
// The control endpoints answer any origin: the browser tests call them.
//
// Tools: `echo_headers` answers with the headers of the request that called
// it (as a careless or hostile server might: the relay must cut the token
// out), `add` adds two numbers, `fail` always fails (isError), `wait`
// answers after `ms` or when the call is cancelled (all four read-only);
// `erase_note` has no annotations (so by the spec's defaults it is
// destructive and reaches the open world) and answers what it erased.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

let seen = [];
let pageSize = 0;
let down = false;
let silent = false;
let held = [];
const sessions = new Map();

const TOOLS = [
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
  {
    name: "fail",
    description: "Always fails",
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: "wait",
    description: "Answers after `ms` milliseconds, or at once when the call is cancelled",
    inputSchema: { type: "object", properties: { ms: { type: "number" } } },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: "erase_note",
    description: "Erases the note with this title",
    inputSchema: { type: "object", properties: { title: { type: "string" } }, required: ["title"] },
  },
];

function mcpServer() {
  const server = new Server({ name: "atelier-recorder", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    if (!pageSize) return { tools: TOOLS };
    const start = Number(request.params?.cursor ?? 0);
    const end = start + pageSize;
    return { tools: TOOLS.slice(start, end), ...(end < TOOLS.length ? { nextCursor: String(end) } : {}) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    if (name === "echo_headers") {
      return { content: [{ type: "text", text: JSON.stringify(extra.requestInfo?.headers ?? {}) }] };
    }
    if (name === "add") {
      return { content: [{ type: "text", text: String(Number(args.a) + Number(args.b)) }], structuredContent: { sum: args.a + args.b } };
    }
    if (name === "fail") {
      return { content: [{ type: "text", text: "the recorder fails on purpose" }], isError: true };
    }
    if (name === "wait") {
      const cancelled = await new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), Number(args.ms ?? 0));
        extra.signal.addEventListener("abort", () => (clearTimeout(timer), resolve(true)));
      });
      return { content: [{ type: "text", text: cancelled ? "cancelled" : "waited" }] };
    }
    if (name === "erase_note") {
      return { content: [{ type: "text", text: `erased ${args.title}` }] };
    }
    return { content: [{ type: "text", text: `no tool ${name}` }], isError: true };
  });
  return server;
}

async function mcp(req, res, body) {
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
  await transport.handleRequest(req, res, body);
}

const anyOrigin = { "access-control-allow-origin": "*" };

/** Ends the silence: the held requests' connections are cut. */
function release() {
  silent = false;
  for (const req of held.splice(0)) req.socket.destroy();
}

/** The control endpoints; true when `path` is one. */
async function control(path, req, res) {
  if (path === "/__seen") {
    res.writeHead(200, { "content-type": "application/json", ...anyOrigin });
    res.end(JSON.stringify(seen));
    return true;
  }
  const settings = {
    "/__reset": () => ((seen = []), (pageSize = 0), (down = false), release()),
    "/__pages": (body) => (pageSize = Number(body)),
    "/__forget": () => sessions.clear(),
    "/__down": () => (down = true),
    "/__silent": () => (silent = true),
    "/__up": () => ((down = false), release()),
  };
  if (!settings[path]) return false;
  let body = "";
  for await (const chunk of req) body += chunk;
  settings[path](body);
  res.writeHead(204, anyOrigin).end();
  return true;
}

const http = createServer(async (req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  if (await control(path, req, res)) return;
  if (down) {
    req.socket.destroy();
    return;
  }
  if (silent) {
    held.push(req);
    return;
  }
  let text = "";
  for await (const chunk of req) text += chunk;
  let body;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  seen.push({ method: req.method, path: req.url, headers: req.headers, body, at: Date.now() });
  // A cookie the relay must drop.
  res.setHeader("set-cookie", "recorder-session=1; HttpOnly");
  if (path !== "/mcp") {
    res.writeHead(404, { "content-type": "text/plain" }).end(`Cannot ${req.method} ${req.url}`);
    return;
  }
  mcp(req, res, body).catch((e) => {
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end(String(e));
  });
});
http.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => console.log(JSON.stringify({ port: http.address().port })));
