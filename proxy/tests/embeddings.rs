//! `/api/embeddings` through the real proxy binary against the scripted
//! fake upstream on 127.0.0.1: the alias "embed" resolved (setting, else
//! the first embedding model the upstream lists), the key added, the
//! answer passed back as it came; what cannot be embedded is refused before
//! the upstream sees it.

mod support;

use serde_json::json;
use support::{client, error_of, with_upstream, FakeUpstream, Reply, KEY};

fn vectors() -> serde_json::Value {
    json!({
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5, 0.125]},
                 {"object": "embedding", "index": 1, "embedding": [0.5, 0.5, 0.0]}],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 4, "total_tokens": 4}
    })
}

#[tokio::test]
async fn the_alias_embed_reaches_the_upstreams_embedding_model_with_the_key() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[]);
    for path in ["/api/embeddings", "/v1/embeddings"] {
        up.push(Reply::Json(200, vectors(), vec![]));
        let request = json!({"model": "embed", "input": ["灯台守", "the lighthouse keeper"]});
        let response = client().post(proxy.url(path)).json(&request).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body, vectors(), "{path}: the answer comes back unchanged");
    }
    // No model given is the alias too.
    up.push(Reply::Json(200, vectors(), vec![]));
    let response = client().post(proxy.url("/api/embeddings")).json(&json!({"input": "灯台"})).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let seen = up.seen();
    assert_eq!(seen.len(), 3);
    for s in &seen {
        assert_eq!(s.path, "/v1/embeddings");
        assert_eq!(s.body["model"], "text-embedding-3-small", "the first embedding model the upstream lists");
        assert_eq!(s.headers["authorization"], format!("Bearer {KEY}"));
    }
    assert_eq!(seen[0].body["input"], json!(["灯台守", "the lighthouse keeper"]));
    let health: serde_json::Value = client().get(proxy.url("/api/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["chat"]["upstream"]["models"]["embed"], "text-embedding-3-small");
}

#[tokio::test]
async fn the_setting_names_the_embedding_model() {
    let up = FakeUpstream::start();
    let proxy = with_upstream(&up, &[("ATELIER_MODEL_EMBED", "nomic-embed-text".into())]);
    up.push(Reply::Json(200, vectors(), vec![]));
    let response = client().post(proxy.url("/api/embeddings")).json(&json!({"input": "灯台"})).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(up.seen()[0].body["model"], "nomic-embed-text");
    // The configured name itself is allowed; a model the upstream does not list is not.
    up.push(Reply::Json(200, vectors(), vec![]));
    let named = json!({"model": "nomic-embed-text", "input": "a"});
    assert_eq!(client().post(proxy.url("/api/embeddings")).json(&named).send().await.unwrap().status(), 200);
    let other = json!({"model": "someone-elses-model", "input": "a"});
    let refused = client().post(proxy.url("/api/embeddings")).json(&other).send().await.unwrap();
    assert_eq!(error_of(refused).await, (400, "model_not_allowed".into()));
    assert_eq!(up.seen().len(), 2, "the refused request never reached the upstream");
    let health: serde_json::Value = client().get(proxy.url("/api/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["chat"]["upstream"]["models"]["embed"], "nomic-embed-text");
}

#[tokio::test]
async fn without_an_embedding_model_bad_input_or_a_failing_upstream_the_answer_says_why() {
    let up = FakeUpstream::start();
    up.set_models(200, json!({"object": "list", "data": [{"id": "big-model"}, {"id": "small-model"}]}));
    let proxy = with_upstream(&up, &[("ATELIER_CLIENT_TOKEN", "let-me-in".into())]);
    let post = |body: serde_json::Value| {
        client().post(proxy.url("/api/embeddings")).bearer_auth("let-me-in").json(&body).send()
    };
    let none = post(json!({"input": "灯台"})).await.unwrap();
    let status = none.status().as_u16();
    let text = none.text().await.unwrap();
    assert_eq!(status, 404, "{text}");
    assert!(text.contains("no_embedding_model") && text.contains("ATELIER_MODEL_EMBED"), "{text}");
    for bad in [json!({}), json!({"input": []}), json!({"input": 3}), json!({"input": ["a", {"b": 1}]}), json!([1])] {
        let refused = post(bad.clone()).await.unwrap();
        assert_eq!(refused.status(), 400, "{bad}");
    }
    let no_token = client().post(proxy.url("/api/embeddings")).json(&json!({"input": "a"})).send().await.unwrap();
    assert_eq!(no_token.status(), 401);
    assert!(up.seen().is_empty(), "nothing reached the upstream: {:?}", up.seen());
    // A listed model by name; the upstream's own failure comes back with its status.
    up.push(Reply::Json(500, json!({"error": {"message": "the model crashed"}}), vec![]));
    let failed = post(json!({"model": "small-model", "input": "a"})).await.unwrap();
    let (status, kind) = error_of(failed).await;
    assert_eq!((status, kind.as_str()), (500, "upstream_error"));
}
