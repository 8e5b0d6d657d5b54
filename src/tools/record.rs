//! The typed record of one tool call, kept beside the tool message that
//! answers it: how the call ended, the artifact its result was kept as, the
//! artifact whose text it carries, and what it touched. The model gets
//! words; the agent reads these (tracked facts, completion rules, the loop
//! guard, the request's placeholders for artifacts turned off), never the
//! words.

use serde::{Deserialize, Serialize};

use super::{Subject, Touch};
use crate::error::ErrorCode;

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Outcome {
    /// It ran and did what it was asked.
    #[default]
    Done,
    /// It ran (or could not start) and failed.
    Failed { code: ErrorCode },
    /// The person rejected it (with their reason, if they gave one).
    Rejected { reason: Option<String> },
    /// Not run: the session already knew its answer.
    Known,
    /// Not run, for the reason given.
    NotRun(NotRun),
    /// Merged into another call of its step (the search optimiser).
    Merged { into: String },
    /// A final answer the completion rules turned back.
    Nudged,
    /// A delegate whose child finished its task.
    DelegateFinished,
    /// It started and was cut off (a reload, a crash): whether its effect
    /// landed is unknown, and it was not run again.
    Unknown,
}

/// Why a call was not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRun {
    /// The loop guard refused a repetition.
    LoopGuard,
    /// The turn ended before it ran (a new message after a cut-off run).
    TurnEnded,
}

impl Outcome {
    /// Whether the call did what it was asked (a delegate that finished too).
    pub fn done(&self) -> bool {
        matches!(self, Outcome::Done | Outcome::DelegateFinished)
    }
}

/// The record of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "RawRecord", into = "RawRecord")]
pub struct CallRecord {
    /// Index in the session's messages of the tool message answering it.
    pub at: usize,
    pub tool: String,
    pub outcome: Outcome,
    /// The artifact its result was kept as.
    pub kept: Option<String>,
    /// The artifact whose text the call carries besides (read, created, changed).
    pub artifact: Option<String>,
    /// What it read or wrote.
    pub touched: Option<Touch>,
}

impl CallRecord {
    /// A record of a call of `tool` that ended as `outcome`.
    pub fn new(tool: &str, outcome: Outcome) -> CallRecord {
        CallRecord { at: 0, tool: tool.to_owned(), outcome, kept: None, artifact: None, touched: None }
    }

    /// The artifacts whose text the call carries (kept as, or otherwise).
    pub fn artifacts(&self) -> impl Iterator<Item = &str> {
        self.kept.iter().chain(self.artifact.iter()).map(String::as_str)
    }
}

/// A record as stored: flat, every field a scalar (a derived tagged enum
/// would buffer its fields before reading them).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRecord {
    at: usize,
    tool: String,
    outcome: String,
    #[serde(default)]
    code: Option<ErrorCode>,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    kept: Option<String>,
    #[serde(default)]
    artifact: Option<String>,
    #[serde(default)]
    reads: Option<Subject>,
    #[serde(default)]
    writes: Option<Subject>,
}

impl From<RawRecord> for CallRecord {
    fn from(raw: RawRecord) -> CallRecord {
        let outcome = match raw.outcome.as_str() {
            "failed" => Outcome::Failed { code: raw.code.unwrap_or(ErrorCode::ToolFailed) },
            "rejected" => Outcome::Rejected { reason: raw.detail },
            "known" => Outcome::Known,
            "loop_guard" => Outcome::NotRun(NotRun::LoopGuard),
            "turn_ended" => Outcome::NotRun(NotRun::TurnEnded),
            "merged" => Outcome::Merged { into: raw.detail.unwrap_or_default() },
            "nudged" => Outcome::Nudged,
            "delegate_finished" => Outcome::DelegateFinished,
            "unknown" => Outcome::Unknown,
            _ => Outcome::Done,
        };
        let touched = match (raw.reads, raw.writes) {
            (Some(s), _) => Some(Touch::Reads(s)),
            (None, Some(s)) => Some(Touch::Writes(s)),
            _ => None,
        };
        CallRecord { at: raw.at, tool: raw.tool, outcome, kept: raw.kept, artifact: raw.artifact, touched }
    }
}

impl From<CallRecord> for RawRecord {
    fn from(record: CallRecord) -> RawRecord {
        let (outcome, code, detail) = match record.outcome {
            Outcome::Done => ("done", None, None),
            Outcome::Failed { code } => ("failed", Some(code), None),
            Outcome::Rejected { reason } => ("rejected", None, reason),
            Outcome::Known => ("known", None, None),
            Outcome::NotRun(NotRun::LoopGuard) => ("loop_guard", None, None),
            Outcome::NotRun(NotRun::TurnEnded) => ("turn_ended", None, None),
            Outcome::Merged { into } => ("merged", None, Some(into)),
            Outcome::Nudged => ("nudged", None, None),
            Outcome::DelegateFinished => ("delegate_finished", None, None),
            Outcome::Unknown => ("unknown", None, None),
        };
        let (reads, writes) = match record.touched {
            Some(Touch::Reads(s)) => (Some(s), None),
            Some(Touch::Writes(s)) => (None, Some(s)),
            None => (None, None),
        };
        RawRecord {
            at: record.at,
            tool: record.tool,
            outcome: outcome.to_owned(),
            code,
            detail,
            kept: record.kept,
            artifact: record.artifact,
            reads,
            writes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_their_flat_form() {
        let outcomes = [
            Outcome::Done,
            Outcome::Failed { code: ErrorCode::QuotaExceeded },
            Outcome::Rejected { reason: Some("too long".into()) },
            Outcome::Rejected { reason: None },
            Outcome::Known,
            Outcome::NotRun(NotRun::LoopGuard),
            Outcome::NotRun(NotRun::TurnEnded),
            Outcome::Merged { into: "call_1".into() },
            Outcome::Nudged,
            Outcome::DelegateFinished,
            Outcome::Unknown,
        ];
        for (i, outcome) in outcomes.into_iter().enumerate() {
            let record = CallRecord {
                at: i,
                tool: "get_manuscript".into(),
                outcome,
                kept: Some("a1".into()),
                artifact: None,
                touched: Some(if i % 2 == 0 {
                    Touch::Reads(Subject::Section("s1".into()))
                } else {
                    Touch::Writes(Subject::AnyOutline)
                }),
            };
            let text = crate::json::to_text(&record).unwrap();
            assert_eq!(crate::json::from_text::<CallRecord>(&text).unwrap(), record, "{text}");
        }
    }
}
