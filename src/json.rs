//! JSON for typed values, always through `serde_json::Value`.
//!
//! * Text crosses only as `Value`: every type then has one derived decoder
//!   and one encoder in the package (from and to `Value`, which the store
//!   and the checkpoints need anyway) instead of a second pair for text. The
//!   extra step costs an allocation per node, nothing next to the model
//!   calls and IndexedDB writes around it. (A `Value` sorts its keys: text
//!   whose key order matters, like the request body, is written otherwise.)
//! * [`from_value`] decodes with a deserializer of our own that takes a
//!   struct only from a JSON object. serde_json's also takes one from an
//!   array (fields by position), so every derived decoder carried a second,
//!   positional reader that no record of ours ever uses: −13 KB gzip of the
//!   package (BENCHMARKS.md "Package size").

mod fields;

pub use fields::{pair, Fields};

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, Error as _, IntoDeserializer, MapAccess, SeqAccess,
    Unexpected, VariantAccess, Visitor,
};
use serde::Serialize;
use serde_json::{Error, Map, Value};

/// `value` as compact JSON text.
pub fn to_text<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    serde_json::to_value(value).map(|v| v.to_string())
}

/// A typed value from JSON text.
pub fn from_text<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    serde_json::from_str::<Value>(text).and_then(from_value)
}

/// A typed value from a JSON value: as `serde_json::from_value`, except that
/// a struct (or a struct variant) must be an object.
pub fn from_value<T: DeserializeOwned>(value: Value) -> serde_json::Result<T> {
    T::deserialize(De(value))
}

/// The items of a JSON array (decoding them into `Value` a second time, as
/// `from_text::<Vec<Value>>` would, copies every node).
pub fn items(value: Value) -> serde_json::Result<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(Error::custom("expected an array")),
    }
}

/// What a value is, for error messages.
fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Unexpected::Unsigned(u),
            (_, Some(i)) => Unexpected::Signed(i),
            _ => Unexpected::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

struct De(Value);

impl<'de> de::Deserializer<'de> for De {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (_, Some(i)) => visitor.visit_i64(i),
                _ => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visit_array(items, visitor),
            Value::Object(map) => visitor.visit_map(Entries::new(map)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(s) => visitor.visit_string(s),
            other => Err(Error::invalid_type(unexpected(&other), &visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Bool(b) => visitor.visit_bool(b),
            other => Err(Error::invalid_type(unexpected(&other), &visitor)),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (_, Some(i)) => visitor.visit_i64(i),
                _ => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            other => Err(Error::invalid_type(unexpected(&other), &visitor)),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(items) => visit_array(items, visitor),
            other => Err(Error::invalid_type(unexpected(&other), &visitor)),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(map) => visitor.visit_map(Entries::new(map)),
            other => Err(Error::invalid_type(unexpected(&other), &visitor)),
        }
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u128 f32 char bytes byte_buf unit unit_struct tuple tuple_struct
    }

    // Every number the same way: the visitor converts (or refuses) it.
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_u64(visitor)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            value => visitor.visit_some(De(value)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(map) => visitor.visit_map(Entries::new(map)),
            other => Err(Error::invalid_type(unexpected(&other), &visitor)),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            // A unit variant is its name; any other is `{"Name": content}`.
            Value::String(name) => visitor.visit_enum(Variant { name, content: None }),
            Value::Object(map) if map.len() == 1 => {
                let Some((name, content)) = map.into_iter().next() else {
                    return Err(Error::custom("an enum needs a variant"));
                };
                visitor.visit_enum(Variant { name, content: Some(content) })
            }
            other => Err(Error::invalid_type(unexpected(&other), &"a variant name or a map of one entry")),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

/// A sequence whose items must all be taken (a tuple of two from an array of
/// three is an error, as in serde_json).
fn visit_array<'de, V: Visitor<'de>>(items: Vec<Value>, visitor: V) -> Result<V::Value, Error> {
    let len = items.len();
    let mut seq = Items(items.into_iter());
    let value = visitor.visit_seq(&mut seq)?;
    match seq.0.len() {
        0 => Ok(value),
        _ => Err(Error::invalid_length(len, &"fewer elements in the array")),
    }
}

struct Items(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for Items {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|value| seed.deserialize(De(value))).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Entries {
    entries: serde_json::map::IntoIter,
    value: Option<Value>,
}

impl Entries {
    fn new(map: Map<String, Value>) -> Entries {
        Entries { entries: map.into_iter(), value: None }
    }
}

impl<'de> MapAccess<'de> for Entries {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(key.into_deserializer()).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(De(value)),
            None => Err(Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

struct Variant {
    name: String,
    content: Option<Value>,
}

impl<'de> EnumAccess<'de> for Variant {
    type Error = Error;
    type Variant = Content;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Content), Error> {
        let name: de::value::StringDeserializer<Error> = self.name.into_deserializer();
        Ok((seed.deserialize(name)?, Content(self.content)))
    }
}

struct Content(Option<Value>);

impl<'de> VariantAccess<'de> for Content {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.0 {
            None | Some(Value::Null) => Ok(()),
            Some(other) => Err(Error::invalid_type(unexpected(&other), &"a unit variant")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        match self.0 {
            Some(value) => seed.deserialize(De(value)),
            None => Err(Error::invalid_type(Unexpected::UnitVariant, &"a newtype variant")),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Some(Value::Array(items)) => visit_array(items, visitor),
            Some(other) => Err(Error::invalid_type(unexpected(&other), &"a tuple variant")),
            None => Err(Error::invalid_type(Unexpected::UnitVariant, &"a tuple variant")),
        }
    }

    fn struct_variant<V: Visitor<'de>>(self, _fields: &'static [&'static str], visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Some(Value::Object(map)) => visitor.visit_map(Entries::new(map)),
            Some(other) => Err(Error::invalid_type(unexpected(&other), &"a struct variant")),
            None => Err(Error::invalid_type(Unexpected::UnitVariant, &"a struct variant")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Record {
        id: String,
        count: u32,
        #[serde(default)]
        ratio: f64,
        note: Option<String>,
        kind: Kind,
        tags: Vec<String>,
        pair: Option<(u8, bool)>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Plain,
        Named(String),
        Sized { width: u32 },
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Tagged {
        Text { text: String },
        Stop,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "t", content = "c")]
    enum Adjacent {
        Go(u32),
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        #[allow(dead_code)]
        a: u8,
    }

    fn record(kind: Value) -> Value {
        json!({ "id": "r1", "count": 3, "note": null, "kind": kind, "tags": ["a", "b"], "pair": [7, true] })
    }

    #[test]
    fn decodes_what_serde_json_decodes() {
        for kind in [json!("plain"), json!({ "named": "x" }), json!({ "sized": { "width": 2 } })] {
            let ours: Record = from_value(record(kind.clone())).unwrap();
            let theirs: Record = serde_json::from_value(record(kind)).unwrap();
            assert_eq!(ours, theirs);
        }
        let r: Record = from_value(record(json!("plain"))).unwrap();
        assert_eq!((r.count, r.ratio, r.note, r.pair), (3, 0.0, None, Some((7, true))));
        // An integer where a float is expected, a float where it may be.
        let r: Record = from_value(json!({ "id": "r", "count": 1, "ratio": 2, "kind": "plain", "tags": [] })).unwrap();
        assert_eq!(r.ratio, 2.0);
        assert_eq!(from_value::<f64>(json!(-1.5)).unwrap(), -1.5);
        assert_eq!(from_value::<i64>(json!(-3)).unwrap(), -3);
        let tagged: Vec<Tagged> = from_value(json!([{ "type": "text", "text": "hi" }, { "type": "stop" }])).unwrap();
        assert_eq!(tagged, [Tagged::Text { text: "hi".into() }, Tagged::Stop]);
        assert_eq!(from_value::<Adjacent>(json!({ "t": "Go", "c": 4 })).unwrap(), Adjacent::Go(4));
        let map: std::collections::BTreeMap<String, bool> = from_value(json!({ "x": true })).unwrap();
        assert!(map["x"]);
        assert_eq!(from_value::<Value>(record(json!("plain"))).unwrap(), record(json!("plain")));
    }

    #[test]
    fn refuses_with_clear_messages() {
        let error = |value: Value| from_value::<Record>(value).unwrap_err().to_string();
        // A struct is an object, never an array of its fields.
        assert!(error(json!(["r1", 3, null, "plain", [], null])).contains("invalid type: sequence"));
        assert!(error(json!({ "id": "r", "count": -1, "kind": "plain", "tags": [] }))
            .contains("invalid value: integer `-1`"));
        assert!(error(json!({ "id": "r", "count": 1.5, "kind": "plain", "tags": [] }))
            .contains("invalid type: floating point"));
        assert!(error(json!({ "id": 5, "count": 1, "kind": "plain", "tags": [] })).contains("expected a string"));
        assert!(error(json!({ "id": "r", "kind": "plain", "tags": [] })).contains("missing field `count`"));
        assert!(error(record(json!("other"))).contains("unknown variant `other`"));
        assert!(error(record(json!({ "a": 1, "b": 2 }))).contains("map of one entry"));
        assert!(error(record(json!({ "plain": 1 }))).contains("unit variant"));
        let long_pair = json!({ "id": "r", "count": 1, "kind": "plain", "tags": [], "pair": [1, true, 3] });
        assert!(error(long_pair).contains("invalid length 3"));
        assert!(from_value::<Strict>(json!({ "a": 1, "b": 2 })).unwrap_err().to_string().contains("unknown field `b`"));
        assert!(from_value::<Tagged>(json!({ "text": "no tag" })).is_err());
        assert!(items(json!({})).is_err());
    }
}
