//! Running a compression before a main-model call: choosing the cut, asking
//! the sub-model for the summary, and carrying the person's instructions
//! over word for word. The rules themselves live in `agent::compress`.

use super::super::compress::{self, Compaction, Reason};
use super::super::env::AgentEnv;
use super::super::events::Ctx;
use super::super::state::AgentState;
use super::request::RequestParts;
use crate::llm::{ask_structured, estimate_request, ChatRequest, LlmError, Message};

/// Why a compression did not happen. Any but `Aborted` leaves the full
/// history in place and the next model call decides again.
#[derive(Debug, thiserror::Error)]
pub(super) enum CompactError {
    #[error("the run was stopped")]
    Aborted,
    #[error("the sub model failed: {0}")]
    Model(LlmError),
    #[error("the summary does not have the expected fields: {0}")]
    Fields(String),
    #[error("the part to summarise does not fit the sub model's request even when cut short")]
    TooLarge,
}

/// Whether the last message of the conversation is a heavy tool result.
pub(super) fn last_is_heavy(env: &AgentEnv, state: &AgentState, window: usize) -> bool {
    let Some(Message::Tool { tool_call_id, content }) = state.messages.last() else {
        return false;
    };
    // A heavy tool's result counts when it carries bulk (not an error, an
    // "already known" answer or an empty page: a hundredth of the window).
    let bulky = crate::llm::estimate_tokens(content) * 100 >= window;
    let by_tool = bulky
        && state
            .messages
            .iter()
            .rev()
            .flat_map(|m| m.tool_calls())
            .find(|c| c.id == *tool_call_id)
            .and_then(|c| env.tools.get(&c.function.name))
            .is_some_and(|tool| tool.about().heavy);
    by_tool || compress::heavy_share(content, window)
}

/// The cut for `reason`: the most recent `keepTurns` steps are kept, fewer
/// when that would still leave the request above its threshold (down to
/// the last step alone).
fn choose_cut(
    parts: &RequestParts,
    state: &AgentState,
    current: Option<&Compaction>,
    reason: Reason,
    settings: &crate::agent::AgentSettings,
) -> Option<usize> {
    let from = current.map_or(0, |c| c.upto);
    let keep = settings.compression.keep_turns.max(1);
    if reason == Reason::TurnLimit {
        return compress::cut(&state.messages, from, keep);
    }
    let ratio = match reason {
        Reason::HeavyTool => settings.compression.heavy_tool_ratio,
        _ => settings.compression.token_ratio,
    };
    let target = (settings.context_window as f64 * ratio) as usize;
    let mut fallback = None;
    for k in (1..=keep).rev() {
        let Some(at) = compress::cut(&state.messages, from, k) else { continue };
        let trial = Compaction { upto: at, ..current.cloned().unwrap_or_default() };
        let estimate = estimate_request(&parts.request("", state, Some(&trial)));
        if estimate + compress::MAX_SUMMARY_TOKENS as usize <= target {
            return Some(at);
        }
        fallback = Some(at);
    }
    fallback
}

/// Summarises the conversation before the chosen cut. `Ok(None)`: nothing
/// older than the kept steps to summarise.
pub(super) async fn compact(
    env: &AgentEnv,
    state: &AgentState,
    ctx: &Ctx<'_>,
    parts: &RequestParts,
    reason: Reason,
) -> Result<Option<Compaction>, CompactError> {
    let settings = env.settings.borrow().clone();
    let current = state.compaction.as_ref();
    let Some(at) = choose_cut(parts, state, current, reason, &settings) else {
        return Ok(None);
    };
    let from = current.map_or(0, |c| c.upto);
    let part = &state.messages[from..at];
    let part_tokens = estimate_request(&ChatRequest::new("", part.to_vec()));
    if part_tokens < compress::MIN_PART_TOKENS {
        return Ok(None);
    }
    let budget = settings.context_window.saturating_sub(compress::MAX_SUMMARY_TOKENS as usize + 256);
    let bulk = |tool: &str, field: &str| env.tools.get(tool).is_some_and(|t| t.is_bulk(field));
    let input =
        compress::compressor_input(current.map(|c| &c.summary), part, budget, &bulk).ok_or(CompactError::TooLarge)?;
    let mut request =
        ChatRequest::new(settings.sub_model.clone(), vec![Message::system(compress::PROMPT), Message::user(input)]);
    request.temperature = Some(0.0);
    request.max_tokens = Some(compress::MAX_SUMMARY_TOKENS);
    let schema: serde_json::Value = serde_json::from_str(compress::SCHEMA).unwrap_or_default();
    let answer = match ask_structured(env.model.as_ref(), request, "context_summary", &schema, ctx.cancel).await {
        Ok(answer) => answer,
        Err(LlmError::Aborted) => return Err(CompactError::Aborted),
        Err(e) => return Err(CompactError::Model(e)),
    };
    let summary = compress::parse_summary(answer.value).map_err(CompactError::Fields)?;
    let previous = current.map(|c| c.constraints.as_slice()).unwrap_or_default();
    let constraints = compress::merge_constraints(&[previous, &compress::person_constraints(part, from == 0)]);
    let (artifacts, artifact_listing) = parts.carried(state, (from, at), current);
    Ok(Some(Compaction {
        upto: at,
        summary,
        constraints,
        count: current.map_or(0, |c| c.count) + 1,
        artifacts,
        artifact_listing,
    }))
}
