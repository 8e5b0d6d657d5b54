//! Events a run emits as it goes: for progress displays and token streaming.

use serde::Serialize;
use serde_json::Value;

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum GraphEvent {
    RunStart {
        thread_id: String,
    },
    NodeStart {
        node: String,
        step: u64,
    },
    NodeEnd {
        node: String,
        step: u64,
    },
    /// The update a node returned (as JSON).
    StateUpdate {
        node: String,
        update: Value,
    },
    /// A piece of model output streamed by a node.
    Token {
        node: String,
        text: String,
    },
    /// Anything else a node wants to report.
    Custom {
        node: String,
        name: String,
        data: Value,
    },
    RunEnd {
        status: String,
    },
}
