//! Layer-1 tests of the answer decoder with the exact bytes of each
//! server's dialect. Every fixture is written here from the documented or
//! reported format it cites (no server's output is copied); each is fed
//! through the real SSE decoder and assembler whole and in pieces of
//! several sizes, and the deltas must agree with the finished answer.

use serde_json::{json, Value};

use super::*;
use crate::llm::{ChatRequest, SseDecoder, TextCallFilter, ToolSpec};

/// What a fixture must decode to.
struct Want {
    text: &'static str,
    reasoning: &'static str,
    /// (name, arguments as JSON).
    calls: Vec<(&'static str, Value)>,
    finish: Option<&'static str>,
    prompt_tokens: Option<u64>,
}

fn want(text: &'static str) -> Want {
    Want { text, reasoning: "", calls: Vec::new(), finish: Some("stop"), prompt_tokens: None }
}

/// Decodes `bytes` fed in pieces of `size`, with `tools` offered (calls
/// written as text recognised by the filter the agent composes around the
/// assembler); the outcome and the deltas.
fn decode(bytes: &[u8], size: usize, tools: &[&str]) -> (Result<ChatOutcome>, Vec<Delta>) {
    let mut request = ChatRequest::new("m", Vec::new());
    request.tools = tools.iter().map(|t| ToolSpec::function(*t, "", json!({"type": "object"}))).collect();
    let mut filter = TextCallFilter::for_request(&request);
    let mut assembler = StreamAssembler::new();
    let mut decoder = SseDecoder::new();
    let mut deltas = Vec::new();
    let mut sink = |d: Delta| filter.delta(d, &mut |d| deltas.push(d));
    for piece in bytes.chunks(size.max(1)) {
        for event in decoder.feed(piece).unwrap() {
            if let Err(e) = assembler.push_event(&event, &mut sink) {
                return (Err(e), deltas);
            }
        }
    }
    if let Some(event) = decoder.finish() {
        if let Err(e) = assembler.push_event(&event, &mut sink) {
            return (Err(e), deltas);
        }
    }
    let outcome = assembler.finish_with(&mut sink);
    let outcome = outcome.map(|o| filter.finish(o, &mut |d| deltas.push(d)));
    (outcome, deltas)
}

/// The deltas replayed as a consumer would: (answer, reasoning, calls by index).
fn replay(deltas: &[Delta]) -> (String, String, Vec<(String, String, String)>) {
    let (mut text, mut reasoning, mut calls) = (String::new(), String::new(), Vec::<(String, String, String)>::new());
    for delta in deltas {
        match delta {
            Delta::Text { text: t } => text.push_str(t),
            Delta::Reasoning { text: t } => reasoning.push_str(t),
            Delta::WasReasoning { text: t } => {
                text.clear();
                reasoning.push_str(t);
            }
            Delta::ToolCall { index, id, name, arguments } => {
                if calls.len() <= *index {
                    calls.resize(index + 1, Default::default());
                }
                let call = &mut calls[*index];
                if let Some(id) = id {
                    call.0.clone_from(id);
                }
                if let Some(name) = name {
                    call.1.push_str(name);
                }
                call.2.push_str(arguments);
            }
        }
    }
    (text, reasoning, calls)
}

fn check(name: &str, bytes: &str, tools: &[&str], want: &Want) {
    for size in [1, 2, 7, 64, bytes.len()] {
        let (outcome, deltas) = decode(bytes.as_bytes(), size, tools);
        let outcome = outcome.unwrap_or_else(|e| panic!("{name}, pieces of {size}: {e}"));
        let at = format!("{name}, pieces of {size}");
        assert_eq!(outcome.message.text(), want.text, "{at}: answer");
        assert_eq!(outcome.reasoning.as_deref().unwrap_or(""), want.reasoning, "{at}: reasoning");
        let calls: Vec<(&str, Value)> = outcome
            .message
            .tool_calls()
            .iter()
            .map(|c| (c.function.name.as_str(), serde_json::from_str(&c.function.arguments).expect("JSON arguments")))
            .collect();
        assert_eq!(calls, want.calls, "{at}: calls");
        assert_eq!(outcome.finish_reason.as_deref(), want.finish, "{at}: finish reason");
        if let Some(tokens) = want.prompt_tokens {
            assert_eq!(outcome.usage.map(|u| u.prompt_tokens), Some(tokens), "{at}: usage");
        }
        // What streamed is what was answered: the same text, reasoning and
        // calls, each call with the same id in its deltas and the answer
        // (calls written as text are in the answer only: they never streamed).
        let (text, reasoning, streamed) = replay(&deltas);
        assert_eq!(text, want.text, "{at}: streamed answer");
        assert_eq!(reasoning, want.reasoning, "{at}: streamed reasoning");
        assert_eq!(streamed.len(), outcome.message.tool_calls().len(), "{at}: streamed calls");
        for (call, (id, name, _)) in outcome.message.tool_calls().iter().zip(&streamed) {
            assert_eq!((&call.id, &call.function.name), (id, name), "{at}: streamed call");
            assert!(!call.id.is_empty());
        }
        let ids: std::collections::HashSet<_> = outcome.message.tool_calls().iter().map(|c| &c.id).collect();
        assert_eq!(ids.len(), outcome.message.tool_calls().len(), "{at}: ids are unique");
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )
}

#[test]
fn every_dialect_decodes_to_the_same_answer() {
    let open = |u: &str| ("open_url", json!({ "url": u }));
    let tools = ["open_url", "web_search", "get_time"];
    let cases: Vec<(&str, String, Want)> = vec![
        (
            // OpenAI's reference stream (API reference, "The chat completion
            // chunk object"; parallel calls with their own indexes, arguments
            // in pieces, usage in a last chunk with `choices: []`).
            "openai reference",
            [
                chunk(json!({"role": "assistant", "content": null}), None),
                chunk(json!({"tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "open_url", "arguments": ""}}]}), None),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"url\": \"h"}}]}), None),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "ttps://a.example\"}"}}]}), None),
                chunk(json!({"tool_calls": [{"index": 1, "id": "call_B", "type": "function", "function": {"name": "open_url", "arguments": ""}}]}), None),
                chunk(json!({"tool_calls": [{"index": 1, "function": {"arguments": "{\"url\": \"https://b.example\"}"}}]}), None),
                chunk(json!({}), Some("tool_calls")),
                "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":30,\"total_tokens\":150}}\n\n".into(),
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
            Want { calls: vec![open("https://a.example"), open("https://b.example")], finish: Some("tool_calls"), prompt_tokens: Some(120), ..want("") },
        ),
        (
            // Ollama's OpenAI endpoint: every parallel call whole in one chunk,
            // all at `index: 0`, each with its own id (ollama/ollama#15457;
            // vercel/ai#14277); reasoning in `reasoning` (Ollama's openai.go
            // `Delta.Reasoning`), finish in a chunk of its own.
            "ollama v1",
            [
                chunk(json!({"role": "assistant", "content": "", "reasoning": "Two pages: "}), None),
                chunk(json!({"content": "", "reasoning": "open both."}), None),
                chunk(json!({"content": "", "tool_calls": [{"id": "call_k2x8", "index": 0, "type": "function", "function": {"name": "open_url", "arguments": "{\"url\":\"https://a.example\"}"}}]}), None),
                chunk(json!({"content": "", "tool_calls": [{"id": "call_p4q1", "index": 0, "type": "function", "function": {"name": "open_url", "arguments": "{\"url\":\"https://b.example\"}"}}]}), None),
                chunk(json!({}), Some("tool_calls")),
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
            Want { reasoning: "Two pages: open both.", calls: vec![open("https://a.example"), open("https://b.example")], finish: Some("tool_calls"), ..want("") },
        ),
        (
            // Gemini's OpenAI-compatible endpoint: no `index` on tool calls,
            // `extra_content` with a thought signature, `finish_reason: "stop"`
            // after tool calls (googleapis/python-genai#2868,
            // open-webui/computer#224), arguments split in index-less deltas.
            "gemini",
            [
                chunk(json!({"role": "assistant", "tool_calls": [{"id": "function-call-1", "type": "function", "extra_content": {"google": {"thought_signature": "c2ln"}}, "function": {"name": "open_url", "arguments": "{\"url\":\"https://a.example\"}"}}]}), None),
                chunk(json!({"tool_calls": [{"id": "function-call-2", "type": "function", "function": {"name": "open_url", "arguments": "{\"url\":"}}]}), None),
                chunk(json!({"tool_calls": [{"function": {"arguments": "\"https://b.example\"}"}}]}), None),
                chunk(json!({}), Some("stop")),
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
            Want { calls: vec![open("https://a.example"), open("https://b.example")], finish: Some("tool_calls"), ..want("") },
        ),
        (
            // DeepSeek's thinking mode: `reasoning_content` deltas before the
            // content (DeepSeek API docs, "Thinking Mode").
            "deepseek",
            [
                chunk(json!({"role": "assistant", "content": null, "reasoning_content": "9.11 < 9.8 "}), None),
                chunk(json!({"content": null, "reasoning_content": "since 0.11 < 0.8."}), None),
                chunk(json!({"content": "9.8 is ", "reasoning_content": null}), None),
                chunk(json!({"content": "greater."}), Some("stop")),
                "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":40,\"total_tokens\":52,\"prompt_cache_hit_tokens\":0}}\n\n".into(),
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
            Want { reasoning: "9.11 < 9.8 since 0.11 < 0.8.", prompt_tokens: Some(12), ..want("9.8 is greater.") },
        ),
        (
            // OpenRouter: `: OPENROUTER PROCESSING` comments while it waits
            // (OpenRouter docs, "Streaming"), reasoning in `reasoning`.
            "openrouter",
            [
                ": OPENROUTER PROCESSING\n\n".to_owned(),
                ": OPENROUTER PROCESSING\n\n".into(),
                chunk(json!({"role": "assistant", "content": "", "reasoning": "Short."}), None),
                chunk(json!({"content": "Hi!", "reasoning": null}), None),
                chunk(json!({}), Some("stop")),
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
            Want { reasoning: "Short.", ..want("Hi!") },
        ),
        (
            // Azure OpenAI: a first chunk with `choices: []` and the prompt's
            // content-filter results (Azure OpenAI docs, "Content filtering",
            // streaming), then ordinary chunks.
            "azure",
            [
                "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{\"hate\":{\"filtered\":false,\"severity\":\"safe\"}}}]}\n\n".to_owned(),
                "data: {\"choices\":[{\"content_filter_results\":{},\"delta\":{\"content\":\"\",\"role\":\"assistant\"},\"finish_reason\":null,\"index\":0}],\"object\":\"chat.completion.chunk\"}\n\n".into(),
                chunk(json!({"content": "Hello"}), None),
                "data: {\"choices\":[{\"content_filter_results\":{},\"delta\":{},\"finish_reason\":\"stop\",\"index\":0}]}\n\n".into(),
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
            want("Hello"),
        ),
        (
            // llama.cpp's server: `reasoning_content` with --reasoning-format
            // deepseek, `timings` in the last chunk (tools/server/README.md).
            "llama.cpp",
            [
                chunk(json!({"role": "assistant", "content": null}), None),
                chunk(json!({"reasoning_content": "Think."}), None),
                chunk(json!({"content": "Done."}), None),
                "data: {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}],\"object\":\"chat.completion.chunk\",\"timings\":{\"cache_n\":90,\"prompt_n\":10,\"predicted_n\":3}}\n\n".into(),
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
            Want { reasoning: "Think.", prompt_tokens: Some(100), ..want("Done.") },
        ),
        (
            // vLLM since 0.17: `reasoning` (vllm-project/vllm#27755); a tool
            // call's id and name first with no arguments, then the arguments
            // (vllm-project/vllm#18412).
            "vllm",
            [
                chunk(json!({"role": "assistant", "content": ""}), None),
                chunk(json!({"reasoning": "Look it up."}), None),
                chunk(json!({"tool_calls": [{"index": 0, "id": "chatcmpl-tool-9f2", "type": "function", "function": {"name": "web_search"}}]}), None),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"query\": "}}]}), None),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"rust\"}"}}]}), None),
                chunk(json!({"content": ""}), Some("tool_calls")),
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
            Want { reasoning: "Look it up.", calls: vec![("web_search", json!({"query": "rust"}))], finish: Some("tool_calls"), ..want("") },
        ),
        (
            // Mistral's API: a call whole in one chunk with a 9-character id,
            // the finish reason in the same chunk (Mistral docs, "Function
            // calling"); Magistral's content as typed parts with a thinking part.
            "mistral",
            [
                "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"magistral-medium-latest\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"Need the page.\"}]}]},\"finish_reason\":null}]}\n\n".to_owned(),
                "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"D681PevKs\",\"function\":{\"name\":\"open_url\",\"arguments\":\"{\\\"url\\\": \\\"https://a.example\\\"}\"},\"index\":0}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":80,\"total_tokens\":100,\"completion_tokens\":20}}\n\n".into(),
                "data: [DONE]\n\n".into(),
            ]
            .concat(),
            Want { reasoning: "Need the page.", calls: vec![open("https://a.example")], finish: Some("tool_calls"), prompt_tokens: Some(80), ..want("") },
        ),
        (
            // Arguments as a JSON object, and `""` for a tool without
            // arguments (reported of Ollama-backed gateways and LM Studio
            // builds; BerriAI/litellm issues on dict arguments).
            "object arguments",
            [
                chunk(json!({"tool_calls": [{"index": 0, "id": "a1", "type": "function", "function": {"name": "web_search", "arguments": {"query": "京都"}}}]}), None),
                chunk(json!({"tool_calls": [{"index": 1, "id": "a2", "type": "function", "function": {"name": "get_time", "arguments": ""}}]}), None),
                chunk(json!({}), Some("tool_calls")),
            ]
            .concat(),
            Want { calls: vec![("web_search", json!({"query": "京都"})), ("get_time", json!({}))], finish: Some("tool_calls"), ..want("") },
        ),
        (
            // The framing others get wrong, all at once: CRLF line ends,
            // `data:` without its space, `: keep-alive` comments, an event id,
            // no `[DONE]` (the WHATWG event-stream grammar allows each).
            "framing",
            "id: 1\r\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n: keep-alive\r\n\r\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\r\n\r\n".to_owned(),
            want("Hello"),
        ),
        (
            // No finish reason at all, only `[DONE]` (small OpenAI-compatible
            // servers), and a chunk with no `delta`.
            "no finish reason",
            ["data: {\"choices\":[{\"index\":0}]}\n\n".to_owned(), chunk(json!({"content": "ok"}), None), "data: [DONE]\n\n".into()].concat(),
            Want { finish: None, ..want("ok") },
        ),
        (
            // A tool call without an id and without an index (servers that
            // send neither): one is made, the same in the deltas and the answer.
            "no id",
            [
                chunk(json!({"tool_calls": [{"type": "function", "function": {"name": "web_search", "arguments": "{\"query\""}}]}), None),
                chunk(json!({"tool_calls": [{"function": {"arguments": ": \"a\"}"}}]}), None),
                chunk(json!({"tool_calls": [{"type": "function", "function": {"name": "web_search", "arguments": "{\"query\": \"b\"}"}}]}), None),
                chunk(json!({}), Some("tool_calls")),
            ]
            .concat(),
            Want { calls: vec![("web_search", json!({"query": "a"})), ("web_search", json!({"query": "b"}))], finish: Some("tool_calls"), ..want("") },
        ),
        (
            // A server that repeats the name in every delta of a call.
            "repeats",
            [
                chunk(json!({"tool_calls": [{"index": 0, "id": "r1", "function": {"name": "web_search", "arguments": "{\"query\":"}}]}), None),
                chunk(json!({"tool_calls": [{"index": 0, "function": {"name": "web_search", "arguments": " \"z\"}"}}]}), None),
                chunk(json!({}), Some("tool_calls")),
            ]
            .concat(),
            Want { calls: vec![("web_search", json!({"query": "z"}))], finish: Some("tool_calls"), ..want("") },
        ),
        (
            // Qwen3 served without a reasoning parser (llama.cpp
            // --reasoning-format none): the think block leads the content.
            "think tags",
            [chunk(json!({"content": "<thi"}), None), chunk(json!({"content": "nk>\nPlan it.\n</th"}), None), chunk(json!({"content": "ink>\n\nThe plan."}), Some("stop"))].concat(),
            Want { reasoning: "\nPlan it.\n", ..want("The plan.") },
        ),
        (
            // A DeepSeek-R1 distill whose template writes `<think>` into the
            // prompt: the answer shows only the closing tag.
            "closing tag only",
            [chunk(json!({"content": "The user greets me.\n"}), None), chunk(json!({"content": "</think>\n\nHello!"}), Some("stop"))].concat(),
            Want { reasoning: "The user greets me.\n", ..want("Hello!") },
        ),
        (
            // A server without a tool parser for the model (llama.cpp without
            // --jinja, Hermes-style models): the calls come as text.
            "calls written as text",
            [
                chunk(json!({"content": "Opening both.\n<tool_call>\n{\"name\": \"open_url\", "}), None),
                chunk(json!({"content": "\"arguments\": {\"url\": \"https://a.example\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"open_url\", \"arguments\": {\"url\": \"https://b.example\"}}\n</tool_call>"}), None),
                chunk(json!({}), Some("stop")),
            ]
            .concat(),
            Want { calls: vec![open("https://a.example"), open("https://b.example")], finish: Some("tool_calls"), ..want("Opening both.\n") },
        ),
    ];
    for (name, bytes, want) in &cases {
        check(name, bytes, &tools, want);
    }
}

#[test]
fn errors_inside_the_stream_are_coded_and_retried_only_before_output() {
    // OpenRouter's mid-stream error: an `error` with an HTTP-like code and
    // `finish_reason: "error"` (OpenRouter docs, "Errors": errors during
    // streaming); before any output, and after some.
    let error = "data: {\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\",\"error\":{\"code\":502,\"message\":\"Provider disconnected\"},\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"error\"}]}\n\n";
    let (outcome, _) = decode([": OPENROUTER PROCESSING\n\n", error].concat().as_bytes(), 5, &[]);
    let err = outcome.unwrap_err();
    assert_eq!(err.code(), "upstream_unavailable", "{err}");
    assert!(err.is_retryable() && err.to_string().contains("Provider disconnected"));

    let mut assembler = StreamAssembler::new();
    assembler.push(&chunk(json!({"content": "Partial"}), None)[6..], &mut |_| {}).unwrap();
    assert!(assembler.has_output(), "shown: a retry would repeat it");
    assert!(assembler.push(&error[6..], &mut |_| {}).is_err());
    let mut thinking = StreamAssembler::new();
    thinking.push(&chunk(json!({"reasoning_content": "hm"}), None)[6..], &mut |_| {}).unwrap();
    assert!(thinking.has_output(), "reasoning shown counts as output");
    assert!(!StreamAssembler::new().has_output());

    for (data, code) in [
        (r#"{"error":{"message":"Rate limit exceeded","code":429}}"#, "rate_limited"),
        (
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            "context_too_long",
        ),
        (r#"{"error":"overloaded"}"#, "upstream_unavailable"),
        (r#"{"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}"#, "upstream_unavailable"),
    ] {
        assert_eq!(StreamAssembler::new().push(data, &mut |_| {}).unwrap_err().code(), code, "{data}");
    }
    // `event: error` (servers that name the event).
    let (outcome, _) = decode(b"event: error\ndata: {\"message\":\"boom\"}\n\n", 3, &[]);
    assert!(outcome.unwrap_err().to_string().contains("boom"));
    // A connection that ends inside a tool call, with neither a finish
    // reason nor `[DONE]`.
    let cut = chunk(
        json!({"tool_calls": [{"index": 0, "id": "x", "function": {"name": "web_search", "arguments": "{\"query\": \"ab"}}]}),
        None,
    );
    assert_eq!(decode(cut.as_bytes(), 9, &[]).0.unwrap_err().code(), "malformed_response");
}

#[test]
fn non_streamed_bodies_get_the_same_treatment() {
    let parse = |body: Value, tools: &[&str]| {
        let mut filter = TextCallFilter::new(tools.iter().map(|t| t.to_string()).collect());
        parse_completion(&body.to_string()).map(|o| filter.finish(o, &mut |_| {}))
    };
    // Ollama's non-streamed answer: `reasoning`, calls without `index`,
    // `finish_reason` "tool_calls"; and arguments as an object.
    let ollama = parse(
        json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "", "reasoning": "Both.",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "open_url", "arguments": "{\"url\":\"a\"}"}},
                           {"id": "call_2", "type": "function", "function": {"name": "open_url", "arguments": {"url": "b"}}}]}}],
               "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}}),
        &[],
    )
    .unwrap();
    assert_eq!(ollama.message.text(), "");
    assert_eq!(ollama.reasoning.as_deref(), Some("Both."));
    let calls = ollama.message.tool_calls();
    assert_eq!((calls.len(), calls[1].function.arguments.as_str()), (2, r#"{"url":"b"}"#));
    assert_eq!(calls[0].reasoning.as_deref(), Some("Both."), "kept on the step's first call");
    assert_eq!(calls[1].reasoning, None);
    // DeepSeek's `reasoning_content` and a think block in the content.
    let deepseek = parse(json!({"choices": [{"message": {"role": "assistant", "reasoning_content": "R", "content": "A"}, "finish_reason": "stop"}]}), &[]).unwrap();
    assert_eq!((deepseek.message.text(), deepseek.reasoning.as_deref()), ("A", Some("R")));
    let think = parse(json!({"choices": [{"message": {"role": "assistant", "content": "<think>R</think>A"}, "finish_reason": "stop"}]}), &[]).unwrap();
    assert_eq!((think.message.text(), think.reasoning.as_deref()), ("A", Some("R")));
    // A call written as text, and `"stop"` after it.
    let text_call = parse(
        json!({"choices": [{"message": {"role": "assistant", "content": "[TOOL_CALLS][{\"name\": \"web_search\", \"arguments\": {\"query\": \"q\"}}]"}, "finish_reason": "stop"}]}),
        &["web_search"],
    )
    .unwrap();
    assert_eq!((text_call.message.text(), text_call.message.tool_calls().len()), ("", 1));
    assert_eq!(text_call.finish_reason.as_deref(), Some("tool_calls"));
    // A 200 that is an error, and bodies that are not answers.
    assert_eq!(
        parse(json!({"error": {"message": "busy", "code": 503}}), &[]).unwrap_err().code(),
        "upstream_unavailable"
    );
    for bad in [json!([]), json!({"choices": []}), json!({"choices": [{"index": 0}]})] {
        assert_eq!(parse(bad.clone(), &[]).unwrap_err().code(), "malformed_response", "{bad}");
    }
    assert_eq!(parse_completion("{not json").unwrap_err().code(), "malformed_response");
}

#[test]
fn a_model_that_only_closes_its_think_block_is_learnt() {
    let bytes = [
        chunk(json!({"content": "Reasoning first.\n"}), None),
        chunk(json!({"content": "</think>Answer."}), Some("stop")),
    ]
    .concat();
    let mut first = StreamAssembler::new();
    let mut deltas = Vec::new();
    for event in SseDecoder::new().feed(bytes.as_bytes()).unwrap() {
        first.push_event(&event, &mut |d| deltas.push(d)).unwrap();
    }
    assert!(first.saw_prefilled_think());
    assert_eq!(deltas[0], Delta::Text { text: "Reasoning first.\n".into() }, "shown before the close came");
    assert!(deltas.iter().any(|d| matches!(d, Delta::WasReasoning { text } if text == "Reasoning first.\n")));
    // The next answer of that model streams its reasoning as reasoning.
    let mut next = StreamAssembler::new().with_prefilled_think();
    let mut deltas = Vec::new();
    for event in SseDecoder::new().feed(bytes.as_bytes()).unwrap() {
        next.push_event(&event, &mut |d| deltas.push(d)).unwrap();
    }
    assert_eq!(deltas[0], Delta::Reasoning { text: "Reasoning first.\n".into() });
    assert_eq!(next.finish().unwrap().message.text(), "Answer.");
}

#[test]
fn reasoning_goes_back_only_when_asked_and_only_as_the_message_field() {
    let mut call = ToolCall::new("call_1", "open_url", &json!({"url": "a"}));
    call.reasoning = Some("Open it.".into());
    let messages = vec![
        Message::user("u"),
        Message::Assistant { content: None, tool_calls: vec![call] },
        Message::tool("call_1", "r"),
    ];
    let mut request = ChatRequest::new("m", messages);
    let plain: Value = serde_json::from_str(&request.clone().wire_body().unwrap()).unwrap();
    assert!(!plain.to_string().contains("Open it."), "no reasoning on the wire unless asked: {plain}");
    assert_eq!(
        plain["messages"][1]["tool_calls"][0],
        json!({"id": "call_1", "type": "function", "function": {"name": "open_url", "arguments": "{\"url\":\"a\"}"}})
    );
    request.echo_reasoning = true;
    let echoed: Value = serde_json::from_str(&request.wire_body().unwrap()).unwrap();
    assert_eq!(echoed["messages"][1]["reasoning_content"], "Open it.");
    assert!(echoed["messages"][1]["tool_calls"][0].get("reasoning").is_none());
    // Kept across a checkpoint (the message's own JSON).
    let stored = serde_json::to_value(&plain).unwrap();
    assert!(stored.is_object());
}

#[test]
fn cached_tokens_from_openai_and_llama_cpp() {
    let openai = json!({"usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105,
                                  "prompt_tokens_details": {"cached_tokens": 64}}});
    let u = Usage::read(&openai, None).unwrap();
    assert_eq!((u.prompt_tokens, u.completion_tokens, u.cached_tokens), (100, 5, 64));
    let llama = json!({"choices": [], "timings": {"cache_n": 90, "prompt_n": 10, "predicted_n": 7}});
    let u = Usage::read(&llama, None).unwrap();
    assert_eq!((u.prompt_tokens, u.completion_tokens, u.cached_tokens), (100, 7, 90));
    assert_eq!(Usage::read(&json!({"tokens_cached": 12}), None).unwrap().cached_tokens, 12);
    assert_eq!(Usage::read(&json!({"choices": []}), None), None);
}

#[test]
fn garbage_is_a_malformed_response_not_a_panic() {
    let mut asm = StreamAssembler::new();
    assert_eq!(asm.push("{not json", &mut |_| {}).unwrap_err().code(), "malformed_response");
    let nameless = {
        let mut a = StreamAssembler::new();
        a.push(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#, &mut |_| {}).unwrap();
        a.finish()
    };
    assert_eq!(nameless.unwrap_err().code(), "malformed_response");
    let mut many = StreamAssembler::new();
    let flood = (0..=MAX_CALLS)
        .map(|i| format!(r#"{{"id":"c{i}","function":{{"name":"t","arguments":"{{}}"}}}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let err =
        many.push(&format!(r#"{{"choices":[{{"delta":{{"tool_calls":[{flood}]}}}}]}}"#), &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "malformed_response");
}
