//! `RelayTransport`: the browser's [`McpTransport`]. Each request goes to
//! the proxy's relay for one server, `{proxyUrl}/mcp/<name>`, with the
//! client token the chat client sends (the proxy adds the server's own
//! token; the page never sees it). A [`CancelToken`] aborts the fetch, and
//! with it the relay's request upstream. Also the relayed servers of
//! `/api/health`.
//!
//! Requests are built and sent with gloo-net, as the chat client's are; the
//! headers are set on a `web_sys::Headers` first, whose refusal of a bad
//! value is an error here (gloo-net's `header` would throw across the
//! boundary). The body is read as a stream through web-sys.

use async_trait::async_trait;
use gloo_timers::callback::Timeout;
use js_sys::{Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, ReadableStreamDefaultReader, Response};

use super::content::{relayed_servers, RelayedServer};
use super::error::{McpError, Result};
use super::servers::McpRelay;
use super::transport::{AnswerBody, HttpAnswer, HttpMethod, HttpRequest, McpTransport};
use crate::cancel::CancelToken;

/// One relayed MCP server, as the browser reaches it.
pub struct RelayTransport {
    url: String,
    client_token: Option<String>,
}

impl RelayTransport {
    /// The relay of `server` on the proxy whose API is at `proxy_url` (e.g. "/api").
    pub fn new(proxy_url: &str, server: &str, client_token: Option<String>) -> RelayTransport {
        RelayTransport { url: format!("{}/mcp/{server}", proxy_url.trim_end_matches('/')), client_token }
    }
}

#[async_trait(?Send)]
impl McpTransport for RelayTransport {
    async fn send(&self, request: HttpRequest, cancel: &CancelToken) -> Result<HttpAnswer> {
        let (response, timer) = fetch(&self.url, request, self.client_token.as_deref(), cancel).await?;
        let headers = response.headers();
        let header = |name: &str| headers.get(name).ok().flatten();
        Ok(HttpAnswer {
            status: response.status(),
            content_type: header("content-type").unwrap_or_default(),
            session_id: header("mcp-session-id"),
            body: Box::new(Body {
                reader: response.body().map(|stream| stream.get_reader().unchecked_into()),
                cancel: cancel.clone(),
                _timer: timer,
            }),
        })
    }
}

/// The proxy as the agent's [`McpRelay`]: its health lists the servers,
/// its relay reaches them.
pub struct ProxyRelay {
    pub proxy_url: String,
    pub client_token: Option<String>,
}

#[async_trait(?Send)]
impl McpRelay for ProxyRelay {
    async fn servers(&self, cancel: &CancelToken) -> Result<Vec<RelayedServer>> {
        fetch_relayed_servers(&self.proxy_url, cancel).await
    }

    fn transport(&self, server: &str) -> Box<dyn McpTransport> {
        Box::new(RelayTransport::new(&self.proxy_url, server, self.client_token.clone()))
    }
}

/// The relayed servers the proxy at `proxy_url` lists in `/api/health`.
pub async fn fetch_relayed_servers(proxy_url: &str, cancel: &CancelToken) -> Result<Vec<RelayedServer>> {
    let url = format!("{}/health", proxy_url.trim_end_matches('/'));
    let request = HttpRequest { method: HttpMethod::Get, headers: Vec::new(), body: None, timeout: None };
    let (response, _timer) = fetch(&url, request, None, cancel).await?;
    let text = match response.text() {
        Ok(text) => JsFuture::from(text).await.map_err(|e| failure(cancel, &e))?.as_string().unwrap_or_default(),
        Err(e) => return Err(failure(cancel, &e)),
    };
    if !response.ok() {
        return Err(McpError::from_http(response.status(), &text, false));
    }
    let health: Value = serde_json::from_str(&text).map_err(|e| McpError::Malformed(e.to_string()))?;
    Ok(relayed_servers(&health))
}

/// Sends `request` to `url`; `cancel` aborts it, and so does the timer of
/// its timeout (kept with the answer's body: it covers the reading too).
/// The request is built before the one await, so that is all this state
/// machine holds.
async fn fetch(
    url: &str,
    request: HttpRequest,
    token: Option<&str>,
    cancel: &CancelToken,
) -> Result<(Response, Option<Timeout>)> {
    let (request, timer) = build(url, request, token, cancel)?;
    let response = request.send().await.map_err(|e| match e {
        gloo_net::Error::JsError(js) => failure(cancel, &JsValue::from_str(&js.message)),
        other => failure(cancel, &JsValue::from_str(&other.to_string())),
    })?;
    Ok((Response::from(response), timer))
}

fn build(
    url: &str,
    mut request: HttpRequest,
    token: Option<&str>,
    cancel: &CancelToken,
) -> Result<(gloo_net::http::Request, Option<Timeout>)> {
    use gloo_net::http::{Method, RequestBuilder};
    let controller = AbortController::new().map_err(|e| failure(cancel, &e))?;
    let signal = controller.signal();
    let timer = request.timeout.map(|limit| {
        let controller = controller.clone();
        // An `Error` as the reason: gloo-net takes anything else a fetch
        // rejects with for a bug of its own, and panics.
        let reason = js_sys::Error::new(TIMED_OUT);
        Timeout::new(limit.as_millis() as u32, move || controller.abort_with_reason(&reason))
    });
    cancel.on_cancel(move || controller.abort());
    let headers = web_sys::Headers::new().map_err(|e| failure(cancel, &e))?;
    request.headers.extend(token.map(|t| ("authorization", ["Bearer ", t].concat())));
    for (name, value) in &request.headers {
        headers.set(name, value).map_err(|_| McpError::Malformed([name, ": a header HTTP cannot carry"].concat()))?;
    }
    let method = match request.method {
        HttpMethod::Post => Method::POST,
        HttpMethod::Get => Method::GET,
        HttpMethod::Delete => Method::DELETE,
    };
    let builder = RequestBuilder::new(url)
        .method(method)
        .headers(gloo_net::http::Headers::from_raw(headers))
        .abort_signal(Some(&signal));
    let built = match request.body {
        Some(body) => builder.body(body),
        None => builder.build(),
    };
    built.map(|r| (r, timer)).map_err(|e| failure(cancel, &JsValue::from_str(&e.to_string())))
}

/// The reason a request's own timer aborts it with.
const TIMED_OUT: &str = "atelier-mcp-timeout";

/// A fetch or read that failed: aborted when we cancelled, timed out when
/// its timer fired (as the relay's own timeout reads), the network otherwise.
fn failure(cancel: &CancelToken, e: &JsValue) -> McpError {
    if cancel.is_cancelled() {
        return McpError::Aborted;
    }
    let detail = e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).or_else(|| e.as_string());
    let detail = detail.unwrap_or_default();
    if detail == TIMED_OUT {
        let message = "the MCP server did not answer in time".into();
        return McpError::Relay { status: 504, kind: "mcp_timeout".into(), message };
    }
    McpError::Network(detail)
}

/// An answer's body, read chunk by chunk; dropping it releases the
/// connection (the relay then drops its request upstream).
struct Body {
    reader: Option<ReadableStreamDefaultReader>,
    cancel: CancelToken,
    /// The request's timeout, cleared when the body is dropped.
    _timer: Option<Timeout>,
}

#[async_trait(?Send)]
impl AnswerBody for Body {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>> {
        let Some(reader) = &self.reader else {
            return Ok(None);
        };
        let chunk = JsFuture::from(reader.read()).await.map_err(|e| failure(&self.cancel, &e))?;
        let field = |name: &str| Reflect::get(&chunk, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED);
        if field("done").as_bool().unwrap_or(true) {
            return Ok(None);
        }
        Ok(Some(Uint8Array::new(&field("value")).to_vec()))
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Some(reader) = &self.reader {
            let _ = reader.cancel();
        }
    }
}
