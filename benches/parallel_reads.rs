//! Parallel reads: the wall time of one agent step that opens three pages,
//! against a web backend with 300 ms of latency per call, with the
//! read-only calls of a step run at once (`parallelReads` 4, the default)
//! and one after another (`parallelReads` 1, as before). Prints one JSON
//! line per setting (median of 5 runs). Figures and the command are in
//! BENCHMARKS.md: `cargo bench --bench parallel_reads`.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use atelier_agent::agent::{Agent, AgentEnv, AgentSettings, SendOptions};
use atelier_agent::graph::PrunePolicy;
use atelier_agent::llm::{ChatOutcome, ScriptedModel, Step, ToolCall};
use atelier_agent::store::{Db, MemoryBackend, StoreCheckpointer};
use atelier_agent::tools::{ScriptedWeb, ToolRegistry, WebPage};
use futures_executor::block_on;
use serde_json::json;

const LATENCY: Duration = Duration::from_millis(300);

/// One turn: route, open three pages in one step, answer. Returns the wall
/// time of the whole turn.
fn turn(width: usize) -> Duration {
    let backend = Rc::new(MemoryBackend::new());
    let web = Rc::new(ScriptedWeb::default());
    web.latency.set(LATENCY);
    let urls: Vec<String> = (0..3).map(|i| format!("https://site{i}.example/page")).collect();
    for url in &urls {
        web.pages.borrow_mut().push(WebPage { url: url.clone(), title: "Page".into(), markdown: "text ".repeat(200) });
    }
    let calls = urls.iter().enumerate().map(|(i, u)| ToolCall::new(format!("c{i}"), "open_url", &json!({"url": u})));
    let model = Rc::new(ScriptedModel::new([
        Step::Reply(ChatOutcome::text(json!({"strategy": "general_agent", "reasoning": "read"}).to_string())),
        Step::Reply(ChatOutcome::tool_calls(calls.collect())),
        Step::Reply(ChatOutcome::text("Done.")),
    ]));
    let settings = AgentSettings { parallel_reads: width, ..AgentSettings::default() };
    let env = AgentEnv {
        scope: "bench".into(),
        db: Db::new(backend.clone()),
        model,
        web,
        tools: ToolRegistry::standard(),
        settings: RefCell::new(settings),
        policy: None,
        mcp: None,
    };
    let agent = Agent::new(env, Rc::new(StoreCheckpointer::new(backend, PrunePolicy::default())));
    let started = Instant::now();
    let input = format!("Read {}", urls.join(" "));
    let done = block_on(agent.send("s", &input, SendOptions { agent_mode: true, ..Default::default() }));
    let done = done.expect("the turn runs");
    assert_eq!(done.status.as_str(), "completed", "{}", done.content);
    started.elapsed()
}

fn main() {
    // `cargo test` runs benches as tests with --bench absent: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    for width in [1usize, 4] {
        let mut runs: Vec<Duration> = (0..5).map(|_| turn(width)).collect();
        runs.sort();
        let median = runs[2];
        println!(
            "{}",
            json!({"bench": "parallel_reads", "calls": 3, "latency_ms": LATENCY.as_millis() as u64,
                   "parallel_reads": width, "median_ms": median.as_secs_f64() * 1000.0,
                   "runs_ms": runs.iter().map(|d| d.as_secs_f64() * 1000.0).collect::<Vec<_>>()})
        );
    }
}
