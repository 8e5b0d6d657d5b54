//! Events a run emits as it goes, for progress displays: the engine's own
//! (run and node boundaries) and the typed events its nodes report.

/// Something that happened during a run. Borrowed: a listener that keeps
/// one copies what it needs.
#[derive(Debug, Clone, PartialEq)]
pub enum GraphEvent<'a, E> {
    RunStart {
        thread_id: &'a str,
    },
    NodeStart {
        node: &'a str,
        step: u64,
    },
    NodeEnd {
        node: &'a str,
        step: u64,
    },
    /// What a node reported (`NodeContext::emit`).
    Node {
        node: &'a str,
        event: E,
    },
    /// "completed" | "interrupted" | "aborted" | "failed".
    RunEnd {
        status: &'static str,
    },
}

/// A run's event listener.
pub type Listener<'a, E> = &'a dyn Fn(&GraphEvent<'_, E>);
