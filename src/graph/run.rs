//! Running a compiled graph: one node at a time, a checkpoint after every
//! step, cancellation between steps, interrupts that pause the run, and
//! resuming at exactly the paused node.

use std::rc::Rc;

use serde_json::Value;

use super::checkpoint::{Checkpoint, Checkpointer};
use super::error::{GraphError, NodeError, Result};
use super::event::{GraphEvent, Listener};
use super::node::{Node, NodeContext, Router, START};
use super::state::GraphState;
use crate::cancel::CancelToken;
use crate::platform;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Target {
    Node(usize),
    End,
}

pub(crate) enum Edge<S> {
    Static(Target),
    Conditional { router: Router<S>, routes: Vec<(String, Target)> },
}

impl<S> Edge<S> {
    pub(crate) fn targets(&self) -> impl Iterator<Item = usize> + '_ {
        let list: Vec<Target> = match self {
            Edge::Static(t) => vec![*t],
            Edge::Conditional { routes, .. } => routes.iter().map(|(_, t)| *t).collect(),
        };
        list.into_iter().filter_map(|t| match t {
            Target::Node(i) => Some(i),
            Target::End => None,
        })
    }
}

/// Options of one run.
pub struct RunConfig<'a, S: GraphState> {
    /// The conversation this run belongs to.
    pub thread_id: &'a str,
    /// Most steps one run may take (default 25).
    pub recursion_limit: usize,
    pub cancel: CancelToken,
    pub checkpointer: Option<&'a dyn Checkpointer<S>>,
    pub events: Option<Listener<'a, S::Event>>,
    /// Called on every state loaded from a checkpoint before the run goes
    /// on (an application brings states written by its older versions up
    /// to date here).
    pub loaded: Option<&'a dyn Fn(&mut S)>,
}

impl<'a, S: GraphState> RunConfig<'a, S> {
    /// A run of `thread_id` with the defaults (no checkpointer, no events).
    pub fn new(thread_id: &'a str) -> RunConfig<'a, S> {
        RunConfig {
            thread_id,
            recursion_limit: 25,
            cancel: CancelToken::new(),
            checkpointer: None,
            events: None,
            loaded: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunStatus {
    Completed,
    /// Paused at `node`, waiting for a person; resume with a value.
    Interrupted {
        node: String,
        payload: Value,
    },
    /// Cancelled; the state is the last completed step's.
    Aborted,
}

impl RunStatus {
    /// "completed" | "interrupted" | "aborted".
    pub fn as_str(&self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Interrupted { .. } => "interrupted",
            RunStatus::Aborted => "aborted",
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome<S> {
    pub status: RunStatus,
    pub state: S,
    /// The last checkpoint written (when there is a checkpointer).
    pub checkpoint_id: Option<String>,
    /// Node steps this run took.
    pub steps: usize,
}

/// A graph ready to run.
pub struct CompiledGraph<S: GraphState> {
    nodes: Vec<(String, Rc<dyn Node<S>>)>,
    edges: Vec<Edge<S>>,
    entry: Edge<S>,
}

struct Position {
    step: u64,
    parent: Option<String>,
}

impl<S: GraphState> CompiledGraph<S> {
    pub(crate) fn new(nodes: Vec<(String, Rc<dyn Node<S>>)>, edges: Vec<Edge<S>>, entry: Edge<S>) -> CompiledGraph<S> {
        CompiledGraph { nodes, edges, entry }
    }

    /// Node names, in the order they were added.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|(n, _)| n.as_str())
    }

    fn route(&self, from: Option<usize>, edge: &Edge<S>, state: &S) -> Result<Target> {
        match edge {
            Edge::Static(t) => Ok(*t),
            Edge::Conditional { router, routes } => {
                let route = router(state);
                routes.iter().find(|(name, _)| *name == route).map(|(_, t)| *t).ok_or_else(|| {
                    GraphError::UnknownRoute {
                        node: from.map_or(START, |i| self.nodes[i].0.as_str()).to_owned(),
                        route,
                    }
                })
            }
        }
    }

    fn name(&self, target: Target) -> Option<String> {
        match target {
            Target::Node(i) => Some(self.nodes[i].0.clone()),
            Target::End => None,
        }
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|(n, _)| n == name)
    }

    /// Starts a new run of the thread with `input` applied to its state
    /// (the latest checkpoint's, or the default state for a new thread).
    pub async fn invoke(&self, input: S::Update, config: &RunConfig<'_, S>) -> Result<RunOutcome<S>> {
        let latest = match config.checkpointer {
            Some(cp) => cp.latest(config.thread_id).await?,
            None => None,
        };
        let (mut state, position) = match latest {
            Some(mut c) => {
                if let Some(loaded) = config.loaded {
                    loaded(&mut c.state);
                }
                (c.state, Position { step: c.step + 1, parent: Some(c.id) })
            }
            None => (S::default(), Position { step: 0, parent: None }),
        };
        state.apply(input);
        let first = self.route(None, &self.entry, &state)?;
        self.drive(state, first, position, None, config).await
    }

    /// Continues the thread's pending run (interrupted or aborted) at the
    /// node it stopped at; `value` answers a pending interrupt.
    pub async fn resume(&self, value: Option<Value>, config: &RunConfig<'_, S>) -> Result<RunOutcome<S>> {
        let cp = config.checkpointer.ok_or_else(|| GraphError::NothingToResume(config.thread_id.to_owned()))?;
        let mut latest = cp
            .latest(config.thread_id)
            .await?
            .ok_or_else(|| GraphError::NothingToResume(config.thread_id.to_owned()))?;
        if let Some(loaded) = config.loaded {
            loaded(&mut latest.state);
        }
        let next = latest.next.as_deref().ok_or_else(|| GraphError::NothingToResume(config.thread_id.to_owned()))?;
        let index = self.index_of(next).ok_or_else(|| GraphError::NothingToResume(config.thread_id.to_owned()))?;
        let position = Position { step: latest.step + 1, parent: Some(latest.id) };
        self.drive(latest.state, Target::Node(index), position, value, config).await
    }

    async fn save(
        &self,
        config: &RunConfig<'_, S>,
        position: &mut Position,
        state: &S,
        next: Target,
        interrupt: Option<Value>,
    ) -> Result<Option<String>> {
        let Some(cp) = config.checkpointer else {
            position.step += 1;
            return Ok(None);
        };
        let id = Checkpoint::<S>::id_for(position.step);
        let checkpoint = Checkpoint {
            id: id.clone(),
            thread_id: config.thread_id.to_owned(),
            parent_id: position.parent.replace(id.clone()),
            step: position.step,
            state: state.clone(),
            next: self.name(next),
            interrupt,
            created_at: platform::now_ms(),
        };
        cp.put(checkpoint).await?;
        position.step += 1;
        Ok(Some(id))
    }

    async fn drive(
        &self,
        state: S,
        next: Target,
        position: Position,
        resume: Option<Value>,
        config: &RunConfig<'_, S>,
    ) -> Result<RunOutcome<S>> {
        let outcome = self.drive_steps(state, next, position, resume, config).await;
        // Whatever the outcome, the run's checkpoints are durable before it returns.
        let flushed = match config.checkpointer {
            Some(cp) => cp.flush().await,
            None => Ok(()),
        };
        let outcome = outcome?;
        flushed?;
        Ok(outcome)
    }

    async fn drive_steps(
        &self,
        mut state: S,
        mut next: Target,
        mut position: Position,
        mut resume: Option<Value>,
        config: &RunConfig<'_, S>,
    ) -> Result<RunOutcome<S>> {
        let emit = |event: GraphEvent<'_, S::Event>| {
            if let Some(sink) = config.events {
                sink(&event);
            }
        };
        emit(GraphEvent::RunStart { thread_id: config.thread_id });
        // The run's starting point is durable before any node runs.
        let mut checkpoint_id =
            if resume.is_none() { self.save(config, &mut position, &state, next, None).await? } else { None };
        let mut trace: Vec<usize> = Vec::new();
        let finish = |status: RunStatus, state: S, checkpoint_id: Option<String>, steps: usize| {
            emit(GraphEvent::RunEnd { status: status.as_str() });
            Ok(RunOutcome { status, state, checkpoint_id, steps })
        };
        loop {
            let Target::Node(current) = next else {
                return finish(RunStatus::Completed, state, checkpoint_id, trace.len());
            };
            if config.cancel.is_cancelled() {
                return finish(RunStatus::Aborted, state, checkpoint_id, trace.len());
            }
            if trace.len() >= config.recursion_limit {
                return Err(GraphError::RecursionLimit { limit: config.recursion_limit, cycle: self.cycle(&trace) });
            }
            trace.push(current);
            let (name, node) = &self.nodes[current];
            emit(GraphEvent::NodeStart { node: name, step: position.step });
            let mut ctx = NodeContext::new(name, config, position.step, resume.take());
            match node.run(&state, &mut ctx).await {
                Ok(update) => {
                    state.apply(update);
                    next = self.route(Some(current), &self.edges[current], &state)?;
                    emit(GraphEvent::NodeEnd { node: name, step: position.step });
                    checkpoint_id = self.save(config, &mut position, &state, next, None).await?.or(checkpoint_id);
                }
                Err(NodeError::Interrupt(payload)) => {
                    // Durable: a reload finds the pending review in the latest checkpoint.
                    checkpoint_id = self
                        .save(config, &mut position, &state, Target::Node(current), Some(payload.clone()))
                        .await?
                        .or(checkpoint_id);
                    return finish(
                        RunStatus::Interrupted { node: name.clone(), payload },
                        state,
                        checkpoint_id,
                        trace.len(),
                    );
                }
                Err(NodeError::Aborted) => return finish(RunStatus::Aborted, state, checkpoint_id, trace.len()),
                Err(NodeError::Failed { code, message }) => {
                    emit(GraphEvent::RunEnd { status: "failed" });
                    return Err(GraphError::Node { node: name.clone(), code, message });
                }
            }
        }
    }

    /// The repeating part of the last steps (for the recursion-limit error).
    fn cycle(&self, trace: &[usize]) -> Vec<String> {
        let n = trace.len();
        let period = (1..=n / 2).find(|&p| trace[n - p..] == trace[n - 2 * p..n - p]).unwrap_or(n.min(6));
        trace[n - period..].iter().map(|&i| self.nodes[i].0.clone()).collect()
    }

    /// The thread's checkpoints, newest first.
    pub async fn history(&self, checkpointer: &dyn Checkpointer<S>, thread: &str) -> Result<Vec<Checkpoint<S>>> {
        Ok(checkpointer.history(thread).await?)
    }

    /// The state at one checkpoint.
    pub async fn state_at(&self, checkpointer: &dyn Checkpointer<S>, thread: &str, id: &str) -> Result<S> {
        checkpointer
            .get(thread, id)
            .await?
            .map(|c| c.state)
            .ok_or_else(|| GraphError::NoSuchCheckpoint { thread: thread.to_owned(), id: id.to_owned() })
    }

    /// Starts thread `into` from checkpoint `id` of `thread` (the original
    /// is left as it is); the new thread can be invoked or resumed.
    pub async fn fork(
        &self,
        checkpointer: &dyn Checkpointer<S>,
        thread: &str,
        id: &str,
        into: &str,
    ) -> Result<Checkpoint<S>> {
        let source = checkpointer
            .get(thread, id)
            .await?
            .ok_or_else(|| GraphError::NoSuchCheckpoint { thread: thread.to_owned(), id: id.to_owned() })?;
        let forked = Checkpoint {
            thread_id: into.to_owned(),
            parent_id: Some(format!("{thread}/{id}")),
            created_at: platform::now_ms(),
            ..source
        };
        checkpointer.put(forked.clone()).await?;
        Ok(forked)
    }
}
