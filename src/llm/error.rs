//! The LLM client's error taxonomy, each with a stable `code` for JS.

use std::time::Duration;

use serde_json::Value;

/// `Result` of the LLM client.
pub type Result<T> = std::result::Result<T, LlmError>;

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// The upstream does not accept `response_format` (structured output).
    #[error("the model refused structured output: {0}")]
    StructuredOutputRefused(String),
    /// The conversation does not fit the model's context window.
    #[error("the conversation is too long for the model: {0}")]
    ContextTooLong(String),
    /// The proxy or the upstream refused the credentials.
    #[error("not authorised (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    /// Too many requests; retry after the given delay when known.
    #[error("rate limited: {message}")]
    RateLimited { retry_after: Option<Duration>, message: String },
    /// The proxy has no LLM configured.
    #[error("no LLM is configured: {0}")]
    NotConfigured(String),
    /// The upstream (or the network to it) failed.
    #[error("the LLM service is unavailable{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    UpstreamUnavailable { status: Option<u16>, message: String },
    /// The request was refused as invalid.
    #[error("the request was refused (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    /// The run was cancelled.
    #[error("aborted")]
    Aborted,
    /// The answer could not be read.
    #[error("malformed response: {0}")]
    MalformedResponse(String),
}

impl LlmError {
    /// Stable machine-readable code.
    pub fn code(&self) -> crate::error::ErrorCode {
        use crate::error::ErrorCode;
        match self {
            LlmError::StructuredOutputRefused(_) => ErrorCode::StructuredOutputRefused,
            LlmError::ContextTooLong(_) => ErrorCode::ContextTooLong,
            LlmError::Auth { .. } => ErrorCode::Auth,
            LlmError::RateLimited { .. } => ErrorCode::RateLimited,
            LlmError::NotConfigured(_) => ErrorCode::NotConfigured,
            LlmError::UpstreamUnavailable { .. } => ErrorCode::UpstreamUnavailable,
            LlmError::BadRequest { .. } => ErrorCode::BadRequest,
            LlmError::Aborted => ErrorCode::Aborted,
            LlmError::MalformedResponse(_) => ErrorCode::MalformedResponse,
        }
    }

    /// Whether trying again later may succeed (429, 5xx, network).
    pub fn is_retryable(&self) -> bool {
        matches!(self, LlmError::RateLimited { .. } | LlmError::UpstreamUnavailable { .. })
    }

    /// Reads an error answer of the proxy (or of any OpenAI-compatible API):
    /// `status`, the body text and the `Retry-After` header.
    pub fn from_http(status: u16, body: &str, retry_after: Option<&str>) -> LlmError {
        let json: Option<Value> = serde_json::from_str(body).ok();
        let error = json.as_ref().and_then(|v| v.get("error"));
        let message = error.and_then(|e| e.get("message")).or(error).or_else(|| json.as_ref()?.get("message"));
        LlmError::classify(status, error, message, body, retry_after)
    }

    /// An error the upstream sent inside a streamed (or 200) answer:
    /// `{"error": {"message", "code"}}` (OpenRouter's mid-stream errors carry
    /// an HTTP-like numeric `code`; others a string `code` or `type`, or
    /// only a message). Classified like an HTTP error of that status (502
    /// when none is given), so an overload is retried while nothing has
    /// been shown.
    pub fn in_band(error: &Value) -> LlmError {
        let code = error.get("code").or_else(|| error.get("status"));
        let status = match code {
            Some(Value::Number(n)) => n.as_u64().filter(|c| (400..600).contains(c)).map_or(502, |c| c as u16),
            Some(Value::String(k)) if k.contains("rate_limit") => 429,
            Some(Value::String(k)) if k.contains("invalid_request") => 400,
            _ => 502,
        };
        LlmError::classify(status, Some(error), Some(error.get("message").unwrap_or(error)), "", None)
    }

    /// The error for `status`, the error object (whose `type`, or string
    /// `code`, names its kind) and its message (`body` when there is none).
    fn classify(
        status: u16,
        error: Option<&Value>,
        message: Option<&Value>,
        body: &str,
        retry_after: Option<&str>,
    ) -> LlmError {
        let field = |k| error.and_then(|e| e.get(k)).and_then(Value::as_str);
        // OpenAI names the kind in `code` ("context_length_exceeded") beside a
        // generic `type`; the proxy and others in `type`.
        let kind = field("code").filter(|c| c.contains("context")).or_else(|| field("type")).unwrap_or("");
        let message = message
            .map(|m| m.as_str().map(str::to_owned).unwrap_or_else(|| m.to_string()))
            .unwrap_or_else(|| body.trim().chars().take(300).collect());
        let message = if message.is_empty() { format!("HTTP {status}") } else { message };
        let lower = crate::platform::lowercase(&message);
        match (status, kind) {
            (_, "upstream_not_configured") => LlmError::NotConfigured(message),
            (_, "structured_output_unsupported") => LlmError::StructuredOutputRefused(message),
            (_, "context_length_exceeded" | "context_overflow" | "exceed_context_size_error") => {
                LlmError::ContextTooLong(message)
            }
            (429, _) | (_, "rate_limited") => {
                LlmError::RateLimited { retry_after: retry_after.and_then(parse_retry_after), message }
            }
            (401 | 403, _) => LlmError::Auth { status, message },
            (400, _)
                if lower.contains("context")
                    && ["length", "window", "size"].iter().any(|w| lower.contains(w))
                    && !lower.contains("reasoning_content") =>
            {
                LlmError::ContextTooLong(message)
            }
            (400, _) if lower.contains("response_format") || lower.contains("json_schema") => {
                LlmError::StructuredOutputRefused(message)
            }
            (408 | 500..=599, _) => LlmError::UpstreamUnavailable { status: Some(status), message },
            _ => LlmError::BadRequest { status, message },
        }
    }
}

impl LlmError {
    /// What a server's refusal of a request (HTTP 400 or 422) says it
    /// cannot take, read from its message, so the caller can change the
    /// layout once and keep it for that model. `None` for other errors.
    pub fn refusal(&self) -> Option<Refusal> {
        let LlmError::BadRequest { message, .. } = self else {
            return None;
        };
        let m = crate::platform::lowercase(message);
        let has = |words: &[&str]| words.iter().all(|w| m.contains(w));
        Some(if has(&["reasoning_content"]) && (has(&["passed back"]) || has(&["missing"])) {
            Refusal::ReasoningRequired
        } else if has(&["system"]) && (has(&["not supported"]) || has(&["role"]) && has(&["support"])) {
            Refusal::SystemRole
        } else if has(&["'user'", "after", "'tool'"]) || has(&["user", "after", "tool", "role"]) {
            Refusal::UserAfterTool
        } else if has(&["must alternate"]) {
            Refusal::Alternation
        } else if has(&["tool call id"]) || has(&["tool_call_id", "length"]) {
            Refusal::ToolCallId
        } else if has(&["single tool-call"]) || has(&["one tool call"]) {
            Refusal::OneCallPerMessage
        } else if has(&["does not support tools"]) || has(&["tool", "not supported"]) {
            Refusal::ToolsUnsupported
        } else if has(&["does not support thinking"]) {
            Refusal::ThinkingUnsupported
        } else {
            return None;
        })
    }
}

/// What a server said it cannot take in a request ([`LlmError::refusal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The template has no system role (Gemma 2): fold the system prompt
    /// into the first user message ([`super::fold_system`]).
    SystemRole,
    /// A `user` message directly after tool results (Mistral).
    UserAfterTool,
    /// User and assistant turns must alternate.
    Alternation,
    /// Tool call ids of another shape (Mistral: 9 letters and digits).
    ToolCallId,
    /// One tool call per assistant message (Llama 3.x templates).
    OneCallPerMessage,
    /// A tool-call turn without its reasoning (DeepSeek's thinking mode):
    /// send it back ([`super::ChatRequest::echo_reasoning`]).
    ReasoningRequired,
    /// The model has no tool support (Ollama: "does not support tools").
    ToolsUnsupported,
    /// The model cannot think (`think` asked of a model without it).
    ThinkingUnsupported,
}

/// `Retry-After` in seconds, a fraction kept to the millisecond (HTTP dates are
/// not used by LLM APIs). Read by hand: `str::parse::<f64>` brings the
/// standard library's float parser and its 17 KB power table into the package.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let (whole, fraction) = value.trim().split_once('.').unwrap_or((value.trim(), ""));
    if whole.len() + fraction.len() == 0 || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seconds = if whole.is_empty() { 0 } else { whole.parse::<u64>().ok()? };
    let millis = fraction.bytes().chain(*b"000").take(3).fold(0, |ms, b| ms * 10 + u64::from(b - b'0'));
    Some(Duration::from_secs(seconds) + Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_proxy_and_upstream_errors() {
        let cases: &[(u16, &str, Option<&str>, &str)] = &[
            (503, r#"{"error":{"type":"upstream_not_configured","message":"set it"}}"#, None, "not_configured"),
            (
                400,
                r#"{"error":{"type":"structured_output_unsupported","message":"no"}}"#,
                None,
                "structured_output_refused",
            ),
            (
                400,
                r#"{"error":{"message":"response_format is not supported by this model"}}"#,
                None,
                "structured_output_refused",
            ),
            (400, r#"{"error":{"message":"maximum context length is 4096"}}"#, None, "context_too_long"),
            (429, r#"{"error":{"message":"slow"}}"#, Some("2"), "rate_limited"),
            (401, "nope", None, "auth"),
            (502, "<html>bad gateway</html>", None, "upstream_unavailable"),
            (422, "{}", None, "bad_request"),
        ];
        for (status, body, retry, code) in cases {
            let err = LlmError::from_http(*status, body, *retry);
            assert_eq!(err.code(), *code, "{status} {body}");
        }
        match LlmError::from_http(429, "{}", Some("2.5")) {
            LlmError::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Some(Duration::from_millis(2500)))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn retry_after_is_seconds_with_an_optional_fraction() {
        let ms = |v: &str| parse_retry_after(v).map(|d| d.as_millis());
        assert_eq!(ms("2"), Some(2000));
        assert_eq!(ms(" 2.5 "), Some(2500));
        assert_eq!(ms("0.0019"), Some(1));
        assert_eq!(ms("17.25"), Some(17250));
        assert_eq!(ms("1."), Some(1000));
        assert_eq!(ms(".5"), Some(500));
        for bad in ["", ".", "1..5", "-1", "1e3", "inf", "NaN", "2.5s", "Wed, 21 Oct 2026 07:28:00 GMT"] {
            assert_eq!(ms(bad), None, "{bad:?}");
        }
        assert_eq!(ms("99999999999999999999999"), None);
    }
}
