//! What a review is: the call prepared for the person's approval (its plan
//! and what the dialog shows) and the person's decision. The two nodes that
//! prepare and decide it live in `nodes/review.rs`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::ToolCall;
use crate::tools::{EditPlan, EditTarget};

/// What a paused run shows the person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewPayload {
    pub tool_call_id: String,
    pub tool: String,
    /// The call's arguments in full (pretty JSON): exactly what will run.
    pub arguments: String,
    /// Why a network call was held (web material in the run), if it was.
    pub reason: Option<String>,
    pub target: Option<EditTarget>,
    /// Unified diff of the change (edits).
    pub diff: Option<String>,
    /// How the edits were obtained (edits).
    pub path: Option<String>,
}

/// A call prepared for review: what `review` runs on approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingReview {
    pub call: ToolCall,
    pub arguments: Value,
    /// The tool's preview of the change (the edit tools' dry run):
    /// approval writes exactly this.
    pub plan: Option<EditPlan>,
    pub payload: ReviewPayload,
}

/// The person's answer to a review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub approved: bool,
    /// Why not (given to the model with a rejection).
    #[serde(default)]
    pub reason: Option<String>,
    /// Approved for the rest of the session: later calls of the tool run
    /// without a review (`"session"`; see `agent::consent`).
    #[serde(default)]
    pub grant: Option<GrantScope>,
}

/// How long an approval lasts beyond its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantScope {
    /// The rest of the session.
    Session,
}

impl Decision {
    pub fn approve() -> Decision {
        Decision { approved: true, reason: None, grant: None }
    }

    /// Approves, and grants the tool for the rest of the session.
    pub fn approve_for_session() -> Decision {
        Decision { grant: Some(GrantScope::Session), ..Decision::approve() }
    }

    pub fn reject(reason: Option<&str>) -> Decision {
        Decision { approved: false, reason: reason.map(str::to_owned), grant: None }
    }
}
