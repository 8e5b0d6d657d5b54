//! Whether a call may run: the one place that asks, for every tool alike
//! (built-in, the host's, an MCP server's). In order:
//!
//! 1. the host's approval policy (`AgentConfig.approve`), when there is
//!    one: "deny" refuses the call (the model is told, with the policy's
//!    reason), "approve" runs it without a review, "ask" asks the person
//!    (unless the session has a grant for the tool); no answer leaves it to
//!    the next step. A policy that throws counts as "ask", with a warning.
//! 2. the settings' per-tool choice, else the tool's own approval
//!    ([`AgentEnv::needs_approval`]); a call that would ask runs without a
//!    review when the person granted the tool for the session ("approve for
//!    this session" in a review).
//!
//! Neither a grant nor an "approve" covers a call the outbound rule holds
//! (project text leaving for a third party once web material is in the
//! run): the tools node asks that rule after this one, for every call it
//! runs, and such a call is always reviewed.

use async_trait::async_trait;
use serde_json::Value;

use super::env::AgentEnv;
use super::events::{Ctx, Emit};
use crate::tools::{Bound, Decider};

/// A call as the host's policy sees it.
pub struct PolicyCall<'a> {
    pub session_id: &'a str,
    pub tool: &'a str,
    pub arguments: &'a Value,
}

/// What the host's policy says of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Ask,
    /// Refused, with the reason the model is told, if any.
    Deny(Option<String>),
    /// No opinion: the settings and the tool's own approval decide.
    Default,
}

/// The host's approval policy.
#[async_trait(?Send)]
pub trait ApprovalPolicy {
    /// Decides one call (an `Err`: the policy failed, with its message).
    async fn decide(&self, call: PolicyCall<'_>) -> Result<Verdict, String>;
}

/// Whether a call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consent {
    /// It runs (`Some`: who let it run without a review).
    Run(Option<Decider>),
    /// The person reviews it first.
    Review,
    /// It is refused (the policy's reason, if any).
    Refuse(Option<String>),
}

impl AgentEnv {
    /// Whether `call` of the running session may run (`granted`: the tools
    /// the person granted for the session).
    pub async fn consent(&self, ctx: &Ctx<'_>, call: &Bound, granted: &[String]) -> Consent {
        let tool = call.tool().name();
        let verdict = match &self.policy {
            None => Verdict::Default,
            Some(policy) => {
                let asked = PolicyCall { session_id: ctx.thread_id, tool, arguments: call.arguments() };
                policy.decide(asked).await.unwrap_or_else(|e| {
                    ctx.warning(format!("the approval policy failed on {tool} ({e}): the call is reviewed"));
                    Verdict::Ask
                })
            }
        };
        let asks = match verdict {
            Verdict::Deny(reason) => return Consent::Refuse(reason),
            Verdict::Approve => return Consent::Run(Some(Decider::Policy)),
            Verdict::Ask => true,
            Verdict::Default => self.needs_approval(call),
        };
        match (asks, granted.iter().any(|g| g == tool)) {
            (false, _) => Consent::Run(None),
            (true, true) => Consent::Run(Some(Decider::Grant)),
            (true, false) => Consent::Review,
        }
    }
}
