//! The assistant graph's state, and what the nodes ask of it: the current
//! turn, the calls still to answer, and the typed records of the calls
//! answered.

use serde::{Deserialize, Serialize};

use super::compress::Compaction;
use super::events::AgentEvent;
use super::review::PendingReview;
use super::strategy::Strategy;
use crate::llm::{Message, ToolCall};
use crate::tools::{CallRecord, NotRun, Outcome};

/// The first pending call waits for the person: it needs approval, or the
/// outbound rule holds it (`reason`: why, in words the review dialog shows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    pub call_id: String,
    #[serde(default)]
    pub reason: Option<String>,
}

crate::graph_state! {
    /// Everything the assistant graph threads through its nodes.
    pub struct AgentState, update AgentUpdate, events AgentEvent {
        append messages: Vec<Message>,
        /// The typed record of every tool message (`at`: its index in
        /// `messages`), in message order.
        append records: Vec<CallRecord>,
        /// Indices in `messages` of the nudges (a user message, or the
        /// result of a `respond` call the completion rules turned back).
        append nudges: Vec<usize>,
        set strategy: Option<Strategy>,
        set agent_mode: bool,
        /// Index in `messages` of this turn's user message.
        set turn_start: usize,
        /// The turn's visible output: one Markdown stream with ```thought,
        /// ```plan and ```tool blocks.
        set output: String,
        /// A tool call prepared for review (plan and payload), between
        /// `prepare_review` and `review`.
        set pending_review: Option<PendingReview>,
        /// The memory judge found something worth keeping.
        set memory_worthy: bool,
        /// URLs search results offered in this session (opening one is
        /// ordinary research; see `agent::outbound`).
        append result_links: Vec<String>,
        /// The call the tools node stopped at for the person.
        #[serde(alias = "outboundHold")]
        set hold: Option<Hold>,
        /// Transcript ids of the interjections already given to the model.
        append interjections: Vec<String>,
        /// The summary of the older messages, once a compression ran.
        set compaction: Option<Compaction>,
        /// Main-model calls since the last compression (the session's).
        set calls_since_compaction: u32,
        /// The dynamic context (artifact index, status, answer rules) each
        /// request added to its last message, kept with that message so the
        /// next request re-sends it as sent and extends the one before.
        append tails: Vec<Tail>,
    }
}

/// The dynamic context a request added at the end of message `at` (the
/// person's message, or the last tool result: never a `user` message after
/// tool results, which strict chat templates refuse).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tail {
    pub at: usize,
    /// Its parts, each under its `## ` heading.
    pub parts: Vec<String>,
}

impl AgentState {
    /// The current turn's messages.
    pub fn turn(&self) -> &[Message] {
        &self.messages[self.turn_start.min(self.messages.len())..]
    }

    /// The records of the current turn's calls.
    pub fn turn_records(&self) -> impl Iterator<Item = &CallRecord> {
        self.records.iter().filter(|r| r.at >= self.turn_start)
    }

    /// Whether a tool ran in this turn.
    pub fn used_tools(&self) -> bool {
        self.turn().iter().any(|m| matches!(m, Message::Tool { .. }))
    }

    /// Index in `messages` of the last message with tool calls (this turn's).
    fn calls_at(&self) -> Option<usize> {
        let start = self.turn_start.min(self.messages.len());
        self.turn().iter().rposition(|m| !m.tool_calls().is_empty()).map(|at| start + at)
    }

    /// The receipt key of a call of the last assistant message: unique in
    /// the session, which the ids models give are not (`call_0` recurs).
    pub fn call_key(&self, call: &ToolCall) -> String {
        format!("{}:{}", self.calls_at().unwrap_or(0), call.id)
    }

    /// The tool calls of the last assistant message that have no result yet.
    pub fn pending_calls(&self) -> Vec<ToolCall> {
        let turn = self.turn();
        let Some(at) = turn.iter().rposition(|m| !m.tool_calls().is_empty()) else {
            return Vec::new();
        };
        let answered: Vec<&str> = turn[at + 1..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        turn[at].tool_calls().iter().filter(|c| !answered.contains(&c.id.as_str())).cloned().collect()
    }

    /// Whether the tools node stopped at `call` for the person.
    pub fn held(&self, call: &ToolCall) -> bool {
        self.hold.as_ref().is_some_and(|h| h.call_id == call.id)
    }

    /// Why the outbound rule holds `call`, if it does.
    pub fn outbound_reason(&self, call: &ToolCall) -> Option<String> {
        self.hold.as_ref().filter(|h| h.call_id == call.id).and_then(|h| h.reason.clone())
    }

    /// Whether a call that delivers the answer (`respond`) did so in this
    /// turn (one the completion rules turned back does not count).
    pub fn responded(&self, tools: &crate::tools::ToolRegistry) -> bool {
        self.turn_records().any(|r| tools.answers(&r.tool) && r.outcome == Outcome::Done)
    }

    /// Whether the model must go on: the completion rules answered its
    /// final answer with a nudge and no call waits.
    pub fn nudged(&self) -> bool {
        let last = self.messages.len().wrapping_sub(1);
        self.nudges.last() == Some(&last) && self.pending_calls().is_empty()
    }

    /// Nudges given in this turn.
    pub fn nudge_count(&self) -> usize {
        self.nudges.iter().filter(|at| **at >= self.turn_start).count()
    }

    /// Calls the loop guard refused in this turn.
    pub fn refusals(&self) -> usize {
        self.turn_records().filter(|r| r.outcome == Outcome::NotRun(NotRun::LoopGuard)).count()
    }
}
