//! `ProxyWeb`: the browser's [`WebTools`], calling atelier-proxy's
//! `/api/tools/web-search` and `/api/tools/open-url`.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::web::{SearchResult, WebPage, WebTools};
use super::ToolError;
use crate::cancel::CancelToken;
use crate::error::ErrorCode;
use crate::llm::{post_json, LlmError};

/// Web access through the proxy at `base_url` (e.g. "/api").
pub struct ProxyWeb {
    pub base_url: String,
    pub client_token: Option<String>,
}

impl ProxyWeb {
    async fn call(&self, path: &str, body: Value, cancel: &CancelToken) -> Result<Value, ToolError> {
        let url = format!("{}/{path}", self.base_url.trim_end_matches('/'));
        let (status, text) = post_json(&url, self.client_token.as_deref(), &body.to_string(), cancel)
            .await
            .map_err(|e: LlmError| ToolError::from(e))?;
        if !(200..300).contains(&status) {
            return Err(LlmError::from_http(status, &text, None).into());
        }
        crate::json::from_text(&text).map_err(|e| ToolError::failed(ErrorCode::MalformedResponse, e.to_string()))
    }
}

#[async_trait(?Send)]
impl WebTools for ProxyWeb {
    async fn search(
        &self,
        query: &str,
        max_results: u32,
        cancel: &CancelToken,
    ) -> Result<Vec<SearchResult>, ToolError> {
        let answer =
            self.call("tools/web-search", json!({ "query": query, "max_results": max_results }), cancel).await?;
        crate::json::from_value(answer.get("results").cloned().unwrap_or(Value::Array(Vec::new())))
            .map_err(|e| ToolError::failed(ErrorCode::MalformedResponse, e.to_string()))
    }

    async fn open_url(&self, url: &str, cancel: &CancelToken) -> Result<WebPage, ToolError> {
        let answer = self.call("tools/open-url", json!({ "url": url }), cancel).await?;
        crate::json::from_value(answer).map_err(|e| ToolError::failed(ErrorCode::MalformedResponse, e.to_string()))
    }
}
