//! The search optimiser: the web searches of one batch become one query.

use serde_json::Value;

use super::super::call::Call;
use super::super::env::AgentEnv;
use super::super::events::{Ctx, Emit, Info};
use super::super::prompts;
use super::super::state::AgentState;
use super::last_user_text;
use crate::graph::NodeError;
use crate::llm::{ask_structured, ChatRequest, LlmError, Message};

/// The search optimiser: the searches among `calls[fresh]` become one query,
/// run by the first of them (rebound to it); returns that call's id, into
/// which the others merge.
pub(super) async fn merge_searches(
    env: &AgentEnv,
    state: &AgentState,
    calls: &mut [Call],
    fresh: &[usize],
    ctx: &Ctx<'_>,
) -> Result<Option<String>, NodeError> {
    let searches: Vec<(usize, String)> = fresh.iter().filter_map(|i| Some((*i, calls[*i].ok()?.query()?))).collect();
    let Some((first, _)) = searches.first() else {
        return Ok(None);
    };
    let queries: Vec<String> = searches.iter().map(|(_, q)| q.clone()).collect();
    let query = optimize_query(env, &last_user_text(state), &queries, ctx).await?;
    ctx.info(Info::SearchOptimized { from: queries, query: query.clone() });
    let call = &mut calls[*first];
    if let Some(merged) = call.ok().and_then(|b| b.with_query(&query)) {
        call.bound = Ok(merged);
    }
    Ok(Some(call.call.id.clone()))
}

async fn optimize_query(env: &AgentEnv, input: &str, queries: &[String], ctx: &Ctx<'_>) -> Result<String, NodeError> {
    let sub = env.settings.borrow().sub_model.clone();
    let request = ChatRequest::new(
        sub,
        vec![
            Message::system(prompts::SEARCH_OPTIMIZER),
            Message::user(format!("The person asked: {input}\nSearch requests: {}", queries.join(" | "))),
        ],
    );
    let schema: Value = serde_json::from_str(prompts::SEARCH_SCHEMA).unwrap_or(Value::Null);
    match ask_structured(env.model.as_ref(), request, "search_query", &schema, ctx.cancel).await {
        Ok(answer) => Ok(answer
            .value
            .get("query")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
            .map_or_else(|| queries.join(" "), str::to_owned)),
        Err(LlmError::Aborted) => Err(NodeError::Aborted),
        Err(_) => Ok(queries.join(" ")),
    }
}
