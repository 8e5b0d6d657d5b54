//! The assistant graph's nodes, one topic per file: routing, the model
//! call and its prompt, running tools (with the search optimiser), and
//! long-term memory. Reviews live in `agent::review`.

mod act;
mod compact;
mod memory;
mod reply;
mod request;
mod route;
mod search;

pub use act::Tools;
pub(in crate::agent) use act::{execute, parse_arguments, replayed, tool_context};
pub use memory::{MemoryJudge, MemoryRefiner};
pub use reply::{render_call, Agent, Chat};
pub use route::{fallback_strategy, Router};

use super::state::AgentState;
use crate::graph::NodeError;
use crate::llm::{LlmError, Message};

fn llm_failure(e: LlmError) -> NodeError {
    match e {
        LlmError::Aborted => NodeError::Aborted,
        other => NodeError::failed(other.code(), other.to_string()),
    }
}

fn last_user_text(state: &AgentState) -> String {
    state.turn().iter().find_map(|m| matches!(m, Message::User { .. }).then(|| m.text().to_owned())).unwrap_or_default()
}
