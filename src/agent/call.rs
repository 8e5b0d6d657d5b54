//! A model's tool call, resolved once: its tool and parsed arguments (or
//! why they do not parse) and its receipt key, passed around from then on;
//! and the answer a call gets, as the words the model reads and the typed
//! record the agent keeps beside them.

use super::env::AgentEnv;
use super::state::AgentState;
use crate::llm::{Message, ToolCall};
use crate::tools::{Bound, CallRecord, Decider, Outcome, ToolError};

/// A pending call, resolved.
pub struct Call {
    pub call: ToolCall,
    /// The receipt key (unique in the session).
    pub key: String,
    /// The call bound to its tool, or the error the model gets instead.
    pub bound: Result<Bound, ToolError>,
    /// Who let it run, or refused it (its record says so).
    pub by: Option<Decider>,
}

impl Call {
    pub fn name(&self) -> &str {
        &self.call.function.name
    }

    /// The bound call, if its arguments parsed.
    pub fn ok(&self) -> Option<&Bound> {
        self.bound.as_ref().ok()
    }

    /// A record of this call ending as `outcome`, with what it touched.
    pub fn record(&self, outcome: Outcome) -> CallRecord {
        CallRecord {
            touched: self.ok().and_then(|b| b.touches()),
            by: self.by,
            ..CallRecord::new(self.name(), outcome)
        }
    }

    /// The answer "Error: …" for a call that failed with `error`.
    pub fn failed(&self, error: &ToolError) -> Answer {
        Answer::new(&self.call.id, format!("Error: {error}"), self.record(Outcome::Failed { code: error.code() }))
    }

    /// The answer for a call refused (`by` the person or the host's
    /// policy), with the reason given, if any.
    pub fn refused(&self, by: Decider, reason: Option<&str>) -> Answer {
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        let who = if by == Decider::Person { "the user" } else { "the app's approval policy" };
        let text = match reason {
            Some(reason) => format!("Rejected by {who}: {reason}"),
            None => format!("Rejected by {who}."),
        };
        let record =
            CallRecord { by: Some(by), ..self.record(Outcome::Rejected { reason: reason.map(str::to_owned) }) };
        Answer::new(&self.call.id, text, record)
    }
}

impl AgentEnv {
    /// Resolves a pending call of `state`: the one place a call's
    /// arguments are read.
    pub fn resolve(&self, state: &AgentState, call: ToolCall) -> Call {
        let key = state.call_key(&call);
        let bound = self.tools.bind(&call);
        Call { call, key, bound, by: None }
    }
}

/// What a call is answered with: the tool message's text, its record, and
/// the links a result offers (search results).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub call_id: String,
    pub text: String,
    pub record: CallRecord,
    pub links: Vec<String>,
}

impl Answer {
    pub fn new(call_id: &str, text: impl Into<String>, record: CallRecord) -> Answer {
        Answer { call_id: call_id.to_owned(), text: text.into(), record, links: Vec::new() }
    }
}

/// Answers appended to the conversation: the tool messages and their
/// records, the records pointing at where their messages land.
#[derive(Default)]
pub struct Answers {
    /// Where the first message lands in the state's messages.
    base: usize,
    pub messages: Vec<Message>,
    pub records: Vec<CallRecord>,
}

impl Answers {
    /// Answers whose first message lands at index `base`.
    pub fn at(base: usize) -> Answers {
        Answers { base, ..Answers::default() }
    }

    /// Appends a message that is not a tool result (a nudge, the model's own).
    pub fn push_message(&mut self, message: Message) -> usize {
        self.messages.push(message);
        self.base + self.messages.len() - 1
    }

    /// Appends a call's answer; returns where its message lands.
    pub fn push(&mut self, answer: Answer) -> usize {
        let at = self.push_message(Message::tool(answer.call_id, answer.text));
        self.records.push(CallRecord { at, ..answer.record });
        at
    }
}
