//! Sessions checkpointed before calls had typed records: the one reader of
//! a tool result's words. When such a checkpoint loads (the agent's reads
//! and the graph engine's, through `RunConfig::loaded`) or such a receipt
//! is replayed, each tool message gets the record its first words stood
//! for then, and every other part of the agent reads records only.

use super::call::{Answer, Call};
use super::state::AgentState;
use crate::error::ErrorCode;
use crate::llm::{Message, ToolCall};
use crate::tools::{CallRecord, NotRun, Outcome, ToolRegistry};

/// The words a kept result ended with, before the artifact's id.
const KEPT: &str = "\n\n(Kept as session artifact ";

/// The artifact a result's last line named, if it was kept.
fn kept_of(text: &str) -> Option<String> {
    let at = text.rfind(KEPT)?;
    text[at + KEPT.len()..].strip_suffix(".)").map(str::to_owned)
}

/// How a call ended, as its result's first words said (a kept result is
/// done whatever its text: only successes were kept).
fn outcome_of(text: &str, kept: bool) -> Outcome {
    let t = text.trim_start();
    let after = |prefix: &str| t.strip_prefix(prefix).map(str::trim);
    if kept {
        Outcome::Done
    } else if t.starts_with("Not finished yet:") {
        Outcome::Nudged
    } else if t.starts_with("Already known (not run again):") {
        Outcome::Known
    } else if t.starts_with("Not run (loop guard):") {
        Outcome::NotRun(NotRun::LoopGuard)
    } else if t.starts_with("Not run") {
        Outcome::NotRun(NotRun::TurnEnded)
    } else if let Some(rest) = after("Merged into the search of call") {
        Outcome::Merged { into: rest.split(';').next().unwrap_or_default().to_owned() }
    } else if let Some(rest) = after("Rejected by the user") {
        let reason = rest.trim_start_matches(':').trim().trim_end_matches('.');
        Outcome::Rejected { reason: (!reason.is_empty()).then(|| reason.to_owned()) }
    } else if t.starts_with("Delegate finished") {
        Outcome::DelegateFinished
    } else if t.starts_with("Error: the outcome of this call is unknown") {
        Outcome::Unknown
    } else if t.starts_with("Error: invalid arguments") || t.contains("are not valid JSON") {
        Outcome::Failed { code: ErrorCode::InvalidArgument }
    } else if t.starts_with("Error") {
        Outcome::Failed { code: ErrorCode::ToolFailed }
    } else {
        Outcome::Done
    }
}

/// The record a result of `call` stood for.
fn record(tools: &ToolRegistry, call: Option<&ToolCall>, text: &str) -> CallRecord {
    let kept = kept_of(text);
    let outcome = outcome_of(text, kept.is_some());
    let touched = call.and_then(|c| tools.bind(c).ok()).and_then(|b| b.touches());
    let tool = call.map_or("", |c| c.function.name.as_str());
    CallRecord { kept, touched, ..CallRecord::new(tool, outcome) }
}

/// The answer an old receipt (its text alone) stands for.
pub fn answer(call: &Call, text: &str) -> Answer {
    let kept = kept_of(text);
    let outcome = outcome_of(text, kept.is_some());
    Answer::new(&call.call.id, text, CallRecord { kept, ..call.record(outcome) })
}

/// Gives a state checkpointed before records its records and nudges.
pub fn backfill(state: &mut AgentState, tools: &ToolRegistry) {
    let has_results = state.messages.iter().any(|m| matches!(m, Message::Tool { .. }));
    if !state.records.is_empty() || !has_results {
        return;
    }
    let mut calls: Vec<&ToolCall> = Vec::new();
    for (at, message) in state.messages.iter().enumerate() {
        match message {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => calls = tool_calls.iter().collect(),
            Message::Tool { tool_call_id, content } => {
                let call = calls.iter().copied().find(|c| c.id == *tool_call_id);
                let record = CallRecord { at, ..record(tools, call, content) };
                if record.outcome == Outcome::Nudged {
                    state.nudges.push(at);
                }
                state.records.push(record);
            }
            Message::User { content } if content.starts_with("Not finished yet:") => state.nudges.push(at),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_results_read_as_they_were_meant() {
        let cases = [
            ("Once upon a time.", Outcome::Done),
            ("Error: no such section", Outcome::Failed { code: ErrorCode::ToolFailed }),
            (
                "Error: invalid arguments for get_manuscript: missing field",
                Outcome::Failed { code: ErrorCode::InvalidArgument },
            ),
            ("Rejected by the user: too long.", Outcome::Rejected { reason: Some("too long".into()) }),
            ("Rejected by the user.", Outcome::Rejected { reason: None }),
            ("Already known (not run again): you already have it", Outcome::Known),
            ("Not run (loop guard): the third call", Outcome::NotRun(NotRun::LoopGuard)),
            ("Not run: the turn ended before this call ran.", Outcome::NotRun(NotRun::TurnEnded)),
            ("Merged into the search of call c1; see its result.", Outcome::Merged { into: "c1".into() }),
            ("Not finished yet: read the project", Outcome::Nudged),
            ("Delegate finished. Written: nothing.", Outcome::DelegateFinished),
            ("Error: the outcome of this call is unknown: the page closed", Outcome::Unknown),
        ];
        for (text, outcome) in cases {
            assert_eq!(outcome_of(text, false), outcome, "{text}");
        }
        // Only successes were kept: a kept chapter that opens with "Error" was a read.
        let chapter = "Error in the ship's log, the captain wrote.\n\n(Kept as session artifact a-1.)";
        assert_eq!(kept_of(chapter).as_deref(), Some("a-1"));
        assert_eq!(outcome_of(chapter, true), Outcome::Done);
    }
}
