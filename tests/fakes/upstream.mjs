// A scripted OpenAI-compatible (and Tavily-compatible) fake upstream for the
// browser and end-to-end tests. Started on 127.0.0.1 by the test driver; it
// prints {"port": N} on its first stdout line.
//
//   node upstream.mjs PORT [--dialect NAME] [--template FAMILY]
//   node upstream.mjs --check-template   ([{family, messages}] JSON on stdin: prints each refusal or null)
//
//   POST /v1/chat/completions   answers with the next scripted reply, in the dialect chosen
//   POST /search                a Tavily-style search answer
//   POST /__script {chat: [...], search: [...], dialect?, template?, lenient?}   queues replies
//   POST /__release             lets held streams finish
//   POST /__reset               forgets replies, requests and counters (dialect and template back to the start's)
//   GET  /__log                 {requests, disconnects, strictRefusals, housekept}
//   GET  /pages/NAME            a page set with /__script {pages: {NAME: html}} (recorded)
//   GET  /v1/models             an OpenAI-style model list
//
// Chat replies: {type: "text", text, reasoning?}, {type: "tool_calls", calls: [{name, arguments, id?}], reasoning?},
// {type: "error", status, body, headers}, {type: "hold", first, rest} (streams
// `first`, then waits for /__release or the client leaving; with `calls`
// instead of `rest`, answers with those tool calls once released),
// {type: "inband_error", text?, code?, message?} (streams `text`, then an error inside the stream).
//
// Dialects: the bytes each server sends, as its docs and issue threads
// describe them (the same sources as src/llm/stream_dialects.rs):
//   openai      the reference format (the default)
//   ollama-v1   Ollama's OpenAI endpoint: every parallel call whole at index 0 with its own id, `reasoning`
//   ollama      Ollama itself (chosen at start): /api/tags, /api/show, /api/ps, /api/version, native
//               /api/chat (NDJSON, object arguments, `thinking`, options.num_ctx honoured), and a /v1
//               endpoint that runs every prompt in 4,096 tokens, cutting the rest silently
//   gemini      no `index` on calls, arguments split in index-less deltas, `extra_content` thought
//               signatures, finish_reason "stop" after tool calls
//   deepseek    `reasoning_content`; refuses (400) an assistant message with tool calls without it
//   mistral     each call whole in one chunk with 9-character ids, finish in the same chunk; the
//               mistral template rules (no user after tool, strict alternation, 9-character ids)
//   think       reasoning as a leading <think>…</think> in the content
//   think-close the opening tag in the prompt: only </think> in the content
//   object-args arguments as JSON objects, "" for a call without arguments
//   openrouter  ": OPENROUTER PROCESSING" comments, `reasoning`
//   llamacpp    `reasoning_content`, `timings` in the last chunk
//   vllm        `reasoning`; id and name first, then the arguments in two pieces
//   azure       a first chunk with choices [] and prompt_filter_results
//   framing     CRLF, `data:` without a space, keep-alive comments, no [DONE]
//   text-calls  a server without a tool parser: calls written as <tool_call> text in the content
//
// Template families (the rules of src/llm/template.rs, answered with the
// servers' own refusals): reference, strict (the default), qwen, llama3,
// mistral, gemma2, gemma3; {lenient: true} turns the check off.
import { createServer } from "node:http";

const args = process.argv.slice(2);
const flag = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const startDialect = flag("--dialect") ?? "openai";
let chatQueue = [];
let searchQueue = [];
let pages = {};
let requests = [];
let disconnects = 0;
let releases = [];
let strictRefusals = 0;
let dialect = startDialect;
let family = flag("--template") ?? (startDialect === "mistral" ? "mistral" : "strict");
const startFamily = family;

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

function chunk(model, delta, finish = null, extra = {}) {
  return `data: ${JSON.stringify({
    id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model,
    choices: [{ index: 0, delta, finish_reason: finish }], ...extra,
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

const argsText = (c) => (typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments ?? {}));
const argsObject = (c) => (typeof c.arguments === "string" ? JSON.parse(c.arguments || "{}") : c.arguments ?? {});
const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
let idCounter = 0;
// Call ids in the shape each server makes them (Mistral: 9 letters and digits).
function callId(c, i) {
  if (c.id) return c.id;
  idCounter++;
  if (dialect === "mistral") return Array.from({ length: 9 }, (_, k) => ALNUM[(idCounter * 7 + k * 13 + i) % 62]).join("");
  if (dialect === "gemini") return `function-call-${idCounter}`;
  return `call_${i}`;
}

// Chat-template rules by family, mirroring src/llm/template.rs (a Rust
// test holds the two to the same cases through --check-template).
const role = (m) => m?.role;
const callsOf = (m) => (Array.isArray(m?.tool_calls) ? m.tool_calls : []);
const RULES = {
  systemFirst(ms) {
    const i = ms.findIndex((m, k) => k > 0 && role(m) === "system");
    return i > 0 ? `message ${i} is a system message after the first` : null;
  },
  noSystem(ms) {
    return ms.some((m) => role(m) === "system") ? "System role not supported" : null;
  },
  noRepeatedRole(ms) {
    for (let i = 1; i < ms.length; i++) {
      if (role(ms[i]) !== "tool" && role(ms[i]) === role(ms[i - 1])) return `messages ${i - 1} and ${i} are both ${role(ms[i])}`;
    }
    return null;
  },
  alternateSkippingTools(ms) {
    let expect = "user";
    for (const m of ms) {
      const turn = role(m) === "user" || (role(m) === "assistant" && callsOf(m).length === 0);
      if (!turn) continue;
      if (role(m) !== expect) return "Conversation roles must alternate user/assistant/user/assistant/...";
      expect = expect === "user" ? "assistant" : "user";
    }
    return null;
  },
  oneCallPerMessage(ms) {
    return ms.some((m) => callsOf(m).length > 1) ? "This model only supports single tool-calls at once!" : null;
  },
  nineCharToolIds(ms) {
    for (const m of ms) {
      const ids = callsOf(m).map((c) => c.id).concat(role(m) === "tool" ? [m.tool_call_id] : []);
      const bad = ids.find((id) => !/^[A-Za-z0-9]{9}$/.test(String(id)));
      if (bad !== undefined) return `Tool call id was ${bad} but must be a-z, A-Z, 0-9, with a length of 9.`;
    }
    return null;
  },
  noUserAfterTool(ms) {
    for (let i = 1; i < ms.length; i++) {
      if (role(ms[i - 1]) === "tool" && role(ms[i]) === "user") return "Unexpected role 'user' after role 'tool'";
    }
    return null;
  },
  resultsAnswerCalls(ms) {
    let open = [];
    for (let i = 0; i < ms.length; i++) {
      const m = ms[i];
      if (role(m) === "tool") {
        const at = open.indexOf(m.tool_call_id);
        if (at < 0) return `message ${i}: a tool message must answer a call of the assistant message before it`;
        open.splice(at, 1);
      } else if (open.length > 0) {
        return `message ${i}: the tool calls ${open.join(", ")} have no results`;
      } else {
        open = callsOf(m).map((c) => c.id);
      }
    }
    return null;
  },
};
const FAMILIES = {
  reference: ["resultsAnswerCalls"],
  strict: ["systemFirst", "noRepeatedRole"],
  qwen: ["systemFirst"],
  llama3: ["systemFirst", "oneCallPerMessage"],
  mistral: ["systemFirst", "noUserAfterTool", "alternateSkippingTools", "nineCharToolIds", "resultsAnswerCalls"],
  gemma2: ["noSystem", "alternateSkippingTools", "noUserAfterTool"],
  gemma3: ["systemFirst", "alternateSkippingTools", "noUserAfterTool"],
};
function templateViolation(name, messages) {
  if (!Array.isArray(messages)) return null;
  for (const rule of FAMILIES[name] ?? FAMILIES.strict) {
    const why = RULES[rule](messages);
    if (why) return why;
  }
  return null;
}
let lenient = false;

// What the server itself refuses beyond the template.
function serverRefusal(body) {
  if (dialect === "deepseek") {
    const i = (body.messages ?? []).findIndex((m) => role(m) === "assistant" && callsOf(m).length > 0 && !m.reasoning_content);
    if (i >= 0) {
      return { error: { message: `Missing \`reasoning_content\` field in the assistant message at message index ${i}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls`, type: "invalid_request_error" } };
    }
  }
  return null;
}

// Token counts as a prompt-caching upstream reports them: about 4 bytes a
// token, and the bytes the request shares with the previous one (a
// byte-identical prefix of the messages) counted as cached.
let previousPrompt = "";
function usageOf(body) {
  const prompt = JSON.stringify(body.messages ?? []);
  let shared = 0;
  while (shared < prompt.length && shared < previousPrompt.length && prompt[shared] === previousPrompt[shared]) shared++;
  previousPrompt = prompt;
  const promptTokens = Math.ceil(prompt.length / 4);
  return { prompt_tokens: promptTokens, completion_tokens: 8, total_tokens: promptTokens + 8,
    prompt_tokens_details: { cached_tokens: Math.floor(shared / 4) } };
}
function usageChunk(model, body) {
  return `data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model, choices: [], usage: usageOf(body) })}\n\n`;
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

// The embedding model (`POST /v1/embeddings`): a text's vector counts the
// words of each group of this table it holds (a dimension a group), so
// "beacon" and 灯台 mean the same here and a text of none of them is a zero
// vector, close to nothing. `/__script {embeddings: false}` makes it fail
// (500) until a reset.
const MEANINGS = [
  ["lighthouse", "beacon", "灯台"],
  ["sea", "ocean", "海", "波"],
  ["hourglass", "砂時計"],
  ["autumn", "秋", "紅葉"],
  ["rain", "umbrella", "雨", "傘"],
  ["cat", "猫"],
];
let embeddings = { working: true, texts: 0, requests: 0 };
function embed(text) {
  const lower = String(text).toLowerCase();
  return MEANINGS.map((group) => group.reduce((n, word) => n + lower.split(word).length - 1, 0));
}

// The reasoning field each dialect streams, if any.
const REASONING_FIELD = { "ollama-v1": "reasoning", openrouter: "reasoning", vllm: "reasoning", deepseek: "reasoning_content", llamacpp: "reasoning_content" };
const reasoningOf = (reply) => reply.reasoning ?? (dialect === "deepseek" ? "Thinking it through." : undefined);
function thinkPrefix(reasoning) {
  if (!reasoning) return "";
  if (dialect === "think") return `<think>${reasoning}</think>\n\n`;
  if (dialect === "think-close") return `${reasoning}\n</think>\n\n`;
  return "";
}
const callsAsText = (calls) => calls.map((c) => `<tool_call>\n${JSON.stringify({ name: c.name, arguments: argsObject(c) })}\n</tool_call>`).join("\n");

// The SSE text of one whole answer (text or calls) in the current dialect.
function encodeAnswer(model, reply, body) {
  const out = [];
  const d = (delta, finish = null, extra = {}) => out.push(chunk(model, delta, finish, extra));
  const reasoning = reasoningOf(reply);
  const field = REASONING_FIELD[dialect];
  if (dialect === "openrouter") out.push(": OPENROUTER PROCESSING\n\n");
  if (dialect === "azure") out.push(`data: ${JSON.stringify({ choices: [], created: 0, id: "", model: "", object: "", prompt_filter_results: [{ prompt_index: 0, content_filter_results: {} }] })}\n\n`);
  if (reasoning && field) for (const p of pieces(reasoning)) d({ [field]: p, content: dialect === "deepseek" ? null : "" });
  const prefix = thinkPrefix(reasoning);
  if (reply.type !== "tool_calls") {
    for (const p of pieces(prefix + (reply.text ?? ""))) d({ content: p });
    if (dialect === "llamacpp") d({}, "stop", { timings: { cache_n: 0, prompt_n: usageOf(body).prompt_tokens, predicted_n: 8 } });
    else if (dialect === "mistral") d({}, "stop", { usage: usageOf(body) });
    else d({}, "stop");
    return out;
  }
  if (prefix) d({ content: prefix });
  const cs = reply.calls;
  if (dialect === "text-calls") {
    for (const p of pieces(callsAsText(cs))) d({ content: p });
    d({}, "stop");
  } else if (dialect === "ollama-v1") {
    cs.forEach((c, i) => d({ content: "", tool_calls: [{ id: callId(c, i), index: 0, type: "function", function: { name: c.name, arguments: argsText(c) } }] }));
    d({}, "tool_calls");
  } else if (dialect === "gemini") {
    cs.forEach((c, i) => {
      const a = argsText(c);
      const half = Math.floor(a.length / 2);
      d({ role: "assistant", tool_calls: [{ id: callId(c, i), type: "function", extra_content: { google: { thought_signature: "c2lnbmF0dXJl" } }, function: { name: c.name, arguments: a.slice(0, half) } }] });
      d({ tool_calls: [{ function: { arguments: a.slice(half) } }] });
    });
    d({}, "stop");
  } else if (dialect === "mistral") {
    const tool_calls = cs.map((c, i) => ({ id: callId(c, i), function: { name: c.name, arguments: argsText(c) }, index: i }));
    d({ role: "assistant", content: "" });
    d({ tool_calls }, "tool_calls", { usage: usageOf(body) });
  } else if (dialect === "object-args") {
    cs.forEach((c, i) => {
      const a = argsObject(c);
      d({ tool_calls: [{ index: i, id: callId(c, i), type: "function", function: { name: c.name, arguments: Object.keys(a).length ? a : "" } }] });
    });
    d({}, "tool_calls");
  } else if (dialect === "vllm") {
    cs.forEach((c, i) => {
      const a = argsText(c);
      const half = Math.floor(a.length / 2);
      d({ tool_calls: [{ index: i, id: callId(c, i), type: "function", function: { name: c.name } }] });
      d({ tool_calls: [{ index: i, function: { arguments: a.slice(0, half) } }] });
      d({ tool_calls: [{ index: i, function: { arguments: a.slice(half) } }] });
    });
    d({ content: "" }, "tool_calls");
  } else {
    cs.forEach((c, i) => {
      d({ tool_calls: [{ index: i, id: callId(c, i), type: "function", function: { name: c.name, arguments: "" } }] });
      d({ tool_calls: [{ index: i, function: { arguments: argsText(c) } }] });
    });
    d({}, "tool_calls");
  }
  return out;
}

// One whole non-streamed answer in the current dialect.
function completionOf(model, reply) {
  const reasoning = reasoningOf(reply);
  const message = { role: "assistant", content: null };
  const field = REASONING_FIELD[dialect];
  if (reasoning && field) message[field] = reasoning;
  const prefix = thinkPrefix(reasoning);
  if (reply.type === "tool_calls") {
    if (dialect === "text-calls") {
      message.content = callsAsText(reply.calls);
      return completion(model, message, "stop");
    }
    message.content = prefix || null;
    message.tool_calls = reply.calls.map((c, i) => ({ id: callId(c, i), type: "function",
      function: { name: c.name, arguments: dialect === "object-args" ? argsObject(c) : argsText(c) } }));
    return completion(model, message, dialect === "gemini" ? "stop" : "tool_calls");
  }
  message.content = prefix + (reply.text ?? `${reply.first ?? ""}${reply.rest ?? ""}`);
  return completion(model, message, "stop");
}

async function answerChat(req, res, body) {
  const violation = lenient ? null : templateViolation(family, body.messages);
  if (violation) {
    strictRefusals++;
    send(res, 400, dialect === "mistral"
      ? { object: "error", message: violation, type: "invalid_request_error", param: null, code: null }
      : { error: { message: `chat template (${family}): ${violation}`, type: "invalid_request_error" } });
    return;
  }
  const refusal = serverRefusal(body);
  if (refusal) {
    send(res, 400, refusal);
    return;
  }
  const reply = housekeeping(body) ?? chatQueue.shift() ?? { type: "text", text: "ok" };
  const model = body.model ?? "fake";
  if (reply.type === "error") {
    send(res, reply.status ?? 500, reply.body ?? { error: { message: "scripted failure" } }, reply.headers ?? {});
    return;
  }
  if (!body.stream) {
    send(res, 200, completionOf(model, reply));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...cors });
  let finished = false;
  res.on("close", () => { if (!finished) disconnects++; });
  // The framing dialect: CRLF line ends, `data:` without its space, keep-alive comments.
  const write = (text) => res.write(dialect === "framing"
    ? `: keep-alive\r\n\r\n${text.replaceAll("data: ", "data:").replaceAll("\n", "\r\n")}`
    : text);
  if (reply.type === "hold") {
    write(chunk(model, { role: "assistant", content: reply.first ?? "" }));
    const released = await new Promise((resolve) => {
      releases.push(() => resolve(true));
      res.on("close", () => resolve(false));
    });
    if (!released) return;
    if (reply.calls) {
      // Held, then tool calls (a model that thinks before acting).
      reply.calls.forEach((c, i) => {
        write(chunk(model, { tool_calls: [{ index: i, id: callId(c, i), type: "function", function: { name: c.name, arguments: argsText(c) } }] }));
      });
      write(chunk(model, {}, "tool_calls"));
    } else {
      for (const p of pieces(reply.rest ?? "")) write(chunk(model, { content: p }));
      write(chunk(model, {}, "stop"));
    }
  } else if (reply.type === "inband_error") {
    // OpenRouter's mid-stream error: after `text` (maybe none), an error
    // chunk with finish_reason "error", then the stream ends.
    if (dialect === "openrouter") write(": OPENROUTER PROCESSING\n\n");
    for (const p of pieces(reply.text ?? "")) write(chunk(model, { content: p }));
    write(chunk(model, { content: "" }, "error", { error: { code: reply.code ?? 502, message: reply.message ?? "Provider disconnected" } }));
    finished = true;
    res.end();
    return;
  } else {
    for (const text of encodeAnswer(model, reply, body)) write(text);
  }
  if (body.stream_options?.include_usage && dialect !== "mistral" && dialect !== "llamacpp") write(usageChunk(model, body));
  if (dialect !== "framing") write("data: [DONE]\n\n");
  finished = true;
  res.end();
}

// Ollama itself (--dialect ollama): what the proxy reads of it, its native
// chat, and its OpenAI endpoint that cuts long prompts silently.
const OLLAMA_MODELS = [
  { name: "qwen3:8b", family: "qwen3", size: "8.2B", trained: 40960, capabilities: ["completion", "tools", "thinking"] },
  { name: "gemma3:270m", family: "gemma3", size: "268M", trained: 32768, capabilities: ["completion"] },
  { name: "nomic-embed-text:latest", family: "nomic-bert", size: "137M", trained: 2048, capabilities: ["embedding"] },
];
const ollamaLoaded = {};
const tokensOf = (messages) => Math.ceil(JSON.stringify(messages ?? []).length / 4);
function answerOllama(req, res, path, body) {
  const model = OLLAMA_MODELS.find((m) => m.name === body.model);
  if (path === "/api/version") return send(res, 200, { version: "0.12.3" }), true;
  if (path === "/api/tags") {
    return send(res, 200, { models: OLLAMA_MODELS.map((m) => ({ name: m.name, model: m.name, digest: `sha256:${m.name.length}`,
      details: { format: "gguf", family: m.family, families: [m.family], parameter_size: m.size } })) }), true;
  }
  if (path === "/api/ps") {
    return send(res, 200, { models: Object.entries(ollamaLoaded).map(([name, ctx]) => ({ name, model: name, context_length: ctx })) }), true;
  }
  if (path === "/api/show") {
    if (!model) return send(res, 404, { error: "model not found" }), true;
    return send(res, 200, { capabilities: model.capabilities, model_info: { "general.architecture": model.family, [`${model.family}.context_length`]: model.trained } }), true;
  }
  if (path === "/api/chat" && req.method === "POST") {
    requests.push({ path, authorization: req.headers.authorization ?? null, body });
    if (!model) return send(res, 404, { error: `model '${body.model}' not found` }), true;
    const violation = lenient ? null : templateViolation(family, body.messages);
    if (violation) {
      strictRefusals++;
      return send(res, 400, { error: `chat template (${family}): ${violation}` }), true;
    }
    if ((body.tools ?? []).length > 0 && !model.capabilities.includes("tools")) {
      return send(res, 400, { error: `registry.ollama.ai/library/${model.name} does not support tools` }), true;
    }
    const numCtx = Math.min(body.options?.num_ctx ?? 4096, model.trained);
    const tokens = tokensOf(body.messages);
    if (tokens > numCtx && body.truncate === false) {
      return send(res, 400, { error: "the prompt is longer than the context length currently available to the model" }), true;
    }
    ollamaLoaded[model.name] = numCtx;
    const processed = Math.min(tokens, numCtx);
    const reply = housekeeping({ messages: body.messages }) ?? chatQueue.shift() ?? { type: "text", text: `processed ${processed} of ${tokens} tokens` };
    if (reply.type === "error") {
      return send(res, reply.status ?? 500, { error: reply.body?.error?.message ?? "scripted failure" }), true;
    }
    const at = "2026-12-02T10:00:00Z";
    const lines = [];
    const line = (message) => lines.push({ model: model.name, created_at: at, message: { role: "assistant", content: "", ...message }, done: false });
    if (reply.reasoning) line({ thinking: reply.reasoning });
    if (reply.type === "tool_calls") {
      for (const c of reply.calls) line({ tool_calls: [{ function: { index: 0, name: c.name, arguments: argsObject(c) } }] });
    } else {
      for (const p of pieces(reply.text ?? `${reply.first ?? ""}${reply.rest ?? ""}`)) line({ content: p });
    }
    const done = { model: model.name, created_at: at, message: { role: "assistant", content: "" }, done: true, done_reason: "stop",
      prompt_eval_count: processed, eval_count: 8 };
    if (body.stream === false) {
      const message = { role: "assistant", content: lines.map((l) => l.message.content).join("") };
      const toolCalls = lines.flatMap((l) => l.message.tool_calls ?? []);
      if (toolCalls.length) message.tool_calls = toolCalls;
      if (reply.reasoning) message.thinking = reply.reasoning;
      return send(res, 200, { ...done, message }), true;
    }
    res.writeHead(200, { "content-type": "application/x-ndjson", ...cors });
    for (const l of lines) res.write(`${JSON.stringify(l)}\n`);
    res.end(`${JSON.stringify(done)}\n`);
    return true;
  }
  if (path.endsWith("/chat/completions") && req.method === "POST") {
    // The OpenAI endpoint: 4,096 tokens whatever is asked; the rest is gone.
    requests.push({ path, authorization: req.headers.authorization ?? null, body });
    const tokens = tokensOf(body.messages);
    const processed = Math.min(tokens, 4096);
    const answer = completion(body.model, { role: "assistant", content: `processed ${processed} of ${tokens} tokens` }, "stop");
    answer.usage = { prompt_tokens: processed, completion_tokens: 8, total_tokens: processed + 8 };
    return send(res, 200, answer), true;
  }
  if (path.endsWith("/models") && req.method === "GET") {
    return send(res, 200, { object: "list", data: OLLAMA_MODELS.map((m) => ({ id: m.name, object: "model", created: 1, owned_by: "library" })) }), true;
  }
  return false;
}

function answerSearch(res, body) {
  const scripted = searchQueue.shift();
  const results = scripted ?? [
    { title: `About ${body.query}`, url: "https://example.org/about", content: `What is known about ${body.query}.` },
  ];
  send(res, 200, { query: body.query, results });
}

if (args[0] === "--check-template") {
  let input = "";
  for await (const part of process.stdin) input += part;
  console.log(JSON.stringify(JSON.parse(input).map((c) => templateViolation(c.family, c.messages))));
  process.exit(0);
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
    if (typeof body.embeddings === "boolean") embeddings.working = body.embeddings;
    if (typeof body.dialect === "string") {
      dialect = body.dialect;
      if (typeof body.template !== "string" && dialect === "mistral") family = "mistral";
    }
    if (typeof body.template === "string") family = body.template;
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
    dialect = startDialect; family = startFamily; idCounter = 0; embeddings = { working: true, texts: 0, requests: 0 };
    send(res, 200, {});
  } else if (path === "/__log") {
    send(res, 200, { requests, disconnects, strictRefusals, housekept, embeddings });
  } else if (path.startsWith("/pages/") && req.method === "GET") {
    requests.push({ path, query: new URL(req.url, "http://x").search, authorization: req.headers.authorization ?? null, body: {} });
    const html = pages[path.slice("/pages/".length)];
    res.writeHead(html === undefined ? 404 : 200, { "content-type": "text/html; charset=utf-8" });
    res.end(html ?? "<h1>Not found</h1>");
  } else if (startDialect === "ollama" && answerOllama(req, res, path, body)) {
    // Answered as Ollama.
  } else if (path.endsWith("/models") && req.method === "GET") {
    // What the proxy reads to resolve the "main" and "sub" aliases.
    send(res, 200, { object: "list", data: [{ id: "fake-chat", object: "model" }, { id: "fake-embed-text", object: "model" }] });
  } else if (path.endsWith("/chat/completions") && req.method === "POST") {
    requests.push({ path, authorization: req.headers.authorization ?? null, body });
    await answerChat(req, res, body);
  } else if (path.endsWith("/embeddings") && req.method === "POST") {
    // Not in `requests`: the checks that count requests count chat and search.
    embeddings.requests += 1;
    const input = Array.isArray(body.input) ? body.input : [body.input];
    embeddings.texts += input.length;
    if (!embeddings.working || body.model !== "fake-embed-text") {
      send(res, 500, { error: { message: embeddings.working ? `unknown embedding model ${body.model}` : "the embedding model is down" } });
    } else {
      send(res, 200, { object: "list", model: body.model, data: input.map((t, index) => ({ object: "embedding", index, embedding: embed(t) })),
        usage: { prompt_tokens: 1, total_tokens: 1 } });
    }
  } else if (path === "/search" && req.method === "POST") {
    requests.push({ path, authorization: req.headers.authorization ?? null, body });
    answerSearch(res, body);
  } else {
    send(res, 404, { error: { message: `no route ${path}` } });
  }
});

server.listen(Number(args[0] ?? 0), "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
