//! `/api/embeddings` and `/v1/embeddings`: OpenAI's embeddings request
//! (`{model, input}`) passed through to the chat upstream's `/embeddings`
//! with the server-side key. The model `"embed"` (or none) is
//! `ATELIER_MODEL_EMBED`, else the first embedding model the upstream lists
//! (Ollama's `nomic-embed-text`, LM Studio's `text-embedding-…`); the answer
//! (vectors, usage) comes back as the upstream wrote it, streamed.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::Value;

use crate::chat::{not_configured, send_upstream, upstream_error};
use crate::error::ProxyError;
use crate::state::AppState;

/// Most texts one request may embed (OpenAI's own limit).
const MAX_INPUTS: usize = 2048;

pub async fn embeddings(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    match forward(&state, body).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

/// Why `input` is not what the embeddings API takes (a string, or a
/// non-empty list of strings or of token lists), if it is not.
fn bad_input(input: Option<&Value>) -> Option<&'static str> {
    let token_list = |v: &Value| v.as_array().is_some_and(|t| t.iter().all(Value::is_u64));
    match input {
        None | Some(Value::Null) => Some("`input` is missing: give a string or a list of strings"),
        Some(Value::String(_)) => None,
        Some(Value::Array(items)) if items.is_empty() => Some("`input` is an empty list"),
        Some(Value::Array(items)) if items.len() > MAX_INPUTS => Some("`input` holds more than 2048 items"),
        // Strings, token lists, or one token list.
        Some(list @ Value::Array(items))
            if items.iter().all(|i| i.is_string() || token_list(i)) || token_list(list) =>
        {
            None
        }
        Some(_) => Some("`input` must be a string, a list of strings, or token lists"),
    }
}

async fn forward(state: &AppState, body: Bytes) -> Result<Response, ProxyError> {
    let shared = state.upstreams.for_chat().await.ok_or_else(not_configured)?;
    let upstream = shared.as_ref();
    let mut request: Value =
        serde_json::from_slice(&body).map_err(|e| ProxyError::bad_request(format!("the body is not JSON: {e}")))?;
    let Some(fields) = request.as_object_mut() else {
        return Err(ProxyError::bad_request("the body must be a JSON object"));
    };
    if let Some(problem) = bad_input(fields.get("input")) {
        return Err(ProxyError::bad_request(problem));
    }
    let requested = fields.get("model").and_then(Value::as_str);
    let model = upstream.catalog.resolve_embedding(&state.http, upstream, requested, state.allow_any_model).await?;
    fields.insert("model".into(), Value::String(model));
    let payload = serde_json::to_vec(&request).unwrap_or_default();
    let url = format!("{}/embeddings", upstream.base);
    let (answer, latency) = send_upstream(state, &shared, url, payload).await.map_err(|(e, _)| e)?;
    if !answer.status().is_success() {
        return Err(upstream_error(upstream, answer).await);
    }
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::OK);
    let redactor = shared.clone();
    let body = Body::from_stream(
        answer
            .bytes_stream()
            .map(move |chunk| chunk.map_err(|e| std::io::Error::other(redactor.redact(&e.to_string())))),
    );
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response.extensions_mut().insert(latency);
    Ok(response)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::bad_input;

    #[test]
    fn inputs_are_the_shapes_the_embeddings_api_takes() {
        for fine in [json!("灯台"), json!(["a", "b"]), json!([[1, 2, 3]]), json!([1, 2, 3])] {
            assert_eq!(bad_input(Some(&fine)), None, "{fine}");
        }
        for bad in [json!(null), json!([]), json!(3), json!({"text": "a"}), json!(["a", 1]), json!([[1, -2]])] {
            assert!(bad_input(Some(&bad)).is_some(), "{bad}");
        }
        assert!(bad_input(None).is_some());
        assert!(bad_input(Some(&json!(vec!["x"; 2049]))).is_some());
    }
}
