//! The messages of a model call: the static system prompt, the
//! conversation, and the injected context (artifact index, system status,
//! answer rules) in the trailing user message.

use super::super::events::{Ctx, Emit};
use super::super::prompts;
use super::super::state::{AgentState, Strategy};
use super::super::AgentEnv;
use crate::context::{
    history_for_model, render_index, shown_whole, snippet, ArtifactIndexOptions, EntryBody, IndexEntry,
};
use crate::llm::{add_user_text, alternate, Message};

/// The artifact index for a model call, read from the index entries; full
/// texts are fetched only for the artifacts shown whole.
async fn artifact_context(
    env: &AgentEnv,
    session: &str,
    options: ArtifactIndexOptions,
) -> Result<Option<String>, crate::store::StoreError> {
    let summaries = env.db.artifact_summaries(session, true).await?;
    let mut wholes = Vec::new();
    for summary in summaries.iter().filter(|s| shown_whole(s.length, options)) {
        wholes.push(env.db.artifact(&summary.id).await?.content);
    }
    let mut wholes = wholes.iter();
    let entries: Vec<IndexEntry<'_>> = summaries
        .iter()
        .map(|s| IndexEntry {
            id: &s.id,
            title: &s.title,
            body: if shown_whole(s.length, options) {
                EntryBody::Whole(wholes.next().map_or("", String::as_str))
            } else {
                EntryBody::Snippet(snippet(&s.snippet, options.snippet_chars))
            },
            lifecycle: s.lifecycle,
        })
        .collect();
    Ok(render_index(&entries, options.agent_mode))
}

/// Builds the messages for a model call: system prompt, the injected
/// context (artifact index, system status, answer rules when tools ran),
/// then the conversation, then what the person added while the run worked.
pub(super) async fn prompt(
    env: &AgentEnv,
    state: &AgentState,
    ctx: &Ctx<'_>,
    strategy: Strategy,
    whole_artifacts: bool,
    interjected: &[Message],
) -> Vec<Message> {
    let settings = env.settings.borrow().clone();
    let mut parts = Vec::new();
    let options = ArtifactIndexOptions {
        full_threshold: settings.full_threshold,
        agent_mode: !whole_artifacts,
        ..Default::default()
    };
    match artifact_context(env, ctx.thread_id, options).await {
        Ok(index) => parts.extend(index),
        Err(e) => ctx.warning(format!("the session artifacts could not be read: {e}")),
    }
    parts.push(format!(
        "## System status\nAgent mode: {}. Long-term memory: {}.",
        if state.agent_mode {
            "on (tools available)"
        } else {
            "off (no tools: you cannot search or edit in this mode)"
        },
        if settings.long_term_memory { "on" } else { "off" }
    ));
    if state.used_tools() {
        parts.push(prompts::ANSWER_RULES.to_owned());
    }
    // The system prompt is static; what changes from call to call (the
    // artifact index, the status, the answer rules) rides in the trailing
    // user message, after the person's words (or, in the tool loop, after
    // the tool results), so the conversation before it stays byte-stable.
    let mut messages = vec![Message::system(prompts::system(strategy))];
    messages.extend(history_for_model(&state.messages, state.turn_start));
    messages.extend(interjected.iter().cloned());
    add_user_text(&mut messages, &parts.join("\n\n"));
    // Strict chat templates: roles alternate (a past turn cut off before any
    // answer leaves two user messages in a row: they are joined).
    alternate(messages)
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
