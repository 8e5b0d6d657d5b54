//! Context compression (seed 001): when a request nears the model's window,
//! a sub-model summarises the older part of the conversation into a fixed
//! structure; the newest steps stay word for word. The raw messages stay in
//! the state (the person's transcript and the UI keep them); the model is
//! sent the summary (in the dynamic tail) and the messages after the cut.
//!
//! The person's instructions are carried over twice: the sub-model lists
//! them, and the product copies them from the person's own messages
//! deterministically, so a summariser that drops one cannot lose it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::settings::CompressionSettings;
use crate::context::summarize_arguments;
use crate::json::{pair, Fields};
use crate::llm::{estimate_tokens, Message};

/// Why a compression ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The request would take more than `tokenRatio` of the window.
    TokenThreshold,
    /// The last message is a heavy tool result and the request is above
    /// `heavyToolRatio` of the window.
    HeavyTool,
    /// `turnLimit` main-model calls since the last compression.
    TurnLimit,
}

/// Whether to compress before a model call.
pub fn decide(
    estimate: usize,
    window: usize,
    last_is_heavy: bool,
    calls_since: u32,
    settings: &CompressionSettings,
) -> Option<Reason> {
    if !settings.enabled {
        return None;
    }
    let share = estimate as f64 / window.max(1) as f64;
    if share > settings.token_ratio {
        Some(Reason::TokenThreshold)
    } else if last_is_heavy && share > settings.heavy_tool_ratio {
        Some(Reason::HeavyTool)
    } else if settings.turn_limit > 0 && calls_since >= settings.turn_limit {
        Some(Reason::TurnLimit)
    } else {
        None
    }
}

/// A decision with its rationale.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct KeyDecision {
    pub decision: String,
    pub rationale: String,
}

/// An approach that failed, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct FailedAttempt {
    pub approach: String,
    pub reason_failed: String,
}

/// A tool call as what / where / how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct CallOutcome {
    pub tool: String,
    pub target: String,
    /// "success", "error" or "partial".
    pub outcome: String,
}

/// Where the task stands.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct TaskState {
    pub completed: Vec<String>,
    pub remaining: Vec<String>,
    pub blockers: Vec<String>,
}

/// The sub-model's summary. `user_constraints` and `task_state` are
/// required: an answer without them is refused (and nothing is compressed).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Summary {
    pub user_constraints: Vec<String>,
    pub decisions: Vec<KeyDecision>,
    pub failed_attempts: Vec<FailedAttempt>,
    pub tool_calls: Vec<CallOutcome>,
    pub recent_narrative: String,
    pub task_state: TaskState,
}

/// Reads a summary from JSON by hand (see `json::Fields`).
fn summary_from(value: &Value) -> Result<Summary, String> {
    let f = Fields(value);
    let task = f.object("task_state")?;
    Ok(Summary {
        user_constraints: f.strings("user_constraints", true)?,
        decisions: f
            .rows("decisions", &["decision", "rationale"])?
            .into_iter()
            .map(|row| {
                let (decision, rationale) = pair(row);
                KeyDecision { decision, rationale }
            })
            .collect(),
        failed_attempts: f
            .rows("failed_attempts", &["approach", "reason_failed"])?
            .into_iter()
            .map(|row| {
                let (approach, reason_failed) = pair(row);
                FailedAttempt { approach, reason_failed }
            })
            .collect(),
        tool_calls: f
            .rows("tool_calls", &["tool", "target", "outcome"])?
            .into_iter()
            .map(|mut row| {
                let outcome = row.pop().unwrap_or_default();
                let (tool, target) = pair(row);
                CallOutcome { tool, target, outcome }
            })
            .collect(),
        recent_narrative: f.text("recent_narrative", false)?,
        task_state: TaskState {
            completed: task.strings("completed", false)?,
            remaining: task.strings("remaining", false)?,
            blockers: task.strings("blockers", false)?,
        },
    })
}

impl<'de> Deserialize<'de> for Summary {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Summary, D::Error> {
        summary_from(&Value::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// The compression state of a session (checkpointed with the messages).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Compaction {
    /// Messages before this index are summarised, not sent.
    pub upto: usize,
    pub summary: Summary,
    /// The person's instructions, copied word for word from their messages.
    pub constraints: Vec<String>,
    /// Compressions so far in the session.
    pub count: u32,
    /// Artifacts the summary lists (their tool results were summarised),
    /// and that listing as sent (kept as text: the summary is byte-stable).
    #[serde(default)]
    pub artifacts: Vec<String>,
    #[serde(default)]
    pub artifact_listing: String,
}

impl Compaction {
    /// The compression state as checkpointed.
    pub fn from_value(value: &Value) -> Result<Compaction, String> {
        let f = Fields(value);
        Ok(Compaction {
            upto: f.count("upto", true)? as usize,
            summary: summary_from(f.need("summary")?)?,
            constraints: f.strings("constraints", true)?,
            count: f.count("count", true)? as u32,
            artifacts: f.strings("artifacts", false)?,
            artifact_listing: f.text("artifact_listing", false)?,
        })
    }
}

/// Where a compression may cut `messages` so that the newest `keep` steps
/// stay (a step: a person's message, or a model message with the tool
/// results that answer it; a cut never separates a call from its result).
/// `None` when there is nothing older than those steps after `from`.
pub fn cut(messages: &[Message], from: usize, keep: usize) -> Option<usize> {
    let keep = keep.max(1);
    let mut steps = 0;
    for at in (from..messages.len()).rev() {
        if matches!(messages[at], Message::Tool { .. }) {
            continue;
        }
        steps += 1;
        if steps == keep {
            return (at > from).then_some(at);
        }
    }
    None
}

/// Model messages whose results count as heavy whatever their size (pages,
/// searches, manuscripts, artifacts) are named by the tools; any result of
/// at least a twentieth of the window counts too.
pub fn heavy_share(result: &str, window: usize) -> bool {
    estimate_tokens(result) * 20 >= window
}

/// Sentences that read as instructions, in English and Japanese.
const DIRECTIVE_MARKERS: &[&str] = &[
    "must",
    "should",
    "always",
    "never",
    "don't",
    "do not",
    "only",
    "avoid",
    "keep",
    "use ",
    "without",
    "make sure",
    "please",
    "need",
    "no ",
    "write ",
    "tone",
    "style",
    "format",
    "language",
    "ください",
    "ないで",
    "必ず",
    "絶対",
    "だけ",
    "のみ",
    "禁止",
    "常に",
    "べき",
    "こと",
    "文体",
    "口調",
];

/// The session's first message up to this many characters is carried whole.
const WHOLE_MESSAGE_CHARS: usize = 600;

/// The person's instructions in `messages`, word for word: the session's
/// opening message whole (when short: it usually states the task and its
/// rules) and, from every other message, the sentences that read as
/// instructions. `opening` says whether `messages` starts the session.
pub fn person_constraints(messages: &[Message], opening: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut first = opening;
    for message in messages {
        let Message::User { content } = message else { continue };
        let text = content.trim();
        if text.is_empty() {
            continue;
        }
        if std::mem::take(&mut first) && text.chars().count() <= WHOLE_MESSAGE_CHARS {
            out.push(text.to_owned());
            continue;
        }
        for sentence in sentences(text) {
            let lower = crate::platform::lowercase(sentence);
            if DIRECTIVE_MARKERS.iter().any(|m| lower.contains(m)) {
                out.push(sentence.to_owned());
            }
        }
    }
    out
}

fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut pieces = Vec::new();
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n') {
            let end = i + c.len_utf8();
            pieces.push(&text[start..end]);
            start = end;
        }
    }
    pieces.push(&text[start..]);
    pieces.into_iter().map(str::trim).filter(|s| s.chars().count() > 2)
}

/// Joins instruction lists, first occurrence first, without repeats.
pub fn merge_constraints(lists: &[&[String]]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in lists.iter().flat_map(|l| l.iter()) {
        if !out.iter().any(|o| o == item) {
            out.push(item.clone());
        }
    }
    out
}

/// The instructions that fit `max_tokens`, oldest first (the first turn's
/// are the ones a long session loses first); a note says how many did not.
pub fn fit_constraints(list: Vec<String>, max_tokens: usize) -> Vec<String> {
    let mut used = 0;
    let mut out = Vec::new();
    let total = list.len();
    for item in list {
        let cost = estimate_tokens(&item) + 2;
        if used + cost > max_tokens {
            break;
        }
        used += cost;
        out.push(item);
    }
    if out.len() < total {
        out.push(format!("({} later instructions did not fit here; see the recent messages)", total - out.len()));
    }
    out
}

/// Per-message character caps of the transcript the sub-model reads.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub tool_result: usize,
    pub other: usize,
}

fn clip(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head} […{} more chars]", count - max)
}

/// Whether `field` of a call of `tool` carries bulk text (the tool's declaration).
pub type Bulk<'a> = &'a dyn Fn(&str, &str) -> bool;

/// The part to summarise as the sub-model reads it: one line per message,
/// tool calls as `name(arguments)` with bulk fields summarised, results cut.
pub fn transcript(messages: &[Message], caps: Caps, bulk: Bulk<'_>) -> String {
    let mut names = std::collections::HashMap::new();
    let mut out = String::new();
    for message in messages {
        match message {
            Message::System { content } => out.push_str(&format!("[system] {}\n", clip(content, caps.other))),
            Message::User { content } => out.push_str(&format!("[person] {}\n", clip(content, caps.other))),
            Message::Assistant { content, tool_calls } => {
                if let Some(text) = content.as_deref().filter(|t| !t.trim().is_empty()) {
                    out.push_str(&format!("[assistant] {}\n", clip(text, caps.other)));
                }
                for call in tool_calls {
                    names.insert(call.id.clone(), call.function.name.clone());
                    let name = call.function.name.as_str();
                    out.push_str(&format!(
                        "[call {}] {name}({})\n",
                        call.id,
                        summarize_arguments(&call.function.arguments, &|field| bulk(name, field))
                    ));
                }
            }
            Message::Tool { tool_call_id, content } => {
                let name = names.get(tool_call_id).map_or("tool", String::as_str);
                out.push_str(&format!("[result of {name} {tool_call_id}] {}\n", clip(content, caps.tool_result)));
            }
        }
    }
    out
}

/// Reads the sub-model's answer: the schema's fields, the required ones
/// present. A missing `user_constraints` or `task_state` is an error.
pub fn parse_summary(value: Value) -> Result<Summary, String> {
    summary_from(&value)
}

fn bullet_list(out: &mut String, title: &str, items: impl Iterator<Item = String>) {
    let items: Vec<String> = items.filter(|s| !s.trim().is_empty()).collect();
    if items.is_empty() {
        return;
    }
    out.push_str(title);
    out.push('\n');
    for item in items {
        out.push_str("- ");
        out.push_str(&item);
        out.push('\n');
    }
}

impl Compaction {
    /// The summary as the model reads it in the dynamic tail, the person's
    /// instructions within `constraint_tokens`.
    pub fn render(&self, constraint_tokens: usize) -> String {
        let s = &self.summary;
        let mut out = String::from(
            "## Summary of the earlier conversation\nThe older part of this conversation was summarised to fit your \
             context window; the messages after it are complete.\n",
        );
        // The person's words first, as they wrote them; then what the
        // summariser listed that is not already among them.
        let extra: Vec<String> = s
            .user_constraints
            .iter()
            .filter(|c| !self.constraints.iter().any(|own| own.contains(c.as_str())))
            .cloned()
            .collect();
        bullet_list(
            &mut out,
            "The person's instructions (word for word):",
            fit_constraints(self.constraints.clone(), constraint_tokens).into_iter(),
        );
        bullet_list(&mut out, "Further constraints noted:", extra.into_iter());
        bullet_list(
            &mut out,
            "Decisions:",
            s.decisions.iter().map(|d| {
                if d.rationale.is_empty() {
                    d.decision.clone()
                } else {
                    format!("{} (because {})", d.decision, d.rationale)
                }
            }),
        );
        bullet_list(
            &mut out,
            "Failed attempts (do not repeat):",
            s.failed_attempts.iter().map(|f| format!("{}: {}", f.approach, f.reason_failed)),
        );
        bullet_list(
            &mut out,
            "Tool calls already made:",
            s.tool_calls.iter().map(|c| format!("{} · {} · {}", c.tool, c.target, c.outcome)),
        );
        bullet_list(&mut out, "Completed:", s.task_state.completed.iter().cloned());
        bullet_list(&mut out, "Remaining:", s.task_state.remaining.iter().cloned());
        bullet_list(&mut out, "Blockers:", s.task_state.blockers.iter().cloned());
        if !s.recent_narrative.trim().is_empty() {
            out.push_str("Recent course: ");
            out.push_str(s.recent_narrative.trim());
            out.push('\n');
        }
        if !self.artifact_listing.is_empty() {
            out.push('\n');
            out.push_str(&self.artifact_listing);
        }
        out.trim_end().to_owned()
    }
}

/// The instructions of the compression sub-agent.
pub const PROMPT: &str = "You summarise the earlier part of a writing assistant's conversation so the assistant can \
continue without it. Rules:\n\
1. Copy every instruction or constraint the person gave (language, style, names, what to avoid) word for word into \
user_constraints.\n\
2. Keep decisions (with their rationale) apart from failed attempts (with why they failed).\n\
3. Summarise each tool call as tool, target and outcome (success, error or partial).\n\
4. Write a short recent_narrative of how the work went, and the task state: completed, remaining, blockers.\n\
5. Invent nothing: leave out what the conversation does not say.\n\
If a summary so far is given, fold it into the new one (keep its constraints). Answer with one JSON object only.";

pub const SCHEMA: &str = r#"{"type":"object","properties":{"user_constraints":{"type":"array","items":{"type":"string"}},"decisions":{"type":"array","items":{"type":"object","properties":{"decision":{"type":"string"},"rationale":{"type":"string"}},"required":["decision","rationale"],"additionalProperties":false}},"failed_attempts":{"type":"array","items":{"type":"object","properties":{"approach":{"type":"string"},"reason_failed":{"type":"string"}},"required":["approach","reason_failed"],"additionalProperties":false}},"tool_calls":{"type":"array","items":{"type":"object","properties":{"tool":{"type":"string"},"target":{"type":"string"},"outcome":{"type":"string","enum":["success","error","partial"]}},"required":["tool","target","outcome"],"additionalProperties":false}},"recent_narrative":{"type":"string"},"task_state":{"type":"object","properties":{"completed":{"type":"array","items":{"type":"string"}},"remaining":{"type":"array","items":{"type":"string"}},"blockers":{"type":"array","items":{"type":"string"}}},"required":["completed","remaining","blockers"],"additionalProperties":false}},"required":["user_constraints","decisions","failed_attempts","tool_calls","recent_narrative","task_state"],"additionalProperties":false}"#;

/// A compression is worth a sub-model call only when the part it would
/// summarise is at least this large (estimated tokens).
pub const MIN_PART_TOKENS: usize = 1024;

/// Most tokens the sub-model may answer with.
pub const MAX_SUMMARY_TOKENS: u32 = 2048;

/// The sub-model's request text: the summary so far (if any) and the part
/// to summarise, its messages cut until the request fits `budget` tokens.
/// `None` when even the tightest cut does not fit.
pub fn compressor_input(previous: Option<&Summary>, part: &[Message], budget: usize, bulk: Bulk<'_>) -> Option<String> {
    let previous = previous
        .map(|s| format!("Summary so far:\n{}\n\n", crate::json::to_text(s).unwrap_or_default()))
        .unwrap_or_default();
    let mut caps = Caps { tool_result: 1500, other: 4000 };
    loop {
        let text = format!("{previous}Conversation to summarise:\n{}", transcript(part, caps, bulk));
        if estimate_tokens(&text) + estimate_tokens(PROMPT) + estimate_tokens(SCHEMA) <= budget {
            return Some(text);
        }
        if caps.tool_result <= 100 && caps.other <= 300 {
            return None;
        }
        caps = Caps { tool_result: (caps.tool_result / 2).max(100), other: (caps.other / 2).max(300) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;
    use serde_json::json;

    fn settings() -> CompressionSettings {
        CompressionSettings::default()
    }

    #[test]
    fn the_three_triggers_and_their_order() {
        let s = settings();
        assert_eq!(decide(6001, 10_000, false, 0, &s), Some(Reason::TokenThreshold));
        assert_eq!(decide(6000, 10_000, false, 0, &s), None);
        assert_eq!(decide(4001, 10_000, true, 0, &s), Some(Reason::HeavyTool));
        assert_eq!(decide(4001, 10_000, false, 0, &s), None);
        assert_eq!(decide(100, 10_000, false, 30, &s), Some(Reason::TurnLimit));
        assert_eq!(decide(100, 10_000, false, 29, &s), None);
        assert_eq!(decide(9000, 10_000, true, 40, &CompressionSettings { enabled: false, ..s }), None);
    }

    fn step(id: &str) -> Vec<Message> {
        vec![
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall::new(id, "get_artifact", &json!({"id": id}))],
            },
            Message::tool(id, format!("text of {id}")),
        ]
    }

    #[test]
    fn a_cut_keeps_whole_steps_and_never_splits_a_call_from_its_result() {
        let mut m = vec![Message::user("first")];
        m.extend(step("a"));
        m.extend(step("b"));
        m.push(Message::assistant("done"));
        m.push(Message::user("second"));
        m.extend(step("c"));
        // Steps from the end: c(7), user(6), done(5), b(3), a(1), first(0).
        assert_eq!(cut(&m, 0, 1), Some(7));
        assert_eq!(cut(&m, 0, 2), Some(6));
        assert_eq!(cut(&m, 0, 4), Some(3));
        assert_eq!(cut(&m, 0, 5), Some(1));
        assert_eq!(cut(&m, 0, 6), None, "nothing older than six steps");
        assert_eq!(cut(&m, 3, 4), None, "nothing after the last cut to summarise");
        for keep in 1..6 {
            if let Some(at) = cut(&m, 0, keep) {
                assert!(!matches!(m[at], Message::Tool { .. }));
            }
        }
    }

    #[test]
    fn the_opening_message_is_kept_whole_and_later_ones_by_their_instructions() {
        let long = format!("{} Always write in the present tense. {}", "Some background. ".repeat(60), "More.");
        let messages = [
            Message::user("Chapter 3 next. Use British spelling; never rename Aiko."),
            Message::assistant("OK"),
            Message::user(long),
            Message::user("Search for topic 4"),
            Message::user("　会話文は「」で括ってください。"),
        ];
        let instructions = ["Always write in the present tense.", "会話文は「」で括ってください。"];
        let got = person_constraints(&messages, true);
        assert_eq!(got[0], "Chapter 3 next. Use British spelling; never rename Aiko.");
        assert_eq!(got[1..], instructions);
        let later = person_constraints(&messages, false);
        assert_eq!(later, ["Use British spelling; never rename Aiko.", instructions[0], instructions[1]]);
    }

    #[test]
    fn a_summary_without_its_required_fields_is_refused() {
        assert!(parse_summary(json!({"decisions": []})).is_err());
        assert!(parse_summary(json!({"user_constraints": ["x"]})).is_err());
        let ok = parse_summary(json!({"user_constraints": ["x"], "task_state": {"completed": ["a"]}})).unwrap();
        assert_eq!(ok.task_state.completed, ["a"]);
    }

    #[test]
    fn the_rendered_summary_leads_with_the_persons_words() {
        let c = Compaction {
            upto: 4,
            summary: Summary {
                user_constraints: vec!["never rename Aiko".into(), "keep chapters short".into()],
                tool_calls: vec![CallOutcome {
                    tool: "web_search".into(),
                    target: "Kyoto".into(),
                    outcome: "success".into(),
                }],
                ..Summary::default()
            },
            constraints: vec!["Use British spelling; never rename Aiko.".into()],
            count: 1,
            ..Compaction::default()
        };
        let text = c.render(1000);
        let own = text.find("Use British spelling; never rename Aiko.").unwrap();
        assert!(own < text.find("keep chapters short").unwrap());
        assert_eq!(text.matches("never rename Aiko").count(), 1, "{text}");
        assert!(text.contains("web_search · Kyoto · success"));
    }

    #[test]
    fn the_compressor_input_shrinks_its_cuts_until_it_fits() {
        let mut part = vec![Message::user("Summarise the sources")];
        for i in 0..20 {
            part.extend(step(&format!("c{i}")));
            if let Message::Tool { content, .. } = part.last_mut().unwrap() {
                *content = "word ".repeat(3000);
            }
        }
        let none = &|_: &str, _: &str| false;
        let roomy = compressor_input(None, &part, 100_000, none).unwrap();
        let tight = compressor_input(None, &part, 6_000, none).unwrap();
        assert!(tight.len() < roomy.len());
        assert!(estimate_tokens(&tight) <= 6_000);
        assert!(compressor_input(None, &part, 500, none).is_none());
    }
}
