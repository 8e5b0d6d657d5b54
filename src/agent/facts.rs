//! Tracked facts (seed 002): what the session already knows, derived
//! deterministically from its tool calls and results — which chapter,
//! artifact, outline or project was read (and what it said), which searches
//! ran and which pages were opened (and the artifacts they became), what was
//! edited. A write invalidates the reads it touches.
//!
//! Everything is derived from the messages (checkpointed already), so the
//! facts hold the same after a reload, a resume or a compression.

use serde::Serialize;

use crate::llm::Message;
use crate::tools::{kept_artifact_id, kept_note, Subject, ToolRegistry, Touch};

/// One thing the session knows.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fact {
    pub subject: Subject,
    pub tool: String,
    /// Index in the state's messages of the result.
    #[serde(skip)]
    pub at: usize,
    /// The result the model was given (without the kept-artifact line).
    #[serde(skip)]
    pub result: String,
    /// The artifact the result became, if kept.
    pub artifact: Option<String>,
}

/// What the session knows and what it changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Facts {
    pub known: Vec<Fact>,
    /// Writes that succeeded, in order (approved edits included).
    #[serde(skip)]
    pub writes: Vec<Write>,
}

/// A write that succeeded.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    pub subject: Subject,
    /// Index in the state's messages of its result.
    pub at: usize,
    /// Whether what it changed had been read (and was still valid) before.
    pub read_before: bool,
}

/// The first words of an "already known" answer (not itself a fact).
pub const KNOWN: &str = "Already known (not run again):";

/// Whether a tool result reports that nothing was done.
fn failed(result: &str) -> bool {
    let r = result.trim_start();
    r.starts_with("Error")
        || r.starts_with("Rejected")
        || r.starts_with(KNOWN)
        || r.starts_with("Not run")
        || r.starts_with("Merged into")
        || r.starts_with(super::completion::NUDGE)
}

/// The result without its kept-artifact line.
pub fn plain_result(result: &str) -> &str {
    match kept_artifact_id(result) {
        Some(id) => result.strip_suffix(&kept_note(id)).unwrap_or(result),
        None => result,
    }
}

/// The facts `messages` establish.
pub fn derive(messages: &[Message], tools: &ToolRegistry) -> Facts {
    let mut facts = Facts::default();
    let mut calls = std::collections::HashMap::new();
    for (at, message) in messages.iter().enumerate() {
        match message {
            Message::Assistant { tool_calls, .. } => {
                for call in tool_calls {
                    calls.insert(call.id.clone(), call);
                }
            }
            Message::Tool { tool_call_id, content } => {
                let Some(call) = calls.get(tool_call_id) else { continue };
                if failed(content) {
                    continue;
                }
                let Some(tool) = tools.get(&call.function.name) else { continue };
                let args = serde_json::from_str(&call.function.arguments).unwrap_or_default();
                match tool.touches(&args) {
                    Some(Touch::Reads(subject)) => {
                        facts.known.retain(|f| f.subject != subject);
                        facts.known.push(Fact {
                            subject,
                            tool: call.function.name.clone(),
                            at,
                            result: plain_result(content).to_owned(),
                            artifact: kept_artifact_id(content).map(str::to_owned),
                        });
                    }
                    Some(Touch::Writes(subject)) => {
                        let read_before = facts.known.iter().any(|f| f.subject == subject);
                        facts.known.retain(|f| !subject.covers(&f.subject));
                        facts.writes.push(Write { subject, at, read_before });
                    }
                    None => {}
                }
            }
            _ => {}
        }
    }
    facts
}

impl Facts {
    /// The fact about `subject`, if known.
    pub fn about(&self, subject: &Subject) -> Option<&Fact> {
        self.known.iter().find(|f| f.subject == *subject)
    }

    /// The facts as the model reads them in the dynamic tail (`None` when
    /// nothing is known yet): the counts, and the facts whose results were
    /// summarised away (the others are in the messages sent). Short, so the
    /// byte-stable prefix before it stays most of the request.
    pub fn render(&self, visible_from: usize) -> Option<String> {
        if self.known.is_empty() && self.writes.is_empty() {
            return None;
        }
        let (reads, web, changes) = self.counts();
        let mut out = format!(
            "## What this session already knows\n{reads} read(s) of project data or artifacts, {web} web search(es) or \
             page(s), {changes} change(s) made; a repeated read is answered from what is known, not run again.\n"
        );
        // The newest ones: older facts still answer repeated calls.
        const SHOWN: usize = 12;
        let summarised: Vec<&Fact> = self.known.iter().filter(|f| f.at < visible_from).collect();
        if !summarised.is_empty() {
            out.push_str("Read before the summary (results no longer above):\n");
            for fact in summarised.iter().rev().take(SHOWN).rev() {
                let where_ = fact.artifact.as_ref().map_or(String::new(), |id| format!(" (full text: artifact {id})"));
                out.push_str(&format!("- {}{where_}\n", describe(&fact.subject)));
            }
            if summarised.len() > SHOWN {
                out.push_str(&format!("- and {} earlier ones\n", summarised.len() - SHOWN));
            }
        }
        Some(out.trim_end().to_owned())
    }

    /// Counts for the status line: reads, searches and pages, writes.
    pub fn counts(&self) -> (usize, usize, usize) {
        let web = self.known.iter().filter(|f| matches!(f.subject, Subject::Search(_) | Subject::Page(_))).count();
        (self.known.len() - web, web, self.writes.len())
    }
}

/// A subject in a few words.
pub fn describe(subject: &Subject) -> String {
    match subject {
        Subject::Section(id) => format!("chapter/section {id}"),
        Subject::Artifact(id) => format!("artifact {id}"),
        Subject::Project(id) => format!("project {id}"),
        Subject::Outline(id) => format!("the outline of project {id}"),
        Subject::AnyOutline => "an outline".to_owned(),
        Subject::Search(q) => format!("the web search \"{q}\""),
        Subject::Page(url) => format!("the page {url}"),
    }
}

/// Whether a subject is local data (its current value can be checked by
/// reading it again; web results cannot).
pub fn local(subject: &Subject) -> bool {
    !matches!(subject, Subject::Search(_) | Subject::Page(_))
}

/// The answer for a repeated call whose fact holds.
pub fn known_answer(fact: &Fact, visible: bool) -> String {
    let what = describe(&fact.subject);
    match (visible, &fact.artifact) {
        (true, Some(id)) => format!(
            "{KNOWN} you already have {what}: its result is above in this conversation (artifact {id}), unchanged since. \
             Use it."
        ),
        (true, None) => format!("{KNOWN} you already have {what}: its result is above, unchanged since. Use it."),
        (false, Some(id)) => format!(
            "{KNOWN} {what} was already done; its result was summarised and is kept in full as artifact {id}: call \
             get_artifact with that id if you need the text."
        ),
        (false, None) => format!("{KNOWN} {what} was already done earlier in this session."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;
    use serde_json::json;

    fn call(id: &str, name: &str, args: serde_json::Value) -> Message {
        Message::Assistant { content: None, tool_calls: vec![ToolCall::new(id, name, &args)] }
    }

    #[test]
    fn reads_become_facts_and_writes_invalidate_them() {
        let tools = ToolRegistry::standard();
        let messages = vec![
            Message::user("Tighten chapter 1"),
            call("a", "get_manuscript", json!({"section_id": "s1"})),
            Message::tool("a", format!("Once upon a time.{}", kept_note("art-1"))),
            call("b", "web_search", json!({"query": "  Victorian   Trains "})),
            Message::tool("b", "results"),
            call("c", "get_outline", json!({"project_id": "p1"})),
            Message::tool("c", "1. Start"),
            call("d", "get_manuscript", json!({"section_id": "s2"})),
            Message::tool("d", "Error: no such section"),
        ];
        let facts = derive(&messages, &tools);
        assert_eq!(facts.known.len(), 3, "a failed read is no fact");
        let read = facts.about(&Subject::Section("s1".into())).unwrap();
        assert_eq!(read.result, "Once upon a time.");
        assert_eq!(read.artifact.as_deref(), Some("art-1"));
        assert!(facts.about(&Subject::Search("victorian trains".into())).is_some(), "queries compare normalised");
        let mut more = messages.clone();
        more.push(call("e", "edit_manuscript", json!({"id": "s1", "edits": []})));
        more.push(Message::tool("e", "Rejected by the user."));
        assert!(
            derive(&more, &tools).about(&Subject::Section("s1".into())).is_some(),
            "a rejected edit changes nothing"
        );
        more.push(call("f", "update_manuscript", json!({"id": "s1", "content": "x"})));
        more.push(Message::tool("f", "Updated."));
        more.push(call("g", "update_plot_item", json!({"item_id": "i1", "title": "x"})));
        more.push(Message::tool("g", "Updated."));
        let after = derive(&more, &tools);
        assert!(after.about(&Subject::Section("s1".into())).is_none(), "the approved edit made the read stale");
        assert!(after.about(&Subject::Outline("p1".into())).is_none(), "a plot write touches the outlines");
        assert_eq!(after.writes.len(), 2);
        assert!(after.writes[0].read_before && !after.writes[1].read_before);
        assert_eq!(after.counts(), (0, 1, 2));
        // The tail names only what was summarised away (the rest is above).
        let tail = facts.render(5).unwrap();
        assert!(tail.contains("2 read(s)") && tail.contains("1 web search(es)"), "{tail}");
        assert!(tail.contains("chapter/section s1 (full text: artifact art-1)") && tail.contains("victorian trains"));
        assert!(!tail.contains("outline"), "the outline read is still above: {tail}");
        assert!(!facts.render(0).unwrap().contains("Read before the summary"));
    }
}
