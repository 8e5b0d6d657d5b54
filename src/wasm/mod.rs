//! JavaScript bindings (wasm32 only). Bindings convert and delegate; the logic
//! lives in the pure modules. Errors become JS `Error`s in [`error`] only.

pub mod adit;
pub mod agent;
mod artifacts;
#[cfg(feature = "bench")]
mod bench;
mod convert;
mod error;
mod host;
mod meaning;
mod memories;
mod projects;
mod search;
mod sessions;

use wasm_bindgen::prelude::*;

/// The `AditErrorCode` and `AtelierErrorCode` unions, written from the
/// Rust list of codes (`src/error.rs`).
#[wasm_bindgen(typescript_custom_section)]
const TS_ERROR_CODES: &'static str = crate::error::TS_ERROR_CODES;

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
