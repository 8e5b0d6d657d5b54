//! Long-term memory: the judge decides whether a turn holds a durable fact;
//! the refiner writes it as a tagged, dated memory.

use std::rc::Rc;

use async_trait::async_trait;
use serde_json::Value;

use super::super::env::AgentEnv;
use super::super::events::{Ctx, Emit, Info, Phase};
use super::super::prompts;
use super::super::state::{AgentState, AgentUpdate};
use super::last_user_text;
use crate::graph::{Node, NodeError};
use crate::llm::{ask_structured, ChatRequest, LlmError, Message};

/// Decides whether the turn holds a durable fact.
pub struct MemoryJudge(pub Rc<AgentEnv>);

/// Writes the fact as a tagged, dated memory.
pub struct MemoryRefiner(pub Rc<AgentEnv>);

fn exchange(state: &AgentState) -> String {
    let answer = state
        .turn()
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Assistant { .. }) && !m.text().is_empty())
        .map(|m| m.text().to_owned());
    format!("Person: {}\nAssistant: {}", last_user_text(state), answer.unwrap_or_else(|| state.output.clone()))
}

#[async_trait(?Send)]
impl Node<AgentState> for MemoryJudge {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        ctx.phase(Phase::Memorizing);
        let sub = self.0.settings.borrow().sub_model.clone();
        let request =
            ChatRequest::new(sub, vec![Message::system(prompts::MEMORY_JUDGE), Message::user(exchange(state))]);
        let schema: Value = serde_json::from_str(prompts::MEMORY_JUDGE_SCHEMA).unwrap_or(Value::Null);
        let worthy = match ask_structured(self.0.model.as_ref(), request, "memory_judgement", &schema, ctx.cancel).await
        {
            Ok(answer) => answer.value.get("save").and_then(Value::as_bool).unwrap_or(false),
            Err(LlmError::Aborted) => return Err(NodeError::Aborted),
            Err(e) => {
                ctx.warning(format!("the memory judge failed: {e}"));
                false
            }
        };
        Ok(AgentUpdate { memory_worthy: Some(worthy), ..Default::default() })
    }
}

#[async_trait(?Send)]
impl Node<AgentState> for MemoryRefiner {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        let sub = self.0.settings.borrow().sub_model.clone();
        let request =
            ChatRequest::new(sub, vec![Message::system(prompts::MEMORY_REFINER), Message::user(exchange(state))]);
        let schema: Value = serde_json::from_str(prompts::MEMORY_REFINER_SCHEMA).unwrap_or(Value::Null);
        match ask_structured(self.0.model.as_ref(), request, "memory", &schema, ctx.cancel).await {
            Ok(answer) => {
                let summary = answer.value.get("summary").and_then(Value::as_str).unwrap_or_default().trim().to_owned();
                let tags: Vec<String> = answer
                    .value
                    .get("tags")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str().map(crate::platform::lowercase))
                    .collect();
                if !summary.is_empty() {
                    let (iso, _) = crate::tools::describe_time(
                        crate::platform::now_ms(),
                        crate::platform::timezone_offset_minutes(),
                    );
                    match self.0.db.add_memory(&iso[..10], &summary, tags).await {
                        Ok(m) => ctx.info(Info::Memory { id: m.id, date: m.date, summary: m.summary }),
                        Err(e) => ctx.warning(format!("the memory was not saved: {e}")),
                    }
                }
            }
            Err(LlmError::Aborted) => return Err(NodeError::Aborted),
            Err(e) => ctx.warning(format!("the memory refiner failed: {e}")),
        }
        Ok(AgentUpdate { memory_worthy: Some(false), ..Default::default() })
    }
}
