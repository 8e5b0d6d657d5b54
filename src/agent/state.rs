//! The assistant graph's state, and what the nodes ask of it: the current
//! turn, the calls still to answer, and the typed records of the calls
//! answered.

use serde::Serialize;
use serde_json::Value;

use super::compress::Compaction;
use super::events::AgentEvent;
use super::review::PendingReview;
use super::strategy::Strategy;
use crate::json::Fields;
use crate::llm::{Message, ToolCall};
use crate::tools::{CallRecord, NotRun, Outcome};

/// The first pending call waits for the person: it needs approval, or the
/// outbound rule holds it (`reason`: why, in words the review dialog shows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    pub call_id: String,
    #[serde(default)]
    pub reason: Option<String>,
}

crate::graph_state! {
    /// Everything the assistant graph threads through its nodes.
    pub struct AgentState, update AgentUpdate, events AgentEvent, decoded by hand {
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tail {
    pub at: usize,
    /// Its parts, each under its `## ` heading.
    pub parts: Vec<String>,
}

// Read by hand (`json::Fields`): the derived decoder of this tree compiled
// to 24.7 KB of `.wasm` (BENCHMARKS.md, "Package size"). Every field may be
// absent (a checkpoint of an older version), as with `#[serde(default)]`.
crate::decode_by_hand!(AgentState, |f| AgentState::from_value(f.0));

impl AgentState {
    /// The state as checkpointed.
    pub fn from_value(value: &Value) -> Result<AgentState, String> {
        let f = Fields(value);
        let hold = |v: &Value| {
            let h = Fields(v);
            Ok(Hold { call_id: h.text("callId", true)?, reason: h.opt_text("reason")? })
        };
        // Field by field into one value: a failed read drops it whole (a
        // struct literal would compile a cleanup path per field).
        let mut state = AgentState::default();
        state.messages = f.each("messages", false, Message::from_value)?;
        state.records = f.each("records", false, |v| Ok(CallRecord::from_value(v)))?;
        state.nudges = f.each("nudges", false, index)?;
        state.strategy =
            f.opt("strategy", |v| Strategy::parse(v.as_str().unwrap_or_default()).ok_or("unknown strategy".into()))?;
        state.agent_mode = f.flag("agentMode")?;
        state.turn_start = f.count("turnStart", false)? as usize;
        state.output = f.text("output", false)?;
        state.pending_review = f.opt("pendingReview", PendingReview::from_value)?;
        state.memory_worthy = f.flag("memoryWorthy")?;
        state.result_links = f.strings("resultLinks", false)?;
        // Named `outboundHold` before approvals could hold a call too.
        state.hold = match f.opt("hold", hold)? {
            None => f.opt("outboundHold", hold)?,
            found => found,
        };
        state.interjections = f.strings("interjections", false)?;
        state.compaction = f.opt("compaction", Compaction::from_value)?;
        state.calls_since_compaction = f.count("callsSinceCompaction", false)? as u32;
        state.tails = f.each("tails", false, |v| {
            let t = Fields(v);
            Ok(Tail { at: t.count("at", true)? as usize, parts: t.strings("parts", true)? })
        })?;
        Ok(state)
    }

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

/// An index into `messages`.
fn index(value: &Value) -> Result<usize, String> {
    value.as_u64().map(|at| at as usize).ok_or_else(|| "an index must be a whole number".into())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::adit::Edit;
    use crate::agent::compress::{KeyDecision, Summary, TaskState};
    use crate::agent::review::ReviewPayload;
    use std::rc::Rc;

    use crate::graph::{Checkpoint, Checkpointer, PrunePolicy};
    use crate::store::{MemoryBackend, StoreCheckpointer};
    use crate::tools::{EditPlan, EditTarget};

    /// A state with every field set, the nested ones too.
    fn full_state() -> AgentState {
        let mut call = ToolCall::new("c1", "edit_section", &json!({"id": "s1", "edits": []}));
        call.reasoning = Some("thinking".into());
        call.extra_content = Some(json!({"google": {"thought_signature": "sig"}}));
        let target = EditTarget::Section { id: "s1".into(), title: "One".into() };
        AgentState {
            messages: vec![
                Message::system("s"),
                Message::user("u"),
                Message::Assistant { content: Some("a".into()), tool_calls: vec![call.clone()] },
                Message::tool("c1", "Error: this chapter opens with the word Error"),
            ],
            records: vec![CallRecord {
                at: 3,
                kept: Some("a1".into()),
                ..CallRecord::new("edit_section", Outcome::Done)
            }],
            nudges: vec![1, 3],
            strategy: Some(Strategy::Writing),
            agent_mode: true,
            turn_start: 1,
            output: "```thought\nx\n```".into(),
            pending_review: Some(PendingReview {
                call: call.clone(),
                arguments: json!({"id": "s1"}),
                plan: Some(EditPlan {
                    target: target.clone(),
                    before: "a".into(),
                    after: "b".into(),
                    path: "edits".into(),
                    edits: vec![Edit::new("a", "b")],
                    diff: "-a\n+b".into(),
                }),
                payload: ReviewPayload {
                    tool_call_id: "c1".into(),
                    tool: "edit_section".into(),
                    arguments: "{}".into(),
                    reason: Some("why".into()),
                    target: Some(target),
                    diff: Some("-a\n+b".into()),
                    path: None,
                },
            }),
            memory_worthy: true,
            result_links: vec!["https://example.org/".into()],
            hold: Some(Hold { call_id: "c1".into(), reason: None }),
            interjections: vec!["t1".into()],
            compaction: Some(Compaction {
                upto: 2,
                summary: Summary {
                    user_constraints: vec!["keep it short".into()],
                    decisions: vec![KeyDecision { decision: "d".into(), rationale: "r".into() }],
                    recent_narrative: "n".into(),
                    task_state: TaskState { completed: vec!["c".into()], ..TaskState::default() },
                    ..Summary::default()
                },
                constraints: vec!["keep it short".into()],
                count: 1,
                artifacts: vec!["a1".into()],
                artifact_listing: "- a1".into(),
            }),
            calls_since_compaction: 4,
            tails: vec![Tail { at: 1, parts: vec!["## Status\nx".into()] }],
        }
    }

    #[test]
    fn the_hand_written_decoder_reads_back_every_field_it_was_given() {
        let state = full_state();
        let value = serde_json::to_value(&state).unwrap();
        assert_eq!(AgentState::from_value(&value).unwrap(), state);
        // The checkpointer's path: a checkpoint record decoded as a whole.
        let checkpoint = Checkpoint {
            id: Checkpoint::<AgentState>::id_for(7),
            thread_id: "t".into(),
            parent_id: None,
            step: 7,
            state: state.clone(),
            next: Some("tools".into()),
            interrupt: None,
            created_at: 1.0,
        };
        let store = StoreCheckpointer::new(Rc::new(MemoryBackend::new()), PrunePolicy::default());
        futures_executor::block_on(async {
            store.put(checkpoint.clone()).await.unwrap();
            assert_eq!(store.latest("t").await.unwrap(), Some(checkpoint));
        });
        // An older checkpoint: fields missing, the hold under its old name.
        let old = AgentState::from_value(
            &json!({"messages": [{"role": "user", "content": "u"}], "outboundHold": {"callId": "c9", "reason": "web"}}),
        )
        .unwrap();
        assert_eq!(old.messages, vec![Message::user("u")]);
        assert_eq!(old.hold, Some(Hold { call_id: "c9".into(), reason: Some("web".into()) }));
        assert_eq!((old.turn_start, old.strategy, old.compaction), (0, None, None));
    }

    #[test]
    fn a_damaged_state_is_an_error_that_names_what_is_wrong() {
        let mut value = serde_json::to_value(full_state()).unwrap();
        value["pendingReview"]["plan"]["edits"] = json!([{"search": "a"}]);
        assert!(AgentState::from_value(&value).unwrap_err().contains("replace"));
        for (field, bad, says) in [
            ("messages", json!([{"role": "tool", "content": "x"}]), "tool_call_id"),
            ("messages", json!("text"), "must be an array"),
            ("turnStart", json!(-1), "whole number"),
            ("strategy", json!("wander"), "strategy"),
            ("tails", json!([{"at": 1}]), "parts"),
        ] {
            let mut value = serde_json::to_value(full_state()).unwrap();
            value[field] = bad;
            let err = AgentState::from_value(&value).unwrap_err();
            assert!(err.contains(says), "{field}: {err}");
        }
    }
}
