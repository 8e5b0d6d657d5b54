//! The agent's prompts (written for this project).

use super::strategy::Strategy;

pub const ROUTER: &str = "Classify the person's latest message for a writing assistant. Choose one strategy:\n\
- \"chat_only\": greetings, small talk, thanks, or a short question you can answer from general knowledge without tools.\n\
- \"general_agent\": anything that needs looking things up (web search, opening pages), current facts, or a multi-step task with notes.\n\
- \"writing\": work on the person's own projects: manuscript chapters, plot, project details, edits and rewrites.\n\
Answer with JSON only: {\"strategy\": \"chat_only\" | \"general_agent\" | \"writing\", \"reasoning\": \"one short sentence\"}.";

pub const ROUTER_SCHEMA: &str = r#"{"type":"object","properties":{"strategy":{"type":"string","enum":["chat_only","general_agent","writing"]},"reasoning":{"type":"string"}},"required":["strategy","reasoning"],"additionalProperties":false}"#;

const BASE: &str =
    "You are the writing assistant of a local-first writing studio. The person's projects and your session \
artifacts live in their browser. Answer in the language the person writes in.";

const TOOLS: &str = "How to work:\n\
- Use tools without asking permission when they help; never invent facts about the person's projects: read them with the project tools.\n\
- Find ids yourself (list_projects, get_outline) instead of asking for them. To find a passage, a name or a scene, search_project first, then read what it found.\n\
- When the person refers to an earlier conversation: list_memory_dates if they give a time, search_memories if they describe it, then read_memories_by_date for the dates found.\n\
- Before a search or a long read, say what you are doing with report_progress. Use record_thought for short reasoning and plan_task for multi-step work.\n\
- Reuse the session artifacts listed in the context before searching again; call get_artifact to read one in full.\n\
- Edits to the manuscript or artifacts are shown to the person for approval; if they reject one, take their reason into account.\n\
- Finish by giving your answer with the respond tool (Markdown), or as your final message.";

const WRITING: &str =
    "You are working on the person's project. Copy text exactly from get_manuscript when you edit, and keep \
their voice, formatting and indentation (Japanese paragraphs begin with an ideographic space). When the context lists \
the project's continuity notes, keep names, terms and motifs consistent with them.";

/// The system prompt for a strategy.
pub fn system(strategy: Strategy) -> String {
    let fences = crate::context::untrusted::FENCE_RULE;
    match strategy {
        Strategy::ChatOnly => {
            format!("{BASE} Reply conversationally and briefly; you have no tools in this reply.\n\n{fences}")
        }
        Strategy::GeneralAgent => format!("{BASE}\n\n{TOOLS}\n\n{fences}"),
        Strategy::Writing => format!("{BASE}\n\n{TOOLS}\n\n{WRITING}\n\n{fences}"),
    }
}

/// Rules for answers built on tool results (injected only when tools ran this turn).
pub const ANSWER_RULES: &str = "## Answer format\n\
Your answer draws on tool results: cite web sources as footnotes ([^1]) with their URLs, say which artifacts or \
chapters you used, prefer bold text and quotes over headings, and do not list follow-up questions unless asked.";

pub const SEARCH_OPTIMIZER: &str = "Rewrite web search requests into one effective search query. Use English for technical \
or universal topics; use the local language for topics tied to a place or culture. Merge several requests into one query. \
Answer with JSON only: {\"query\": \"...\", \"reason\": \"...\"}.";

pub const SEARCH_SCHEMA: &str = r#"{"type":"object","properties":{"query":{"type":"string"},"reason":{"type":"string"}},"required":["query","reason"],"additionalProperties":false}"#;

pub const MEMORY_JUDGE: &str = "Decide whether this exchange holds a durable fact worth remembering across sessions: the \
person's preferences, facts about their projects, decisions they made, or personal details they shared. Greetings, small \
talk, temporary context and one-off requests are not. Answer with JSON only: {\"save\": true | false, \"reason\": \"...\"}.";

pub const MEMORY_JUDGE_SCHEMA: &str = r#"{"type":"object","properties":{"save":{"type":"boolean"},"reason":{"type":"string"}},"required":["save","reason"],"additionalProperties":false}"#;

pub const MEMORY_REFINER: &str =
    "Write the durable fact from this exchange as one or two sentences a future session can rely \
on, with a few lowercase tags (preference, project, decision, personal, ...). Answer with JSON only: \
{\"summary\": \"...\", \"tags\": [\"...\"]}.";

pub const MEMORY_REFINER_SCHEMA: &str = r#"{"type":"object","properties":{"summary":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["summary","tags"],"additionalProperties":false}"#;
