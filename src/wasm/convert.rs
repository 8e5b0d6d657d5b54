//! Conversions between JS values and Rust types, through JSON text (one `JSON.parse` or `JSON.stringify` per call).

use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use super::error;

/// Deepest nesting accepted from JS (a project export is about 4 levels).
const MAX_DEPTH: u32 = 64;
/// Most values in one argument (a large import of artifacts stays far below).
const MAX_NODES: u32 = 2_000_000;
/// Most characters of text in one argument (about 256 MiB of UTF-16).
const MAX_CHARS: f64 = 128.0 * 1024.0 * 1024.0;

#[wasm_bindgen(module = "/src/wasm/js/shape.js")]
extern "C" {
    /// Where `value` breaks the limits, or null (see `shape.js`).
    #[wasm_bindgen(js_name = shapeProblem)]
    fn shape_problem(value: &JsValue, max_depth: u32, max_nodes: u32, max_chars: f64) -> Option<String>;
}

/// Rust value → plain JS object/array (maps become objects, not `Map`s).
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    let text = crate::json::to_text(value).map_err(|e| error::invalid_argument("cannot convert result", e))?;
    js_sys::JSON::parse(&text)
}

/// JS value → Rust value, or an `invalid_argument` error naming `what`.
/// The value is checked first: a cyclic, very deep or huge value, or one
/// with a `__proto__` key, is refused before conversion walks it.
pub(crate) fn from_js<T: DeserializeOwned>(what: &str, value: JsValue) -> Result<T, JsValue> {
    crate::json::from_value(value_from_js(what, value)?).map_err(|e| error::invalid_argument(what, e))
}

/// JS value → JSON value (checked as [`from_js`] checks).
pub(crate) fn value_from_js(what: &str, value: JsValue) -> Result<serde_json::Value, JsValue> {
    if let Some(problem) = shape_problem(&value, MAX_DEPTH, MAX_NODES, MAX_CHARS) {
        return Err(error::invalid_argument(what, problem));
    }
    let text = if value.is_undefined() { "null".into() } else { String::from(js_sys::JSON::stringify(&value)?) };
    serde_json::from_str(&text).map_err(|e| error::invalid_argument(what, e))
}

/// A JS array → its items as JSON values (checked as [`from_js`] checks).
pub(crate) fn items_from_js(what: &str, value: JsValue) -> Result<Vec<serde_json::Value>, JsValue> {
    crate::json::items(value_from_js(what, value)?).map_err(|e| error::invalid_argument(what, e))
}
