//! Running a turn: `send` (with the calls a cut-off run left open answered
//! first), `resume` after a review, `continue_run` after a closed tab, and
//! what happens when a run returns (receipts cleared, the transcript, the
//! continuity notes).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::call::{Answer, Answers};
use super::error::AgentError;
use super::events::{self, AgentEvent, EventListener, Info};
use super::execute::replayed;
use super::review::{Decision, ReviewPayload};
use super::state::{AgentState, AgentUpdate};
use super::strategy::Strategy;
use super::{continuity, facts, Agent, RunState};
use crate::cancel::CancelToken;
use crate::error::ErrorCode;
use crate::graph::{Checkpoint, GraphEvent, RunConfig};
use crate::llm::Message;
use crate::store::Receipt;
use crate::tools::{NotRun, Outcome};

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

/// The review the latest checkpoint waits on, unless its receipt shows it
/// was decided.
pub(super) fn undecided_review(
    latest: &Checkpoint<AgentState>,
    receipts: &HashMap<String, Receipt>,
) -> Option<ReviewPayload> {
    latest.interrupt.as_ref()?;
    let review = latest.state.pending_review.as_ref()?;
    (!receipts.contains_key(&latest.state.call_key(&review.call))).then(|| review.payload.clone())
}

impl Agent {
    fn config<'a>(
        &'a self,
        session_id: &'a str,
        options: &SendOptions,
        listener: &'a dyn Fn(&GraphEvent<'_, AgentEvent>),
        loaded: &'a dyn Fn(&mut AgentState),
    ) -> RunConfig<'a, AgentState> {
        RunConfig {
            thread_id: session_id,
            recursion_limit: self.env.settings.borrow().recursion_limit,
            cancel: options.cancel.clone(),
            checkpointer: Some(self.checkpointer.as_ref()),
            events: Some(listener),
            loaded: Some(loaded),
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

    pub(super) fn lock_name(&self, session_id: &str) -> String {
        format!("atelier-agent/run/{}/{session_id}", self.env.scope)
    }

    /// Takes the session's run lock, or fails with `busy`.
    async fn lock(&self, session_id: &str) -> Result<crate::platform::Lock, AgentError> {
        let name = self.lock_name(session_id);
        crate::platform::try_lock(&name).await.ok_or_else(|| {
            AgentError::new(
                ErrorCode::Busy,
                format!(
                    "session {session_id:?} is running in another tab or call; wait for it to finish, or use another \
                     session"
                ),
            )
        })
    }

    /// Runs one turn of `session_id` with the person's `input`. Only one run
    /// per session at a time, across tabs: a second one fails with `busy`.
    pub async fn send(&self, session_id: &str, input: &str, options: SendOptions) -> Result<RunResult, AgentError> {
        let _running = self.lock(session_id).await?;
        let latest = self.latest(session_id).await?;
        let mut answers = Answers::at(latest.as_ref().map_or(0, |l| l.state.messages.len()));
        if let Some(latest) = latest.as_ref().filter(|l| l.next.is_some()) {
            // An unfinished run (a review, a crash, an abort): a review
            // still to be decided blocks the new turn; otherwise every call
            // left without a result is answered from its receipt or as not
            // run, so the conversation stays well-formed.
            let receipts = self.env.db.receipts(session_id).await?;
            if let Some(review) = undecided_review(latest, &receipts) {
                return Err(AgentError::new(
                    ErrorCode::ReviewPending,
                    format!("session {session_id:?} waits for a review of {}: approve or reject it first", review.tool),
                ));
            }
            for call in latest.state.pending_calls() {
                let call = self.env.resolve(&latest.state, call);
                answers.push(match receipts.get(&call.key) {
                    Some(receipt) => replayed(&call, receipt),
                    None => Answer::new(
                        &call.call.id,
                        "Not run: the turn ended before this call ran.",
                        call.record(Outcome::NotRun(NotRun::TurnEnded)),
                    ),
                });
            }
        }
        self.learn_window().await;
        let turn_start = answers.push_message(Message::user(input));
        let update = AgentUpdate {
            messages: answers.messages,
            records: answers.records,
            turn_start: Some(turn_start),
            agent_mode: Some(options.agent_mode),
            output: Some(String::new()),
            strategy: Some(None),
            pending_review: Some(None),
            hold: Some(None),
            memory_worthy: Some(false),
            ..Default::default()
        };
        if let Err(e) = self.env.db.record_input(session_id, input).await {
            warn(&options, format!("the message was not added to the session's transcript: {e}"));
        }
        self.run(session_id, Start::Invoke(update), options).await
    }

    /// With `contextWindow: "auto"`, the window the proxy reports for the
    /// main model (what its server really processes: Ollama's `num_ctx`,
    /// llama.cpp's slot size...), asked at each turn's start; kept as it was
    /// when the proxy cannot tell.
    async fn learn_window(&self) {
        let (source, model) = {
            let settings = self.env.settings.borrow();
            (settings.context_window_source, settings.main_model.clone())
        };
        if source == super::WindowSource::Auto {
            if let Some(window) = self.env.model.context_window(&model).await.filter(|w| *w >= 512) {
                self.env.settings.borrow_mut().context_window = window;
            }
        }
    }

    /// Records a finished run (its checkpoints are durable now, so its
    /// receipts are no longer needed). An aborted run keeps them: its last
    /// step was not checkpointed, and a call it started must read as
    /// "outcome unknown" to the run that continues it (or the next turn),
    /// never run again.
    async fn finished(
        &self,
        session_id: &str,
        result: RunResult,
        options: &SendOptions,
    ) -> Result<RunResult, AgentError> {
        if result.status != RunStatus::Aborted {
            if let Err(e) = self.env.db.clear_receipts(session_id).await {
                warn(options, format!("the run's tool receipts were not cleared: {e}"));
            }
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
        let facts = facts::derive(&state.messages, &state.records);
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
        self.run(session_id, Start::Resume(Some(decision.to_value())), options).await
    }

    /// Continues a run that stopped before it finished (the tab closed or
    /// crashed mid-run, or it was aborted) at its last completed step; calls
    /// whose effects were recorded are not run again. A review still to be
    /// decided fails with `review_pending` (answer it with [`Agent::resume`]);
    /// a session with nothing unfinished fails with `nothing_to_resume`.
    pub async fn continue_run(&self, session_id: &str, options: SendOptions) -> Result<RunResult, AgentError> {
        let _running = self.lock(session_id).await?;
        if let RunState::Review { review } = self.stored_run_state(session_id).await? {
            return Err(AgentError::new(
                ErrorCode::ReviewPending,
                format!("the run waits for a review of {}: approve or reject it", review.tool),
            ));
        }
        self.run(session_id, Start::Resume(None), options).await
    }

    /// Runs the graph on the session (a new turn, or the latest checkpoint's
    /// run resumed) and records how it finished.
    async fn run(&self, session_id: &str, start: Start, options: SendOptions) -> Result<RunResult, AgentError> {
        let sink = options.on_event.clone();
        let listener = move |e: &GraphEvent<'_, AgentEvent>| {
            if let Some(sink) = &sink {
                events::relay(e, sink.as_ref());
            }
        };
        let loaded = |state: &mut AgentState| super::legacy::backfill(state, &self.env.tools);
        let config = self.config(session_id, &options, &listener, &loaded);
        let outcome = match start {
            Start::Invoke(update) => self.graph.invoke(update, &config).await?,
            Start::Resume(value) => {
                // The pending call may be an MCP server's (after a reload
                // its tools are not known yet).
                self.env.offer_mcp_tools(&options.cancel).await;
                self.graph.resume(value, &config).await?
            }
        };
        self.finished(session_id, Agent::result(outcome), &options).await
    }
}

/// How a run starts.
enum Start {
    /// A new turn with this input.
    Invoke(AgentUpdate),
    /// The latest checkpoint's run goes on (with the answer to its review).
    Resume(Option<serde_json::Value>),
}
