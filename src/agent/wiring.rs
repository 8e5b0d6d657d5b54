//! The assistant graph's nodes and edges (see the module docs of
//! `agent` for the picture). Every edge reads the state only: what a call
//! is or needs was decided, and recorded, by the node that saw it.

use std::rc::Rc;

use super::env::AgentEnv;
use super::nodes;
use super::state::AgentState;
use super::strategy::Strategy;
use crate::graph::{CompiledGraph, StateGraph, END, START};

/// The compiled assistant graph over `env`.
pub fn build(env: &Rc<AgentEnv>) -> CompiledGraph<AgentState> {
    let finish = {
        let env = env.clone();
        move || if env.settings.borrow().long_term_memory { "memory_judge".to_owned() } else { END.to_owned() }
    };
    let (after_agent, after_chat) = (finish.clone(), finish.clone());
    let tools_env = env.clone();
    StateGraph::new()
        .add_node("router", nodes::Router(env.clone()))
        .add_node("chat", nodes::Chat(env.clone()))
        .add_node("agent", nodes::Agent(env.clone()))
        .add_node("tools", nodes::Tools(env.clone()))
        .add_node("prepare_review", nodes::PrepareReview(env.clone()))
        .add_node("review", nodes::Review(env.clone()))
        .add_node("memory_judge", nodes::MemoryJudge(env.clone()))
        .add_node("memory_refiner", nodes::MemoryRefiner(env.clone()))
        .add_edge(START, "router")
        .add_conditional_edges(
            "router",
            |s: &AgentState| match s.strategy {
                Some(Strategy::ChatOnly) | None => "chat".into(),
                _ => "agent".into(),
            },
            &["chat", "agent"],
        )
        .add_conditional_edges("chat", move |_: &AgentState| after_chat(), &["memory_judge", END])
        .add_conditional_edges(
            "agent",
            move |s: &AgentState| {
                if !s.pending_calls().is_empty() {
                    "tools".into()
                } else if s.nudged() {
                    "agent".into()
                } else {
                    after_agent()
                }
            },
            &["tools", "agent", "memory_judge", END],
        )
        .add_conditional_edges(
            "tools",
            move |s: &AgentState| match s.pending_calls().first() {
                // The tools node stopped at it: it needs approval, or the outbound rule holds it.
                Some(call) if s.held(call) => "prepare_review".into(),
                Some(_) => "tools".into(),
                None if s.responded(&tools_env.tools) => finish(),
                None => "agent".into(),
            },
            &["prepare_review", "tools", "agent", "memory_judge", END],
        )
        .add_conditional_edges(
            "prepare_review",
            |s: &AgentState| if s.pending_review.is_some() { "review".into() } else { "tools".into() },
            &["review", "tools"],
        )
        .add_edge("review", "tools")
        .add_conditional_edges(
            "memory_judge",
            |s: &AgentState| if s.memory_worthy { "memory_refiner".into() } else { END.into() },
            &["memory_refiner", END],
        )
        .add_edge("memory_refiner", END)
        .compile()
        .expect("the assistant graph is valid")
}
