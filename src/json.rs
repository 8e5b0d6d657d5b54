//! JSON text for typed values, always through `serde_json::Value`: every
//! type then has one derived decoder and one encoder in the package (from
//! and to `Value`, which the store and the checkpoints need anyway) instead
//! of a second pair for text. The extra step costs an allocation per node,
//! nothing next to the model calls and IndexedDB writes around it.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// `value` as compact JSON text.
pub fn to_text<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    serde_json::to_value(value).map(|v| v.to_string())
}

/// A typed value from JSON text.
pub fn from_text<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    serde_json::from_str::<Value>(text).and_then(serde_json::from_value)
}

/// The items of a JSON array (decoding them into `Value` a second time, as
/// `from_text::<Vec<Value>>` would, copies every node).
pub fn items(value: Value) -> serde_json::Result<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(serde::de::Error::custom("expected an array")),
    }
}
