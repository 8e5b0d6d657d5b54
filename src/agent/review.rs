//! Reviews: a call that needs the person's approval is prepared (the edit
//! worked out and dry-run, the diff made) in one node and decided in the
//! next, so resuming after the decision re-runs nothing with side effects.

use std::rc::Rc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::events::{Ctx, Emit, Info};
use super::nodes::{execute, parse_arguments, replayed, tool_context};
use super::state::{AgentState, AgentUpdate};
use super::AgentEnv;
use crate::graph::{Node, NodeError};
use crate::llm::{Message, ToolCall};
use crate::store::{Receipt, ReceiptOutcome};
use crate::tools::{EditPlan, EditTarget, ToolError};

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
    /// The dry-run edit (edit tools): approval writes exactly this.
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
}

impl Decision {
    pub fn approve() -> Decision {
        Decision { approved: true, reason: None }
    }

    pub fn reject(reason: Option<&str>) -> Decision {
        Decision { approved: false, reason: reason.map(str::to_owned) }
    }
}

/// Works out the change a call needing approval would make (the diff, by
/// dry-running Adit) and stores it for review.
pub struct PrepareReview(pub Rc<AgentEnv>);

#[async_trait(?Send)]
impl Node<AgentState> for PrepareReview {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        let env = &self.0;
        let Some(call) = state.pending_calls().into_iter().next() else {
            return Ok(AgentUpdate { pending_review: Some(None), ..Default::default() });
        };
        let answered = |content: String| AgentUpdate {
            messages: vec![Message::tool(call.id.clone(), content)],
            pending_review: Some(None),
            ..Default::default()
        };
        let args = match parse_arguments(&call) {
            Ok(args) => args,
            Err(message) => return Ok(answered(message)),
        };
        let name = call.function.name.as_str();
        let plan = match env.tools.get(name).and_then(|t| t.edit_kind()) {
            Some(kind) => match crate::tools::edit::plan(name, kind, &args, &tool_context(env, ctx)).await {
                Ok(plan) => Some(plan),
                Err(ToolError::Failed { code, .. }) if code == "aborted" => return Err(NodeError::Aborted),
                // Nothing to review: the model learns why at once and can retry.
                Err(e) => return Ok(answered(format!("Error: {e}"))),
            },
            None => None,
        };
        let payload = ReviewPayload {
            tool_call_id: call.id.clone(),
            tool: name.to_owned(),
            // Whole, never cut: the person approves exactly what will run.
            arguments: serde_json::to_string_pretty(&args).unwrap_or_default(),
            reason: state.outbound_hold.as_ref().filter(|h| h.call_id == call.id).map(|h| h.reason.clone()),
            target: plan.as_ref().map(|p| p.target.clone()),
            diff: plan.as_ref().map(|p| p.diff.clone()),
            path: plan.as_ref().map(|p| p.path.clone()),
        };
        Ok(AgentUpdate {
            pending_review: Some(Some(PendingReview { call, arguments: args, plan, payload })),
            latest_node_name: Some(Some("prepare_review".into())),
            ..Default::default()
        })
    }
}

/// Pauses for the person's decision; runs the call (exactly the reviewed
/// change) on approval, or tells the model it was rejected and why.
pub struct Review(pub Rc<AgentEnv>);

#[async_trait(?Send)]
impl Node<AgentState> for Review {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        let env = &self.0;
        let pending =
            state.pending_review.as_ref().ok_or_else(|| NodeError::failed("invalid_state", "no review is pending"))?;
        let call = &pending.call;
        let name = call.function.name.as_str();
        // Decided before a crash or reload: the receipt holds the outcome,
        // and neither the question nor the change happens a second time.
        let receipt = env
            .db
            .receipt(ctx.thread_id, &state.call_key(call))
            .await
            .map_err(|e| NodeError::failed(e.code(), format!("reading the review's receipt: {e}")))?;
        let (approved, content) = match receipt {
            Some(receipt) => (receipt.outcome != ReceiptOutcome::Rejected, replayed(&receipt)),
            None => {
                let payload = serde_json::to_value(&pending.payload).unwrap_or(Value::Null);
                let decision: Decision = crate::json::from_value(ctx.interrupt(payload)?)
                    .map_err(|e| NodeError::failed("invalid_argument", format!("decision: {e}")))?;
                (decision.approved, decide(env, pending, &state.call_key(call), &decision, ctx).await?)
            }
        };
        let note = format!("\n```tool\n{}: {name}\n```\n", if approved { "approved" } else { "rejected" });
        ctx.content(&note);
        ctx.active_tool(None);
        Ok(AgentUpdate {
            messages: vec![Message::tool(call.id.clone(), content)],
            pending_review: Some(None),
            outbound_hold: Some(None),
            output: Some(format!("{}{note}", state.output)),
            active_tool: Some(None),
            latest_node_name: Some(Some("review".into())),
            ..Default::default()
        })
    }
}

/// Carries out the person's decision, recording it with a receipt: an
/// approved edit lands in one batch with its receipt; a rejection is
/// recorded before the run goes on, so it stays rejected after a reload.
async fn decide(
    env: &AgentEnv,
    pending: &PendingReview,
    key: &str,
    decision: &Decision,
    ctx: &Ctx<'_>,
) -> Result<String, NodeError> {
    let call = &pending.call;
    let name = call.function.name.as_str();
    let session = ctx.thread_id;
    if !decision.approved {
        let content = match decision.reason.as_deref().filter(|r| !r.trim().is_empty()) {
            Some(reason) => format!("Rejected by the user: {reason}"),
            None => "Rejected by the user.".to_owned(),
        };
        env.db
            .record_receipt(&Receipt::new(session, key, ReceiptOutcome::Rejected, content.clone()))
            .await
            .map_err(|e| NodeError::failed(e.code(), format!("the rejection was not recorded: {e}")))?;
        return Ok(content);
    }
    ctx.active_tool(Some(name));
    let Some(plan) = &pending.plan else {
        return Ok(execute(env, call, key, pending.arguments.clone(), ctx).await.content);
    };
    let receipt = Receipt::new(session, key, ReceiptOutcome::Done, "");
    match plan.apply(&tool_context(env, ctx), name, Some(receipt)).await {
        Ok(message) => {
            ctx.info(Info::Changed { tool: name.to_owned(), target: plan.target.clone() });
            Ok(message)
        }
        // A full disk (or a closed database) wrote nothing: the review stays
        // pending and can be approved again once there is room.
        Err(ToolError::Failed { code, message }) if code == "quota_exceeded" || code == "reload_required" => {
            Err(NodeError::failed(&code, message))
        }
        Err(e) => {
            let content = format!("Error: {e}");
            if let Err(e) =
                env.db.record_receipt(&Receipt::new(session, key, ReceiptOutcome::Done, content.clone())).await
            {
                ctx.warning(format!("the outcome of {name} was not recorded: {e}"));
            }
            Ok(content)
        }
    }
}
