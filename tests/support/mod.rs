//! Shared by the browser tests that talk to the scripted fake upstream
//! (started, with the proxy, by `cargo xtask test`).
#![allow(dead_code)]

use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// The proxy's API base URL, e.g. `http://127.0.0.1:PORT/api`.
pub const PROXY: Option<&str> = option_env!("ATELIER_TEST_PROXY");
/// The fake upstream's base URL.
pub const FAKE: Option<&str> = option_env!("ATELIER_TEST_FAKE");

/// POSTs `body` to the fake upstream's control endpoint `path`.
pub async fn control(path: &str, body: Value) -> Value {
    let fake = FAKE.expect("run through `cargo xtask test`, which starts the fake upstream (ATELIER_TEST_FAKE)");
    serde_json::from_str(&post_text(&format!("{fake}{path}"), &body.to_string()).await).unwrap()
}

/// POSTs `body` (as text) to `url`; the answer's text.
pub async fn post_text(url: &str, body: &str) -> String {
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&JsValue::from_str(body));
    let window = web_sys::window().unwrap();
    let response: web_sys::Response =
        JsFuture::from(window.fetch_with_str_and_init(url, &init)).await.unwrap().unchecked_into();
    JsFuture::from(response.text().unwrap()).await.unwrap().as_string().unwrap()
}

/// Forgets earlier requests and queues `chat` replies.
pub async fn script(chat: Value) {
    control("/__reset", json!({})).await;
    control("/__script", json!({ "chat": chat })).await;
}

/// What the fake upstream received: `{requests, disconnects}`.
pub async fn log() -> Value {
    control("/__log", json!({})).await
}
