//! The request of a main-model call: the static system prompt and tools,
//! the compression summary (if any) and the conversation after it
//! (append-only), and the injected context (artifact index, system status,
//! answer rules) in the trailing user message.

use super::super::compress::Compaction;
use super::super::events::{Ctx, Emit};
use super::super::prompts;
use super::super::state::{AgentState, Strategy};
use super::super::AgentEnv;
use super::super::{continuity, facts};
use crate::context::{render_index, shown_whole, snippet, ArtifactIndexOptions, EntryBody, IndexEntry};
use crate::llm::{add_user_text, alternate, ChatRequest, Message, ToolSpec};
use crate::tools::Subject;

/// An active artifact as the index may show it.
struct Listed {
    id: String,
    title: String,
    lifecycle: crate::store::Lifecycle,
    /// Its whole text, when short enough to be shown whole.
    whole: Option<String>,
    snippet: String,
}

/// The session's active artifacts for the index, read from the index
/// entries; full texts are fetched only for the artifacts shown whole.
async fn artifact_list(
    env: &AgentEnv,
    session: &str,
    options: ArtifactIndexOptions,
) -> Result<Vec<Listed>, crate::store::StoreError> {
    let summaries = env.db.artifact_summaries(session, true).await?;
    let mut out = Vec::with_capacity(summaries.len());
    for s in summaries {
        let whole = if shown_whole(s.length, options) { Some(env.db.artifact(&s.id).await?.content) } else { None };
        out.push(Listed {
            snippet: snippet(&s.snippet, options.snippet_chars).to_owned(),
            id: s.id,
            title: s.title,
            lifecycle: s.lifecycle,
            whole,
        });
    }
    Ok(out)
}

/// The projects the session has read (their outline, details or a
/// chapter), newest first, at most two.
async fn projects_in_focus(env: &AgentEnv, known: &facts::Facts) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for fact in known.known.iter().rev() {
        let project = match &fact.subject {
            Subject::Outline(p) | Subject::Project(p) => Some(p.clone()),
            Subject::Section(id) => env.db.section(id).await.ok().map(|s| s.project_id),
            _ => None,
        };
        if let Some(p) = project.filter(|p| !out.contains(p)) {
            out.push(p);
            if out.len() == 2 {
                break;
            }
        }
    }
    out
}

/// The ids of the artifacts whose tool results `messages` hold.
fn kept_in(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => crate::tools::kept_artifact_id(content),
            _ => None,
        })
        .collect()
}

/// A main-model request in its three parts: the static prefix (the
/// strategy's system prompt and tools, byte-identical across a session), the
/// conversation (the last compaction's summary, then the messages after its
/// cut, only ever appended to), and the dynamic tail (artifact index, system
/// status, answer rules) riding in the trailing user message.
pub(super) struct RequestParts {
    system: String,
    tools: Vec<ToolSpec>,
    artifacts: Vec<Listed>,
    agent_mode: bool,
    tail: Vec<String>,
    interjected: Vec<Message>,
    /// Tokens the person's carried-over instructions may take (an eighth
    /// of the window).
    constraint_tokens: usize,
}

impl RequestParts {
    /// Reads what the tail needs (the artifact index) for a call of
    /// `strategy`, with tools or not.
    pub(super) async fn gather(
        env: &AgentEnv,
        state: &AgentState,
        ctx: &Ctx<'_>,
        strategy: Strategy,
        with_tools: bool,
        interjected: Vec<Message>,
    ) -> RequestParts {
        let settings = env.settings.borrow().clone();
        let mut tail = Vec::new();
        let options = ArtifactIndexOptions {
            full_threshold: settings.full_threshold,
            agent_mode: with_tools,
            ..Default::default()
        };
        let artifacts = artifact_list(env, ctx.thread_id, options).await.unwrap_or_else(|e| {
            ctx.warning(format!("the session artifacts could not be read: {e}"));
            Vec::new()
        });
        tail.push(format!(
            "## System status\nAgent mode: {}. Long-term memory: {}.",
            if state.agent_mode {
                "on (tools available)"
            } else {
                "off (no tools: you cannot search or edit in this mode)"
            },
            if settings.long_term_memory { "on" } else { "off" }
        ));
        if with_tools {
            let upto = state.compaction.as_ref().map_or(0, |c| c.upto);
            let known = facts::derive(&state.messages, &env.tools);
            tail.extend(known.render(upto));
            if strategy == Strategy::Writing {
                // The continuity notes of the projects this session works
                // on, as the writer's file pointers.
                for project in projects_in_focus(env, &known).await {
                    let budget = settings.context_window / 10;
                    tail.extend(continuity::read_for_writer(env, &project, budget).await);
                }
            }
        }
        if state.used_tools() {
            tail.push(prompts::ANSWER_RULES.to_owned());
        }
        let tools = if with_tools {
            let names = match strategy {
                Strategy::Writing => crate::tools::EDITORIAL_TOOLS,
                _ => crate::tools::RESEARCH_TOOLS,
            };
            env.tools.specs(names)
        } else {
            Vec::new()
        };
        RequestParts {
            system: prompts::system(strategy),
            tools,
            artifacts,
            agent_mode: with_tools,
            tail,
            interjected,
            constraint_tokens: settings.context_window / 8,
        }
    }

    /// The index entries of the active artifacts `pick` selects.
    fn entries(&self, pick: impl Fn(&str) -> bool) -> Vec<IndexEntry<'_>> {
        self.artifacts
            .iter()
            .filter(|a| pick(&a.id))
            .map(|a| IndexEntry {
                id: &a.id,
                title: &a.title,
                body: match &a.whole {
                    Some(whole) => EntryBody::Whole(whole),
                    None => EntryBody::Snippet(&a.snippet),
                },
                lifecycle: a.lifecycle,
            })
            .collect()
    }

    /// The artifacts a compaction cutting `part` carries in its summary:
    /// those whose tool results it summarises and those the previous
    /// summary carried, while still active. Their ids and their listing.
    pub(super) fn carried(&self, part: &[Message], previous: Option<&Compaction>) -> (Vec<String>, String) {
        let mut ids: Vec<&str> = kept_in(part);
        ids.extend(previous.into_iter().flat_map(|c| c.artifacts.iter().map(String::as_str)));
        let entries = self.entries(|id| ids.contains(&id));
        let listing = render_index(&entries, self.agent_mode).unwrap_or_default();
        (entries.iter().map(|e| e.id.to_owned()).collect(), listing)
    }

    /// The artifact index of the tail: the active artifacts the messages
    /// sent do not already show (a tool result names its artifact; the
    /// summary lists the ones it carries), and the shown ones since
    /// deleted or turned off. Small, so the prefix before it stays most of
    /// the request.
    fn index(&self, kept: &[Message], compaction: Option<&Compaction>) -> Option<String> {
        let mut shown: Vec<&str> = kept_in(kept);
        shown.extend(compaction.into_iter().flat_map(|c| c.artifacts.iter().map(String::as_str)));
        let entries = self.entries(|id| !shown.contains(&id));
        let gone: Vec<&str> = shown.iter().copied().filter(|id| !self.artifacts.iter().any(|a| a.id == *id)).collect();
        let mut out = render_index(&entries, self.agent_mode).unwrap_or_default();
        if !gone.is_empty() {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&format!(
                "No longer available (deleted or turned off by the person since shown above): {}",
                gone.join(", ")
            ));
        }
        (!out.is_empty()).then_some(out)
    }

    /// What the person added while the run worked, as given to this call.
    pub(super) fn into_interjected(self) -> Vec<Message> {
        self.interjected
    }

    /// The request for `model` over the conversation `messages`, of which
    /// those before the compaction's cut are replaced by its summary.
    pub(super) fn request(&self, model: &str, messages: &[Message], compaction: Option<&Compaction>) -> ChatRequest {
        let kept = &messages[compaction.map_or(0, |c| c.upto).min(messages.len())..];
        let mut out = Vec::with_capacity(kept.len() + 3);
        out.push(Message::system(self.system.clone()));
        // The summary stands where the messages it replaces stood: it
        // changes only at a compaction, so the requests between two
        // compactions keep one byte-identical prefix (in the tail it would
        // be re-sent after the cache's end on every call).
        if let Some(c) = compaction {
            out.push(Message::user(c.render(self.constraint_tokens)));
        }
        out.extend_from_slice(kept);
        out.extend(self.interjected.iter().cloned());
        let mut tail: Vec<String> = self.index(kept, compaction).into_iter().collect();
        tail.extend(self.tail.iter().cloned());
        // After the person's words (or, in the tool loop, after the tool
        // results): everything before it stays byte-stable.
        add_user_text(&mut out, &tail.join("\n\n"));
        let mut request = ChatRequest::new(model, alternate(out));
        request.tools = self.tools.clone();
        request
    }
}

/// What the person added while this run worked and the model has not seen
/// yet (durable transcript entries, so an interjection survives a reload):
/// their transcript ids and the user messages that carry them.
pub(super) async fn interjections(env: &AgentEnv, state: &AgentState, ctx: &Ctx<'_>) -> (Vec<String>, Vec<Message>) {
    let pending = match env.db.interjections(ctx.thread_id).await {
        Ok(list) => list,
        Err(e) => {
            ctx.warning(format!("what you added while the agent worked could not be read: {e}"));
            return (Vec::new(), Vec::new());
        }
    };
    pending.into_iter().filter(|e| !state.interjections.contains(&e.id)).map(|e| (e.id, Message::user(e.text))).unzip()
}
