//! Chat-template rules: what the chat templates of the mainstream model
//! families (and the strict servers) refuse in a conversation, as data, and
//! the layout helpers that keep a request inside them.
//!
//! The rules are written from the families' documented behaviour and the
//! refusals their servers answer with, not copied from their templates:
//! Qwen/ChatML and Llama 3 take a `system` message only first, Llama 3.x
//! templates render one tool call per assistant message, Mistral's API and
//! templates want user and assistant turns to alternate once the tool loop is
//! set aside, never a `user` message directly after a tool result, and tool
//! call ids of 9 letters and digits; Gemma 2 refuses the system role.
//! [`template_violation`] is the strict default the scripted model and the
//! fake upstream enforce; [`TemplateFamily::violation`] checks one family.

use super::types::Message;

/// One thing a chat template (or a strict server) refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateRule {
    /// A `system` message anywhere but first.
    SystemFirst,
    /// Any `system` message.
    NoSystem,
    /// Two consecutive messages of one role (tool results excepted).
    NoRepeatedRole,
    /// Once tool results and the assistant messages that carry calls are
    /// set aside, user and assistant turns alternate, the person first.
    AlternateSkippingTools,
    /// More than one tool call in an assistant message.
    OneCallPerMessage,
    /// A tool call id that is not 9 ASCII letters and digits.
    NineCharToolIds,
    /// A `user` message directly after a tool result.
    NoUserAfterTool,
    /// A tool result that answers no call of the assistant message before
    /// it, or a call left without its result before the next turn.
    ResultsAnswerCalls,
}

/// A model family's template rules, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateFamily {
    pub name: &'static str,
    pub rules: &'static [TemplateRule],
}

use TemplateRule::*;

/// The families the template test layer renders requests through.
pub const TEMPLATE_FAMILIES: &[TemplateFamily] = &[
    // OpenAI's API and the servers that validate the tool loop as it does.
    TemplateFamily { name: "reference", rules: &[ResultsAnswerCalls] },
    // llama.cpp's strict templates (the scripted model's default).
    TemplateFamily { name: "strict", rules: &[SystemFirst, NoRepeatedRole] },
    TemplateFamily { name: "qwen", rules: &[SystemFirst] },
    TemplateFamily { name: "llama3", rules: &[SystemFirst, OneCallPerMessage] },
    // Mistral's API, Mistral Nemo, Small 3.2 and Ministral.
    TemplateFamily {
        name: "mistral",
        rules: &[SystemFirst, NoUserAfterTool, AlternateSkippingTools, NineCharToolIds, ResultsAnswerCalls],
    },
    TemplateFamily { name: "gemma2", rules: &[NoSystem, AlternateSkippingTools, NoUserAfterTool] },
    TemplateFamily { name: "gemma3", rules: &[SystemFirst, AlternateSkippingTools, NoUserAfterTool] },
];

impl TemplateFamily {
    /// The family called `name` (see [`TEMPLATE_FAMILIES`]).
    pub fn named(name: &str) -> Option<TemplateFamily> {
        TEMPLATE_FAMILIES.iter().copied().find(|f| f.name == name)
    }

    /// What this family refuses in `messages`, or `None`.
    pub fn violation(&self, messages: &[Message]) -> Option<String> {
        self.rules.iter().find_map(|rule| rule.violation(messages))
    }
}

fn role(m: &Message) -> &'static str {
    match m {
        Message::System { .. } => "system",
        Message::User { .. } => "user",
        Message::Assistant { .. } => "assistant",
        Message::Tool { .. } => "tool",
    }
}

impl TemplateRule {
    /// Where `messages` break this rule, or `None`.
    pub fn violation(self, messages: &[Message]) -> Option<String> {
        let pairs = || messages.iter().enumerate().skip(1).map(|(i, m)| (i, &messages[i - 1], m));
        match self {
            SystemFirst => pairs()
                .find(|(_, _, m)| role(m) == "system")
                .map(|(i, _, _)| format!("message {i} is a system message after the first")),
            NoSystem => messages
                .iter()
                .position(|m| role(m) == "system")
                .map(|i| format!("message {i} is a system message: the template has no system role")),
            NoRepeatedRole => pairs()
                .find(|(_, before, m)| role(m) != "tool" && role(m) == role(before))
                .map(|(i, _, m)| format!("messages {} and {i} are both {}", i - 1, role(m))),
            AlternateSkippingTools => {
                let turns = messages.iter().enumerate().filter(|(_, m)| {
                    matches!(m, Message::User { .. }) || m.tool_calls().is_empty() && role(m) == "assistant"
                });
                let mut expect = "user";
                for (i, m) in turns {
                    if role(m) != expect {
                        return Some(format!(
                            "message {i} is {} where the template wants {expect}: roles must alternate user/assistant",
                            role(m)
                        ));
                    }
                    expect = if expect == "user" { "assistant" } else { "user" };
                }
                None
            }
            OneCallPerMessage => messages
                .iter()
                .position(|m| m.tool_calls().len() > 1)
                .map(|i| format!("message {i} has several tool calls: the template renders one per message")),
            NineCharToolIds => messages.iter().enumerate().find_map(|(i, m)| {
                let mut ids = m.tool_calls().iter().map(|c| c.id.as_str()).chain(match m {
                    Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                    _ => None,
                });
                ids.find(|id| !is_nine_char_id(id))
                    .map(|id| format!("message {i}: tool call id {id:?} is not 9 letters and digits"))
            }),
            NoUserAfterTool => pairs()
                .find(|(_, before, m)| role(before) == "tool" && role(m) == "user")
                .map(|(i, _, _)| format!("message {i}: unexpected role 'user' after role 'tool'")),
            ResultsAnswerCalls => {
                let mut open: Vec<&str> = Vec::new();
                for (i, m) in messages.iter().enumerate() {
                    match m {
                        Message::Tool { tool_call_id, .. } => match open.iter().position(|id| id == tool_call_id) {
                            Some(at) => {
                                open.remove(at);
                            }
                            None => {
                                return Some(format!(
                                    "message {i} answers {tool_call_id:?}, no call of the assistant message before it"
                                ))
                            }
                        },
                        _ if !open.is_empty() => {
                            return Some(format!("message {i} comes before the results of {open:?}"));
                        }
                        _ => open = m.tool_calls().iter().map(|c| c.id.as_str()).collect(),
                    }
                }
                None
            }
        }
    }
}

/// Whether `id` is a tool call id Mistral accepts: 9 ASCII letters and digits.
pub fn is_nine_char_id(id: &str) -> bool {
    id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// What a strict chat template refuses in `messages`: a `system` message
/// anywhere but first, or two consecutive messages of the same role (tool
/// results excepted). `None` when the request is well-formed.
pub fn template_violation(messages: &[Message]) -> Option<String> {
    TemplateFamily::named("strict").and_then(|f| f.violation(messages))
}

/// The messages with every `system` message folded into the first user
/// message (its text first, a blank line between), for a server whose
/// template refuses the system role (Gemma 2): the model still reads the
/// instructions first. A conversation without a user message gets one.
pub fn fold_system(messages: Vec<Message>) -> Vec<Message> {
    let mut system = String::new();
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::System { content } => {
                if !system.is_empty() {
                    system.push_str("\n\n");
                }
                system.push_str(&content);
            }
            other => out.push(other),
        }
    }
    if system.is_empty() {
        return out;
    }
    match out.iter_mut().find_map(|m| match m {
        Message::User { content } => Some(content),
        _ => None,
    }) {
        Some(content) => {
            system.push_str("\n\n");
            content.insert_str(0, &system);
        }
        None => out.insert(0, Message::user(system)),
    }
    out
}

/// Adds `text` to the request's last message when it is the person's or a
/// tool result (after a blank line), else as a new user message: extra
/// instructions never become a second `system` message, which strict chat
/// templates (llama.cpp, some Ollama models) refuse after a user turn, nor a
/// `user` message right after tool results, which Mistral's API and the
/// templates of Mistral Nemo, Small 3.2, Ministral and Gemma refuse.
pub fn add_user_text(messages: &mut Vec<Message>, text: &str) {
    match messages.last_mut() {
        Some(Message::User { content } | Message::Tool { content, .. }) => {
            content.push_str("\n\n");
            content.push_str(text);
        }
        _ => messages.push(Message::user(text)),
    }
}

/// The messages with no two consecutive ones of the same role (tool results
/// excepted: one per call) and no `user` message directly after a tool
/// result: consecutive user (or system) messages are joined with a blank
/// line, a user message after a tool result joins that result's text (what
/// the person added while the tools ran rides there), consecutive assistant
/// messages become one (text joined, tool calls kept in order). Strict chat
/// templates require this.
pub fn alternate(messages: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        match (out.last_mut(), message) {
            (Some(Message::User { content }), Message::User { content: more })
            | (Some(Message::Tool { content, .. }), Message::User { content: more })
            | (Some(Message::System { content }), Message::System { content: more }) => {
                content.push_str("\n\n");
                content.push_str(&more);
            }
            (
                Some(Message::Assistant { content, tool_calls }),
                Message::Assistant { content: more, tool_calls: more_calls },
            ) => {
                if let Some(more) = more.filter(|m| !m.is_empty()) {
                    match content {
                        Some(text) if !text.is_empty() => {
                            text.push_str("\n\n");
                            text.push_str(&more);
                        }
                        _ => *content = Some(more),
                    }
                }
                tool_calls.extend(more_calls);
            }
            (_, message) => out.push(message),
        }
    }
    out
}

/// What servers refused of each model, learned from the refusal once and
/// kept for the session's later requests: a model whose template has no
/// system role (Gemma 2) gets its system prompt folded into the first user
/// message; one whose server wants its reasoning back on tool-call turns
/// (DeepSeek's thinking mode) gets it sent back.
#[derive(Debug, Default)]
pub struct Learned(std::cell::RefCell<Vec<(String, super::Refusal)>>);

impl Learned {
    /// Lays `request` out as what was learned of its model requires (again
    /// on the same request: no change).
    pub fn adapt(&self, request: &mut super::ChatRequest) {
        for (_, refusal) in self.0.borrow().iter().filter(|(m, _)| *m == request.model) {
            match refusal {
                super::Refusal::SystemRole => request.messages = fold_system(std::mem::take(&mut request.messages)),
                _ => request.echo_reasoning = true,
            }
        }
    }

    /// Keeps what `error` says `model` cannot take, when a changed layout
    /// answers it and it was not known yet: the request is worth sending
    /// again.
    pub fn learn(&self, model: &str, error: &super::LlmError) -> bool {
        use super::Refusal::{ReasoningRequired, SystemRole};
        let Some(refusal @ (SystemRole | ReasoningRequired)) = error.refusal() else { return false };
        let mut known = self.0.borrow_mut();
        if known.iter().any(|(m, r)| m == model && *r == refusal) {
            return false;
        }
        known.push((model.to_owned(), refusal));
        true
    }
}

#[cfg(test)]
mod template_tests {
    use super::*;
    use crate::llm::ToolCall;

    #[test]
    fn extra_instructions_join_the_last_user_message_never_a_second_system_one() {
        let mut messages = vec![Message::system("s"), Message::user("u")];
        add_user_text(&mut messages, "reply with JSON");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].text(), "u\n\nreply with JSON");
        let call = ToolCall::new("aaaaaaaa1", "t", &serde_json::json!({}));
        let calls = Message::Assistant { content: None, tool_calls: vec![call] };
        let mut after_tools = vec![Message::system("s"), Message::user("u"), calls, Message::tool("aaaaaaaa1", "r")];
        add_user_text(&mut after_tools, "context");
        assert_eq!(after_tools.len(), 4, "the context rides at the end of the tool result");
        assert_eq!(after_tools[3].text(), "r\n\ncontext");
        for family in TEMPLATE_FAMILIES.iter().filter(|f| f.name != "gemma2") {
            assert_eq!(family.violation(&after_tools), None, "{}", family.name);
        }
        let mut assistant_last = vec![Message::user("u"), Message::assistant("a")];
        add_user_text(&mut assistant_last, "more");
        assert_eq!(assistant_last.last(), Some(&Message::user("more")));
    }

    #[test]
    fn alternation_joins_what_strict_templates_refuse() {
        let call = ToolCall::new("c", "t", &serde_json::json!({}));
        let messages = vec![
            Message::system("a"),
            Message::user("b"),
            Message::user("c"),
            Message::assistant("d"),
            Message::Assistant { content: None, tool_calls: vec![call.clone()] },
            Message::tool("c", "r1"),
            Message::tool("c2", "r2"),
        ];
        assert!(template_violation(&messages).unwrap().contains("both user"));
        let fixed = alternate(messages);
        assert_eq!(template_violation(&fixed), None);
        assert_eq!(fixed[1].text(), "b\n\nc");
        assert_eq!((fixed[2].text(), fixed[2].tool_calls()), ("d", std::slice::from_ref(&call)));
        assert_eq!(fixed.len(), 5, "tool results stay one per call");
        // What the person added while the tools ran joins the last result.
        let interjected = alternate(vec![Message::user("u"), Message::tool("c", "r"), Message::user("also this")]);
        assert_eq!(interjected, vec![Message::user("u"), Message::tool("c", "r\n\nalso this")]);
        assert!(template_violation(&[Message::user("u"), Message::system("late")]).unwrap().contains("system"));
    }
}

#[cfg(test)]
mod family_tests {
    use super::*;
    use crate::llm::{LlmError, Refusal, ToolCall};
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "open_url", &json!({"url": "u"}))
    }

    fn calls(ids: &[&str]) -> Message {
        Message::Assistant { content: None, tool_calls: ids.iter().map(|id| call(id)).collect() }
    }

    /// Layouts and the families that refuse each (the rest accept it).
    fn layouts() -> Vec<(&'static str, Vec<Message>, &'static [&'static str])> {
        let sys = || Message::system("s");
        let user = |t: &str| Message::user(t);
        vec![
            ("plain chat", vec![user("u"), Message::assistant("a"), user("v")], &[]),
            (
                "parallel calls, their results, an answer",
                vec![
                    user("u"),
                    calls(&["aaaaaaaa1", "aaaaaaaa2"]),
                    Message::tool("aaaaaaaa1", "r"),
                    Message::tool("aaaaaaaa2", "r"),
                    Message::assistant("a"),
                ],
                &["llama3"],
            ),
            (
                "a user message after the tool results",
                vec![user("u"), calls(&["aaaaaaaa1"]), Message::tool("aaaaaaaa1", "r"), user("status")],
                &["mistral", "gemma2", "gemma3"],
            ),
            ("the system role", vec![sys(), user("u")], &["gemma2"]),
            (
                "a late system message",
                vec![sys(), user("u"), Message::assistant("a"), sys(), user("v")],
                &["strict", "qwen", "llama3", "mistral", "gemma2", "gemma3"],
            ),
            ("two user messages", vec![user("u"), user("v")], &["strict", "mistral", "gemma2", "gemma3"]),
            (
                "ids Mistral refuses",
                vec![user("u"), calls(&["call_0"]), Message::tool("call_0", "r"), Message::assistant("a")],
                &["mistral"],
            ),
            (
                "a result that answers no call",
                vec![user("u"), Message::tool("x", "r"), Message::assistant("a")],
                &["reference", "mistral"],
            ),
            (
                "a call left unanswered",
                vec![user("u"), calls(&["aaaaaaaa1"]), Message::assistant("a")],
                &["reference", "mistral", "strict"],
            ),
            ("the assistant first", vec![Message::assistant("a"), user("u")], &["mistral", "gemma2", "gemma3"]),
        ]
    }

    #[test]
    fn each_family_refuses_what_its_template_does() {
        for (name, messages, refused_by) in layouts() {
            for family in TEMPLATE_FAMILIES {
                let refused = family.violation(&messages);
                assert_eq!(
                    refused.is_some(),
                    refused_by.contains(&family.name),
                    "{name}, {}: {refused:?}",
                    family.name
                );
            }
        }
        assert_eq!(TemplateFamily::named("nope"), None);
        assert!(is_nine_char_id("D681PevKs") && !is_nine_char_id("D681PevK_") && !is_nine_char_id("short"));
        assert!(is_nine_char_id(&ToolCall::fresh_id()), "made ids suit every family");
        let mistral = TemplateFamily::named("mistral").unwrap();
        let after_tool = &layouts()[2].1;
        assert!(mistral.violation(after_tool).unwrap().contains("unexpected role 'user' after role 'tool'"));
    }

    /// The fake upstream (tests/fakes/upstream.mjs) enforces the same rules
    /// for the browser and end-to-end layers: the same verdict on every layout.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_fake_upstream_enforces_the_same_rules() {
        use std::io::Write;
        let mut cases = Vec::new();
        let mut want = Vec::new();
        for (_, messages, _) in layouts() {
            for family in TEMPLATE_FAMILIES {
                cases.push(json!({ "family": family.name, "messages": messages }));
                want.push(family.violation(&messages).is_some());
            }
        }
        let fake = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fakes/upstream.mjs");
        let mut node = std::process::Command::new("node")
            .args([fake, "--check-template"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("node runs the fake upstream (the test layers need it)");
        node.stdin.take().unwrap().write_all(serde_json::Value::Array(cases).to_string().as_bytes()).unwrap();
        let out = node.wait_with_output().unwrap();
        let verdicts: Vec<Option<String>> = serde_json::from_slice(&out.stdout).expect("a verdict per case");
        let got: Vec<bool> = verdicts.iter().map(Option::is_some).collect();
        assert_eq!(got, want, "{verdicts:?}");
    }

    #[test]
    fn a_refusal_is_learned_once_per_model_and_shapes_its_later_requests() {
        let learned = Learned::default();
        let request = || {
            let mut r = crate::llm::ChatRequest::new("gemma", vec![Message::system("Rules."), Message::user("Hi")]);
            r.messages.push(calls(&["aaaaaaaa1"]));
            r
        };
        let adapt = |mut r: crate::llm::ChatRequest| {
            learned.adapt(&mut r);
            r
        };
        assert_eq!(adapt(request()), request(), "nothing learned, nothing changed");
        let no_system = LlmError::from_http(400, r#"{"error":{"message":"System role not supported"}}"#, None);
        assert!(learned.learn("gemma", &no_system));
        assert!(!learned.learn("gemma", &no_system), "learned once: the same refusal again is an error to show");
        let adapted = adapt(request());
        assert_eq!(adapted.messages[0], Message::user("Rules.\n\nHi"));
        assert_eq!(adapt(adapted.clone()), adapted, "adapting again changes nothing");
        assert!(!adapted.echo_reasoning);
        let mut other = request();
        other.model = "qwen".into();
        assert_eq!(adapt(other.clone()), other, "kept per model");
        let reasoning = LlmError::from_http(
            400,
            r#"{"error":{"message":"The `reasoning_content` in the thinking mode must be passed back to the API."}}"#,
            None,
        );
        assert!(learned.learn("deepseek", &reasoning));
        let mut deepseek = request();
        deepseek.model = "deepseek".into();
        let adapted = adapt(deepseek);
        assert!(adapted.echo_reasoning && adapted.messages[0] == Message::system("Rules."));
        let other_error = LlmError::from_http(400, r#"{"error":{"message":"temperature must be at most 2"}}"#, None);
        assert!(!learned.learn("gemma", &other_error));
        assert!(!learned.learn("gemma", &LlmError::from_http(503, "System role not supported", None)));
    }

    #[test]
    fn the_system_prompt_folds_into_the_first_user_message() {
        let folded = fold_system(vec![
            Message::system("Rules."),
            Message::user("Hi"),
            Message::assistant("a"),
            Message::user("b"),
        ]);
        assert_eq!(folded, vec![Message::user("Rules.\n\nHi"), Message::assistant("a"), Message::user("b")]);
        assert_eq!(TemplateFamily::named("gemma2").unwrap().violation(&folded), None);
        assert_eq!(fold_system(vec![Message::system("Only rules.")]), vec![Message::user("Only rules.")]);
        let untouched = vec![Message::user("u")];
        assert_eq!(fold_system(untouched.clone()), untouched);
    }

    #[test]
    fn refusals_are_recognised_from_the_servers_words() {
        // Error texts as the servers document or report them (paraphrased
        // where a template's own message is not public).
        let cases = [
            (r#"{"error":{"message":"System role not supported"}}"#, Some(Refusal::SystemRole)),
            (
                r#"{"object":"error","message":"Unexpected role 'user' after role 'tool'","type":"invalid_request_error"}"#,
                Some(Refusal::UserAfterTool),
            ),
            (
                r#"{"error":{"message":"Conversation roles must alternate user/assistant/user/assistant/..."}}"#,
                Some(Refusal::Alternation),
            ),
            (
                r#"{"object":"error","message":"Tool call id was call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9.","type":"invalid_request_error"}"#,
                Some(Refusal::ToolCallId),
            ),
            (
                r#"{"error":{"message":"The `reasoning_content` in the thinking mode must be passed back to the API.","type":"invalid_request_error"}}"#,
                Some(Refusal::ReasoningRequired),
            ),
            (
                r#"{"error":{"message":"Missing `reasoning_content` field in the assistant message at message index 2."}}"#,
                Some(Refusal::ReasoningRequired),
            ),
            (
                r#"{"error":"registry.ollama.ai/library/gemma2:2b does not support tools"}"#,
                Some(Refusal::ToolsUnsupported),
            ),
            (r#"{"error":"\"llama3.2\" does not support thinking"}"#, Some(Refusal::ThinkingUnsupported)),
            (
                r#"{"error":{"message":"This model only supports single tool-calls at once!"}}"#,
                Some(Refusal::OneCallPerMessage),
            ),
            (r#"{"error":{"message":"temperature must be at most 2"}}"#, None),
        ];
        for (body, want) in cases {
            assert_eq!(LlmError::from_http(400, body, None).refusal(), want, "{body}");
        }
        assert_eq!(LlmError::from_http(503, r#"{"error":"System role not supported"}"#, None).refusal(), None);
    }
}
