//! A JSON Schema checker sized for tool arguments: the keywords that real
//! tool schemas (hand-written, or made by zod, pydantic, TypeBox) use.
//!
//! Checked: `type` (one or a list; `integer` is a whole number), `enum`,
//! `const`, `nullable` (OpenAPI); strings' `minLength`/`maxLength` (in
//! characters); numbers' `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` (a number, or draft 4's boolean form); arrays'
//! `items` (one schema, or a list for the leading items), `minItems`,
//! `maxItems`, `uniqueItems`; objects' `properties`, `required`,
//! `additionalProperties` (`false` or a schema), `minProperties`,
//! `maxProperties`; `anyOf`, `oneOf`, `allOf`, `not`; and `$ref` to a place
//! in the same schema (`#/$defs/…`, `#/definitions/…`, `#`). Any other
//! keyword (`pattern`, `format`, `multipleOf`, `patternProperties`, a
//! remote `$ref`, ...) is accepted unchecked: a schema is never a reason
//! for the agent to fail, and the tool itself sees the arguments.

use serde_json::Value;

/// Deepest nesting of schemas followed (a `$ref` cycle stops here).
const MAX_DEPTH: usize = 64;

/// Where `value` breaks `schema`, in words for the model ("`path`: what
/// was expected"), or `None` when it fits.
pub fn violation(schema: &Value, value: &Value) -> Option<String> {
    Check { root: schema }.at(schema, value, "arguments", 0).err()
}

struct Check<'a> {
    root: &'a Value,
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

fn is_type(name: &str, value: &Value) -> bool {
    match name {
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        // A type this checker does not know (a typo, an extension) is accepted.
        "null" | "boolean" | "number" | "string" | "array" | "object" => type_name(value) == name,
        _ => true,
    }
}

impl Check<'_> {
    fn at(&self, schema: &Value, value: &Value, path: &str, depth: usize) -> Result<(), String> {
        let fail = |what: String| Err(format!("{path}: {what}"));
        let Some(s) = schema.as_object() else {
            // `false` allows nothing; `true` (or anything else) everything.
            return if *schema == Value::Bool(false) { fail("is not allowed".into()) } else { Ok(()) };
        };
        if depth > MAX_DEPTH {
            return Ok(());
        }
        let num = |key: &str| s.get(key).and_then(Value::as_f64);
        let count = |key: &str| s.get(key).and_then(Value::as_u64).map(|n| n as usize);
        if value.is_null() && s.get("nullable") == Some(&Value::Bool(true)) {
            return Ok(());
        }
        if let Some(target) = s.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
            if let Some(referred) = self.root.pointer(target) {
                self.at(referred, value, path, depth + 1)?;
            }
        }
        match s.get("type") {
            Some(Value::String(t)) if !is_type(t, value) => return fail(format!("must be {t}, not {}", type_name(value))),
            Some(Value::Array(types)) if !types.iter().any(|t| t.as_str().map_or(true, |t| is_type(t, value))) => {
                return fail(format!("must be one of the types {}, not {}", Value::Array(types.clone()), type_name(value)))
            }
            _ => {}
        }
        if let Some(options) = s.get("enum").and_then(Value::as_array) {
            if !options.contains(value) {
                return fail(format!("must be one of {}", Value::Array(options.clone())));
            }
        }
        if let Some(only) = s.get("const") {
            if only != value {
                return fail(format!("must be {only}"));
            }
        }
        match value {
            Value::String(text) => {
                let chars = text.chars().count();
                if count("minLength").is_some_and(|n| chars < n) || count("maxLength").is_some_and(|n| chars > n) {
                    return fail(format!("has {chars} characters, out of the allowed length"));
                }
            }
            Value::Number(n) => {
                let n = n.as_f64().unwrap_or_default();
                let exclusive = |key: &str| s.get(key) == Some(&Value::Bool(true));
                let below = num("minimum").is_some_and(|m| n < m || (n == m && exclusive("exclusiveMinimum")))
                    || num("exclusiveMinimum").is_some_and(|m| n <= m);
                let above = num("maximum").is_some_and(|m| n > m || (n == m && exclusive("exclusiveMaximum")))
                    || num("exclusiveMaximum").is_some_and(|m| n >= m);
                if below || above {
                    return fail(format!("{n} is out of the allowed range"));
                }
            }
            Value::Array(items) => {
                if count("minItems").is_some_and(|n| items.len() < n) || count("maxItems").is_some_and(|n| items.len() > n)
                {
                    return fail(format!("has {} items, out of the allowed number", items.len()));
                }
                if s.get("uniqueItems") == Some(&Value::Bool(true))
                    && items.iter().enumerate().any(|(i, item)| items[..i].contains(item))
                {
                    return fail("must not repeat an item".into());
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
                if count("minProperties").is_some_and(|n| fields.len() < n)
                    || count("maxProperties").is_some_and(|n| fields.len() > n)
                {
                    return fail(format!("has {} fields, out of the allowed number", fields.len()));
                }
                let properties = s.get("properties").and_then(Value::as_object);
                for name in s.get("required").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(name) = name.as_str().filter(|n| !fields.contains_key(*n)) {
                        return fail(format!("lacks the required field {name:?}"));
                    }
                }
                for (key, field) in fields {
                    let inner = format!("{path}.{key}");
                    match (properties.and_then(|p| p.get(key)), s.get("additionalProperties")) {
                        (Some(known), _) => self.at(known, field, &inner, depth + 1)?,
                        // Keys that may match `patternProperties` (unchecked) are not judged extra.
                        (None, Some(extra)) if !s.contains_key("patternProperties") => {
                            self.at(extra, field, &inner, depth + 1)?
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        let fits = |key: &str| -> Vec<Result<(), String>> {
            let list = s.get(key).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            list.iter().map(|option| self.at(option, value, path, depth + 1)).collect()
        };
        if let Some(broken) = fits("allOf").into_iter().find_map(Result::err) {
            return Err(broken);
        }
        for key in ["anyOf", "oneOf"] {
            let results = fits(key);
            let fitting = results.iter().filter(|r| r.is_ok()).count();
            if results.is_empty() {
                continue;
            }
            if fitting == 0 {
                // The first option's complaint says the most (often the only object option).
                let first = results.into_iter().find_map(Result::err).unwrap_or_default();
                return fail(format!("fits none of the {key} options ({first})"));
            }
            if key == "oneOf" && fitting > 1 {
                return fail(format!("fits {fitting} of the oneOf options, and must fit one"));
            }
        }
        if let Some(not) = s.get("not") {
            if self.at(not, value, path, depth + 1).is_ok() {
                return fail("matches a schema it must not match".into());
            }
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
            (&person, json!({"name": "Ann", "age": 30, "tags": ["a", "b"], "address": {"city": "Kyoto"}, "nick": null, "note": null}), None),
            (&person, json!({}), Some("arguments: lacks the required field \"name\"")),
            (&person, json!({"name": 3}), Some("arguments.name: must be string, not number")),
            (&person, json!({"name": ""}), Some("arguments.name: has 0 characters, out of the allowed length")),
            // Length in characters, not bytes.
            (&person, json!({"name": "京都の紅葉"}), None),
            (&person, json!({"name": "Ann", "age": 1.5}), Some("arguments.age: must be integer, not number")),
            (&person, json!({"name": "Ann", "age": 2.0}), None),
            (&person, json!({"name": "Ann", "age": -1}), Some("arguments.age: -1 is out of the allowed range")),
            (&person, json!({"name": "Ann", "age": 150}), Some("arguments.age: 150 is out of the allowed range")),
            (&person, json!({"name": "Ann", "tags": ["c"]}), Some("arguments.tags[0]: must be one of [\"a\",\"b\"]")),
            (&person, json!({"name": "Ann", "tags": ["a", "a"]}), Some("arguments.tags: must not repeat an item")),
            (&person, json!({"name": "Ann", "tags": ["a", "b", "a"]}), Some("arguments.tags: has 3 items, out of the allowed number")),
            (&person, json!({"name": "Ann", "address": {}}), Some("arguments.address: lacks the required field \"city\"")),
            (&person, json!({"name": "Ann", "address": {"city": "K", "zip": 1}}), Some("arguments.address.zip: is not allowed")),
            (&person, json!({"name": "Ann", "extra": true}), Some("arguments.extra: is not allowed")),
            (&person, json!({"name": "Ann", "nick": 1}), Some("arguments.nick: must be one of the types [\"string\",\"null\"], not number")),
            (&person, json!("Ann"), Some("arguments: must be object, not string")),
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
            (json!({"id": true}), Some("arguments.id: fits none of the anyOf options (arguments.id: must be string, not boolean)")),
            (json!({"one": 1.5}), None),
            (json!({"one": 2}), Some("arguments.one: fits 2 of the oneOf options, and must fit one")),
            (json!({"both": 2}), None),
            (json!({"both": 4}), Some("arguments.both: 4 is out of the allowed range")),
            (json!({"not_zero": 0}), Some("arguments.not_zero: matches a schema it must not match")),
            // Unchecked keywords are accepted, never a crash.
            (json!({"code": "NOT LOWER"}), None),
            (json!({"tree": {"kids": [{"kids": []}, {"kids": [{"kids": "x"}]}]}}), Some("arguments.tree.kids[1].kids[0].kids: must be array, not string")),
        ];
        for (value, expected) in cases {
            assert_eq!(violation(&shape, &value).as_deref(), expected, "{value}");
        }
        // A schema that refers to itself at the same place stops, and accepts.
        assert_eq!(violation(&json!({"$ref": "#"}), &json!(1)), None);
        assert_eq!(violation(&json!(false), &json!(1)).as_deref(), Some("arguments: is not allowed"));
        assert_eq!(violation(&json!(true), &json!(1)), None);
        assert_eq!(violation(&json!({"type": "float"}), &json!("x")), None, "an unknown type is accepted");
        // Draft 4's boolean exclusive bounds.
        let draft4 = json!({"minimum": 0, "exclusiveMinimum": true});
        assert!(violation(&draft4, &json!(0)).is_some() && violation(&draft4, &json!(0.1)).is_none());
    }
}
