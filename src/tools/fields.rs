//! Reading a call's arguments into a tool's own type: one reader for every
//! tool, with one rule for the names models also use for a field (the
//! first of `names` present wins) and one wording for what is wrong. Each
//! tool's [`Tool::parse`] reads its fields with it, once per call.
//!
//! Written by hand rather than derived: serde's derived visitor costs about
//! 1 KB of `.wasm` per argument type (twenty of them), this reader its few
//! functions once (BENCHMARKS.md, "Package size").
//!
//! [`Tool::parse`]: super::Tool::parse

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::ToolError;

/// A call's arguments (a JSON object; none read as `{}`).
pub struct Fields<'a> {
    tool: &'a str,
    map: Option<&'a Map<String, Value>>,
}

impl<'a> Fields<'a> {
    /// The arguments `args` of a call of `tool`.
    pub fn of(tool: &'a str, args: &'a Value) -> Result<Fields<'a>, ToolError> {
        match args {
            Value::Object(map) => Ok(Fields { tool, map: Some(map) }),
            Value::Null => Ok(Fields { tool, map: None }),
            _ => Err(Fields { tool, map: None }.invalid("the arguments must be a JSON object")),
        }
    }

    /// The error for arguments that are wrong in the way `message` says.
    pub fn invalid(&self, message: impl Into<String>) -> ToolError {
        ToolError::InvalidArguments { tool: self.tool.to_owned(), message: message.into() }
    }

    /// The value of the first of `names` given (null counts as not given).
    fn get(&self, names: &[&str]) -> Option<&'a Value> {
        let map = self.map?;
        names.iter().find_map(|n| map.get(*n)).filter(|v| !v.is_null())
    }

    /// A required string.
    pub fn text(&self, names: &[&str]) -> Result<String, ToolError> {
        self.opt_text(names)?.ok_or_else(|| self.invalid(format!("missing field `{}`", names[0])))
    }

    /// An optional string.
    pub fn opt_text(&self, names: &[&str]) -> Result<Option<String>, ToolError> {
        match self.get(names) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.invalid(format!("`{}` must be a string", names[0]))),
        }
    }

    /// An optional number.
    pub fn number(&self, name: &str) -> Result<Option<f64>, ToolError> {
        match self.get(&[name]) {
            None => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| self.invalid(format!("`{name}` must be a number"))),
        }
    }

    /// An optional boolean (`false` when not given).
    pub fn flag(&self, name: &str) -> Result<bool, ToolError> {
        match self.get(&[name]) {
            None => Ok(false),
            Some(v) => v.as_bool().ok_or_else(|| self.invalid(format!("`{name}` must be true or false"))),
        }
    }

    /// An optional list of objects, each read as `Fields`.
    pub fn objects(&self, name: &str) -> Result<Vec<Fields<'a>>, ToolError> {
        let items = match self.get(&[name]) {
            None => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(self.invalid(format!("`{name}` must be an array"))),
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Value::Object(map) => out.push(Fields { tool: self.tool, map: Some(map) }),
                _ => return Err(self.invalid(format!("each item of `{name}` must be an object"))),
            }
        }
        Ok(out)
    }

    /// An optional value of a type the package decodes anyway (edits, a
    /// lifecycle, a list of strings).
    pub fn value<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, ToolError> {
        match self.get(&[name]) {
            None => Ok(None),
            Some(v) => crate::json::from_value(v.clone()).map(Some).map_err(|e| self.invalid(format!("`{name}`: {e}"))),
        }
    }
}
