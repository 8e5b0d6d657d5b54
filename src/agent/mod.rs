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
//!
//! One job per file: [`env`] (what the nodes share, approval and the call
//! context), [`wiring`] (the graph), [`turn`] (running a turn), [`call`]
//! (a call resolved once, and its answer: words and record),
//! [`execute`] (running a call exactly once, with receipts), [`legacy`]
//! (checkpoints from before call records), `nodes/` (one node topic per
//! file), `delegate/` (the `delegate` tool), [`servers`] (the relayed MCP
//! servers as `mcpServers()` reports them), and the rules: facts,
//! completion, loop guard, outbound, compression, continuity.

mod call;
mod completion;
pub mod compress;
mod consent;
pub mod continuity;
pub mod delegate;
mod env;
mod error;
mod events;
mod execute;
pub mod facts;
mod legacy;
mod loop_guard;
mod nodes;
pub mod outbound;
mod prompts;
mod review;
mod servers;
mod settings;
mod state;
mod strategy;
mod turn;
mod wiring;

#[cfg(test)]
mod tests;

use std::rc::Rc;

use serde::Serialize;

pub use consent::{ApprovalPolicy, Consent, PolicyCall, Verdict};
pub use env::AgentEnv;
pub use error::AgentError;
pub use events::{AgentEvent, ArtifactChange, EventListener, Info, Phase, Rule};
pub use nodes::{fallback_strategy, render_call};
pub use review::{Decision, PendingReview, ReviewPayload};
pub use servers::{McpServerInfo, McpToolInfo};
pub use settings::{AgentSettings, CompressionSettings, McpServerSettings, WindowSource, DEFAULT_WINDOW};
pub use state::{AgentState, AgentUpdate, Hold};
pub use strategy::Strategy;
pub use turn::{RunResult, RunStatus, SendOptions};

use crate::cancel::CancelToken;
use crate::error::ErrorCode;
use crate::graph::{Checkpoint, Checkpointer, CompiledGraph};

/// The assistant.
pub struct Agent {
    env: Rc<AgentEnv>,
    graph: CompiledGraph<AgentState>,
    checkpointer: Rc<dyn Checkpointer<AgentState>>,
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

impl Agent {
    /// An agent over `env`, checkpointing to `checkpointer`. The agent's
    /// own tool, `delegate`, joins the registry.
    pub fn new(mut env: AgentEnv, checkpointer: Rc<dyn Checkpointer<AgentState>>) -> Agent {
        env.tools.register(Rc::new(delegate::DelegateTool));
        let env = Rc::new(env);
        let graph = wiring::build(&env);
        Agent { env, graph, checkpointer }
    }

    /// An agent with `added` tools besides the registry's and `delegate`
    /// (the host's, an MCP server's): `invalid_argument` when one's name is
    /// not `[A-Za-z0-9_-]{1,64}` or is taken.
    pub fn with_tools(
        mut env: AgentEnv,
        checkpointer: Rc<dyn Checkpointer<AgentState>>,
        added: Vec<Rc<dyn crate::tools::AnyTool>>,
    ) -> Result<Agent, AgentError> {
        env.tools.register(Rc::new(delegate::DelegateTool));
        for tool in added {
            env.tools.add(tool).map_err(|e| AgentError::new(ErrorCode::InvalidArgument, e))?;
        }
        Ok(Agent::new(env, checkpointer))
    }

    /// The shared environment (settings, database).
    pub fn env(&self) -> &Rc<AgentEnv> {
        &self.env
    }

    /// The session's latest checkpoint (a state written before call
    /// records back-filled, see `legacy`).
    async fn latest(&self, session_id: &str) -> Result<Option<Checkpoint<AgentState>>, AgentError> {
        let mut latest = self.checkpointer.latest(session_id).await?;
        if let Some(latest) = &mut latest {
            legacy::backfill(&mut latest.state, &self.env.tools);
        }
        Ok(latest)
    }

    /// Node names of the graph.
    pub fn node_names(&self) -> Vec<String> {
        self.graph.node_names().map(str::to_owned).collect()
    }

    /// Appends what a chapter adds to its project's continuity notes (the
    /// person's request; also run after approved chapter edits).
    pub async fn update_continuity(&self, section_id: &str) -> Result<continuity::Updated, AgentError> {
        continuity::update(&self.env, section_id, &CancelToken::new()).await.map_err(|e| match e {
            continuity::UpdateError::Store(e) => e.into(),
            continuity::UpdateError::Model(e) => {
                AgentError::new(e.code(), format!("the continuity notes were not updated: {e}"))
            }
            other => {
                AgentError::new(ErrorCode::MalformedResponse, format!("the continuity notes were not updated: {other}"))
            }
        })
    }

    /// A project's four continuity notes (created empty on first use).
    pub async fn continuity_notes(&self, project_id: &str) -> Result<Vec<crate::store::SessionArtifact>, AgentError> {
        self.env.db.project(project_id).await?;
        Ok(continuity::notes(&self.env, project_id).await?)
    }

    /// Adds the person's words to the session's running turn: stored at once
    /// (durably, in the transcript) and given to the model before its next
    /// call, as a user message. Fails with `not_running` when no run works on
    /// the session (in any tab): then `send` is the way.
    pub async fn interject(&self, session_id: &str, text: &str) -> Result<(), AgentError> {
        if text.trim().is_empty() {
            return Err(AgentError::new(ErrorCode::InvalidArgument, "interject: the text is empty"));
        }
        if !crate::platform::is_locked(&self.lock_name(session_id)).await {
            return Err(AgentError::new(
                ErrorCode::NotRunning,
                format!("no run is working on session {session_id:?}: send the message instead"),
            ));
        }
        self.env.db.record_interjection(session_id, text).await?;
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
        let receipts = self.env.db.receipts(session_id).await?;
        Ok(match turn::undecided_review(&latest, &receipts) {
            Some(review) => RunState::Review { review },
            None => RunState::Unfinished { node: next },
        })
    }

    /// Changes the settings (the fields `patch` names), stores them and
    /// uses them from the next call on; returns the new settings.
    pub async fn update_settings(&self, patch: &serde_json::Value) -> Result<AgentSettings, AgentError> {
        let settings = self
            .env
            .settings
            .borrow()
            .merged(patch)
            .map_err(|message| AgentError::new(ErrorCode::InvalidArgument, format!("settings: {message}")))?;
        let stored = serde_json::to_value(&settings).unwrap_or_default();
        self.env.db.set_setting("agent", stored).await?;
        let servers_switched = self.env.settings.borrow().mcp != settings.mcp;
        *self.env.settings.borrow_mut() = settings.clone();
        if let Some(servers) = self.env.mcp.as_ref().filter(|_| servers_switched) {
            // A server turned on is contacted at the next check; a tool
            // turned off leaves the next request's tools.
            servers.stale();
        }
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

    /// The session's state (messages, call records, ...), if it has one.
    pub async fn state(&self, session_id: &str) -> Result<Option<AgentState>, AgentError> {
        Ok(self.latest(session_id).await?.map(|c| c.state))
    }
}
