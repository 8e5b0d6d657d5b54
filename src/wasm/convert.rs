//! Conversions between JS values and Rust types (serde-wasm-bindgen).

use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::JsValue;

use super::error;

/// Rust value → plain JS object/array (maps become objects, not `Map`s).
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| error::invalid_argument("cannot convert result", e))
}

/// JS value → Rust value, or an `invalid_argument` error naming `what`.
pub(crate) fn from_js<T: DeserializeOwned>(what: &str, value: JsValue) -> Result<T, JsValue> {
    serde_wasm_bindgen::from_value(value).map_err(|e| error::invalid_argument(what, e))
}
