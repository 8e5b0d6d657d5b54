//! The model call of a turn: `chat` (no tools) and `agent` (the ReAct
//! step), streaming the visible text through a fence guard.

use std::rc::Rc;

use async_trait::async_trait;

use super::super::call::{Answer, Answers};
use super::super::env::AgentEnv;
use super::super::events::{AgentEvent, Ctx, Emit, Info, Phase};
use super::super::state::{AgentState, AgentUpdate};
use super::super::strategy::Strategy;
use super::super::{completion, compress, facts};
use super::compact::{compact, last_is_heavy, CompactError};
use super::llm_failure;
use super::request::{interjections, RequestParts};
use crate::context::summarize_arguments;
use crate::context::untrusted::{defuse_fences, FenceGuard};
use crate::error::ErrorCode;
use crate::graph::{Node, NodeError};
use crate::llm::{Delta, Message, ToolCall};
use crate::tools::{CallRecord, Outcome, ToolRegistry};

/// The visible Markdown for a tool call: thoughts, plans and tool chips as
/// fenced blocks (the arguments in one line, bulk fields by their size);
/// the `respond` answer as plain Markdown.
pub fn render_call(tools: &ToolRegistry, call: &ToolCall) -> String {
    let name = call.function.name.as_str();
    let shown = tools.bind(call).ok().and_then(|bound| bound.render());
    // Model-written text: it must not be able to draw a chip of its own.
    shown.unwrap_or_else(|| {
        let bulk = |field: &str| tools.get(name).is_some_and(|t| t.is_bulk(field));
        format!(
            "\n```tool\n{}({})\n```\n",
            defuse_fences(name),
            defuse_fences(&summarize_arguments(&call.function.arguments, &bulk))
        )
    })
}

/// The reasoning of one model call as a ```thought block, streamed.
#[derive(Default)]
struct Thought {
    open: bool,
    /// The block's opening was shown live (not only kept).
    live: bool,
    /// Backticks at the end of the last piece, held: a run of three would
    /// close the block, so each run gets a zero-width space inside.
    held: String,
    /// What the turn's output keeps of it.
    shown: String,
}

const OPEN_THOUGHT: &str = "\n```thought\n";

impl Thought {
    /// More reasoning; `live`: also shown now (text the person already saw
    /// as the answer is only kept).
    fn push(&mut self, ctx: &Ctx<'_>, text: &str, live: bool) {
        if !self.open {
            self.open = true;
            self.shown.push_str(OPEN_THOUGHT);
        }
        let mut text = std::mem::take(&mut self.held) + text;
        self.held = text.split_off(text.trim_end_matches('`').len());
        let piece = text.replace("```", "`\u{200B}``");
        self.shown.push_str(&piece);
        if live {
            if !self.live {
                self.live = true;
                ctx.content(OPEN_THOUGHT);
            }
            ctx.content(&piece);
        }
    }

    /// Ends the block (before the answer, or at the end of the call).
    fn close(&mut self, ctx: &Ctx<'_>) {
        if self.open {
            self.open = false;
            let piece = std::mem::take(&mut self.held).replace("```", "`\u{200B}``") + "\n```\n";
            self.shown.push_str(&piece);
            if std::mem::take(&mut self.live) {
                ctx.content(&piece);
            }
        }
    }
}

/// Answers without tools (chat_only, or agent mode off).
pub struct Chat(pub Rc<AgentEnv>);

/// Calls the main model with tools for the strategy (the ReAct step).
pub struct Agent(pub Rc<AgentEnv>);

async fn call_model(
    env: &AgentEnv,
    state: &AgentState,
    ctx: &mut Ctx<'_>,
    with_tools: bool,
) -> Result<AgentUpdate, NodeError> {
    let strategy = if with_tools { state.strategy.unwrap_or(Strategy::GeneralAgent) } else { Strategy::ChatOnly };
    ctx.phase(if state.used_tools() || !with_tools { Phase::Answering } else { Phase::Planning });
    let (interjection_ids, interjected) = interjections(env, state, ctx).await;
    let parts = RequestParts::gather(env, state, ctx, strategy, with_tools, interjected).await;
    let settings = env.settings.borrow().clone();
    let window = settings.context_window;
    let mut compaction = state.compaction.clone();
    let mut calls_since = state.calls_since_compaction;
    let mut request = parts.request(&settings.main_model, state, compaction.as_ref());
    let mut estimate = crate::llm::estimate_request(&request);
    let heavy = last_is_heavy(env, state, window);
    let facts = facts::derive(&state.messages, &state.records);
    if with_tools {
        let (reads, web, changes) = facts.counts();
        ctx.emit(AgentEvent::Facts { reads, web, changes });
    }
    if let Some(reason) = compress::decide(estimate, window, heavy, calls_since, &settings.compression) {
        match compact(env, state, ctx, &parts, reason).await {
            Ok(Some(done)) => {
                request = parts.request(&settings.main_model, state, Some(&done));
                let after = crate::llm::estimate_request(&request);
                ctx.emit(AgentEvent::Compressed { reason, tokens_before: estimate, tokens_after: after });
                estimate = after;
                compaction = Some(done);
                calls_since = 0;
            }
            Ok(None) => {}
            Err(CompactError::Aborted) => return Err(NodeError::Aborted),
            Err(why) => ctx.warning(format!(
                "the conversation could not be summarised ({why}); the full history is kept and the next model call \
                 tries again"
            )),
        }
    }
    // A request the model's window cannot hold is not sent: llama.cpp would
    // silently drop its beginning (the system prompt first).
    if estimate > window {
        return Err(NodeError::failed(
            ErrorCode::ContextOverflow,
            format!(
                "the request would take about {estimate} tokens, more than the model's context window of {window} \
                 (setting contextWindow), even with the older conversation summarised: start a new session, turn \
                 some artifacts off, or raise the setting if the model has a larger window"
            ),
        ));
    }
    // What the person sees of the model's text goes through a fence guard
    // (streamed in pieces, so the guard holds a line start until it can tell).
    let mut streamed = String::new();
    let mut guard = FenceGuard::default();
    // The model's reasoning, shown live as a ```thought block before the
    // answer (the demo's collapsed "Reasoning"), never in the answer.
    let mut thought = Thought::default();
    let outcome = {
        let ctx_ref: &Ctx<'_> = ctx;
        let (guard, thought) = (&mut guard, &mut thought);
        let mut on_delta = |delta: Delta| match delta {
            Delta::Text { text } => {
                thought.close(ctx_ref);
                ctx_ref.content(&guard.push(&text));
                streamed.push_str(&text);
            }
            Delta::Reasoning { text } => thought.push(ctx_ref, &text, true),
            // The answer streamed so far was reasoning (a `</think>` nothing
            // opened): it is kept as the turn's thought from here on.
            Delta::WasReasoning { text } => {
                streamed.clear();
                *guard = FenceGuard::default();
                thought.push(ctx_ref, &text, false);
            }
            _ => {}
        };
        // Calls a model writes as text (a server without a tool parser)
        // become its calls, never the answer shown.
        crate::llm::chat_reading_written_calls(&*env.model, request, &mut on_delta, ctx_ref.cancel)
            .await
            .map_err(llm_failure)?
    };
    thought.close(ctx);
    let mut output = state.output.clone();
    output.push_str(&thought.shown);
    let text = outcome.message.text().to_owned();
    if !text.is_empty() {
        let rest = match text.strip_prefix(streamed.as_str()) {
            Some(rest) => guard.push(rest) + &guard.finish(),
            // The final text differs from the stream (a provider that
            // corrects itself): show what is missing, judged afresh.
            None => guard.finish() + &defuse_fences(text.get(streamed.len()..).unwrap_or_default()),
        };
        ctx.content(&rest);
        output.push_str(&defuse_fences(&text));
    } else {
        ctx.content(&guard.finish());
    }
    for call in outcome.message.tool_calls() {
        let block = render_call(&env.tools, call);
        ctx.content(&block);
        output.push_str(&block);
    }
    if let Some(usage) = outcome.usage {
        ctx.emit(AgentEvent::Usage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cached_tokens: usage.cached_tokens,
        });
    }
    // What the update appends: the context this request added (kept where
    // it rode), interjections, the model's message, nudges.
    let tails = parts.new_tail(state, compaction.as_ref()).into_iter().collect();
    let interjected = parts.into_interjected();
    let mut answers = Answers::at(state.messages.len());
    for message in interjected {
        answers.push_message(message);
    }
    let calls = outcome.message.tool_calls().to_vec();
    answers.push_message(outcome.message);
    // Completion rules: an early final answer is not accepted.
    let mut nudges = Vec::new();
    if with_tools {
        let finishing = calls.is_empty() || calls.iter().any(|c| env.tools.answers(&c.function.name));
        if let Some(rule) = finishing.then(|| completion::unmet(strategy, state, &facts)).flatten() {
            if state.nudge_count() >= completion::MAX_NUDGES {
                return Err(NodeError::failed(
                    ErrorCode::Incomplete,
                    format!(
                        "the model tried to finish {} times without doing what the task needs ({}); the run was \
                         stopped",
                        completion::MAX_NUDGES + 1,
                        rule.nudge().trim_start_matches(completion::NUDGE).trim()
                    ),
                ));
            }
            ctx.info(Info::Nudged { rule });
            if calls.is_empty() {
                nudges.push(answers.push_message(Message::user(rule.nudge())));
            }
            for call in calls.iter().filter(|c| env.tools.answers(&c.function.name)) {
                let record = CallRecord::new(&call.function.name, Outcome::Nudged);
                nudges.push(answers.push(Answer::new(&call.id, rule.nudge(), record)));
            }
        }
    }
    Ok(AgentUpdate {
        messages: answers.messages,
        records: answers.records,
        nudges,
        interjections: interjection_ids,
        tails,
        compaction: Some(compaction),
        calls_since_compaction: Some(calls_since + 1),
        output: Some(output),
        ..Default::default()
    })
}

#[async_trait(?Send)]
impl Node<AgentState> for Chat {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        call_model(&self.0, state, ctx, false).await
    }
}

#[async_trait(?Send)]
impl Node<AgentState> for Agent {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        call_model(&self.0, state, ctx, true).await
    }
}
