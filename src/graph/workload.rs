//! The "graph" workload of the shared benchmark (shared/bench/WORKLOADS.md)
//! on this engine: router → agent ⇄ tools with free fake models, 22 node
//! steps per run. Compiled for tests and for the `bench` feature only.

use async_trait::async_trait;
use serde_json::json;

use super::{
    Checkpointer, CompiledGraph, MemoryCheckpointer, Node, NodeContext, NodeError, PrunePolicy, RunConfig, StateGraph,
    END, START,
};
use crate::llm::{Message, ToolCall};

const ROUTER_REPLY: &str = r#"{"strategy":"general_agent"}"#;
const FINAL_ANSWER: &str = "Final answer: all lookups are done.";

crate::graph_state! {
    /// The workload's state: messages (append), loop count and phase (set).
    pub struct BenchState, update BenchUpdate {
        append messages: Vec<Message>,
        set loop_count: u32,
        set phase: String,
    }
}

/// Fake router model: a fresh message with the routing JSON.
async fn router_model(_messages: &[Message]) -> Message {
    Message::assistant(ROUTER_REPLY)
}

/// Fake agent model: one tool call per turn up to `turns`, then the answer.
async fn agent_model(_messages: &[Message], turn: u32, turns: u32) -> Message {
    if turn <= turns {
        let call = ToolCall::new(format!("call_{turn}"), "lookup", &json!({ "q": format!("item-{turn}") }));
        Message::Assistant { content: Some(String::new()), tool_calls: vec![call] }
    } else {
        Message::assistant(FINAL_ANSWER)
    }
}

/// Exactly 200 characters, as `padEnd(200, "0123456789")`.
fn lookup(q: &str) -> String {
    let mut out = format!("lookup result for {q}: ");
    let pad = b"0123456789";
    let mut i = 0;
    while out.len() < 200 {
        out.push(pad[i % pad.len()] as char);
        i += 1;
    }
    out.truncate(200);
    out
}

struct Router;
struct Agent(u32);
struct Tools;

#[async_trait(?Send)]
impl Node<BenchState> for Router {
    async fn run(&self, state: &BenchState, _: &mut NodeContext<'_, ()>) -> Result<BenchUpdate, NodeError> {
        let reply = router_model(&state.messages).await;
        let parsed: serde_json::Value = serde_json::from_str(reply.text())
            .map_err(|e| NodeError::failed(crate::error::ErrorCode::Parse, e.to_string()))?;
        let strategy = parsed["strategy"].as_str().unwrap_or_default().to_owned();
        Ok(BenchUpdate { phase: Some(strategy), ..Default::default() })
    }
}

#[async_trait(?Send)]
impl Node<BenchState> for Agent {
    async fn run(&self, state: &BenchState, _: &mut NodeContext<'_, ()>) -> Result<BenchUpdate, NodeError> {
        let turn = state.loop_count + 1;
        let reply = agent_model(&state.messages, turn, self.0).await;
        Ok(BenchUpdate { messages: vec![reply], loop_count: Some(turn), ..Default::default() })
    }
}

#[async_trait(?Send)]
impl Node<BenchState> for Tools {
    async fn run(&self, state: &BenchState, _: &mut NodeContext<'_, ()>) -> Result<BenchUpdate, NodeError> {
        let last = state
            .messages
            .last()
            .ok_or_else(|| NodeError::failed(crate::error::ErrorCode::InvalidState, "no messages"))?;
        let mut out = Vec::with_capacity(last.tool_calls().len());
        for call in last.tool_calls() {
            let args: serde_json::Value = serde_json::from_str(&call.function.arguments)
                .map_err(|e| NodeError::failed(crate::error::ErrorCode::Parse, e.to_string()))?;
            out.push(Message::tool(call.id.clone(), lookup(args["q"].as_str().unwrap_or_default())));
        }
        Ok(BenchUpdate { messages: out, ..Default::default() })
    }
}

/// The workload graph for `turns` tool rounds.
pub fn build(turns: u32) -> CompiledGraph<BenchState> {
    StateGraph::new()
        .add_node("router", Router)
        .add_node("agent", Agent(turns))
        .add_node("tools", Tools)
        .add_edge(START, "router")
        .add_conditional_edges(
            "router",
            |s: &BenchState| {
                if s.phase == "general_agent" {
                    "agent".into()
                } else {
                    END.into()
                }
            },
            &["agent", END],
        )
        .add_conditional_edges(
            "agent",
            |s: &BenchState| {
                if s.messages.last().is_some_and(|m| !m.tool_calls().is_empty()) {
                    "tools".into()
                } else {
                    END.into()
                }
            },
            &["tools", END],
        )
        .add_edge("tools", "agent")
        .compile()
        .expect("the workload graph is valid")
}

/// Runs `runs` runs back to back (each on its own thread when
/// `checkpointed`, with a fresh in-memory checkpointer for the pass) and
/// returns the message count of the last final state (must be 2·turns+2).
pub async fn pass(
    graph: &CompiledGraph<BenchState>,
    runs: u32,
    turns: u32,
    checkpointed: bool,
) -> Result<usize, String> {
    let saver = MemoryCheckpointer::<BenchState>::new(PrunePolicy { keep_per_thread: usize::MAX });
    run_all(graph, runs, turns, checkpointed.then_some(&saver as &dyn Checkpointer<BenchState>)).await
}

/// Like [`pass`], checkpointing every run to `saver` (e.g. IndexedDB).
pub async fn pass_with(
    graph: &CompiledGraph<BenchState>,
    runs: u32,
    turns: u32,
    saver: &dyn Checkpointer<BenchState>,
) -> Result<usize, String> {
    run_all(graph, runs, turns, Some(saver)).await
}

async fn run_all(
    graph: &CompiledGraph<BenchState>,
    runs: u32,
    turns: u32,
    saver: Option<&dyn Checkpointer<BenchState>>,
) -> Result<usize, String> {
    let expected = 2 * turns as usize + 2;
    let mut last = 0;
    for r in 0..runs {
        let thread = if saver.is_some() { format!("thread-{r}") } else { String::new() };
        let mut config = RunConfig::new(&thread);
        config.recursion_limit = 100;
        config.checkpointer = saver;
        let input = BenchUpdate {
            messages: vec![Message::user(format!("Find information about the items. run={r}"))],
            ..Default::default()
        };
        let out = graph.invoke(input, &config).await.map_err(|e| e.to_string())?;
        let state = out.state;
        if state.messages.len() != expected
            || state.loop_count != turns + 1
            || state.messages[expected - 1].text() != FINAL_ANSWER
        {
            return Err(format!(
                "bad final state in run {r}: {} messages, loopCount={}",
                state.messages.len(),
                state.loop_count
            ));
        }
        last = state.messages.len();
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_takes_22_steps_and_ends_with_22_messages() {
        let graph = build(10);
        assert_eq!(futures_executor::block_on(pass(&graph, 3, 10, false)), Ok(22));
        assert_eq!(futures_executor::block_on(pass(&graph, 3, 10, true)), Ok(22));
        assert_eq!(lookup("item-1").chars().count(), 200);
        assert!(lookup("item-1").starts_with("lookup result for item-1: 0123"));
    }

    #[test]
    fn checkpointed_runs_store_24_checkpoints_each() {
        let graph = build(10);
        let saver = MemoryCheckpointer::<BenchState>::new(PrunePolicy { keep_per_thread: usize::MAX });
        let mut config = RunConfig::new("t");
        config.recursion_limit = 100;
        config.checkpointer = Some(&saver);
        let input = BenchUpdate { messages: vec![Message::user("go")], ..Default::default() };
        futures_executor::block_on(graph.invoke(input, &config)).unwrap();
        // The input checkpoint plus one per node step (LangGraph's MemorySaver
        // also stores a "start" one: 24).
        assert_eq!(futures_executor::block_on(saver.history("t")).unwrap().len(), 23);
    }
}
