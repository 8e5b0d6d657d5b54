//! Reading a JSON object's fields by hand: a sub-model's structured answer
//! (a summary, continuity entries) and the checkpointed agent state with
//! the messages, calls and plans inside it. Derived decoders for the small
//! nested types cost several KB of `.wasm` each (the state's tree alone
//! compiled to 24.7 KB; BENCHMARKS.md, "Package size"); this reader is
//! written once.
//!
//! Null reads as absent, as serde's decoders read an `Option`.

use serde_json::Value;

/// A JSON object (anything else has no fields).
pub struct Fields<'a>(pub &'a Value);

impl<'a> Fields<'a> {
    /// The field `key`, or an error when `required` and absent.
    pub fn get(&self, key: &str, required: bool) -> Result<Option<&'a Value>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) if required => Err(format!("missing field `{key}`")),
            None | Some(Value::Null) => Ok(None),
            Some(found) => Ok(Some(found)),
        }
    }

    /// The field `key` (required; null counts as absent).
    pub fn need(&self, key: &str) -> Result<&'a Value, String> {
        Ok(self.get(key, true)?.unwrap_or(&Value::Null))
    }

    /// A string, if given.
    pub fn opt_text(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key, false)? {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    }

    /// A string ("" when absent, unless `required`).
    pub fn text(&self, key: &str, required: bool) -> Result<String, String> {
        self.get(key, required)?;
        Ok(self.opt_text(key)?.unwrap_or_default())
    }

    /// A whole number (0 when absent, unless `required`).
    pub fn count(&self, key: &str, required: bool) -> Result<u64, String> {
        match self.get(key, required)? {
            None => Ok(0),
            Some(found) => found.as_u64().ok_or_else(|| format!("`{key}` must be a whole number")),
        }
    }

    /// A number (required).
    pub fn float(&self, key: &str) -> Result<f64, String> {
        self.need(key)?.as_f64().ok_or_else(|| format!("`{key}` must be a number"))
    }

    /// A boolean (false when absent).
    pub fn flag(&self, key: &str) -> Result<bool, String> {
        match self.get(key, false)? {
            None => Ok(false),
            Some(found) => found.as_bool().ok_or_else(|| format!("`{key}` must be a boolean")),
        }
    }

    /// The field read with `read`, if given.
    pub fn opt<T>(&self, key: &str, read: impl Fn(&'a Value) -> Result<T, String>) -> Result<Option<T>, String> {
        self.get(key, false)?.map(read).transpose()
    }

    /// The items of an array, each read with `read` (empty when absent,
    /// unless `required`).
    pub fn each<T>(
        &self,
        key: &str,
        required: bool,
        read: impl Fn(&'a Value) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        let items = match self.get(key, required)? {
            None => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(format!("`{key}` must be an array")),
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            out.push(read(item)?);
        }
        Ok(out)
    }

    /// A list of strings (empty when absent, unless `required`).
    pub fn strings(&self, key: &str, required: bool) -> Result<Vec<String>, String> {
        self.each(key, required, |item| {
            item.as_str().map(str::to_owned).ok_or_else(|| format!("`{key}` must hold strings"))
        })
    }

    /// A list of objects, each as the strings of `fields` (empty when absent).
    pub fn rows(&self, key: &str, fields: &[&str]) -> Result<Vec<Vec<String>>, String> {
        self.each(key, false, |item| {
            let mut row = Vec::with_capacity(fields.len());
            for field in fields {
                row.push(Fields(item).text(field, false)?);
            }
            Ok(row)
        })
    }

    /// An object (required).
    pub fn object(&self, key: &str) -> Result<Fields<'a>, String> {
        match self.get(key, true)? {
            Some(found) if found.is_object() => Ok(Fields(found)),
            _ => Err(format!("`{key}` must be an object")),
        }
    }
}

/// The two strings of a row read with two fields.
pub fn pair(mut row: Vec<String>) -> (String, String) {
    let second = row.pop().unwrap_or_default();
    (row.pop().unwrap_or_default(), second)
}

/// `Deserialize` for `$ty` through [`Fields`]: `$read` takes the fields of
/// the JSON object and gives the value or what is wrong (one decoder a
/// type, far smaller than serde's derived visitor).
#[macro_export]
macro_rules! decode_by_hand {
    ($ty:ty, $read:expr) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<$ty, D::Error> {
                let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
                let read: fn(&$crate::json::Fields<'_>) -> std::result::Result<$ty, String> = $read;
                read(&$crate::json::Fields(&value)).map_err(serde::de::Error::custom)
            }
        }
    };
}
