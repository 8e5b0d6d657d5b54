//! Completion rules per strategy (seed 002): a run may not finish before it
//! has done what its strategy needs. An early final answer gets a nudge (a
//! message saying what is missing) and the loop goes on; after
//! [`MAX_NUDGES`] the run ends with code `incomplete`.
//!
//! - Writing: the answer must rest on the person's project: something of it
//!   (a chapter, the outline, the project) was read in this session and is
//!   still valid (or a delegate of this turn read it), and every chapter the
//!   turn changed was read before.
//! - Research: when the person asked for a search, at least one source (a
//!   search or an opened page) is known.

pub use super::events::Rule;
use super::facts::Facts;
use super::state::AgentState;
use super::strategy::Strategy;
use crate::llm::Message;
use crate::tools::{Outcome, Subject};

/// The first words of a nudge (user message or `respond` result).
pub const NUDGE: &str = "Not finished yet:";

/// Nudges in one run before it ends with `incomplete`.
pub const MAX_NUDGES: usize = 2;

/// Words that ask for a web search, in English and Japanese.
const SEARCH_WORDS: &[&str] = &[
    "search",
    "look up",
    "look it up",
    "google",
    "find out",
    "latest",
    "news",
    "sources",
    "検索",
    "調べ",
    "最新",
    "ニュース",
];

impl Rule {
    /// The nudge the model gets.
    pub fn nudge(self) -> String {
        match self {
            Rule::ReadFirst => format!(
                "{NUDGE} you have not read the person's project in this session. Read what the request is about \
                 (get_outline, get_manuscript, get_project) before answering; never invent its content."
            ),
            Rule::NeedsSources => format!(
                "{NUDGE} the person asked for a search and you have no source yet. Search the web (web_search), open \
                 a page or use a tool that looks it up before answering, and cite what you found."
            ),
        }
    }
}

/// The person's words of this turn (its user messages but the nudges).
fn asked(state: &AgentState) -> String {
    let start = state.turn_start.min(state.messages.len());
    state.messages[start..]
        .iter()
        .enumerate()
        .filter_map(|(i, m)| match m {
            Message::User { content } if !state.nudges.contains(&(start + i)) => {
                Some(crate::platform::lowercase(content))
            }
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rule a final answer now would break, if any.
pub fn unmet(strategy: Strategy, state: &AgentState, facts: &Facts) -> Option<Rule> {
    match strategy {
        Strategy::Writing => {
            // A search of the project's chapters read them too (its hits are their text).
            let read_project = facts.known.iter().any(|f| match &f.subject {
                Subject::Section(_) | Subject::Outline(_) | Subject::Project(_) => true,
                Subject::Find(key) => key.starts_with("search_project/"),
                _ => false,
            });
            // A chapter changed this turn must have been read before (the
            // change itself made that read stale).
            let changed_unread = facts
                .writes
                .iter()
                .any(|w| w.at >= state.turn_start && matches!(w.subject, Subject::Section(_)) && !w.read_before);
            let wrote_this_turn = facts.writes.iter().any(|w| w.at >= state.turn_start);
            // A delegate that finished read its files on the agent's behalf.
            let delegated = state.turn_records().any(|r| r.outcome == Outcome::DelegateFinished);
            let read_project = read_project || delegated;
            (changed_unread || (!read_project && !wrote_this_turn)).then_some(Rule::ReadFirst)
        }
        Strategy::GeneralAgent => {
            let words = asked(state);
            let wants_search = SEARCH_WORDS.iter().any(|w| words.contains(w));
            // A local search the person asked for ("search my chapters") is a source too.
            let sources = facts
                .known
                .iter()
                .any(|f| matches!(f.subject, Subject::Search(_) | Subject::Page(_) | Subject::Find(_)));
            // "Search my notes": a tool of an MCP server that answered this
            // turn is a source as a page is (the person named where to look).
            let consulted =
                state.turn_records().any(|r| r.tool.starts_with(crate::mcp::PREFIX) && r.outcome == Outcome::Done);
            (wants_search && !sources && !consulted).then_some(Rule::NeedsSources)
        }
        Strategy::ChatOnly => None,
    }
}
