//! atelier-agent: a local-first LLM agent that runs in the browser.
//!
//! The crate is a pure core that compiles and is tested natively, plus platform
//! adapters and the JS bindings in [`wasm`] (only on `wasm32-unknown-unknown`).
//!
//! * [`adit`]: the deterministic text edit engine (SEARCH/REPLACE blocks and
//!   structured edits, applied atomically through a progressive matching ladder).
//! * [`llm`]: OpenAI-compatible types, the `ChatModel` abstraction, SSE
//!   streaming, retries and structured output (the proxy client on wasm).
//! * [`mcp`]: the Model Context Protocol client (the servers the proxy relays).
//! * [`cancel`]: cooperative cancellation; [`platform`]: clock, randomness
//!   and sleep shims for the browser and native builds.

pub mod adit;
pub mod agent;
pub mod cancel;
pub mod context;
pub mod error;
pub mod graph;
pub mod json;
pub mod llm;
pub mod mcp;
pub mod platform;
pub mod search;
pub mod snippet;
pub mod store;
pub mod tools;

/// The scripted model and web backends that tests and benchmarks run the
/// agent on (feature `testing`; not part of the package).
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    pub use crate::llm::{ScriptedModel, Step};
    pub use crate::tools::ScriptedWeb;
}

#[cfg(test)]
mod boundary;
#[cfg(test)]
mod error_codes;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub mod wasm;
