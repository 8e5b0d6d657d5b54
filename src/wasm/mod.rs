//! JavaScript bindings (wasm32 only). Bindings convert and delegate; the logic
//! lives in the pure modules. Errors become JS `Error`s in [`error`] only.

pub mod adit;
pub mod agent;
#[cfg(feature = "bench")]
mod bench;
mod convert;
mod error;

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_COMMON: &'static str = r#"
/** Stable codes of the `Error`s this package throws (`err.code`). */
export type AtelierErrorCode =
  | AditErrorCode
  | "invalid_argument"
  | "quota_exceeded" | "not_found" | "ambiguous" | "lifecycle" | "edit_failed" | "codec" | "import" | "storage"
  | "not_configured" | "upstream_unavailable" | "rate_limited" | "auth" | "context_too_long" | "bad_request"
  | "malformed_response" | "structured_output_refused" | "recursion_limit" | "invalid_graph" | "nothing_to_resume";
"#;
