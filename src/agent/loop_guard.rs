//! The loop guard: a model that repeats itself is stopped well before the
//! recursion limit.
//!
//! Within one run (the turn), a call is not executed when it is
//! - the same tool with the same arguments (compared canonically: key order
//!   and whitespace do not matter) for the third time, or
//! - the fourth step of an A-B-A-B oscillation between two calls.
//!
//! The model gets a tool result that says why instead, so it can change
//! course. After [`MAX_REFUSALS`] refusals in one run the run ends with code
//! `tool_loop`. Everything is derived from the turn's messages and call
//! records, so the rule holds the same after a reload or a resume.

use serde_json::Value;

use crate::llm::{Message, ToolCall};

/// Refused calls in one run before it ends with `tool_loop`.
pub const MAX_REFUSALS: usize = 3;

/// The first words of a refusal's tool result.
const REFUSED: &str = "Not run (loop guard):";

/// What to do with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Run,
    /// Do not run it; tell the model this.
    Refuse(String),
    /// End the run: the model keeps looping.
    Stop(String),
}

/// A call's identity: its name and its arguments in canonical JSON (object
/// keys sorted, no whitespace); arguments that are not JSON count verbatim.
pub fn signature(call: &ToolCall) -> String {
    let mut out = format!("{}(", call.function.name);
    match serde_json::from_str::<Value>(&call.function.arguments) {
        Ok(value) => canonical(&value, &mut out),
        Err(_) => out.push_str(call.function.arguments.trim()),
    }
    out.push(')');
    out
}

/// JSON with object keys sorted (whatever order the map keeps them in).
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Judges `call`, given the signatures of the calls before it in the turn
/// (in order) and how many calls the guard refused in the turn so far.
pub fn judge(refused: usize, earlier: &[String], call: &ToolCall) -> Verdict {
    let this = signature(call);
    let name = &call.function.name;
    let repeats = earlier.iter().filter(|s| **s == this).count();
    let oscillates = match earlier {
        [.., a, b, c] => *a != *b && *a == *c && *b == this,
        _ => false,
    };
    let reason = if repeats >= 2 {
        format!(
            "{REFUSED} this is the third call of {name} with the same arguments in this turn; its result is above. \
             Use it, or try something different."
        )
    } else if oscillates {
        format!(
            "{REFUSED} the last calls alternate between the same two calls ({name} and another); repeating them \
             will not change their results. Use what you have, or try something different."
        )
    } else {
        return Verdict::Run;
    };
    if refused + 1 >= MAX_REFUSALS {
        Verdict::Stop(format!(
            "the model kept repeating the same tool calls ({name} among them) after {MAX_REFUSALS} warnings; the \
             run was stopped"
        ))
    } else {
        Verdict::Refuse(reason)
    }
}

/// The signatures of every call the turn's assistant messages made, in order.
pub fn signatures(turn: &[Message]) -> Vec<String> {
    turn.iter().flat_map(|m| m.tool_calls().iter().map(signature)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall::new("c", name, &args)
    }

    #[test]
    fn arguments_compare_canonically() {
        let a = ToolCall::new("1", "web_search", &json!({"query": "猫", "max_results": 3}));
        let mut b = a.clone();
        b.function.arguments = "{ \"max_results\": 3,\n \"query\": \"猫\" }".into();
        assert_eq!(signature(&a), signature(&b));
        assert_ne!(signature(&a), signature(&call("web_search", json!({"query": "犬"}))));
    }

    #[test]
    fn the_third_identical_call_is_refused() {
        let read = call("get_manuscript", json!({"section_id": "s1"}));
        let s = signature(&read);
        assert_eq!(judge(0, std::slice::from_ref(&s), &read), Verdict::Run, "a second read may be deliberate");
        assert!(matches!(judge(0, &[s.clone(), s.clone()], &read), Verdict::Refuse(r) if r.contains("third call")));
    }

    #[test]
    fn an_a_b_a_b_oscillation_is_refused() {
        let a = call("get_artifact", json!({"id": "x"}));
        let b = call("list_artifacts", json!({}));
        let (sa, sb) = (signature(&a), signature(&b));
        assert_eq!(judge(0, &[sa.clone(), sb.clone()], &a), Verdict::Run);
        assert!(
            matches!(judge(0, &[sa.clone(), sb.clone(), sa.clone()], &b), Verdict::Refuse(r) if r.contains("alternate"))
        );
        assert_eq!(judge(0, &[sa.clone(), sa.clone(), sb.clone()], &b), Verdict::Run);
    }

    #[test]
    fn after_enough_refusals_the_run_stops() {
        let read = call("get_manuscript", json!({"section_id": "s1"}));
        let s = signature(&read);
        let earlier = vec![s.clone(), s.clone()];
        assert!(matches!(judge(MAX_REFUSALS - 2, &earlier, &read), Verdict::Refuse(_)));
        assert!(matches!(judge(MAX_REFUSALS - 1, &earlier, &read), Verdict::Stop(_)));
    }
}
