//! The search optimiser: the web searches of one batch become one query.

use serde_json::{json, Value};

use super::super::events::{Ctx, Emit, Info};
use super::super::prompts;
use super::super::state::AgentState;
use super::super::AgentEnv;
use super::{act::parse_arguments, last_user_text};
use crate::graph::NodeError;
use crate::llm::{ask_structured, ChatRequest, LlmError, Message, ToolCall};

/// The search optimizer: all web searches of a batch become one query
/// (the first search call's, with the optimised query).
pub(super) async fn merge_searches(
    env: &AgentEnv,
    state: &AgentState,
    batch: &[ToolCall],
    ctx: &Ctx<'_>,
) -> Result<Option<(String, Value)>, NodeError> {
    let searches: Vec<&ToolCall> = batch.iter().filter(|c| env.tools.merges_queries(c)).collect();
    let Some(first) = searches.first() else {
        return Ok(None);
    };
    let queries: Vec<String> =
        searches.iter().filter_map(|c| parse_arguments(c).ok()?.get("query")?.as_str().map(str::to_owned)).collect();
    let mut args = parse_arguments(first).unwrap_or(json!({}));
    if !queries.is_empty() {
        let query = optimize_query(env, &last_user_text(state), &queries, ctx).await?;
        ctx.info(Info::SearchOptimized { from: queries, query: query.clone() });
        args["query"] = json!(query);
    }
    Ok(Some((first.id.clone(), args)))
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
