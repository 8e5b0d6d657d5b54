//! Large strings of checkpointed state (page text in tool results, a
//! chapter in a pending review), stored once per session and referenced.
//!
//! Every step's checkpoint is a copy of the whole state, and the state keeps
//! every message of the session: without this, a page read in turn 1 would
//! be copied into every later checkpoint. [`extract`] replaces each string
//! of at least [`BLOB_MIN_BYTES`] by `{"$blob": "<hash>"}`; the checkpointer
//! writes the blobs it has not written before in the checkpoint's own batch
//! (so a checkpoint never names a missing blob) and [`restore`] puts them
//! back on read. An object of the state that happens to look like a
//! reference is wrapped as `{"$lit": …}` and unwrapped on read, so no state
//! is mistaken for one. Blobs are keyed `<session>/<hash>` and go with the
//! session (`deleteSession`); they are not shared across sessions.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// Strings at least this long (UTF-8 bytes) are stored as blobs.
pub const BLOB_MIN_BYTES: usize = 4096;

const REF: &str = "$blob";
const LIT: &str = "$lit";

/// A blob's name: 64-bit FNV-1a of the text and its length (a collision
/// needs two different texts of the same length and hash in one session).
pub fn content_hash(text: &str) -> String {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for b in text.as_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}-{}", text.len())
}

fn looks_like_a_reference(map: &Map<String, Value>) -> bool {
    map.len() == 1 && (map.contains_key(REF) || map.contains_key(LIT))
}

/// Moves the large strings of `value` out into `blobs` (hash → text),
/// leaving references.
pub fn extract(value: &mut Value, blobs: &mut Vec<(String, String)>) {
    match value {
        Value::String(text) if text.len() >= BLOB_MIN_BYTES => {
            let text = std::mem::take(text);
            let hash = content_hash(&text);
            blobs.push((hash.clone(), text));
            *value = Value::Object(Map::from_iter([(REF.to_owned(), Value::String(hash))]));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| extract(v, blobs)),
        Value::Object(map) => {
            map.values_mut().for_each(|v| extract(v, blobs));
            if looks_like_a_reference(map) {
                let inner = std::mem::take(map);
                map.insert(LIT.to_owned(), Value::Object(inner));
            }
        }
        _ => {}
    }
}

/// The hashes `value` references.
pub fn references(value: &Value, out: &mut HashSet<String>) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        Value::Object(map) => match (map.len(), map.get(REF), map.get(LIT)) {
            (1, Some(Value::String(hash)), _) => {
                out.insert(hash.clone());
            }
            (1, _, Some(Value::Object(inner))) => inner.values().for_each(|v| references(v, out)),
            _ => map.values().for_each(|v| references(v, out)),
        },
        _ => {}
    }
}

/// Puts the blobs back in place of their references (the reverse of
/// [`extract`]); a missing blob is an error naming it.
pub fn restore(value: &mut Value, blobs: &HashMap<String, String>) -> Result<(), String> {
    match value {
        Value::Array(items) => items.iter_mut().try_for_each(|v| restore(v, blobs)),
        Value::Object(map) => {
            if let (1, Some(Value::String(hash))) = (map.len(), map.get(REF)) {
                let text = blobs.get(hash).ok_or_else(|| format!("the stored text {hash} is missing"))?;
                *value = Value::String(text.clone());
                return Ok(());
            }
            if let (1, Some(Value::Object(_))) = (map.len(), map.get(LIT)) {
                let Some(Value::Object(inner)) = map.remove(LIT) else { unreachable!("matched above") };
                *map = inner;
                return map.values_mut().try_for_each(|v| restore(v, blobs));
            }
            map.values_mut().try_for_each(|v| restore(v, blobs))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn large_strings_go_out_and_come_back_and_lookalikes_survive() {
        let page = "雨".repeat(BLOB_MIN_BYTES);
        let original = json!({
            "messages": [{"role": "tool", "content": page}, {"role": "user", "content": "short"}],
            "again": page,
            "args": {"$blob": "not a reference"},
            "nested": {"$lit": {"$blob": "x"}},
        });
        let mut stored = original.clone();
        let mut blobs = Vec::new();
        extract(&mut stored, &mut blobs);
        assert_eq!(blobs.len(), 2, "each occurrence is named (written once: same hash)");
        assert_eq!(blobs[0].0, blobs[1].0);
        assert!(stored.to_string().len() < 400, "{stored}");
        let mut named = HashSet::new();
        references(&stored, &mut named);
        assert_eq!(named.len(), 1, "lookalikes are not references");
        let mut read = stored.clone();
        let map: HashMap<String, String> = blobs.into_iter().collect();
        restore(&mut read, &map).unwrap();
        assert_eq!(read, original);
        assert!(restore(&mut stored.clone(), &HashMap::new()).unwrap_err().contains("missing"));
    }

    #[test]
    fn hashes_differ_with_text_and_length() {
        assert_ne!(content_hash("a"), content_hash("b"));
        assert_ne!(content_hash(""), content_hash("\0"));
        assert_eq!(content_hash("雨"), content_hash("雨"));
    }
}
