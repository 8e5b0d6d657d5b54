//! What a graph is made of: nodes (async steps returning partial updates),
//! routers (conditional edges) and the two fixed ends.

use std::rc::Rc;

use async_trait::async_trait;

use serde_json::Value;

use super::error::NodeError;
use super::event::{GraphEvent, Listener};
use super::run::RunConfig;
use super::state::GraphState;
use crate::cancel::CancelToken;

/// The entry of every graph.
pub const START: &str = "__start__";
/// Where a run finishes.
pub const END: &str = "__end__";

/// One step of work: reads the state, returns a partial update.
#[async_trait(?Send)]
pub trait Node<S: GraphState> {
    async fn run(&self, state: &S, ctx: &mut NodeContext<'_, S::Event>) -> std::result::Result<S::Update, NodeError>;
}

/// Chooses the next node from the state (returns a node name or [`END`]).
pub type Router<S> = Rc<dyn Fn(&S) -> String>;

/// What nodes see of the run (`E`: the events they report).
pub struct NodeContext<'a, E> {
    /// The running node's name.
    pub node: &'a str,
    pub thread_id: &'a str,
    pub step: u64,
    pub cancel: &'a CancelToken,
    resume: Option<Value>,
    events: Option<Listener<'a, E>>,
}

impl<'a, E> NodeContext<'a, E> {
    pub(super) fn new<'c: 'a, S: GraphState<Event = E>>(
        node: &'a str,
        config: &'a RunConfig<'c, S>,
        step: u64,
        resume: Option<Value>,
    ) -> Self {
        NodeContext { node, thread_id: config.thread_id, step, cancel: &config.cancel, resume, events: config.events }
    }
}

impl<'a, E> NodeContext<'a, E> {
    /// A context outside any run (tests of a node's helpers): no events.
    #[cfg(test)]
    pub fn detached(thread_id: &'a str, cancel: &'a CancelToken) -> Self {
        NodeContext { node: "detached", thread_id, step: 0, cancel, resume: None, events: None }
    }
}

impl<E> NodeContext<'_, E> {
    /// Pauses the run for a person with `payload`; when the run is resumed
    /// the node runs again and this returns the resume value.
    pub fn interrupt(&mut self, payload: Value) -> std::result::Result<Value, NodeError> {
        self.resume.take().ok_or(NodeError::Interrupt(payload))
    }

    /// Reports `event` to the run's listener.
    pub fn emit(&self, event: E) {
        if let Some(sink) = self.events {
            sink(&GraphEvent::Node { node: self.node, event });
        }
    }
}
