//! atelier-agent: a local-first LLM agent that runs in the browser.
//!
//! The crate is a pure core that compiles and is tested natively, plus platform
//! adapters and the JS bindings in [`wasm`] (only on `wasm32-unknown-unknown`).
//!
//! * [`adit`]: the deterministic text edit engine (SEARCH/REPLACE blocks and
//!   structured edits, applied atomically through a progressive matching ladder).

pub mod adit;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub mod wasm;
