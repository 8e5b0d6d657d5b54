//! The `ChatModel` abstraction the agent graph calls.

use async_trait::async_trait;

use super::error::Result;
use super::types::{ChatOutcome, ChatRequest, Delta};
use crate::cancel::CancelToken;

/// Something that answers Chat Completions requests, streaming deltas to
/// `on_delta` as they arrive. Implementations: the proxy client (browser)
/// and [`super::ScriptedModel`] (tests).
///
/// `?Send`: on wasm the futures hold JS values; natively the agent runs on a
/// single-threaded executor as well.
#[async_trait(?Send)]
pub trait ChatModel {
    /// Sends `request` and returns the finished answer. Must return
    /// [`super::LlmError::Aborted`] promptly once `cancel` is cancelled.
    async fn chat(
        &self,
        request: ChatRequest,
        on_delta: &mut dyn FnMut(Delta),
        cancel: &CancelToken,
    ) -> Result<ChatOutcome>;

    /// Tokens of context the server really processes for `model` (an
    /// alias or a name), where it can tell (the proxy's `/api/health`, from
    /// Ollama's `num_ctx`, llama.cpp's `/props`, LM Studio's and vLLM's
    /// listings); `None` when it cannot.
    async fn context_window(&self, _model: &str) -> Option<usize> {
        None
    }
}
