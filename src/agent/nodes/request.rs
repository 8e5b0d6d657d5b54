//! The request of a main-model call: the static system prompt and tools,
//! the compression summary (if any) and the conversation after it
//! (append-only, but for the text of artifacts the person turned off or
//! deleted, which gives way to a placeholder naming them), and the
//! injected context (artifact index, system status, answer rules) at the end
//! of the last message: the person's, or the last tool result (never a `user`
//! message after tool results: Mistral's API and the Mistral and Gemma
//! templates refuse it). That context stays where it was sent (the state's
//! `tails`), so each request of a turn extends the one before it.

use std::borrow::Cow;

use serde_json::Value;

use super::super::compress::Compaction;
use super::super::env::AgentEnv;
use super::super::events::{Ctx, Emit};
use super::super::prompts;
use super::super::state::{AgentState, Tail};
use super::super::strategy::Strategy;
use super::super::{continuity, facts};
use crate::context::{render_index, shown_whole, snippet, ArtifactIndexOptions, EntryBody, IndexEntry};
use crate::llm::{add_user_text, alternate, ChatRequest, Message, ToolSpec};
use crate::tools::{CallRecord, Subject, ToolRegistry};

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

/// The ids of the artifacts kept from the results of `records` at or
/// after message `from` (and before `to`).
fn kept_in(records: &[CallRecord], from: usize, to: usize) -> Vec<&str> {
    records.iter().filter(|r| r.at >= from && r.at < to).filter_map(|r| r.kept.as_deref()).collect()
}

/// What stands in a message for the text of an artifact the person turned
/// off or deleted (its id only: its title can carry its text too).
fn left_out(id: &str, deleted: bool) -> String {
    if deleted {
        format!("[Left out: artifact {id} was deleted by the person.]")
    } else {
        format!(
            "[Left out: artifact {id} is turned off by the person; its text is not in this conversation until it is \
             turned on again.]"
        )
    }
}

/// The messages that carry the text of artifacts the person turned off or
/// deleted, with that text replaced: a call's result by the placeholder, its
/// bulk arguments (an artifact's content written by the model) too.
async fn without_hidden(env: &AgentEnv, state: &AgentState, active: &[Listed]) -> Vec<(usize, Message)> {
    let is_active = |id: &str| active.iter().any(|a| a.id == id);
    let mut gone: Vec<(&str, bool)> = Vec::new();
    for id in state.records.iter().flat_map(CallRecord::artifacts) {
        if !is_active(id) && !gone.iter().any(|(g, _)| *g == id) {
            match env.db.artifact(id).await {
                Ok(a) if a.is_active => {}
                found => gone.push((id, found.is_err())),
            }
        }
    }
    let mut out = Vec::new();
    for record in &state.records {
        let Some((id, deleted)) = gone.iter().find(|(g, _)| record.artifacts().any(|a| a == *g)) else { continue };
        let placeholder = left_out(id, *deleted);
        let Some(Message::Tool { tool_call_id, .. }) = state.messages.get(record.at) else { continue };
        out.push((record.at, Message::tool(tool_call_id.clone(), placeholder.clone())));
        // The call's own arguments, in the assistant message before it.
        let Some(at) = state.messages[..record.at].iter().rposition(|m| !m.tool_calls().is_empty()) else { continue };
        let message = match out.iter().position(|(i, _)| *i == at) {
            Some(i) => out.remove(i).1,
            None => state.messages[at].clone(),
        };
        let Message::Assistant { content, mut tool_calls } = message else { continue };
        if let Some(call) = tool_calls.iter_mut().find(|c| c.id == *tool_call_id) {
            call.function.arguments =
                bulk_left_out(&env.tools, &call.function.name, &call.function.arguments, &placeholder);
        }
        out.push((at, Message::Assistant { content, tool_calls }));
    }
    out
}

/// A call's arguments with the fields its tool declares bulk replaced.
fn bulk_left_out(tools: &ToolRegistry, name: &str, arguments: &str, placeholder: &str) -> String {
    let Some(tool) = tools.get(name) else { return arguments.to_owned() };
    let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(arguments) else { return arguments.to_owned() };
    for (field, value) in map.iter_mut() {
        if tool.is_bulk(field) {
            *value = Value::String(placeholder.to_owned());
        }
    }
    Value::Object(map).to_string()
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
    /// Messages (by index) with the text of artifacts turned off or deleted left out.
    hidden: Vec<(usize, Message)>,
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
        let (artifacts, hidden) = match artifact_list(env, ctx.thread_id, options).await {
            Ok(artifacts) => {
                let hidden = without_hidden(env, state, &artifacts).await;
                (artifacts, hidden)
            }
            Err(e) => {
                ctx.warning(format!("the session artifacts could not be read: {e}"));
                (Vec::new(), Vec::new())
            }
        };
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
            let known = facts::derive(&state.messages, &state.records);
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
            // The relayed MCP servers' tools join while their servers answer.
            env.offer_mcp_tools(&ctx.cancel).await;
            env.tools.specs(strategy.toolsets())
        } else {
            Vec::new()
        };
        RequestParts {
            system: prompts::system(strategy),
            tools,
            artifacts,
            hidden,
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

    /// The artifacts a compaction cutting the messages `from..to` carries in
    /// its summary: those whose tool results it summarises and those the
    /// previous summary carried, while still active. Their ids and their
    /// listing.
    pub(super) fn carried(
        &self,
        state: &AgentState,
        (from, to): (usize, usize),
        previous: Option<&Compaction>,
    ) -> (Vec<String>, String) {
        let mut ids: Vec<&str> = kept_in(&state.records, from, to);
        ids.extend(previous.into_iter().flat_map(|c| c.artifacts.iter().map(String::as_str)));
        let entries = self.entries(|id| ids.contains(&id));
        let listing = render_index(&entries, self.agent_mode).unwrap_or_default();
        (entries.iter().map(|e| e.id.to_owned()).collect(), listing)
    }

    /// The compaction as this request shows it: as it was written, unless an
    /// artifact its listing carries was turned off or deleted since (its
    /// snippet then leaves the listing: the person's action breaks the
    /// cached prefix once).
    fn compaction_now<'c>(&self, compaction: &'c Compaction) -> Cow<'c, Compaction> {
        if compaction.artifacts.iter().all(|id| self.artifacts.iter().any(|a| a.id == *id)) {
            return Cow::Borrowed(compaction);
        }
        let entries = self.entries(|id| compaction.artifacts.iter().any(|c| c == id));
        let artifact_listing = render_index(&entries, self.agent_mode).unwrap_or_default();
        Cow::Owned(Compaction { artifact_listing, ..compaction.clone() })
    }

    /// The artifact index of the tail: the active artifacts the messages
    /// sent do not already show (a kept tool result names its artifact; the
    /// summary lists the ones it carries). Small, so the prefix before it
    /// stays most of the request.
    fn index(&self, state: &AgentState, cut: usize, compaction: Option<&Compaction>) -> Option<String> {
        let mut shown: Vec<&str> = kept_in(&state.records, cut, usize::MAX);
        shown.extend(compaction.into_iter().flat_map(|c| c.artifacts.iter().map(String::as_str)));
        render_index(&self.entries(|id| !shown.contains(&id)), self.agent_mode)
    }

    /// What the person added while the run worked, as given to this call.
    pub(super) fn into_interjected(self) -> Vec<Message> {
        self.interjected
    }

    /// The parts of a tail an earlier request added, as this request shows
    /// them: an artifact index that lists an artifact the person turned off
    /// or deleted since is left out (their action breaks the cached prefix
    /// once; the new index is sent at the end).
    fn shown<'t>(&self, tail: &'t Tail) -> Vec<&'t String> {
        tail.parts
            .iter()
            .filter(|part| {
                !part.starts_with(crate::context::ARTIFACT_INDEX_HEADING)
                    || part.split("[ID: ").skip(1).all(|rest| {
                        let id = rest.split(']').next().unwrap_or_default();
                        self.artifacts.iter().any(|a| a.id == id)
                    })
            })
            .collect()
    }

    /// The dynamic context this request adds, and the index (in the state's
    /// numbering, interjections after the messages) of the message it rides
    /// on: the last one. Only the parts that changed since the conversation
    /// showed them last (each part by its heading) are added: the tails
    /// already sent stay where they were, so each request extends the one
    /// before it and a part is repeated only when it changes.
    pub(super) fn new_tail(&self, state: &AgentState, compaction: Option<&Compaction>) -> Option<Tail> {
        let cut = compaction.map_or(0, |c| c.upto).min(state.messages.len());
        let sent: Vec<&String> = state.tails.iter().filter(|t| t.at >= cut).flat_map(|t| self.shown(t)).collect();
        let mut parts: Vec<String> = self.index(state, cut, compaction).into_iter().collect();
        parts.extend(self.tail.iter().cloned());
        parts.retain(|part| {
            let heading = part.lines().next().unwrap_or_default();
            sent.iter().rev().find(|t| t.starts_with(heading)).copied() != Some(part)
        });
        let at = (state.messages.len() + self.interjected.len()).checked_sub(1)?;
        (!parts.is_empty()).then_some(Tail { at, parts })
    }

    /// The request for `model` over the state's conversation, of which the
    /// messages before the compaction's cut are replaced by its summary.
    pub(super) fn request(&self, model: &str, state: &AgentState, compaction: Option<&Compaction>) -> ChatRequest {
        let messages = &state.messages;
        let cut = compaction.map_or(0, |c| c.upto).min(messages.len());
        let mut out = Vec::with_capacity(messages.len() - cut + 3);
        out.push(Message::system(self.system.clone()));
        // The summary stands where the messages it replaces stood: it
        // changes only at a compaction, so the requests between two
        // compactions keep one byte-identical prefix (in the tail it would
        // be re-sent after the cache's end on every call).
        if let Some(c) = compaction {
            out.push(Message::user(self.compaction_now(c).render(self.constraint_tokens)));
        }
        let new_tail = self.new_tail(state, compaction);
        let conversation = messages.iter().skip(cut).cloned().zip(cut..).map(|(message, at)| {
            let message = match self.hidden.iter().find(|(i, _)| *i == at) {
                Some((_, left_out)) => left_out.clone(),
                None => message,
            };
            (at, message)
        });
        let interjected = self.interjected.iter().cloned().zip(messages.len()..).map(|(m, at)| (at, m));
        for (at, message) in conversation.chain(interjected) {
            // The context earlier requests added here, as they sent it (the
            // newest at the end of the last message: after the person's
            // words, or in the tool loop at the end of the last tool
            // result, which every template accepts).
            let rides: Vec<&String> = state
                .tails
                .iter()
                .chain(&new_tail)
                .filter(|t| t.at == at && t.at >= cut)
                .flat_map(|t| self.shown(t))
                .collect();
            let mut one = vec![message];
            if !rides.is_empty() {
                add_user_text(&mut one, &rides.iter().map(|p| p.as_str()).collect::<Vec<_>>().join("\n\n"));
            }
            out.extend(one);
        }
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
