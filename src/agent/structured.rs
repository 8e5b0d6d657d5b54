//! The fields of a sub-model's structured answer (a summary, continuity
//! entries), read by hand from its JSON: derived decoders for the small
//! nested types of those answers cost several KB of `.wasm` each
//! (BENCHMARKS.md, "Package size"); this reader is written once.

use serde_json::Value;

/// A JSON object of a structured answer.
pub struct Fields<'a>(pub &'a Value);

impl<'a> Fields<'a> {
    fn get(&self, key: &str, required: bool) -> Result<Option<&'a Value>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) if required => Err(format!("missing field `{key}`")),
            None | Some(Value::Null) => Ok(None),
            Some(found) => Ok(Some(found)),
        }
    }

    /// A string ("" when absent, unless `required`).
    pub fn text(&self, key: &str, required: bool) -> Result<String, String> {
        match self.get(key, required)? {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    }

    fn list(&self, key: &str, required: bool) -> Result<&'a [Value], String> {
        match self.get(key, required)? {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(format!("`{key}` must be an array")),
        }
    }

    /// A list of strings (empty when absent, unless `required`).
    pub fn strings(&self, key: &str, required: bool) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for item in self.list(key, required)? {
            out.push(item.as_str().ok_or_else(|| format!("`{key}` must hold strings"))?.to_owned());
        }
        Ok(out)
    }

    /// A list of objects, each as the strings of `fields` (empty when absent).
    pub fn rows(&self, key: &str, fields: &[&str]) -> Result<Vec<Vec<String>>, String> {
        let mut out = Vec::new();
        for item in self.list(key, false)? {
            let mut row = Vec::with_capacity(fields.len());
            for field in fields {
                row.push(Fields(item).text(field, false)?);
            }
            out.push(row);
        }
        Ok(out)
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
