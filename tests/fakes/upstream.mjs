// A scripted OpenAI-compatible (and Tavily-compatible) fake upstream for the
// browser and end-to-end tests. Started on 127.0.0.1 by the test driver; it
// prints {"port": N} on its first stdout line.
//
//   POST /v1/chat/completions   answers with the next scripted reply
//   POST /search                a Tavily-style search answer
//   POST /__script {chat: [...], search: [...]}   queues replies
//   POST /__release             lets held streams finish
//   POST /__reset               forgets replies, requests and counters
//   GET  /__log                 {requests, disconnects}
//   GET  /pages/NAME            a page set with /__script {pages: {NAME: html}} (recorded)
//   GET  /v1/models             an OpenAI-style model list
//
// Chat replies: {type: "text", text}, {type: "tool_calls", calls: [{name, arguments}]},
// {type: "error", status, body, headers}, {type: "hold", first, rest} (streams
// `first`, then waits for /__release or the client leaving; with `calls`
// instead of `rest`, answers with those tool calls once released).
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 0);
let chatQueue = [];
let searchQueue = [];
let pages = {};
let requests = [];
let disconnects = 0;
let releases = [];
let strictRefusals = 0;

const cors = {
  "access-control-allow-origin": "*",
  "access-control-allow-headers": "content-type, authorization",
  "access-control-allow-methods": "GET, POST, OPTIONS",
};

function send(res, status, body, headers = {}) {
  const data = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...cors, ...headers });
  res.end(data);
}

function chunk(model, delta, finish = null) {
  return `data: ${JSON.stringify({
    id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;
}

function completion(model, message, finish) {
  return {
    id: "chatcmpl-fake", object: "chat.completion", created: 0, model,
    choices: [{ index: 0, message, finish_reason: finish }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}

function pieces(text) {
  const chars = [...text];
  const size = Math.max(1, Math.ceil(chars.length / 3));
  const out = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

// A strict chat template, as llama.cpp's and some Ollama models' are: a
// system message only first, and no two consecutive messages of the same
// role (tool results excepted). On unless /__script says {lenient: true}.
let lenient = false;
function templateViolation(messages) {
  if (!Array.isArray(messages)) return null;
  for (let i = 1; i < messages.length; i++) {
    const role = messages[i]?.role;
    if (role === "system") return `message ${i} is a system message after the first`;
    if (role !== "tool" && role === messages[i - 1]?.role) return `messages ${i - 1} and ${i} are both ${role}`;
  }
  return null;
}

// Token counts as a prompt-caching upstream reports them: about 4 bytes a
// token, and the bytes the request shares with the previous one (a
// byte-identical prefix of the messages) counted as cached.
let previousPrompt = "";
function usageChunk(model, body) {
  const prompt = JSON.stringify(body.messages ?? []);
  let shared = 0;
  while (shared < prompt.length && shared < previousPrompt.length && prompt[shared] === previousPrompt[shared]) shared++;
  previousPrompt = prompt;
  const promptTokens = Math.ceil(prompt.length / 4);
  const usage = { prompt_tokens: promptTokens, completion_tokens: 8, total_tokens: promptTokens + 8,
    prompt_tokens_details: { cached_tokens: Math.floor(shared / 4) } };
  return `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model, choices: [], usage })}\n\n`;
}

// The agent's housekeeping sub-agents (context compression, continuity
// notes) are answered here with a fixed valid reply, outside the script, so
// a scripted scenario does not depend on when a long session compresses.
// They still reach the log (and the strict-template check).
const SUMMARY = { user_constraints: [], decisions: [], failed_attempts: [], tool_calls: [],
  recent_narrative: "The earlier conversation.", task_state: { completed: [], remaining: [], blockers: [] } };
const NOTES = { summary: "A chapter.", glossary: [], motifs: [], cross_references: [] };
function housekeeping(body) {
  const system = body.messages?.[0]?.role === "system" ? String(body.messages[0].content) : "";
  if (system.startsWith("You summarise the earlier part of a writing assistant's conversation")) {
    housekept++;
    return { type: "text", text: JSON.stringify(SUMMARY) };
  }
  if (system.startsWith("You keep a novel's continuity notes")) {
    housekept++;
    return { type: "text", text: JSON.stringify(NOTES) };
  }
  return null;
}
let housekept = 0;

async function answerChat(req, res, body) {
  const violation = lenient ? null : templateViolation(body.messages);
  if (violation) {
    strictRefusals++;
    send(res, 400, { error: { message: `strict chat template: ${violation}`, type: "invalid_request_error" } });
    return;
  }
  const reply = housekeeping(body) ?? chatQueue.shift() ?? { type: "text", text: "ok" };
  const model = body.model ?? "fake";
  if (reply.type === "error") {
    send(res, reply.status ?? 500, reply.body ?? { error: { message: "scripted failure" } }, reply.headers ?? {});
    return;
  }
  if (!body.stream) {
    if (reply.type === "tool_calls") {
      const calls = reply.calls.map((c, i) => ({ id: c.id ?? `call_${i}`, type: "function",
        function: { name: c.name, arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments) } }));
      send(res, 200, completion(model, { role: "assistant", content: null, tool_calls: calls }, "tool_calls"));
    } else {
      send(res, 200, completion(model, { role: "assistant", content: reply.text ?? `${reply.first ?? ""}${reply.rest ?? ""}` }, "stop"));
    }
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...cors });
  let finished = false;
  res.on("close", () => { if (!finished) disconnects++; });
  if (reply.type === "tool_calls") {
    reply.calls.forEach((c, i) => {
      const args = typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments);
      res.write(chunk(model, { tool_calls: [{ index: i, id: c.id ?? `call_${i}`, type: "function", function: { name: c.name, arguments: "" } }] }));
      res.write(chunk(model, { tool_calls: [{ index: i, function: { arguments: args } }] }));
    });
    res.write(chunk(model, {}, "tool_calls"));
  } else if (reply.type === "hold") {
    res.write(chunk(model, { role: "assistant", content: reply.first ?? "" }));
    const released = await new Promise((resolve) => {
      releases.push(() => resolve(true));
      res.on("close", () => resolve(false));
    });
    if (!released) return;
    if (reply.calls) {
      // Held, then tool calls (a model that thinks before acting).
      reply.calls.forEach((c, i) => {
        const args = typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments);
        res.write(chunk(model, { tool_calls: [{ index: i, id: c.id ?? `call_${i}`, type: "function", function: { name: c.name, arguments: args } }] }));
      });
      res.write(chunk(model, {}, "tool_calls"));
    } else {
      for (const p of pieces(reply.rest ?? "")) res.write(chunk(model, { content: p }));
      res.write(chunk(model, {}, "stop"));
    }
  } else {
    for (const p of pieces(reply.text ?? "")) res.write(chunk(model, { content: p }));
    res.write(chunk(model, {}, "stop"));
  }
  if (body.stream_options?.include_usage) res.write(usageChunk(model, body));
  res.write("data: [DONE]\n\n");
  finished = true;
  res.end();
}

function answerSearch(res, body) {
  const scripted = searchQueue.shift();
  const results = scripted ?? [
    { title: `About ${body.query}`, url: "https://example.org/about", content: `What is known about ${body.query}.` },
  ];
  send(res, 200, { query: body.query, results });
}

const server = createServer(async (req, res) => {
  if (req.method === "OPTIONS") {
    res.writeHead(204, cors);
    res.end();
    return;
  }
  let raw = "";
  for await (const part of req) raw += part;
  let body = {};
  try { body = raw ? JSON.parse(raw) : {}; } catch { body = { unparsed: raw }; }
  const path = new URL(req.url, "http://x").pathname;
  if (path === "/__script") {
    if (typeof body.lenient === "boolean") lenient = body.lenient;
    chatQueue.push(...(body.chat ?? []));
    searchQueue.push(...(body.search ?? []));
    Object.assign(pages, body.pages ?? {});
    send(res, 200, { queued: chatQueue.length });
  } else if (path === "/__release") {
    const pending = releases;
    releases = [];
    pending.forEach((r) => r());
    send(res, 200, { released: pending.length });
  } else if (path === "/__reset") {
    chatQueue = []; searchQueue = []; requests = []; disconnects = 0; pages = {}; lenient = false; // strictRefusals counts the whole run
    send(res, 200, {});
  } else if (path === "/__log") {
    send(res, 200, { requests, disconnects, strictRefusals, housekept });
  } else if (path.startsWith("/pages/") && req.method === "GET") {
    requests.push({ path, query: new URL(req.url, "http://x").search, authorization: req.headers.authorization ?? null, body: {} });
    const html = pages[path.slice("/pages/".length)];
    res.writeHead(html === undefined ? 404 : 200, { "content-type": "text/html; charset=utf-8" });
    res.end(html ?? "<h1>Not found</h1>");
  } else if (path.endsWith("/models") && req.method === "GET") {
    // What the proxy reads to resolve the "main" and "sub" aliases.
    send(res, 200, { object: "list", data: [{ id: "fake-chat", object: "model" }, { id: "fake-embed-text", object: "model" }] });
  } else if (path.endsWith("/chat/completions") && req.method === "POST") {
    requests.push({ path, authorization: req.headers.authorization ?? null, body });
    await answerChat(req, res, body);
  } else if (path === "/search" && req.method === "POST") {
    requests.push({ path, authorization: req.headers.authorization ?? null, body });
    answerSearch(res, body);
  } else {
    send(res, 404, { error: { message: `no route ${path}` } });
  }
});

server.listen(port, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
