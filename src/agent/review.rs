//! What a review is: the call prepared for the person's approval (its plan
//! and what the dialog shows) and the person's decision. The two nodes that
//! prepare and decide it live in `nodes/review.rs`.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::json::Fields;
use crate::llm::ToolCall;
use crate::tools::{EditPlan, EditTarget};

/// What a paused run shows the person.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingReview {
    pub call: ToolCall,
    pub arguments: Value,
    /// The tool's preview of the change (the edit tools' dry run):
    /// approval writes exactly this.
    pub plan: Option<EditPlan>,
    pub payload: ReviewPayload,
}

impl PendingReview {
    /// The review as checkpointed (read by hand, see `AgentState`'s decoder).
    pub fn from_value(value: &Value) -> Result<PendingReview, String> {
        let f = Fields(value);
        let p = f.object("payload")?;
        Ok(PendingReview {
            call: ToolCall::from_value(f.need("call")?)?,
            arguments: value.get("arguments").cloned().unwrap_or_default(),
            plan: f.opt("plan", EditPlan::from_value)?,
            payload: ReviewPayload {
                tool_call_id: p.text("toolCallId", true)?,
                tool: p.text("tool", true)?,
                arguments: p.text("arguments", true)?,
                reason: p.opt_text("reason")?,
                target: p.opt("target", EditTarget::from_value)?,
                diff: p.opt_text("diff")?,
                path: p.opt_text("path")?,
            },
        })
    }
}

/// The person's answer to a review.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub approved: bool,
    /// Why not (given to the model with a rejection).
    pub reason: Option<String>,
    /// Approved for the rest of the session (`grant: "session"`): later
    /// calls of the tool run without a review (see `agent::consent`).
    pub for_session: bool,
}

impl Decision {
    pub fn approve() -> Decision {
        Decision { approved: true, reason: None, for_session: false }
    }

    /// Approves, and grants the tool for the rest of the session.
    pub fn approve_for_session() -> Decision {
        Decision { for_session: true, ..Decision::approve() }
    }

    pub fn reject(reason: Option<&str>) -> Decision {
        Decision { approved: false, reason: reason.map(str::to_owned), for_session: false }
    }

    /// The decision as JS gives it and the paused run receives it:
    /// `{ approved, reason?, grant?: "session" }`.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("approved".into(), self.approved.into());
        if let Some(reason) = &self.reason {
            map.insert("reason".into(), reason.as_str().into());
        }
        if self.for_session {
            map.insert("grant".into(), "session".into());
        }
        Value::Object(map)
    }

    /// The decision [`Decision::to_value`] wrote (read by hand: a derived
    /// decoder costs the package more than these lines), or what is wrong.
    pub fn from_value(value: &Value) -> Result<Decision, &'static str> {
        let approved = value.get("approved").and_then(Value::as_bool).ok_or("approved must be a boolean")?;
        let reason = match value.get("reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(reason)) => Some(reason.clone()),
            Some(_) => return Err("reason must be a string"),
        };
        let for_session = match value.get("grant") {
            None | Some(Value::Null) => false,
            Some(grant) if grant == "session" => true,
            Some(_) => return Err("grant must be \"session\""),
        };
        Ok(Decision { approved, reason, for_session })
    }
}
