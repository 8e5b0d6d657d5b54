//! A LangGraph-style state graph engine: typed state with per-field
//! reducers, async nodes returning partial updates, static and conditional
//! edges, compile-time checks, a recursion limit, cancellation between
//! steps, interrupts with resume, checkpoints after every step (history,
//! read, fork, pruning), and an event stream. Runtime-agnostic: it only
//! awaits what its nodes and checkpointer await.

mod builder;
mod checkpoint;
mod error;
mod event;
mod node;
mod run;
mod state;

pub use builder::StateGraph;
pub use checkpoint::{Checkpoint, CheckpointError, Checkpointer, MemoryCheckpointer, PrunePolicy};
pub use error::{GraphError, NodeError, Result};
pub use event::{GraphEvent, Listener};
pub use node::{Node, NodeContext, Router, END, START};
pub use run::{CompiledGraph, RunConfig, RunOutcome, RunStatus};
pub use state::GraphState;

#[cfg(test)]
mod tests;

#[cfg(any(test, feature = "bench"))]
pub mod workload;
