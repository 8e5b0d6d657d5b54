//! The router: classifies a turn as chat_only, general_agent or writing.

use std::rc::Rc;

use async_trait::async_trait;
use serde_json::Value;

use super::super::env::AgentEnv;
use super::super::events::{Ctx, Emit, Info, Phase};
use super::super::prompts;
use super::super::state::{AgentState, AgentUpdate};
use super::super::strategy::Strategy;
use super::last_user_text;
use crate::graph::{Node, NodeError};
use crate::llm::{ask_structured, ChatRequest, LlmError, Message};

/// Classifies the turn: chat_only, general_agent or writing.
pub struct Router(pub Rc<AgentEnv>);

/// A deterministic guess when the model's answer is unusable.
pub fn fallback_strategy(input: &str) -> Strategy {
    let lower = crate::platform::lowercase(input);
    const WRITING: &[&str] =
        &["manuscript", "chapter", "plot", "rewrite", "edit", "原稿", "章", "プロット", "推敲", "書き直"];
    if WRITING.iter().any(|w| lower.contains(w)) {
        return Strategy::Writing;
    }
    let short = input.chars().count() <= 24 && !input.contains('?') && !input.contains('？');
    if short {
        Strategy::ChatOnly
    } else {
        Strategy::GeneralAgent
    }
}

#[async_trait(?Send)]
impl Node<AgentState> for Router {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        ctx.phase(Phase::Planning);
        let input = last_user_text(state);
        if !state.agent_mode {
            return Ok(AgentUpdate { strategy: Some(Some(Strategy::ChatOnly)), ..Default::default() });
        }
        let sub = self.0.settings.borrow().sub_model.clone();
        let request = ChatRequest::new(sub, vec![Message::system(prompts::ROUTER), Message::user(input.clone())]);
        let schema: Value = serde_json::from_str(prompts::ROUTER_SCHEMA).unwrap_or(Value::Null);
        let (strategy, reasoning) = match ask_structured(self.0.model.as_ref(), request, "route", &schema, ctx.cancel)
            .await
        {
            Ok(answer) => match answer.value.get("strategy").and_then(Value::as_str).and_then(Strategy::parse) {
                Some(s) => (s, answer.value.get("reasoning").and_then(Value::as_str).unwrap_or_default().to_owned()),
                None => (fallback_strategy(&input), "fallback: the router named no known strategy".to_owned()),
            },
            Err(LlmError::Aborted) => return Err(NodeError::Aborted),
            Err(e) => (fallback_strategy(&input), format!("fallback: {}", e.code())),
        };
        ctx.info(Info::Routed { strategy, reasoning });
        Ok(AgentUpdate { strategy: Some(Some(strategy)), ..Default::default() })
    }
}
