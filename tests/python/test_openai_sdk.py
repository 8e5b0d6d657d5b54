"""The official `openai` Python SDK as a client of atelier-proxy's
/v1/chat/completions, against a scripted fake upstream on 127.0.0.1."""

import base64
import json
import os
import socket
import struct
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openai
import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-upstream-SECRET-42"


class FakeUpstream(BaseHTTPRequestHandler):
    """Answers chat completions: streamed text, or a tool call when tools are offered."""

    seen: list = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeUpstream.seen.append({"auth": self.headers.get("authorization"), "body": body, "path": self.path})
        if self.path.endswith("/embeddings"):
            # One vector per input, as floats or as base64 of little-endian
            # float32 (what the SDK asks for unless told otherwise).
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = []
            for i, text in enumerate(inputs):
                vector = [len(text) / 10, -0.5, 0.25]
                if body.get("encoding_format") == "base64":
                    vector = base64.b64encode(struct.pack("<3f", *vector)).decode()
                data.append({"object": "embedding", "index": i, "embedding": vector})
            answer = {"object": "list", "data": data, "model": body["model"],
                      "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}}
            raw = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for piece in ["Hel", "lo", " there"]:
                chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": body["model"],
                         "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            done = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": body["model"],
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
            return
        if body.get("tools"):
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "web_search", "arguments": "{\"query\": \"wasm\"}"}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "plain answer"}
            finish = "stop"
        answer = {"id": "c2", "object": "chat.completion", "created": 1, "model": body["model"],
                  "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_proxy(upstream_port, extra):
    """The proxy binary in front of the fake on `upstream_port`; its URL and process."""
    port = free_port()
    binary = next(p for p in (ROOT / "target/release/atelier-proxy", ROOT / "target/debug/atelier-proxy") if p.exists())
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ATELIER_BIND": f"127.0.0.1:{port}",
        "ATELIER_UPSTREAM_URL": f"http://127.0.0.1:{upstream_port}/v1",
        "ATELIER_AUTODETECT": "false",
        **extra,
    }
    proc = subprocess.Popen([str(binary)], env=env, stderr=subprocess.PIPE)
    deadline = time.time() + 15
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert time.time() < deadline, "proxy did not start"
            time.sleep(0.05)
    return f"http://127.0.0.1:{port}/v1", proc


@pytest.fixture(scope="module")
def proxy_url():
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), FakeUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    url, proc = start_proxy(upstream.server_address[1], {"ATELIER_UPSTREAM_KEY": KEY, "ATELIER_MODEL_MAIN": "real-model",
                                                          "ATELIER_MODEL_EMBED": "real-embedder"})
    yield url
    proc.terminate()
    log = proc.stderr.read().decode()
    upstream.shutdown()
    assert KEY not in log


def client(url):
    # The SDK needs some key; the proxy holds the real one.
    return openai.OpenAI(base_url=url, api_key="not-the-upstream-key", max_retries=0)


def test_non_streaming(proxy_url):
    reply = client(proxy_url).chat.completions.create(model="main", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "plain answer"
    assert reply.usage.total_tokens == 5
    assert FakeUpstream.seen[-1]["body"]["model"] == "real-model"
    assert FakeUpstream.seen[-1]["auth"] == f"Bearer {KEY}"


def test_streaming(proxy_url):
    stream = client(proxy_url).chat.completions.create(
        model="main", messages=[{"role": "user", "content": "hi"}], stream=True)
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert pieces == ["Hel", "lo", " there"]


def test_tools(proxy_url):
    tools = [{"type": "function", "function": {"name": "web_search", "description": "Search the web",
              "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
    reply = client(proxy_url).chat.completions.create(
        model="main", messages=[{"role": "user", "content": "search"}], tools=tools, tool_choice="auto")
    call = reply.choices[0].message.tool_calls[0]
    assert call.function.name == "web_search"
    assert json.loads(call.function.arguments) == {"query": "wasm"}
    assert FakeUpstream.seen[-1]["body"]["tools"] == tools
    assert FakeUpstream.seen[-1]["body"]["tool_choice"] == "auto"


def test_embeddings(proxy_url):
    reply = client(proxy_url).embeddings.create(model="embed", input=["灯台守", "keeper"])
    assert [d.index for d in reply.data] == [0, 1]
    assert reply.data[0].embedding == pytest.approx([0.3, -0.5, 0.25])
    assert reply.usage.total_tokens == 2
    seen = FakeUpstream.seen[-1]
    assert seen["path"] == "/v1/embeddings"
    assert seen["body"]["model"] == "real-embedder"
    assert seen["auth"] == f"Bearer {KEY}"
    floats = client(proxy_url).embeddings.create(model="embed", input="a", encoding_format="float")
    assert floats.data[0].embedding == pytest.approx([0.1, -0.5, 0.25])


class FakeOllama(BaseHTTPRequestHandler):
    """Ollama as the proxy finds it: its listings, and a native /api/chat that
    streams NDJSON lines (thinking, then two parallel calls with object
    arguments, then the counts), as Ollama's docs/api.md describes them."""

    seen: list = []

    def log_message(self, *args):
        pass

    def reply(self, body, content_type="application/json"):
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            return self.reply({"object": "list", "data": [{"id": "qwen3:8b", "object": "model", "owned_by": "library"}]})
        if self.path == "/api/tags":
            return self.reply({"models": [{"name": "qwen3:8b", "digest": "sha256:1",
                                           "details": {"family": "qwen3", "parameter_size": "8.2B"}}]})
        if self.path == "/api/ps":
            return self.reply({"models": []})
        self.send_error(404)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path == "/api/show":
            return self.reply({"capabilities": ["completion", "tools", "thinking"],
                               "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}})
        if self.path != "/api/chat":
            return self.send_error(404)
        FakeOllama.seen.append(body)
        at = "2026-12-02T10:00:00Z"
        lines = [
            {"model": "qwen3:8b", "created_at": at, "message": {"role": "assistant", "content": "", "thinking": "Both."}, "done": False},
            {"model": "qwen3:8b", "created_at": at, "message": {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"index": 0, "name": "open_url", "arguments": {"url": "https://a.example"}}}]}, "done": False},
            {"model": "qwen3:8b", "created_at": at, "message": {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"index": 0, "name": "open_url", "arguments": {"url": "https://b.example"}}}]}, "done": False},
            {"model": "qwen3:8b", "created_at": at, "message": {"role": "assistant", "content": ""}, "done": True,
             "done_reason": "stop", "prompt_eval_count": 30, "eval_count": 12},
        ]
        self.reply("".join(json.dumps(line) + "\n" for line in lines), "application/x-ndjson")


@pytest.fixture(scope="module")
def ollama_proxy_url():
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), FakeOllama)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    url, proc = start_proxy(upstream.server_address[1], {})
    yield url
    proc.terminate()
    upstream.shutdown()


def test_ollama_native_answers_read_as_openai_by_the_sdk(ollama_proxy_url):
    # The SDK's own stream helper assembles tool calls by index: Ollama's
    # native answer, translated by the proxy, must give two calls, not one.
    tools = [{"type": "function", "function": {"name": "open_url", "description": "Open a page",
              "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}}]
    with client(ollama_proxy_url).chat.completions.stream(
            model="main", messages=[{"role": "user", "content": "compare a and b"}], tools=tools,
            stream_options={"include_usage": True}) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert [json.loads(c.function.arguments) for c in calls] == [{"url": "https://a.example"}, {"url": "https://b.example"}]
    assert len({c.id for c in calls}) == 2
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage.prompt_tokens == 30 and final.usage.completion_tokens == 12
    sent = FakeOllama.seen[-1]
    assert sent["model"] == "qwen3:8b" and sent["options"]["num_ctx"] == 8192 and sent["truncate"] is False
