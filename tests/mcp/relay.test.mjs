// The proxy's MCP relay with the official MCP TypeScript client
// (@modelcontextprotocol/sdk) connected to the relay, never to a server:
// the reference server (@modelcontextprotocol/server-everything, Streamable
// HTTP) and the recorder (recorder.mjs: records the headers it gets), all on
// 127.0.0.1, behind the real proxy binary with a client token.
//
//   node --test tests/mcp/      (after `npm ci` in tests/mcp and a proxy build;
//                                ATELIER_PROXY_BIN picks the binary)
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startNode, startProxy, stopAll } from "./services.mjs";

const CLIENT_TOKEN = "client-token-of-the-person";
const SERVER_TOKEN = "recorder-SERVER-token-31415926";
let proxy;
let recorder;

before(async () => {
  const [everything, rec] = await Promise.all([startNode("everything.mjs"), startNode("recorder.mjs")]);
  recorder = `http://127.0.0.1:${rec.port}`;
  proxy = await startProxy({
    ATELIER_MCP_SERVERS: `everything=http://127.0.0.1:${everything.port}/mcp,recorder=${recorder}/mcp`,
    ATELIER_MCP_TOKEN_RECORDER: SERVER_TOKEN,
    ATELIER_CLIENT_TOKEN: CLIENT_TOKEN,
    ATELIER_RATE_LIMIT: "0",
  });
});

after(stopAll);

/** A client of the relay for `server`; `seen` collects every answer's headers and body. */
function relayClient(server, { token = CLIENT_TOKEN, sessionId, seen } = {}) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const fetchAndKeep = async (url, init) => {
    const response = await fetch(url, init);
    if (seen) seen.push({ headers: [...response.headers], body: response.clone().text().catch(() => "") });
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(`${proxy.url}/api/mcp/${server}`), {
    requestInit: { headers },
    sessionId,
    fetch: fetchAndKeep,
  });
  return { transport, client: new Client({ name: "atelier-relay-test", version: "1.0.0" }) };
}

async function recorded() {
  return (await fetch(`${recorder}/__seen`)).json();
}

test("the official client through the relay: initialize, list, call, progress, session, DELETE", async () => {
  const { transport, client } = relayClient("everything");
  await client.connect(transport);
  assert.equal(client.getServerVersion()?.name.includes("everything"), true, JSON.stringify(client.getServerVersion()));
  const sessionId = transport.sessionId;
  assert.ok(sessionId, "Mcp-Session-Id came back through the relay");

  const { tools } = await client.listTools();
  const echo = tools.find((t) => t.name === "echo");
  assert.ok(echo, tools.map((t) => t.name).join(", "));
  assert.equal(echo.annotations?.readOnlyHint, true);
  const answer = await client.callTool({ name: "echo", arguments: { message: "through the relay" } });
  assert.match(answer.content[0].text, /through the relay/);

  // Progress notifications stream before the result (an SSE answer).
  const progress = [];
  const long = await client.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } },
    undefined,
    { onprogress: (p) => progress.push(p.progress) },
  );
  assert.match(long.content[0].text, /completed/);
  assert.deepEqual(progress, [1, 2, 3]);

  // The same session from a second client (as another tab or replica would carry it).
  const second = relayClient("everything", { sessionId });
  await second.client.connect(second.transport);
  const again = await second.client.callTool({ name: "get-sum", arguments: { a: 2, b: 3 } });
  assert.match(again.content[0].text, /5/);

  // DELETE ends it at the server: the session is gone for both (this
  // server answers an unknown session with 400; the recorder with 404).
  await transport.terminateSession();
  assert.equal(transport.sessionId, undefined);
  await assert.rejects(second.client.listTools(), (e) => e instanceof StreamableHTTPError && e.code === 400);
  await client.close();
  await second.client.close();
});

test("the server's token reaches the server and no browser; the client token never reaches the server", async () => {
  await fetch(`${recorder}/__reset`, { method: "POST" });
  const seen = [];
  const { transport, client } = relayClient("recorder", { seen });
  await client.connect(transport);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["echo_headers", "add", "fail", "wait", "erase_note"]);
  const sum = await client.callTool({ name: "add", arguments: { a: 40, b: 2 } });
  assert.deepEqual(sum.structuredContent, { sum: 42 });
  const echoed = JSON.parse((await client.callTool({ name: "echo_headers", arguments: {} })).content[0].text);
  assert.equal(echoed.authorization, "Bearer [redacted]", "the server echoed its token; the relay cut it out");
  const sessionId = transport.sessionId;
  await transport.terminateSession();
  await client.close();
  // An ended session is 404 through the relay, as the server said: the
  // client's cue to initialize again.
  const late = relayClient("recorder", { sessionId });
  await late.client.connect(late.transport);
  await assert.rejects(late.client.listTools(), (e) => e instanceof StreamableHTTPError && e.code === 404);

  const requests = await recorded();
  assert.deepEqual([...new Set(requests.map((r) => r.method))].sort(), ["DELETE", "GET", "POST"]);
  for (const { method, path, headers } of requests) {
    assert.equal(path, "/mcp");
    assert.equal(headers.authorization, `Bearer ${SERVER_TOKEN}`, method);
    assert.ok(!JSON.stringify(headers).includes(CLIENT_TOKEN), `${method} carried the client token`);
    for (const name of ["origin", "cookie", "referer"]) assert.equal(headers[name], undefined, `${method}: ${name}`);
  }
  for (const answer of seen) {
    const text = JSON.stringify(answer.headers) + (await answer.body);
    assert.ok(!text.includes(SERVER_TOKEN), `an answer carried the server token: ${text}`);
    assert.ok(!answer.headers.some(([name]) => name === "set-cookie"), "the recorder's cookie was dropped");
  }
  assert.ok(!proxy.log().includes(SERVER_TOKEN) && !proxy.log().includes(CLIENT_TOKEN), "no token in the log");
});

/** A raw request (node:http sends any Host); resolves to the status. */
function rawStatus(path, { method = "POST", headers = {}, body = "{}" } = {}) {
  return new Promise((resolve, reject) => {
    const request = http.request(`${proxy.url}${path}`, { method, headers, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode);
    });
    request.on("error", reject);
    request.end(method === "POST" ? body : undefined);
  });
}

test("gate probes: nothing reaches the server", async () => {
  await fetch(`${recorder}/__reset`, { method: "POST" });
  const { transport, client } = relayClient("recorder", { token: null });
  await assert.rejects(client.connect(transport), (e) => e instanceof StreamableHTTPError && e.code === 401);

  const json = { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${CLIENT_TOKEN}` };
  const host = `127.0.0.1:${proxy.port}`;
  const probes = [
    ["unknown name", "/api/mcp/nobody", { headers: json }, 404],
    ["foreign Origin", "/api/mcp/recorder", { headers: { ...json, origin: "https://evil.example" } }, 403],
    ["wrong Host", "/api/mcp/recorder", { headers: { ...json, host: `rebind.example:${proxy.port}` } }, 421],
    ["text/plain", "/api/mcp/recorder", { headers: { ...json, "content-type": "text/plain" } }, 415],
    ["no client token", "/api/mcp/recorder", { headers: { ...json, authorization: "" } }, 401],
    ["the server's token", "/api/mcp/recorder", { headers: { ...json, authorization: `Bearer ${SERVER_TOKEN}` } }, 401],
    ["path escape", "/api/mcp/recorder/../../__seen", { method: "GET", headers: { ...json, host } }, 404],
    ["encoded path escape", "/api/mcp/recorder%2F..%2F__seen", { headers: json }, 404],
    ["extra path", "/api/mcp/recorder/__seen", { method: "GET", headers: json }, 404],
    ["query", "/api/mcp/recorder?target=http://127.0.0.1:1/", { headers: json }, 400],
  ];
  for (const [what, path, options, status] of probes) {
    assert.equal(await rawStatus(path, options), status, what);
  }
  assert.deepEqual(await recorded(), [], "the recorder saw no request");
});

test("/api/health lists the servers, never a URL or a token", async () => {
  const response = await fetch(`${proxy.url}/api/health`, { headers: { authorization: `Bearer ${CLIENT_TOKEN}` } });
  const text = await response.text();
  assert.deepEqual(JSON.parse(text).mcp, [
    { name: "everything", reachable: true },
    { name: "recorder", reachable: true },
  ]);
  assert.ok(!text.includes(SERVER_TOKEN) && !text.includes("127.0.0.1"), text);
});
