//! JavaScript bindings (wasm32 only). Bindings convert and delegate; the logic
//! lives in the pure modules. Errors become JS `Error`s in [`error`] only.

pub mod adit;
#[cfg(feature = "bench")]
mod bench;
mod convert;
mod error;

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_COMMON: &'static str = r#"
/** Stable codes of the `Error`s this package throws (`err.code`). */
export type AtelierErrorCode = AditErrorCode | "invalid_argument";
"#;
