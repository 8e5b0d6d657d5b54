//! Web tools for the agent: `/api/tools/web-search` (a Tavily-compatible
//! search API behind the server's key) and `/api/tools/open-url` (a page
//! fetched server-side, where CORS does not apply, and turned into Markdown).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use url::Url;

use crate::error::ProxyError;
use crate::log::UpstreamLatency;
use crate::page::{self, Page};
use crate::ssrf;
use crate::state::AppState;

const MAX_REDIRECTS: usize = 5;
const PAGE_BODY_LIMIT: usize = 3 * 1024 * 1024;
const PAGE_TIMEOUT: Duration = Duration::from_secs(15);
const MAX_RESULTS: u64 = 20;
/// Largest search API answer read.
const SEARCH_BODY_LIMIT: usize = 2 * 1024 * 1024;

#[derive(Deserialize)]
pub struct SearchRequest {
    query: String,
    max_results: Option<u64>,
}

#[derive(Serialize)]
struct SearchResult {
    title: String,
    url: String,
    content: String,
}

pub async fn search(State(state): State<Arc<AppState>>, Json(request): Json<SearchRequest>) -> Response {
    let Some(endpoint) = state.search_url.as_deref() else {
        return ProxyError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "search_not_configured",
            "No search API is configured on the proxy (set ATELIER_SEARCH_URL and ATELIER_SEARCH_KEY).",
        )
        .into_response();
    };
    let query = request.query.trim();
    if query.is_empty() {
        return ProxyError::bad_request("`query` must not be empty").into_response();
    }
    let max_results = request.max_results.unwrap_or(5).clamp(1, MAX_RESULTS);
    let mut body = json!({ "query": query, "max_results": max_results });
    let mut call = state.http.post(endpoint);
    if let Some(key) = state.search_key.as_deref() {
        // Tavily reads the key from the body; other compatible APIs from the header.
        body["api_key"] = json!(key);
        call = call.bearer_auth(key);
    }
    let started = Instant::now();
    let answer = call.json(&body).send().await;
    let latency = UpstreamLatency(started.elapsed());
    let redact = |s: String| match state.search_key.as_deref() {
        Some(k) if k.len() >= 4 => s.replace(k, "[redacted]"),
        _ => s,
    };
    let mut response = match answer {
        Err(e) => ProxyError::new(
            StatusCode::BAD_GATEWAY,
            "search_unreachable",
            redact(format!("cannot reach the search API: {e}")),
        )
        .into_response(),
        Ok(answer) if answer.status().is_redirection() => ProxyError::new(
            StatusCode::BAD_GATEWAY,
            "search_error",
            format!("the search API answered a redirect ({}); redirects are not followed", answer.status().as_u16()),
        )
        .into_response(),
        Ok(answer) if !answer.status().is_success() => {
            let status = answer.status().as_u16();
            let mut err = ProxyError::new(
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
                if status == 429 { "rate_limited" } else { "search_error" },
                format!("the search API answered {status}"),
            );
            err.upstream_status = Some(status);
            err.retry_after = answer.headers().get(header::RETRY_AFTER).cloned();
            err.into_response()
        }
        Ok(answer) => match crate::models::read_limited(answer, SEARCH_BODY_LIMIT)
            .await
            .and_then(|body| serde_json::from_slice::<Value>(&body).map_err(|e| e.to_string()))
        {
            Ok(v) => Json(json!({ "results": results_of(&v, max_results as usize) })).into_response(),
            Err(e) => ProxyError::new(
                StatusCode::BAD_GATEWAY,
                "search_error",
                redact(format!("the search API answered something unreadable: {e}")),
            )
            .into_response(),
        },
    };
    response.extensions_mut().insert(latency);
    response
}

fn results_of(answer: &Value, max: usize) -> Vec<SearchResult> {
    let text = |v: &Value, keys: &[&str]| {
        keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str)).unwrap_or_default().to_owned()
    };
    answer
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(max)
        .map(|r| SearchResult {
            title: text(r, &["title"]),
            url: text(r, &["url", "link"]),
            content: text(r, &["content", "snippet", "raw_content"]),
        })
        .collect()
}

#[derive(Deserialize)]
pub struct OpenUrlRequest {
    url: String,
}

#[derive(Serialize)]
struct OpenUrlResponse {
    url: String,
    title: String,
    markdown: String,
    /// The Markdown was cut (the page was longer than the proxy returns).
    truncated: bool,
}

pub async fn open_url(State(state): State<Arc<AppState>>, Json(request): Json<OpenUrlRequest>) -> Response {
    let started = Instant::now();
    let mut response = match fetch_page(&state, &request.url).await {
        Ok(page) => Json(page).into_response(),
        Err(e) => e.into_response(),
    };
    response.extensions_mut().insert(UpstreamLatency(started.elapsed()));
    response
}

fn refused(reason: impl std::fmt::Display) -> ProxyError {
    ProxyError::new(StatusCode::FORBIDDEN, "url_refused", format!("refused to open this URL: {reason}"))
}

async fn fetch_page(state: &AppState, raw: &str) -> Result<OpenUrlResponse, ProxyError> {
    let mut url = Url::parse(raw.trim()).map_err(|e| ProxyError::bad_request(format!("not a URL: {e}")))?;
    for _ in 0..=MAX_REDIRECTS {
        let target = ssrf::check(&url, &state.open_url_allow).await.map_err(refused)?;
        // A client per hop, pinned to the address that was checked: no second
        // DNS answer can send the connection elsewhere.
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PAGE_TIMEOUT)
            .no_proxy()
            .user_agent(concat!("atelier-proxy/", env!("CARGO_PKG_VERSION")));
        if let Some(domain) = &target.domain {
            builder = builder.resolve(domain, target.addr);
        }
        let client = builder
            .build()
            .map_err(|e| ProxyError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
        let answer = client
            .get(url.clone())
            .header(header::ACCEPT, "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1")
            .send()
            .await
            .map_err(|e| {
                ProxyError::new(StatusCode::BAD_GATEWAY, "fetch_failed", format!("cannot fetch {url}: {e}"))
            })?;
        if answer.status().is_redirection() {
            let location = answer.headers().get(header::LOCATION).and_then(|l| l.to_str().ok()).ok_or_else(|| {
                ProxyError::new(StatusCode::BAD_GATEWAY, "fetch_failed", "a redirect without a Location")
            })?;
            url = url.join(location).map_err(|e| refused(format!("bad redirect target: {e}")))?;
            continue;
        }
        if !answer.status().is_success() {
            let status = answer.status().as_u16();
            let mut err = ProxyError::new(StatusCode::BAD_GATEWAY, "fetch_failed", format!("{url} answered {status}"));
            err.upstream_status = Some(status);
            return Err(err);
        }
        let content_type = answer
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("text/html")
            .to_ascii_lowercase();
        let is_html = content_type.contains("html");
        if !is_html && !content_type.starts_with("text/") {
            return Err(ProxyError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_content",
                format!("{url} is {content_type}, not a web page or text"),
            ));
        }
        let body = read_capped(answer).await?;
        let page = if is_html {
            page::convert(body, state.page_timeout)
                .await
                .map_err(|e| ProxyError::new(StatusCode::UNPROCESSABLE_ENTITY, e.code(), format!("{url}: {e}")))?
        } else {
            let (markdown, truncated) = page::cut(&body, page::MAX_MARKDOWN);
            Page { title: String::new(), markdown, flattened: false, truncated }
        };
        let title = if page.title.is_empty() { url.to_string() } else { page.title };
        return Ok(OpenUrlResponse { url: url.to_string(), title, markdown: page.markdown, truncated: page.truncated });
    }
    Err(refused(format!("more than {MAX_REDIRECTS} redirects")))
}

async fn read_capped(answer: reqwest::Response) -> Result<String, ProxyError> {
    let mut body = Vec::new();
    let mut stream = answer.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ProxyError::new(StatusCode::BAD_GATEWAY, "fetch_failed", e.to_string()))?;
        let room = PAGE_BODY_LIMIT - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= PAGE_BODY_LIMIT {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_results_take_common_shapes() {
        let v = json!({"results": [{"title": "T", "url": "https://x", "content": "C"}, {"title": "U", "link": "https://y", "snippet": "S"}]});
        let r = results_of(&v, 5);
        assert_eq!((r[1].url.as_str(), r[1].content.as_str()), ("https://y", "S"));
        assert_eq!(results_of(&v, 1).len(), 1);
    }
}
