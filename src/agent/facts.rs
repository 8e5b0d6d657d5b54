//! Tracked facts (seed 002): what the session already knows, derived
//! deterministically from its tool calls and results — which chapter,
//! artifact, outline or project was read (and what it said), which searches
//! ran and which pages were opened (and the artifacts they became), what was
//! edited. A write invalidates the reads it touches.
//!
//! Everything is derived from the calls' typed records (checkpointed with
//! the messages), so the facts hold the same after a reload, a resume or a
//! compression.

use crate::llm::Message;
use crate::tools::{kept_note, CallRecord, Subject, Touch};

/// One thing the session knows.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub subject: Subject,
    pub tool: String,
    /// Index in the state's messages of the result.
    pub at: usize,
    /// The result the model was given (without the kept-artifact line).
    pub result: String,
    /// The artifact the result became, if kept.
    pub artifact: Option<String>,
    /// The artifact whose text the result carries besides (a read of it).
    pub shows: Option<String>,
}

impl Fact {
    /// The artifacts whose text the fact's result carries.
    pub fn artifacts(&self) -> impl Iterator<Item = &str> {
        self.artifact.iter().chain(self.shows.iter()).map(String::as_str)
    }
}

/// What the session knows and what it changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub known: Vec<Fact>,
    /// Writes that succeeded, in order (approved edits included).
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

/// The first words of an "already known" answer.
pub const KNOWN: &str = "Already known (not run again):";

/// The facts the calls of `records` (answered in `messages`) establish:
/// only calls that did what they were asked count.
pub fn derive(messages: &[Message], records: &[CallRecord]) -> Facts {
    let mut facts = Facts::default();
    for record in records.iter().filter(|r| r.outcome.done()) {
        let at = record.at;
        match &record.touched {
            Some(Touch::Reads(subject)) => {
                let text = messages.get(at).map_or("", Message::text);
                let result = match &record.kept {
                    Some(id) => text.strip_suffix(&kept_note(id)).unwrap_or(text),
                    None => text,
                };
                facts.known.retain(|f| f.subject != *subject);
                facts.known.push(Fact {
                    subject: subject.clone(),
                    tool: record.tool.clone(),
                    at,
                    result: result.to_owned(),
                    artifact: record.kept.clone(),
                    shows: record.artifact.clone(),
                });
            }
            Some(Touch::Writes(subject)) => {
                let read_before = facts.known.iter().any(|f| f.subject == *subject);
                facts.known.retain(|f| !subject.covers(&f.subject));
                facts.writes.push(Write { subject: subject.clone(), at, read_before });
            }
            None => {}
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
        Subject::Find(key) => {
            let mut parts = key.splitn(4, '/');
            let tool = parts.next().unwrap_or_default();
            format!("the {tool} search \"{}\"", parts.nth(2).unwrap_or_default())
        }
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
    use crate::error::ErrorCode;
    use crate::tools::Outcome;

    fn read(at: usize, subject: Subject, kept: Option<&str>) -> CallRecord {
        CallRecord {
            at,
            kept: kept.map(str::to_owned),
            touched: Some(Touch::Reads(subject)),
            ..CallRecord::new("get_manuscript", Outcome::Done)
        }
    }

    fn write(at: usize, subject: Subject, outcome: Outcome) -> CallRecord {
        CallRecord { at, touched: Some(Touch::Writes(subject)), ..CallRecord::new("update_manuscript", outcome) }
    }

    #[test]
    fn reads_become_facts_and_writes_invalidate_them() {
        let section = || Subject::Section("s1".into());
        let messages = vec![
            Message::user("Tighten chapter 1"),
            Message::assistant("(calls)"),
            Message::tool("a", format!("Error in the log, the captain wrote.{}", kept_note("art-1"))),
            Message::tool("b", "results"),
            Message::tool("c", "1. Start"),
            Message::tool("d", "Error: no such section"),
            Message::tool("e", "Rejected by the user."),
            Message::tool("f", "Updated."),
            Message::tool("g", "Updated."),
        ];
        let mut records = vec![
            read(2, section(), Some("art-1")),
            read(3, Subject::Search("victorian trains".into()), None),
            read(4, Subject::Outline("p1".into()), None),
            CallRecord {
                outcome: Outcome::Failed { code: ErrorCode::NotFound },
                ..read(5, Subject::Section("s2".into()), None)
            },
        ];
        let facts = derive(&messages, &records);
        assert_eq!(facts.known.len(), 3, "a failed read is no fact; a text that opens with \"Error\" is one");
        let fact = facts.about(&section()).unwrap();
        assert_eq!(fact.result, "Error in the log, the captain wrote.");
        assert_eq!(fact.artifact.as_deref(), Some("art-1"));
        records.push(write(6, section(), Outcome::Rejected { reason: None }));
        assert!(derive(&messages, &records).about(&section()).is_some(), "a rejected edit changes nothing");
        records.push(write(7, section(), Outcome::Done));
        records.push(write(8, Subject::AnyOutline, Outcome::Done));
        let after = derive(&messages, &records);
        assert!(after.about(&section()).is_none(), "the approved edit made the read stale");
        assert!(after.about(&Subject::Outline("p1".into())).is_none(), "a plot write touches the outlines");
        assert_eq!(after.writes.len(), 2);
        assert!(after.writes[0].read_before && !after.writes[1].read_before);
        assert_eq!(after.counts(), (0, 1, 2));
        // The tail names only what was summarised away (the rest is above).
        let tail = facts.render(4).unwrap();
        assert!(tail.contains("2 read(s)") && tail.contains("1 web search(es)"), "{tail}");
        assert!(tail.contains("chapter/section s1 (full text: artifact art-1)") && tail.contains("victorian trains"));
        assert!(!tail.contains("outline"), "the outline read is still above: {tail}");
        assert!(!facts.render(0).unwrap().contains("Read before the summary"));
    }
}
