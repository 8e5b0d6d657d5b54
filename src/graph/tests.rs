//! Tests of the graph engine on small graphs.

use std::cell::RefCell;
use std::rc::Rc;

use async_trait::async_trait;
use futures_executor::block_on;
use serde_json::json;

use super::*;
use crate::cancel::CancelToken;

crate::graph_state! {
    pub struct Trail, update TrailUpdate {
        append visited: Vec<String>,
        set count: u32,
        set answer: Option<String>,
    }
}

/// Records its visit and bumps the count.
struct Visit(&'static str);

#[async_trait(?Send)]
impl Node<Trail> for Visit {
    async fn run(&self, state: &Trail, _: &mut NodeContext<'_, ()>) -> std::result::Result<TrailUpdate, NodeError> {
        Ok(TrailUpdate { visited: vec![self.0.into()], count: Some(state.count + 1), ..Default::default() })
    }
}

/// Asks a person before answering.
struct Review;

#[async_trait(?Send)]
impl Node<Trail> for Review {
    async fn run(&self, _: &Trail, ctx: &mut NodeContext<'_, ()>) -> std::result::Result<TrailUpdate, NodeError> {
        let decision = ctx.interrupt(json!({"question": "ship it?"}))?;
        Ok(TrailUpdate {
            visited: vec!["review".into()],
            answer: Some(Some(decision.to_string())),
            ..Default::default()
        })
    }
}

/// Cancels the run's token while working, as a Stop button would.
struct StopsTheRun;

#[async_trait(?Send)]
impl Node<Trail> for StopsTheRun {
    async fn run(&self, _: &Trail, ctx: &mut NodeContext<'_, ()>) -> std::result::Result<TrailUpdate, NodeError> {
        ctx.cancel.cancel();
        Err(NodeError::Aborted)
    }
}

fn line() -> CompiledGraph<Trail> {
    StateGraph::new()
        .add_node("a", Visit("a"))
        .add_node("b", Visit("b"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .compile()
        .unwrap()
}

#[test]
fn compile_checks_the_graph() {
    let err = |g: StateGraph<Trail>| g.compile().err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err(StateGraph::new().add_node("a", Visit("a")).add_edge("a", END)).contains("no entry"));
    assert!(err(StateGraph::new().add_node("a", Visit("a")).add_edge(START, "a").add_edge("a", "nope"))
        .contains("\"nope\""));
    assert!(err(StateGraph::new().add_node("a", Visit("a")).add_edge(START, "a")).contains("no way out"));
    let unreachable = StateGraph::new()
        .add_node("a", Visit("a"))
        .add_node("b", Visit("b"))
        .add_edge(START, "a")
        .add_edge("a", END)
        .add_edge("b", END);
    assert!(err(unreachable).contains("\"b\" cannot be reached"));
    let twice =
        StateGraph::new().add_node("a", Visit("a")).add_node("a", Visit("a")).add_edge(START, "a").add_edge("a", END);
    assert!(err(twice).contains("used twice"));
    let fan = StateGraph::new().add_node("a", Visit("a")).add_edge(START, "a").add_edge("a", END).add_edge("a", END);
    assert!(err(fan).contains("more than one outgoing edge"));
}

#[test]
fn runs_apply_reducers_in_order() {
    let out = block_on(
        line().invoke(TrailUpdate { visited: vec!["input".into()], ..Default::default() }, &RunConfig::new("t")),
    )
    .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.visited, vec!["input", "a", "b"]);
    assert_eq!(out.state.count, 2);
    assert_eq!(out.steps, 2);
}

#[test]
fn conditional_edges_loop_until_done_and_reject_unknown_routes() {
    let graph = StateGraph::new()
        .add_node("work", Visit("work"))
        .add_edge(START, "work")
        .add_conditional_edges(
            "work",
            |s: &Trail| {
                if s.count < 3 {
                    "work".into()
                } else {
                    END.into()
                }
            },
            &["work", END],
        )
        .compile()
        .unwrap();
    let out = block_on(graph.invoke(TrailUpdate::default(), &RunConfig::new("t"))).unwrap();
    assert_eq!(out.state.count, 3);

    let bad = StateGraph::new()
        .add_node("work", Visit("work"))
        .add_edge(START, "work")
        .add_conditional_edges("work", |_: &Trail| "elsewhere".into(), &[END])
        .compile()
        .unwrap();
    let err = block_on(bad.invoke(TrailUpdate::default(), &RunConfig::new("t"))).unwrap_err();
    assert_eq!(err.code(), "unknown_route");
}

#[test]
fn recursion_limit_names_the_loop() {
    let graph = StateGraph::new()
        .add_node("agent", Visit("agent"))
        .add_node("tools", Visit("tools"))
        .add_edge(START, "agent")
        .add_edge("agent", "tools")
        .add_conditional_edges("tools", |_: &Trail| "agent".into(), &["agent", END])
        .compile()
        .unwrap();
    let err = block_on(graph.invoke(TrailUpdate::default(), &RunConfig::new("t"))).unwrap_err();
    match &err {
        GraphError::RecursionLimit { limit, cycle } => {
            assert_eq!(*limit, 25);
            let mut sorted = cycle.clone();
            sorted.sort();
            assert_eq!(sorted, vec!["agent", "tools"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("recursion limit of 25"));
}

fn review_graph() -> CompiledGraph<Trail> {
    StateGraph::new()
        .add_node("draft", Visit("draft"))
        .add_node("review", Review)
        .add_node("publish", Visit("publish"))
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_edge("review", "publish")
        .add_edge("publish", END)
        .compile()
        .unwrap()
}

#[test]
fn interrupt_pauses_and_resume_continues_at_that_node() {
    let graph = review_graph();
    let saver = MemoryCheckpointer::default();
    let mut config = RunConfig::new("session-1");
    config.checkpointer = Some(&saver);
    let paused = block_on(graph.invoke(TrailUpdate::default(), &config)).unwrap();
    assert_eq!(
        paused.status,
        RunStatus::Interrupted { node: "review".into(), payload: json!({"question": "ship it?"}) }
    );
    assert_eq!(paused.state.visited, vec!["draft"]);

    // A new engine (as after a page load) with the same storage resumes.
    let again = review_graph();
    let latest = block_on(saver.latest("session-1")).unwrap().unwrap();
    assert_eq!(latest.interrupt, Some(json!({"question": "ship it?"})));
    assert_eq!(latest.next.as_deref(), Some("review"));
    let done = block_on(again.resume(Some(json!("yes")), &config)).unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.state.visited, vec!["draft", "review", "publish"]);
    assert_eq!(done.state.answer.as_deref(), Some("\"yes\""));
    let err = block_on(again.resume(None, &config)).unwrap_err();
    assert_eq!(err.code(), "nothing_to_resume");
}

#[test]
fn abort_keeps_the_last_completed_checkpoint_and_can_continue() {
    let graph = StateGraph::new()
        .add_node("a", Visit("a"))
        .add_node("stop", StopsTheRun)
        .add_node("b", Visit("b"))
        .add_edge(START, "a")
        .add_edge("a", "stop")
        .add_edge("stop", "b")
        .add_edge("b", END)
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::default();
    let mut config = RunConfig::new("t");
    config.checkpointer = Some(&saver);
    let out = block_on(graph.invoke(TrailUpdate::default(), &config)).unwrap();
    assert_eq!(out.status, RunStatus::Aborted);
    assert_eq!(out.state.visited, vec!["a"]);
    let latest = block_on(saver.latest("t")).unwrap().unwrap();
    assert_eq!(latest.state.visited, vec!["a"], "nothing of the aborted step was saved");
    assert_eq!(latest.next.as_deref(), Some("stop"), "the checkpoint says where to continue");

    // Cancelled before a step: nothing runs.
    let cancelled = CancelToken::new();
    cancelled.cancel();
    let config = RunConfig { cancel: cancelled, ..RunConfig::new("u") };
    let out = block_on(line().invoke(TrailUpdate::default(), &config)).unwrap();
    assert_eq!((out.status, out.steps), (RunStatus::Aborted, 0));
}

#[test]
fn checkpoints_link_parents_and_support_history_read_and_fork() {
    let graph = line();
    let saver = MemoryCheckpointer::default();
    let mut config = RunConfig::new("t");
    config.checkpointer = Some(&saver);
    block_on(graph.invoke(TrailUpdate::default(), &config)).unwrap();
    let history = block_on(graph.history(&saver, "t")).unwrap();
    assert_eq!(history.len(), 3, "input + one per step");
    assert_eq!(history[0].parent_id.as_deref(), Some(history[1].id.as_str()));
    assert_eq!(history[0].next, None);
    let middle = block_on(graph.state_at(&saver, "t", &history[1].id)).unwrap();
    assert_eq!(middle.visited, vec!["a"]);

    let forked = block_on(graph.fork(&saver, "t", &history[1].id, "t2")).unwrap();
    assert_eq!(forked.next.as_deref(), Some("b"));
    let mut config2 = RunConfig::new("t2");
    config2.checkpointer = Some(&saver);
    let out = block_on(graph.resume(None, &config2)).unwrap();
    assert_eq!(out.state.visited, vec!["a", "b"]);
    assert_eq!(block_on(graph.history(&saver, "t")).unwrap().len(), 3, "the original thread is untouched");

    // A second run continues the thread's state.
    let out = block_on(graph.invoke(TrailUpdate::default(), &config)).unwrap();
    assert_eq!(out.state.visited, vec!["a", "b", "a", "b"]);
}

#[test]
fn pruning_bounds_the_store() {
    let saver = MemoryCheckpointer::new(PrunePolicy { keep_per_thread: 4 });
    let mut config = RunConfig::new("t");
    config.checkpointer = Some(&saver);
    for _ in 0..5 {
        block_on(line().invoke(TrailUpdate::default(), &config)).unwrap();
    }
    let history = block_on(saver.history("t")).unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(history[0].state.count, 10, "the newest is kept");
}

#[test]
fn events_report_the_run() {
    let events = Rc::new(RefCell::new(Vec::new()));
    let sink = events.clone();
    let listener = move |e: &GraphEvent<'_, ()>| {
        sink.borrow_mut().push(match e {
            GraphEvent::RunStart { .. } => "run_start".to_owned(),
            GraphEvent::NodeStart { node, .. } => format!("start {node}"),
            GraphEvent::NodeEnd { node, .. } => format!("end {node}"),
            GraphEvent::Node { node, .. } => format!("event {node}"),
            GraphEvent::RunEnd { status } => format!("run_end {status}"),
        })
    };
    let config = RunConfig { events: Some(&listener), ..RunConfig::new("t") };
    block_on(line().invoke(TrailUpdate::default(), &config)).unwrap();
    assert_eq!(*events.borrow(), ["run_start", "start a", "end a", "start b", "end b", "run_end completed"]);
}
