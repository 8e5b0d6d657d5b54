//! The assistant: a graph on the engine of [`crate::graph`] that routes each
//! turn (chat_only / general_agent / writing), runs a ReAct loop with the
//! strategy's tools, pauses for the person's approval before destructive
//! tools (with a diff), and stores durable facts as memories.
//!
//! ```text
//! START → router ─chat_only→ chat ──────────────┐
//!            └─general_agent|writing→ agent ⇄ tools ─(approval)→ prepare_review → review → tools
//!                                       │                                           
//!                         (answer) → memory_judge → memory_refiner → END   (or END when memory is off)
//! ```

mod completion;
pub mod compress;
pub mod continuity;
pub mod delegate;
mod events;
pub mod facts;
mod loop_guard;
mod nodes;
pub mod outbound;
mod prompts;
mod review;
mod settings;
mod state;

#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

pub use events::{AgentEvent, ArtifactChange, EventListener, Info};
pub use nodes::{fallback_strategy, render_call};
pub use review::{Decision, PendingReview, ReviewPayload};
pub use settings::{AgentSettings, CompressionSettings};
pub use state::{AgentState, AgentUpdate, Phase, Strategy};

use crate::cancel::CancelToken;
use crate::graph::{Checkpointer, CompiledGraph, GraphError, GraphEvent, RunConfig, StateGraph, END, START};
use crate::llm::{ChatModel, Message};
use crate::store::Db;
use crate::tools::{ToolRegistry, WebTools};

/// What the nodes share.
pub struct AgentEnv {
    /// What scopes the run locks (the database name): agents on one
    /// database, in any tab, run one turn per session at a time.
    pub scope: String,
    pub db: Db,
    pub model: Rc<dyn ChatModel>,
    pub web: Rc<dyn WebTools>,
    pub tools: ToolRegistry,
    pub settings: RefCell<AgentSettings>,
}

impl AgentEnv {
    /// Whether this call asks the person first: whenever the tool it writes
    /// through would (`Tool::approval_as`), else the settings' per-tool
    /// choice, else the tool's default for these arguments.
    pub fn call_needs_approval(&self, call: &crate::llm::ToolCall) -> bool {
        let args = serde_json::from_str(&call.function.arguments).unwrap_or_default();
        let tool = self.tools.get(&call.function.name);
        if tool.and_then(|t| t.approval_as(&args)).is_some_and(|other| self.needs_approval(other)) {
            return true;
        }
        if let Some(choice) = self.settings.borrow().approvals.get(&call.function.name) {
            return *choice;
        }
        tool.is_some_and(|t| t.needs_approval_for(&args))
    }

    /// Whether `tool` asks the person first (settings override the default).
    pub fn needs_approval(&self, tool: &str) -> bool {
        self.settings
            .borrow()
            .approvals
            .get(tool)
            .copied()
            .unwrap_or_else(|| self.tools.get(tool).is_some_and(|t| t.needs_approval_by_default()))
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    /// Waiting for the person's review.
    Interrupted,
    Aborted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Aborted => "aborted",
        }
    }
}

/// How a run ended, with the turn's visible output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub status: RunStatus,
    /// The turn's Markdown stream (thought/plan/tool blocks and the answer).
    pub content: String,
    /// The review the run waits for (when interrupted).
    pub review: Option<ReviewPayload>,
    pub strategy: Option<Strategy>,
}

/// Options of one run.
#[derive(Clone, Default)]
pub struct SendOptions {
    pub agent_mode: bool,
    pub cancel: CancelToken,
    pub on_event: Option<EventListener>,
}

fn warn(options: &SendOptions, message: String) {
    if let Some(sink) = &options.on_event {
        sink(&AgentEvent::Warning { message });
    }
}

/// The assistant.
pub struct Agent {
    env: Rc<AgentEnv>,
    graph: CompiledGraph<AgentState>,
    checkpointer: Rc<dyn Checkpointer<AgentState>>,
}

fn build(env: &Rc<AgentEnv>) -> CompiledGraph<AgentState> {
    let memory_on = {
        let env = env.clone();
        move || env.settings.borrow().long_term_memory
    };
    let finish = {
        let memory_on = memory_on.clone();
        move || {
            if memory_on() {
                "memory_judge".to_owned()
            } else {
                END.to_owned()
            }
        }
    };
    let (after_agent, after_tools, after_chat) = (finish.clone(), finish.clone(), finish);
    let approval_env = env.clone();
    StateGraph::new()
        .add_node("router", nodes::Router(env.clone()))
        .add_node("chat", nodes::Chat(env.clone()))
        .add_node("agent", nodes::Agent(env.clone()))
        .add_node("tools", nodes::Tools(env.clone()))
        .add_node("prepare_review", review::PrepareReview(env.clone()))
        .add_node("review", review::Review(env.clone()))
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
            move |s: &AgentState| {
                let pending = s.pending_calls();
                match pending.first() {
                    Some(call) if approval_env.call_needs_approval(call) || s.held(call) => "prepare_review".into(),
                    Some(_) => "tools".into(),
                    None if s.responded(&approval_env.tools) => after_tools(),
                    None => "agent".into(),
                }
            },
            &["prepare_review", "tools", "agent", "memory_judge", END],
        )
        .add_conditional_edges(
            "prepare_review",
            |s: &AgentState| {
                if s.pending_review.is_some() {
                    "review".into()
                } else {
                    "tools".into()
                }
            },
            &["review", "tools"],
        )
        .add_edge("review", "tools")
        .add_conditional_edges(
            "memory_judge",
            |s: &AgentState| {
                if s.memory_worthy {
                    "memory_refiner".into()
                } else {
                    END.into()
                }
            },
            &["memory_refiner", END],
        )
        .add_edge("memory_refiner", END)
        .compile()
        .expect("the assistant graph is valid")
}

/// Where a session's run stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunState {
    /// No run, or the last one finished.
    Idle,
    /// Paused for the person's review.
    Review { review: ReviewPayload },
    /// Stopped before it finished (closed tab, crash, abort), at `node`.
    Unfinished { node: String },
    /// A run is going on right now (in another tab, or another call).
    Running,
}

/// The review the latest checkpoint waits on, unless its receipt shows it
/// was decided.
fn undecided_review(
    latest: &crate::graph::Checkpoint<AgentState>,
    receipts: &std::collections::HashMap<String, crate::store::Receipt>,
) -> Option<ReviewPayload> {
    latest.interrupt.as_ref()?;
    let review = latest.state.pending_review.as_ref()?;
    (!receipts.contains_key(&latest.state.call_key(&review.call))).then(|| review.payload.clone())
}

/// Results for the calls an unfinished run left unanswered: the receipt's
/// result where the call's effect was recorded, else "not run".
fn settled_calls(
    state: &AgentState,
    receipts: &std::collections::HashMap<String, crate::store::Receipt>,
) -> Vec<Message> {
    state
        .pending_calls()
        .into_iter()
        .map(|call| {
            let content = match receipts.get(&state.call_key(&call)) {
                Some(receipt) => nodes::replayed(receipt),
                None => "Not run: the turn ended before this call ran.".to_owned(),
            };
            Message::tool(call.id, content)
        })
        .collect()
}

fn store_error(e: crate::store::StoreError) -> AgentError {
    AgentError { code: e.code().into(), message: e.to_string() }
}

/// An error of a run, with a stable code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct AgentError {
    pub code: String,
    pub message: String,
}

impl From<GraphError> for AgentError {
    fn from(e: GraphError) -> AgentError {
        let code = match &e {
            GraphError::Node { code, .. } => code.clone(),
            other => other.code().to_owned(),
        };
        AgentError { code, message: e.to_string() }
    }
}

impl Agent {
    /// An agent over `env`, checkpointing to `checkpointer`.
    pub fn new(mut env: AgentEnv, checkpointer: Rc<dyn Checkpointer<AgentState>>) -> Agent {
        env.tools.register(Rc::new(delegate::DelegateTool));
        let env = Rc::new(env);
        let graph = build(&env);
        Agent { env, graph, checkpointer }
    }

    /// The shared environment (settings, database).
    pub fn env(&self) -> &Rc<AgentEnv> {
        &self.env
    }

    /// Node names of the graph.
    pub fn node_names(&self) -> Vec<String> {
        self.graph.node_names().map(str::to_owned).collect()
    }

    fn config<'a>(
        &'a self,
        session_id: &'a str,
        options: &SendOptions,
        listener: &'a dyn Fn(&GraphEvent<'_, AgentEvent>),
    ) -> RunConfig<'a, AgentState> {
        RunConfig {
            thread_id: session_id,
            recursion_limit: self.env.settings.borrow().recursion_limit,
            cancel: options.cancel.clone(),
            checkpointer: Some(self.checkpointer.as_ref()),
            events: Some(listener),
        }
    }

    fn result(outcome: crate::graph::RunOutcome<AgentState>) -> RunResult {
        use crate::graph::RunStatus as Graph;
        let (status, review) = match outcome.status {
            Graph::Completed => (RunStatus::Completed, None),
            Graph::Aborted => (RunStatus::Aborted, None),
            Graph::Interrupted { .. } => {
                (RunStatus::Interrupted, outcome.state.pending_review.as_ref().map(|p| p.payload.clone()))
            }
        };
        RunResult { status, content: outcome.state.output, review, strategy: outcome.state.strategy }
    }

    fn lock_name(&self, session_id: &str) -> String {
        format!("atelier-agent/run/{}/{session_id}", self.env.scope)
    }

    /// Takes the session's run lock, or fails with `busy`.
    async fn lock(&self, session_id: &str) -> Result<crate::platform::Lock, AgentError> {
        let name = self.lock_name(session_id);
        crate::platform::try_lock(&name).await.ok_or_else(|| AgentError {
            code: "busy".into(),
            message: format!(
                "session {session_id:?} is running in another tab or call; wait for it to finish, or use another session"
            ),
        })
    }

    /// Runs one turn of `session_id` with the person's `input`. Only one run
    /// per session at a time, across tabs: a second one fails with `busy`.
    pub async fn send(&self, session_id: &str, input: &str, options: SendOptions) -> Result<RunResult, AgentError> {
        let _running = self.lock(session_id).await?;
        let latest = self.latest(session_id).await?;
        let mut messages = Vec::new();
        let mut turn_start = 0;
        if let Some(latest) = &latest {
            turn_start = latest.state.messages.len();
            if latest.next.is_some() {
                // An unfinished run (a review, a crash, an abort): a review
                // still to be decided blocks the new turn; otherwise every
                // call left without a result is answered from its receipt or
                // as not run, so the conversation stays well-formed.
                let receipts = self.env.db.receipts(session_id).await.map_err(store_error)?;
                if let Some(review) = undecided_review(latest, &receipts) {
                    return Err(AgentError {
                        code: "review_pending".into(),
                        message: format!(
                            "session {session_id:?} waits for a review of {}: approve or reject it first",
                            review.tool
                        ),
                    });
                }
                messages = settled_calls(&latest.state, &receipts);
                turn_start += messages.len();
            }
        }
        messages.push(Message::user(input));
        let update = AgentUpdate {
            messages,
            turn_start: Some(turn_start),
            agent_mode: Some(options.agent_mode),
            output: Some(String::new()),
            loop_count: Some(0),
            strategy: Some(None),
            pending_review: Some(None),
            outbound_hold: Some(None),
            memory_worthy: Some(false),
            active_tool: Some(None),
            current_phase: Some(Phase::Planning),
            ..Default::default()
        };
        let sink = options.on_event.clone();
        let listener = move |e: &GraphEvent<'_, AgentEvent>| {
            if let Some(sink) = &sink {
                events::relay(e, sink.as_ref());
            }
        };
        if let Err(e) = self.env.db.record_input(session_id, input).await {
            warn(&options, format!("the message was not added to the session's transcript: {e}"));
        }
        let outcome = self.graph.invoke(update, &self.config(session_id, &options, &listener)).await?;
        self.finished(session_id, Agent::result(outcome), &options).await
    }

    /// The session's latest checkpoint.
    async fn latest(&self, session_id: &str) -> Result<Option<crate::graph::Checkpoint<AgentState>>, AgentError> {
        Ok(self.checkpointer.latest(session_id).await.map_err(|e| GraphError::Checkpoint(e.to_string()))?)
    }

    /// Records a finished run (its checkpoints are durable now, so its
    /// receipts are no longer needed).
    async fn finished(
        &self,
        session_id: &str,
        result: RunResult,
        options: &SendOptions,
    ) -> Result<RunResult, AgentError> {
        if let Err(e) = self.env.db.clear_receipts(session_id).await {
            warn(options, format!("the run's tool receipts were not cleared: {e}"));
        }
        self.record(session_id, &result, options).await;
        if result.status == RunStatus::Completed && self.env.settings.borrow().continuity_memory {
            self.continuity_after(session_id, options).await;
        }
        Ok(result)
    }

    /// Updates the continuity notes of every chapter an approved edit of
    /// the finished turn changed (a failure is a warning).
    async fn continuity_after(&self, session_id: &str, options: &SendOptions) {
        let Ok(Some(latest)) = self.latest(session_id).await else { return };
        let state = &latest.state;
        let facts = facts::derive(&state.messages, &self.env.tools);
        let mut sections: Vec<String> = Vec::new();
        for write in facts.writes.iter().filter(|w| w.at >= state.turn_start) {
            if let crate::tools::Subject::Section(id) = &write.subject {
                if !sections.contains(id) {
                    sections.push(id.clone());
                }
            }
        }
        for id in sections {
            match continuity::update(&self.env, &id, &options.cancel).await {
                Ok(done) => {
                    if let Some(sink) = &options.on_event {
                        sink(&AgentEvent::Info(Info::Continuity {
                            project_id: done.project_id,
                            section_id: done.section_id,
                            appended: done.appended.to_vec(),
                        }));
                    }
                }
                Err(continuity::UpdateError::Aborted) => return,
                Err(e) => warn(options, format!("the continuity notes were not updated: {e}")),
            }
        }
    }

    /// Appends what a chapter adds to its project's continuity notes (the
    /// person's request; also run after approved chapter edits).
    pub async fn update_continuity(&self, section_id: &str) -> Result<continuity::Updated, AgentError> {
        continuity::update(&self.env, section_id, &CancelToken::new()).await.map_err(|e| match e {
            continuity::UpdateError::Store(e) => store_error(e),
            continuity::UpdateError::Model(e) => {
                AgentError { code: e.code().into(), message: format!("the continuity notes were not updated: {e}") }
            }
            other => AgentError {
                code: "malformed_response".into(),
                message: format!("the continuity notes were not updated: {other}"),
            },
        })
    }

    /// A project's four continuity notes (created empty on first use).
    pub async fn continuity_notes(&self, project_id: &str) -> Result<Vec<crate::store::SessionArtifact>, AgentError> {
        self.env.db.project(project_id).await.map_err(store_error)?;
        continuity::notes(&self.env, project_id).await.map_err(store_error)
    }

    /// Keeps what the turn showed in the session's transcript (an aborted
    /// turn shows nothing and keeps nothing).
    async fn record(&self, session_id: &str, result: &RunResult, options: &SendOptions) {
        if result.status == RunStatus::Aborted {
            return;
        }
        if let Err(e) = self.env.db.record_output(session_id, &result.content, result.status.as_str()).await {
            warn(options, format!("the answer was not added to the session's transcript: {e}"));
        }
    }

    /// Answers the session's pending review and continues the run.
    pub async fn resume(
        &self,
        session_id: &str,
        decision: Decision,
        options: SendOptions,
    ) -> Result<RunResult, AgentError> {
        let _running = self.lock(session_id).await?;
        let sink = options.on_event.clone();
        let listener = move |e: &GraphEvent<'_, AgentEvent>| {
            if let Some(sink) = &sink {
                events::relay(e, sink.as_ref());
            }
        };
        let outcome = self
            .graph
            .resume(
                Some(serde_json::to_value(decision).unwrap_or_default()),
                &self.config(session_id, &options, &listener),
            )
            .await?;
        self.finished(session_id, Agent::result(outcome), &options).await
    }

    /// Continues a run that stopped before it finished (the tab closed or
    /// crashed mid-run, or it was aborted) at its last completed step; calls
    /// whose effects were recorded are not run again. A review still to be
    /// decided fails with `review_pending` (answer it with [`Agent::resume`]);
    /// a session with nothing unfinished fails with `nothing_to_resume`.
    pub async fn continue_run(&self, session_id: &str, options: SendOptions) -> Result<RunResult, AgentError> {
        let _running = self.lock(session_id).await?;
        if let RunState::Review { review } = self.stored_run_state(session_id).await? {
            return Err(AgentError {
                code: "review_pending".into(),
                message: format!("the run waits for a review of {}: approve or reject it", review.tool),
            });
        }
        let sink = options.on_event.clone();
        let listener = move |e: &GraphEvent<'_, AgentEvent>| {
            if let Some(sink) = &sink {
                events::relay(e, sink.as_ref());
            }
        };
        let outcome = self.graph.resume(None, &self.config(session_id, &options, &listener)).await?;
        self.finished(session_id, Agent::result(outcome), &options).await
    }

    /// Adds the person's words to the session's running turn: stored at once
    /// (durably, in the transcript) and given to the model before its next
    /// call, as a user message. Fails with `not_running` when no run works on
    /// the session (in any tab): then `send` is the way.
    pub async fn interject(&self, session_id: &str, text: &str) -> Result<(), AgentError> {
        if text.trim().is_empty() {
            return Err(AgentError { code: "invalid_argument".into(), message: "interject: the text is empty".into() });
        }
        if !crate::platform::is_locked(&self.lock_name(session_id)).await {
            return Err(AgentError {
                code: "not_running".into(),
                message: format!("no run is working on session {session_id:?}: send the message instead"),
            });
        }
        self.env.db.record_interjection(session_id, text).await.map_err(store_error)?;
        Ok(())
    }

    /// Whether the session is idle, waits for a review, has a run that
    /// stopped before it finished (see [`Agent::continue_run`]), or runs now
    /// (elsewhere: the run lock is held).
    pub async fn run_state(&self, session_id: &str) -> Result<RunState, AgentError> {
        if crate::platform::is_locked(&self.lock_name(session_id)).await {
            return Ok(RunState::Running);
        }
        self.stored_run_state(session_id).await
    }

    /// [`Agent::run_state`] from the checkpoints alone.
    async fn stored_run_state(&self, session_id: &str) -> Result<RunState, AgentError> {
        let Some(latest) = self.latest(session_id).await? else {
            return Ok(RunState::Idle);
        };
        let Some(next) = latest.next.clone() else {
            return Ok(RunState::Idle);
        };
        let receipts = self.env.db.receipts(session_id).await.map_err(store_error)?;
        Ok(match undecided_review(&latest, &receipts) {
            Some(review) => RunState::Review { review },
            None => RunState::Unfinished { node: next },
        })
    }

    /// Changes the settings (the fields `patch` names), stores them and
    /// uses them from the next call on; returns the new settings.
    pub async fn update_settings(&self, patch: &serde_json::Value) -> Result<AgentSettings, AgentError> {
        let settings = self.env.settings.borrow().merged(patch).map_err(|message| AgentError {
            code: "invalid_argument".into(),
            message: format!("settings: {message}"),
        })?;
        let stored = serde_json::to_value(&settings).unwrap_or_default();
        self.env
            .db
            .set_setting("agent", stored)
            .await
            .map_err(|e| AgentError { code: e.code().into(), message: e.to_string() })?;
        *self.env.settings.borrow_mut() = settings.clone();
        Ok(settings)
    }

    /// The review a session waits for, if any (also after a reload; not
    /// once it was decided, even if the tab closed right after).
    pub async fn pending_review(&self, session_id: &str) -> Result<Option<ReviewPayload>, AgentError> {
        Ok(match self.stored_run_state(session_id).await? {
            RunState::Review { review } => Some(review),
            _ => None,
        })
    }

    /// The session's state (messages, phase, ...), if it has one.
    pub async fn state(&self, session_id: &str) -> Result<Option<AgentState>, AgentError> {
        Ok(self
            .checkpointer
            .latest(session_id)
            .await
            .map_err(|e| GraphError::Checkpoint(e.to_string()))?
            .map(|c| c.state))
    }
}
