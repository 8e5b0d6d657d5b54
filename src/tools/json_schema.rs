//! A JSON Schema checker sized for tool arguments: the keywords that real
//! tool schemas (hand-written, or made by zod, pydantic, TypeBox) use.
//!
//! Checked: `type` (one or a list; `integer` is a whole number), `enum`,
//! `const`, `nullable` (OpenAPI); strings' `minLength`/`maxLength` (in
//! characters); numbers' `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` (numbers); arrays' `items` (one schema, or a list for
//! the leading items), `minItems`, `maxItems`; objects' `properties`,
//! `required`, `additionalProperties` (`false` or a schema); `anyOf`,
//! `oneOf`, `allOf`, `not`; and `$ref` to a place in the same schema
//! (`#/$defs/…`, `#/definitions/…`, `#`). Any other keyword (`pattern`,
//! `format`, `uniqueItems`, `patternProperties`, a remote `$ref`, ...) is
//! accepted unchecked: a schema is never a reason for the agent to fail,
//! and the tool itself sees the arguments.

use serde_json::Value;

/// Deepest nesting of schemas followed (a `$ref` cycle stops here).
const MAX_DEPTH: usize = 64;

/// Most schemas visited for one check: combinators over a `$ref` cycle
/// (`{"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}`) would otherwise branch at
/// every level down to `MAX_DEPTH`, 2^32 visits from a schema of 40 bytes.
/// What is left unvisited is accepted, as an unknown keyword is.
const MAX_STEPS: usize = 20_000;

/// Where `value` breaks `schema`, in words for the model ("`path`: what
/// was expected"), or `None` when it fits.
pub fn violation(schema: &Value, value: &Value) -> Option<String> {
    Check { root: schema, steps: std::cell::Cell::new(MAX_STEPS) }.at(schema, value, "arguments", 0).err()
}

struct Check<'a> {
    root: &'a Value,
    /// Visits left (`MAX_STEPS`).
    steps: std::cell::Cell<usize>,
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `value` is of the type named `name` (a name this checker does
/// not know, a typo or an extension, accepts everything).
fn is_type(name: &Value, value: &Value) -> bool {
    match name.as_str() {
        Some("integer") => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        Some(name @ ("null" | "boolean" | "number" | "string" | "array" | "object")) => type_name(value) == name,
        _ => true,
    }
}

impl Check<'_> {
    fn at(&self, schema: &Value, value: &Value, path: &str, depth: usize) -> Result<(), String> {
        let fail = |what: &str| Err(format!("{path}: {what}"));
        let Some(s) = schema.as_object() else {
            // `false` allows nothing; `true` (or anything else) everything.
            return if *schema == Value::Bool(false) { fail("is not allowed") } else { Ok(()) };
        };
        let steps = self.steps.get();
        self.steps.set(steps.saturating_sub(1));
        if depth > MAX_DEPTH || steps == 0 || (value.is_null() && s.get("nullable") == Some(&Value::Bool(true))) {
            return Ok(());
        }
        let num = |key: &str| s.get(key).and_then(Value::as_f64);
        let out_of = |n: f64, min: &str, max: &str| num(min).is_some_and(|m| n < m) || num(max).is_some_and(|m| n > m);
        if let Some(referred) =
            s.get("$ref").and_then(Value::as_str).and_then(|r| self.root.pointer(r.strip_prefix('#')?))
        {
            self.at(referred, value, path, depth + 1)?;
        }
        if let Some(types) = s.get("type") {
            let fits = match types {
                Value::Array(list) => list.iter().any(|t| is_type(t, value)),
                one => is_type(one, value),
            };
            if !fits {
                return fail(&format!("must be {types}, not {}", type_name(value)));
            }
        }
        if let Some(options) = s.get("enum").and_then(Value::as_array).filter(|o| !o.contains(value)) {
            return fail(&format!("must be one of {}", Value::Array(options.clone())));
        }
        if let Some(only) = s.get("const").filter(|c| *c != value) {
            return fail(&format!("must be {only}"));
        }
        match value {
            Value::String(text) => {
                if out_of(text.chars().count() as f64, "minLength", "maxLength") {
                    return fail("has a length out of the allowed range");
                }
            }
            Value::Number(n) => {
                let n = n.as_f64().unwrap_or_default();
                if out_of(n, "minimum", "maximum")
                    || num("exclusiveMinimum").is_some_and(|m| n <= m)
                    || num("exclusiveMaximum").is_some_and(|m| n >= m)
                {
                    return fail("is out of the allowed range");
                }
            }
            Value::Array(items) => {
                if out_of(items.len() as f64, "minItems", "maxItems") {
                    return fail("has a number of items out of the allowed range");
                }
                for (i, item) in items.iter().enumerate() {
                    let each = match s.get("items") {
                        Some(Value::Array(leading)) => leading.get(i),
                        other => other,
                    };
                    if let Some(each) = each {
                        self.at(each, item, &format!("{path}[{i}]"), depth + 1)?;
                    }
                }
            }
            Value::Object(fields) => {
                for name in s.get("required").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(name) = name.as_str().filter(|n| !fields.contains_key(*n)) {
                        return fail(&format!("lacks the required field {name:?}"));
                    }
                }
                let properties = s.get("properties");
                // Keys that may match `patternProperties` (unchecked) are not judged extra.
                let extra = s.get("additionalProperties").filter(|_| !s.contains_key("patternProperties"));
                for (key, field) in fields {
                    if let Some(each) = properties.and_then(|p| p.get(key)).or(extra) {
                        self.at(each, field, &format!("{path}.{key}"), depth + 1)?;
                    }
                }
            }
            _ => {}
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            let Some(list) = s.get(key).and_then(Value::as_array) else { continue };
            let mut first = None;
            let mut fitting = 0;
            for option in list {
                match self.at(option, value, path, depth + 1) {
                    Ok(()) => fitting += 1,
                    Err(e) => {
                        if key == "allOf" {
                            return Err(e);
                        }
                        first.get_or_insert(e);
                    }
                }
            }
            if fitting == 0 && key != "allOf" {
                // The first option's complaint says the most (often the only object option).
                return fail(&format!("fits none of the {key} options ({})", first.unwrap_or_default()));
            }
            if fitting > 1 && key == "oneOf" {
                return fail("fits more than one of the oneOf options");
            }
        }
        if s.get("not").is_some_and(|not| self.at(not, value, path, depth + 1).is_ok()) {
            return fail("matches a schema it must not match");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::violation;

    /// (schema, arguments, the expected complaint or `None` for a fit).
    #[test]
    fn arguments_are_checked_against_the_keywords_tools_use() {
        let person = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 5},
                "age": {"type": "integer", "minimum": 0, "exclusiveMaximum": 150},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2, "uniqueItems": true},
                "address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false},
                "nick": {"type": ["string", "null"]},
                "note": {"type": "string", "nullable": true}
            },
            "required": ["name"],
            "additionalProperties": false
        });
        let cases: &[(&serde_json::Value, serde_json::Value, Option<&str>)] = &[
            (&person, json!({"name": "Ann"}), None),
            (
                &person,
                json!({"name": "Ann", "age": 30, "tags": ["a", "b"], "address": {"city": "Kyoto"}, "nick": null, "note": null}),
                None,
            ),
            (&person, json!({}), Some("arguments: lacks the required field \"name\"")),
            (&person, json!({"name": 3}), Some("arguments.name: must be \"string\", not number")),
            (&person, json!({"name": ""}), Some("arguments.name: has a length out of the allowed range")),
            // Length in characters, not bytes.
            (&person, json!({"name": "京都の紅葉"}), None),
            (&person, json!({"name": "Ann", "age": 1.5}), Some("arguments.age: must be \"integer\", not number")),
            (&person, json!({"name": "Ann", "age": 2.0}), None),
            (&person, json!({"name": "Ann", "age": -1}), Some("arguments.age: is out of the allowed range")),
            (&person, json!({"name": "Ann", "age": 150}), Some("arguments.age: is out of the allowed range")),
            (&person, json!({"name": "Ann", "tags": ["c"]}), Some("arguments.tags[0]: must be one of [\"a\",\"b\"]")),
            (
                &person,
                json!({"name": "Ann", "tags": ["a", "b", "a"]}),
                Some("arguments.tags: has a number of items out of the allowed range"),
            ),
            (
                &person,
                json!({"name": "Ann", "address": {}}),
                Some("arguments.address: lacks the required field \"city\""),
            ),
            (
                &person,
                json!({"name": "Ann", "address": {"city": "K", "zip": 1}}),
                Some("arguments.address.zip: is not allowed"),
            ),
            (&person, json!({"name": "Ann", "extra": true}), Some("arguments.extra: is not allowed")),
            (
                &person,
                json!({"name": "Ann", "nick": 1}),
                Some("arguments.nick: must be [\"string\",\"null\"], not number"),
            ),
            (&person, json!("Ann"), Some("arguments: must be \"object\", not string")),
        ];
        for (schema, value, expected) in cases {
            assert_eq!(violation(schema, value).as_deref(), *expected, "{value}");
        }
    }

    #[test]
    fn combinators_refs_and_unknown_keywords() {
        let shape = json!({
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
            "type": "object",
            "properties": {
                "at": {"$ref": "#/$defs/point"},
                "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "one": {"oneOf": [{"type": "number"}, {"type": "integer"}]},
                "both": {"allOf": [{"minimum": 1}, {"maximum": 3}]},
                "not_zero": {"not": {"const": 0}},
                "code": {"type": "string", "pattern": "^[a-z]+$", "format": "email", "x-custom": {"deep": [1]}},
                "tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/properties/tree"}}}}
            }
        });
        let cases = [
            (json!({"at": {"x": 1}}), None),
            (json!({"at": {"y": 1}}), Some("arguments.at: lacks the required field \"x\"")),
            (json!({"id": "a"}), None),
            (json!({"id": 2}), None),
            (
                json!({"id": true}),
                Some("arguments.id: fits none of the anyOf options (arguments.id: must be \"string\", not boolean)"),
            ),
            (json!({"one": 1.5}), None),
            (json!({"one": 2}), Some("arguments.one: fits more than one of the oneOf options")),
            (json!({"both": 2}), None),
            (json!({"both": 4}), Some("arguments.both: is out of the allowed range")),
            (json!({"not_zero": 0}), Some("arguments.not_zero: matches a schema it must not match")),
            // Unchecked keywords are accepted, never a crash.
            (json!({"code": "NOT LOWER"}), None),
            (
                json!({"tree": {"kids": [{"kids": []}, {"kids": [{"kids": "x"}]}]}}),
                Some("arguments.tree.kids[1].kids[0].kids: must be \"array\", not string"),
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(violation(&shape, &value).as_deref(), expected, "{value}");
        }
        // A schema that refers to itself at the same place stops, and accepts.
        assert_eq!(violation(&json!({"$ref": "#"}), &json!(1)), None);
        // So does one that branches at every level of the cycle (2^32 paths
        // to its depth limit): within the step budget, at once.
        let started = std::time::Instant::now();
        for key in ["anyOf", "oneOf", "allOf"] {
            let branching = json!({ key: [{"$ref": "#"}, {"$ref": "#"}, {"not": {"$ref": "#"}}] });
            let _ = violation(&branching, &json!({"a": [1, 2, 3]}));
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!(violation(&json!(false), &json!(1)).as_deref(), Some("arguments: is not allowed"));
        assert_eq!(violation(&json!(true), &json!(1)), None);
        assert_eq!(violation(&json!({"type": "float"}), &json!("x")), None, "an unknown type is accepted");
        let exclusive = json!({"exclusiveMinimum": 0});
        assert!(violation(&exclusive, &json!(0)).is_some() && violation(&exclusive, &json!(0.1)).is_none());
        assert_eq!(violation(&json!({"const": "x"}), &json!("y")).as_deref(), Some("arguments: must be \"x\""));
    }
}
