//! The two review nodes: a call that waits for the person is prepared (the
//! tool's preview worked out, for an edit the dry run and its diff) in one
//! node and decided in the next, so resuming after the decision re-runs
//! nothing with side effects.

use std::rc::Rc;

use async_trait::async_trait;
use serde_json::Value;

use super::super::call::{Answer, Answers, Call};
use super::super::env::AgentEnv;
use super::super::events::{Ctx, Emit, Info};
use super::super::execute::{execute, receipt, replayed};
use super::super::review::{Decision, PendingReview, ReviewPayload};
use super::super::state::{AgentState, AgentUpdate};
use crate::error::ErrorCode;
use crate::graph::{Node, NodeError};
use crate::store::ReceiptOutcome;
use crate::tools::{no_events, CallInfo, CallRecord, Decider, EditTarget, Outcome, ToolError};

/// The update that answers the call at once (nothing to review).
fn answered(state: &AgentState, answer: Answer) -> AgentUpdate {
    let mut answers = Answers::at(state.messages.len());
    answers.push(answer);
    AgentUpdate {
        messages: answers.messages,
        records: answers.records,
        pending_review: Some(None),
        ..Default::default()
    }
}

/// Works out the change a call needing approval would make (its tool's
/// preview: for an edit, the diff of dry-running Adit) and stores it for
/// review.
pub struct PrepareReview(pub Rc<AgentEnv>);

#[async_trait(?Send)]
impl Node<AgentState> for PrepareReview {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        let env = &self.0;
        let Some(call) = state.pending_calls().into_iter().next() else {
            return Ok(AgentUpdate { pending_review: Some(None), ..Default::default() });
        };
        let call = env.resolve(state, call);
        let bound = match &call.bound {
            Ok(bound) => bound,
            Err(e) => return Ok(answered(state, call.failed(e))),
        };
        let info = CallInfo { id: call.call.id.clone(), key: call.key.clone(), resume: None };
        let plan = match bound.preview(&env.tool_context(ctx, info, &no_events)).await {
            Ok(plan) => plan,
            Err(e) if e.code() == ErrorCode::Aborted => return Err(NodeError::Aborted),
            // Nothing to review: the model learns why at once and can retry.
            Err(e) => return Ok(answered(state, call.failed(&e))),
        };
        let payload = ReviewPayload {
            tool_call_id: call.call.id.clone(),
            tool: call.name().to_owned(),
            // Whole, never cut: the person approves exactly what will run.
            arguments: serde_json::to_string_pretty(bound.arguments()).unwrap_or_default(),
            reason: state.outbound_reason(&call.call),
            target: plan.as_ref().map(|p| p.target.clone()),
            diff: plan.as_ref().map(|p| p.diff.clone()),
            path: plan.as_ref().map(|p| p.path.clone()),
        };
        let arguments = bound.arguments().clone();
        Ok(AgentUpdate {
            pending_review: Some(Some(PendingReview { call: call.call, arguments, plan, payload })),
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
        let pending = state
            .pending_review
            .as_ref()
            .ok_or_else(|| NodeError::failed(ErrorCode::InvalidState, "no review is pending"))?;
        let mut call = env.resolve(state, pending.call.clone());
        call.by = Some(Decider::Person);
        // Decided before a crash or reload: the receipt holds the outcome,
        // and neither the question nor the change happens a second time.
        let receipt = env
            .db
            .receipt(ctx.thread_id, &call.key)
            .await
            .map_err(|e| NodeError::failed(e.code(), format!("reading the review's receipt: {e}")))?;
        let (approved, answer) = match receipt {
            Some(receipt) => (receipt.outcome != ReceiptOutcome::Rejected, replayed(&call, &receipt)),
            None => {
                let payload = serde_json::to_value(&pending.payload).unwrap_or(Value::Null);
                let decision = Decision::from_value(&ctx.interrupt(payload)?)
                    .map_err(|e| NodeError::failed(ErrorCode::InvalidArgument, format!("decision: {e}")))?;
                (decision.approved, decide(env, pending, &call, &decision, ctx).await?)
            }
        };
        let note = format!("\n```tool\n{}: {}\n```\n", if approved { "approved" } else { "rejected" }, call.name());
        ctx.content(&note);
        ctx.active_tool(None);
        let mut answers = Answers::at(state.messages.len());
        answers.push(answer);
        Ok(AgentUpdate {
            messages: answers.messages,
            records: answers.records,
            pending_review: Some(None),
            hold: Some(None),
            output: Some(format!("{}{note}", state.output)),
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
    call: &Call,
    decision: &Decision,
    ctx: &Ctx<'_>,
) -> Result<Answer, NodeError> {
    let name = call.name();
    let session = ctx.thread_id;
    if !decision.approved {
        let answer = call.refused(Decider::Person, decision.reason.as_deref());
        env.db
            .record_receipt(&receipt(session, &call.key, ReceiptOutcome::Rejected, &answer.text, &answer.record))
            .await
            .map_err(|e| NodeError::failed(e.code(), format!("the rejection was not recorded: {e}")))?;
        return Ok(answer);
    }
    if let Err(e) = &call.bound {
        // A host tool the page did not give this Agent (a reload that
        // opened it without its tools): the review stays, for a page that does.
        if e.code() == ErrorCode::NotFound {
            return Err(NodeError::failed(
                ErrorCode::NotFound,
                format!(
                    "{name} is not one of this Agent's tools: open the Agent with the tools it was opened with (its                      `tools`) and approve again, or reject the call"
                ),
            ));
        }
    }
    if decision.for_session {
        if let Err(e) = env.db.grant(session, name).await {
            ctx.warning(format!("{name} was approved, but not for the rest of the session: {e}"));
        }
    }
    ctx.active_tool(Some(name));
    let Some(plan) = &pending.plan else {
        return Ok(execute(env, ctx, call, None).await);
    };
    let record = CallRecord {
        artifact: match &plan.target {
            EditTarget::Artifact { id, .. } => Some(id.clone()),
            EditTarget::Section { .. } => None,
        },
        ..call.record(Outcome::Done)
    };
    let with_receipt = |message: &str| receipt(session, &call.key, ReceiptOutcome::Done, message, &record);
    let info = CallInfo { id: call.call.id.clone(), key: call.key.clone(), resume: None };
    match plan.apply(&env.tool_context(ctx, info, &no_events), name, Some(&with_receipt)).await {
        Ok(message) => {
            ctx.info(Info::Changed { tool: name.to_owned(), target: plan.target.clone() });
            Ok(Answer::new(&call.call.id, message, record))
        }
        // A full disk (or a closed database) wrote nothing: the review stays
        // pending and can be approved again once there is room.
        Err(ToolError::Failed { code: code @ (ErrorCode::QuotaExceeded | ErrorCode::ReloadRequired), message }) => {
            Err(NodeError::failed(code, message))
        }
        Err(e) => {
            let answer = call.failed(&e);
            let done = receipt(session, &call.key, ReceiptOutcome::Done, &answer.text, &answer.record);
            if let Err(e) = env.db.record_receipt(&done).await {
                ctx.warning(format!("the outcome of {name} was not recorded: {e}"));
            }
            Ok(answer)
        }
    }
}
