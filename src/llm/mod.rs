//! The LLM client: OpenAI-compatible message types, the [`ChatModel`]
//! abstraction, SSE decoding and answer assembly in every server's dialect
//! (reasoning apart from the answer, tool calls written as text), chat
//! template rules, retries, structured output with a prompt fallback, and
//! the implementations of [`ChatModel`]:
//! [`ScriptedModel`] (native tests) and, in the browser, `ProxyModel`, which
//! talks to atelier-proxy.

mod error;
mod model;
mod retry;
#[cfg(any(test, feature = "testing"))]
mod scripted;
mod sse;
mod stream;
mod structured;
mod template;
mod text_calls;
mod think;
mod tokens;
mod types;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod proxy_client;

pub use error::{LlmError, Refusal, Result};
pub use model::ChatModel;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(crate) use proxy_client::post_json;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use proxy_client::{ProxyConfig, ProxyModel};
pub use retry::{with_retries, AttemptError, RetryPolicy};
#[cfg(any(test, feature = "testing"))]
pub use scripted::{ScriptedModel, Step};
pub use sse::{EventTooLarge, SseDecoder, SseEvent, MAX_EVENT_BYTES};
pub use stream::{parse_completion, parse_completion_with, StreamAssembler};
pub use structured::{ask_structured, extract_json, Structured, StructuredPath};
pub use template::{
    add_user_text, alternate, fold_system, is_nine_char_id, template_violation, Learned, TemplateFamily, TemplateRule,
    TEMPLATE_FAMILIES,
};
pub use text_calls::{chat_reading_written_calls, split_text_calls, TextCallFilter};
pub use think::split_think;
pub use tokens::{estimate_request, estimate_tokens};
pub use types::{ChatOutcome, ChatRequest, Delta, FunctionCall, FunctionSpec, Message, ToolCall, ToolSpec, Usage};
