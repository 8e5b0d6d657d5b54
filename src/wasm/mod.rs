//! JavaScript bindings (wasm32 only). Bindings convert and delegate; the logic
//! lives in the pure modules. Errors become JS `Error`s in [`error`] only.

pub mod adit;
pub mod agent;
mod artifacts;
#[cfg(feature = "bench")]
mod bench;
mod convert;
mod error;
mod memories;
mod projects;
mod search;
mod sessions;

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_COMMON: &'static str = r#"
/**
 * Stable codes of the `Error`s this package throws (`err.code`). A native
 * test (`src/error_codes.rs`) checks this list against every code the Rust
 * errors can carry.
 */
export type AtelierErrorCode =
  | AditErrorCode
  | "invalid_argument"
  | "quota_exceeded" | "not_found" | "ambiguous" | "lifecycle" | "edit_failed" | "codec" | "storage"
  | "not_configured" | "upstream_unavailable" | "rate_limited" | "auth" | "context_too_long" | "bad_request"
  | "malformed_response" | "structured_output_refused" | "recursion_limit" | "invalid_graph" | "nothing_to_resume"
  | "unknown_route" | "no_such_checkpoint" | "invalid_state" | "busy" | "review_pending"
  | "conflict" | "reload_required" | "blocked" | "tool_loop" | "not_running" | "context_overflow" | "incomplete";
"#;

/// Runs when the module is instantiated: panics (which bad input must never
/// cause) are reported on the console with their message and location
/// instead of an opaque "unreachable". The release package is built with
/// `-Cpanic=immediate-abort` (wasm-pack.toml `[std]`): there a panic traps
/// at once, without the message machinery this hook would keep.
#[cfg(not(panic = "immediate-abort"))]
#[wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&JsValue::from_str(&format!("atelier-agent panicked (please report this): {info}")));
    }));
}
