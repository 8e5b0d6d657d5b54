//! Zero-configuration local models: the real proxy binary finds fake Ollama,
//! llama.cpp and LM Studio servers on loopback (each answering its real
//! listing format), in either start order, picks its models, and copes with
//! a server that has only embedding models or that goes away.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{client, free_port, FakeUpstream, Proxy};

fn detecting(port: u16) -> Proxy {
    Proxy::start(&[("ATELIER_AUTODETECT", "true".into()), ("ATELIER_LOCAL_PORTS", port.to_string())])
}

async fn health(proxy: &Proxy) -> Value {
    client().get(proxy.url("/api/health")).send().await.unwrap().json().await.unwrap()
}

async fn chat(proxy: &Proxy, model: &str) -> (u16, Value) {
    let body = json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
    let response = client().post(proxy.url("/api/chat")).json(&body).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

fn ollama(up: &FakeUpstream) {
    // GET /v1/models as Ollama answers it, and its richer /api/tags.
    up.set_models(
        200,
        json!({"object": "list", "data": [
            {"id": "gemma3:270m", "object": "model", "created": 1, "owned_by": "library"},
            {"id": "nomic-embed-text:latest", "object": "model", "created": 1, "owned_by": "library"},
            {"id": "qwen3:8b", "object": "model", "created": 1, "owned_by": "library"}
        ]}),
    );
    up.set_tags(json!({"models": [
        {"name": "gemma3:270m", "model": "gemma3:270m", "size": 291554930,
         "details": {"format": "gguf", "family": "gemma3", "families": ["gemma3"], "parameter_size": "268.10M", "quantization_level": "Q8_0"}},
        {"name": "nomic-embed-text:latest", "model": "nomic-embed-text:latest", "size": 274302450,
         "details": {"format": "gguf", "family": "nomic-bert", "families": ["nomic-bert"], "parameter_size": "137M", "quantization_level": "F16"}},
        {"name": "qwen3:8b", "model": "qwen3:8b", "size": 5225388164u64,
         "details": {"format": "gguf", "family": "qwen3", "families": ["qwen3"], "parameter_size": "8.2B", "quantization_level": "Q4_K_M"}}
    ]}));
}

#[tokio::test]
async fn ollama_is_found_with_its_largest_and_smallest_chat_models() {
    let up = FakeUpstream::start();
    ollama(&up);
    let proxy = detecting(up.addr.port());
    let h = health(&proxy).await;
    let upstream = &h["chat"]["upstream"];
    assert_eq!((upstream["source"].as_str(), upstream["detected"].as_bool()), (Some("Ollama"), Some(true)), "{h}");
    assert_eq!(upstream["models"]["main"]["id"], "qwen3:8b");
    assert_eq!(upstream["models"]["sub"]["id"], "gemma3:270m");
    let available = upstream["models"]["available"].as_array().unwrap();
    assert_eq!(available.len(), 3);
    assert!(available.iter().any(|m| m["id"] == "nomic-embed-text:latest" && m["embedding"] == true));
    assert_eq!(chat(&proxy, "main").await.0, 200);
    assert_eq!(chat(&proxy, "sub").await.0, 200);
    assert_eq!(chat(&proxy, "nomic-embed-text:latest").await.0, 200, "a listed model may be named");
    let forwarded: Vec<Value> = up.seen().iter().map(|s| s.body["model"].clone()).collect();
    assert_eq!(forwarded, [json!("qwen3:8b"), json!("gemma3:270m"), json!("nomic-embed-text:latest")]);
    assert!(proxy.log().contains("found Ollama"), "the choice is in the log");
}

#[tokio::test]
async fn llama_cpp_and_lm_studio_listings_are_read() {
    // llama.cpp's server: one model, with its `meta` and (newer builds) a `models` array as well.
    let llama = FakeUpstream::start();
    llama.set_models(
        200,
        json!({"object": "list",
               "data": [{"id": "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "object": "model", "created": 1, "owned_by": "llamacpp",
                         "meta": {"vocab_type": 2, "n_vocab": 152064, "n_ctx_train": 32768, "n_params": 7615616512u64}}],
               "models": [{"name": "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "model": "Qwen2.5-7B-Instruct-Q4_K_M.gguf"}]}),
    );
    // Its `/props` says the context of a slot, and (newer builds) what the model can do.
    llama.set_route(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 8192, "params": {}}, "total_slots": 1,
               "modalities": {"vision": false}, "chat_template_caps": {"supports_tools": true}}),
    );
    let proxy = detecting(llama.addr.port());
    let main = health(&proxy).await["chat"]["upstream"]["models"]["main"].clone();
    assert_eq!(main["id"], "Qwen2.5-7B-Instruct-Q4_K_M.gguf");
    assert_eq!(main["contextWindow"], 8192, "the slot's context, not the trained 32,768: {main}");
    assert_eq!(main["capabilities"], json!({"tools": true, "thinking": false, "vision": false}));
    assert_eq!(chat(&proxy, "main").await.0, 200);

    // LM Studio: chat and embedding models side by side.
    let studio = FakeUpstream::start();
    studio.set_models(
        200,
        json!({"data": [
            {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model", "owned_by": "organization_owner"},
            {"id": "qwen2.5-7b-instruct", "object": "model", "owned_by": "organization_owner"}
        ], "object": "list"}),
    );
    // Its own listing says what each model is loaded with.
    studio.set_route(
        "/api/v0/models",
        json!({"object": "list", "data": [
            {"id": "qwen2.5-7b-instruct", "object": "model", "type": "llm", "state": "loaded", "max_context_length": 32768,
             "loaded_context_length": 16384, "capabilities": ["tool_use"]},
            {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model", "type": "embeddings", "state": "not-loaded", "max_context_length": 2048}]}),
    );
    let proxy = detecting(studio.addr.port());
    let h = health(&proxy).await;
    assert_eq!(h["chat"]["upstream"]["models"]["main"]["id"], "qwen2.5-7b-instruct", "{h}");
    assert_eq!(h["chat"]["upstream"]["models"]["main"]["contextWindow"], 16384, "{h}");
    assert_eq!(h["chat"]["upstream"]["models"]["main"]["capabilities"]["tools"], true);
    assert_eq!(h["chat"]["upstream"]["models"]["sub"]["id"], "qwen2.5-7b-instruct");
    assert_eq!(chat(&proxy, "sub").await.0, 200);
    assert_eq!(studio.seen()[0].body["model"], "qwen2.5-7b-instruct");

    // vLLM: the window in its model list.
    let vllm = FakeUpstream::start();
    vllm.set_models(200, json!({"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "object": "model", "owned_by": "vllm", "max_model_len": 24576}]}));
    let proxy = detecting(vllm.addr.port());
    assert_eq!(health(&proxy).await["chat"]["upstream"]["models"]["main"]["contextWindow"], 24576);
}

#[tokio::test]
async fn a_server_started_after_the_proxy_is_found_on_the_next_message() {
    let port = free_port();
    let proxy = detecting(port);
    assert_eq!(health(&proxy).await["chat"]["configured"], false);
    let (status, body) = chat(&proxy, "main").await;
    assert_eq!(status, 503);
    assert!(body["error"]["message"].as_str().unwrap().contains("Ollama"), "the error says what to do: {body}");

    let up = FakeUpstream::start_on(port);
    ollama(&up);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = chat(&proxy, "main").await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503);
        assert!(Instant::now() < deadline, "the new server was never found");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(up.seen()[0].body["model"], "qwen3:8b");
    assert_eq!(health(&proxy).await["chat"]["configured"], true);
}

#[tokio::test]
async fn a_server_with_only_embedding_models_gets_no_chat() {
    let up = FakeUpstream::start();
    up.set_models(200, json!({"object": "list", "data": [{"id": "nomic-embed-text:latest", "object": "model"}]}));
    let proxy = detecting(up.addr.port());
    let h = health(&proxy).await;
    assert_eq!(h["chat"]["upstream"]["models"]["main"], Value::Null, "{h}");
    let (status, body) = chat(&proxy, "main").await;
    assert_eq!((status, body["error"]["type"].as_str()), (400, Some("model_not_allowed")));
    assert!(body["error"]["message"].as_str().unwrap().contains("no chat model"), "{body}");
    assert!(up.seen().is_empty(), "nothing was forwarded");
}

#[tokio::test]
async fn a_server_that_goes_away_is_forgotten_and_found_again() {
    let port = free_port();
    let up = FakeUpstream::start_on(port);
    ollama(&up);
    let proxy = detecting(port);
    assert_eq!(chat(&proxy, "main").await.0, 200);
    up.stop();
    let (status, body) = chat(&proxy, "main").await;
    assert_eq!((status, body["error"]["type"].as_str()), (502, Some("upstream_unreachable")), "{body}");
    assert_eq!(health(&proxy).await["chat"]["configured"], false, "the lost server is forgotten");

    let back = FakeUpstream::start_on(port);
    ollama(&back);
    let deadline = Instant::now() + Duration::from_secs(10);
    while chat(&proxy, "main").await.0 != 200 {
        assert!(Instant::now() < deadline, "the server that came back was never found");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
