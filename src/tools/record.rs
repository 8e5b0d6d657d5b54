//! The typed record of one tool call, kept beside the tool message that
//! answers it: how the call ended, the artifact its result was kept as, the
//! artifact whose text it carries, and what it touched. The model gets
//! words; the agent reads these (tracked facts, completion rules, the loop
//! guard, the request's placeholders for artifacts turned off), never the
//! words.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

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

/// Who let a call run (or refused it) when it was not the tool's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decider {
    /// The person, in a review.
    Person,
    /// The person's grant for the tool in this session (no review).
    Grant,
    /// The host's approval policy (`AgentConfig.approve`).
    Policy,
}

impl Decider {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decider::Person => "person",
            Decider::Grant => "grant",
            Decider::Policy => "policy",
        }
    }
}

/// The record of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Who decided it ran, or was refused (`None`: it needed no one).
    pub by: Option<Decider>,
}

impl CallRecord {
    /// A record of a call of `tool` that ended as `outcome`.
    pub fn new(tool: &str, outcome: Outcome) -> CallRecord {
        CallRecord { at: 0, tool: tool.to_owned(), outcome, kept: None, artifact: None, touched: None, by: None }
    }

    /// The artifacts whose text the call carries (kept as, or otherwise).
    pub fn artifacts(&self) -> impl Iterator<Item = &str> {
        self.kept.iter().chain(self.artifact.iter()).map(String::as_str)
    }
}

// Stored flat, as a JSON object of scalars written and read by hand
// through `Value` (which the package decodes anyway): derived code for the
// enums inside would cost several KB of `.wasm` (a derived tagged enum
// buffers its fields before reading them).
impl Serialize for CallRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CallRecord {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CallRecord, D::Error> {
        Ok(CallRecord::from_value(&Value::deserialize(deserializer)?))
    }
}

impl CallRecord {
    /// The record as stored.
    pub fn to_value(&self) -> Value {
        let (outcome, code, detail) = match &self.outcome {
            Outcome::Done => ("done", None, None),
            Outcome::Failed { code } => ("failed", Some(code.as_str()), None),
            Outcome::Rejected { reason } => ("rejected", None, reason.as_deref()),
            Outcome::Known => ("known", None, None),
            Outcome::NotRun(NotRun::LoopGuard) => ("loop_guard", None, None),
            Outcome::NotRun(NotRun::TurnEnded) => ("turn_ended", None, None),
            Outcome::Merged { into } => ("merged", None, Some(into.as_str())),
            Outcome::Nudged => ("nudged", None, None),
            Outcome::DelegateFinished => ("delegate_finished", None, None),
            Outcome::Unknown => ("unknown", None, None),
        };
        let mut map = Map::new();
        map.insert("at".into(), self.at.into());
        map.insert("tool".into(), self.tool.as_str().into());
        map.insert("outcome".into(), outcome.into());
        let text = [
            ("code", code),
            ("detail", detail),
            ("kept", self.kept.as_deref()),
            ("artifact", self.artifact.as_deref()),
            ("by", self.by.map(Decider::as_str)),
        ];
        for (key, value) in text {
            if let Some(value) = value {
                map.insert(key.into(), value.into());
            }
        }
        if let Some(touch) = &self.touched {
            let (key, subject) = match touch {
                Touch::Reads(s) => ("reads", s),
                Touch::Writes(s) => ("writes", s),
            };
            map.insert(key.into(), subject.to_text().into());
        }
        Value::Object(map)
    }

    /// The record [`CallRecord::to_value`] stored (what does not read is
    /// left empty: a record is never a reason to fail a load).
    pub fn from_value(value: &Value) -> CallRecord {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let outcome = match text("outcome").as_deref().unwrap_or_default() {
            "failed" => Outcome::Failed {
                code: text("code").and_then(|c| ErrorCode::from_name(&c)).unwrap_or(ErrorCode::ToolFailed),
            },
            "rejected" => Outcome::Rejected { reason: text("detail") },
            "known" => Outcome::Known,
            "loop_guard" => Outcome::NotRun(NotRun::LoopGuard),
            "turn_ended" => Outcome::NotRun(NotRun::TurnEnded),
            "merged" => Outcome::Merged { into: text("detail").unwrap_or_default() },
            "nudged" => Outcome::Nudged,
            "delegate_finished" => Outcome::DelegateFinished,
            "unknown" => Outcome::Unknown,
            _ => Outcome::Done,
        };
        let subject = |key: &str| text(key).and_then(|t| Subject::from_text(&t));
        let touched = match (subject("reads"), subject("writes")) {
            (Some(s), _) => Some(Touch::Reads(s)),
            (None, Some(s)) => Some(Touch::Writes(s)),
            _ => None,
        };
        let by = [Decider::Person, Decider::Grant, Decider::Policy]
            .into_iter()
            .find(|d| text("by").as_deref() == Some(d.as_str()));
        CallRecord {
            at: value.get("at").and_then(Value::as_u64).unwrap_or_default() as usize,
            tool: text("tool").unwrap_or_default(),
            outcome,
            kept: text("kept"),
            artifact: text("artifact"),
            touched,
            by,
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
                by: [None, Some(Decider::Person), Some(Decider::Grant), Some(Decider::Policy)][i % 4],
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
