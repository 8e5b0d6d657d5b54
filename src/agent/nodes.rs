//! The assistant graph's nodes.

use std::rc::Rc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::outbound::{self, OutboundHold};
use super::prompts;
use super::state::{AgentState, AgentUpdate, Phase, Strategy};
use super::AgentEnv;
use crate::context::untrusted::{defuse_fences, FenceGuard};
use crate::context::{
    history_for_model, render_index, shown_whole, snippet, summarize_arguments, ArtifactIndexOptions, EntryBody,
    IndexEntry,
};
use crate::graph::{Node, NodeContext, NodeError};
use crate::llm::{ask_structured, ChatRequest, Delta, LlmError, Message, ToolCall};
use crate::tools::{edit, ToolContext, ToolError, NON_PERSISTING};

fn llm_failure(e: LlmError) -> NodeError {
    match e {
        LlmError::Aborted => NodeError::Aborted,
        other => NodeError::failed(other.code(), other.to_string()),
    }
}

fn emit_phase(ctx: &NodeContext<'_>, phase: Phase) {
    ctx.emit("phase", json!({ "phase": phase }));
}

fn emit_content(ctx: &NodeContext<'_>, text: &str) {
    if !text.is_empty() {
        ctx.emit("content", json!({ "text": text }));
    }
}

fn last_user_text(state: &AgentState) -> String {
    state.turn().iter().find_map(|m| matches!(m, Message::User { .. }).then(|| m.text().to_owned())).unwrap_or_default()
}

/// The visible Markdown for a tool call: thoughts, plans and tool chips as
/// fenced blocks; the `respond` answer as plain Markdown.
pub fn render_call(call: &ToolCall) -> String {
    let args: Value = serde_json::from_str(&call.function.arguments).unwrap_or(Value::Null);
    // Model-written text: it must not be able to draw a chip of its own.
    let text = |k: &str| defuse_fences(args.get(k).and_then(Value::as_str).unwrap_or_default());
    match call.function.name.as_str() {
        "record_thought" => format!("\n```thought\n{}\n```\n", text("thought")),
        "plan_task" => {
            let steps: Vec<String> = args
                .get("steps")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, s)| format!("{}. {}", i + 1, defuse_fences(s.as_str().unwrap_or_default())))
                .collect();
            format!("\n```plan\n{}\n{}\n```\n", text("goal"), steps.join("\n"))
        }
        "respond" => format!("\n{}\n", text("answer")),
        "report_progress" => format!("\n```tool\nreport_progress: {}\n```\n", text("message")),
        name => format!(
            "\n```tool\n{}({})\n```\n",
            defuse_fences(name),
            defuse_fences(&summarize_arguments(&call.function.arguments))
        ),
    }
}

/// The artifact index for a model call, read from the index entries; full
/// texts are fetched only for the artifacts shown whole.
async fn artifact_context(
    env: &AgentEnv,
    session: &str,
    options: ArtifactIndexOptions,
) -> Result<Option<String>, crate::store::StoreError> {
    let summaries = env.db.artifact_summaries(session, true).await?;
    let mut wholes = Vec::new();
    for summary in summaries.iter().filter(|s| shown_whole(s.length, options)) {
        wholes.push(env.db.artifact(&summary.id).await?.content);
    }
    let mut wholes = wholes.iter();
    let entries: Vec<IndexEntry<'_>> = summaries
        .iter()
        .map(|s| IndexEntry {
            id: &s.id,
            title: &s.title,
            body: if shown_whole(s.length, options) {
                EntryBody::Whole(wholes.next().map_or("", String::as_str))
            } else {
                EntryBody::Snippet(snippet(&s.snippet, options.snippet_chars))
            },
        })
        .collect();
    Ok(render_index(&entries, options.agent_mode))
}

/// Builds the messages for a model call: system prompt, the injected
/// context (artifact index, system status, answer rules when tools ran),
/// then the conversation.
async fn prompt(
    env: &AgentEnv,
    state: &AgentState,
    ctx: &NodeContext<'_>,
    strategy: Strategy,
    whole_artifacts: bool,
) -> Vec<Message> {
    let settings = env.settings.borrow().clone();
    let mut parts = Vec::new();
    let options = ArtifactIndexOptions {
        full_threshold: settings.full_threshold,
        agent_mode: !whole_artifacts,
        ..Default::default()
    };
    match artifact_context(env, ctx.thread_id, options).await {
        Ok(index) => parts.extend(index),
        Err(e) => ctx.emit("warning", json!({ "message": format!("the session artifacts could not be read: {e}") })),
    }
    parts.push(format!(
        "## System status\nAgent mode: {}. Long-term memory: {}.",
        if state.agent_mode {
            "on (tools available)"
        } else {
            "off (no tools: you cannot search or edit in this mode)"
        },
        if settings.long_term_memory { "on" } else { "off" }
    ));
    if state.used_tools() {
        parts.push(prompts::ANSWER_RULES.to_owned());
    }
    let mut messages = vec![Message::system(prompts::system(strategy)), Message::user(parts.join("\n\n"))];
    messages.extend(history_for_model(&state.messages, state.turn_start));
    messages
}

/// Classifies the turn: chat_only, general_agent or writing.
pub struct Router(pub Rc<AgentEnv>);

/// A deterministic guess when the model's answer is unusable.
pub fn fallback_strategy(input: &str) -> Strategy {
    let lower = input.to_lowercase();
    const WRITING: &[&str] =
        &["manuscript", "chapter", "plot", "rewrite", "edit", "原稿", "章", "プロット", "推敲", "書き直"];
    if WRITING.iter().any(|w| lower.contains(w)) {
        return Strategy::Writing;
    }
    let short = input.chars().count() <= 24 && !input.contains('?') && !input.contains('？');
    if short {
        Strategy::ChatOnly
    } else {
        Strategy::GeneralAgent
    }
}

#[async_trait(?Send)]
impl Node<AgentState> for Router {
    async fn run(&self, state: &AgentState, ctx: &mut NodeContext<'_>) -> Result<AgentUpdate, NodeError> {
        emit_phase(ctx, Phase::Planning);
        let input = last_user_text(state);
        if !state.agent_mode {
            return Ok(AgentUpdate {
                strategy: Some(Some(Strategy::ChatOnly)),
                routing_decision: Some(Some("agent mode is off".into())),
                latest_node_name: Some(Some("router".into())),
                current_phase: Some(Phase::Planning),
                ..Default::default()
            });
        }
        let sub = self.0.settings.borrow().sub_model.clone();
        let request = ChatRequest::new(sub, vec![Message::system(prompts::ROUTER), Message::user(input.clone())]);
        let schema: Value = serde_json::from_str(prompts::ROUTER_SCHEMA).unwrap_or(Value::Null);
        let (strategy, reasoning) = match ask_structured(self.0.model.as_ref(), request, "route", &schema, ctx.cancel)
            .await
        {
            Ok(answer) => match answer.value.get("strategy").and_then(Value::as_str).and_then(Strategy::parse) {
                Some(s) => (s, answer.value.get("reasoning").and_then(Value::as_str).unwrap_or_default().to_owned()),
                None => (fallback_strategy(&input), "fallback: the router named no known strategy".to_owned()),
            },
            Err(LlmError::Aborted) => return Err(NodeError::Aborted),
            Err(e) => (fallback_strategy(&input), format!("fallback: {}", e.code())),
        };
        ctx.emit("routed", json!({ "strategy": strategy, "reasoning": reasoning }));
        Ok(AgentUpdate {
            strategy: Some(Some(strategy)),
            routing_decision: Some(Some(reasoning)),
            latest_node_name: Some(Some("router".into())),
            ..Default::default()
        })
    }
}

/// Answers without tools (chat_only, or agent mode off).
pub struct Chat(pub Rc<AgentEnv>);

/// Calls the main model with tools for the strategy (the ReAct step).
pub struct Agent(pub Rc<AgentEnv>);

async fn call_model(
    env: &AgentEnv,
    state: &AgentState,
    ctx: &mut NodeContext<'_>,
    with_tools: bool,
) -> Result<AgentUpdate, NodeError> {
    let strategy = if with_tools { state.strategy.unwrap_or(Strategy::GeneralAgent) } else { Strategy::ChatOnly };
    emit_phase(ctx, if state.used_tools() || !with_tools { Phase::Answering } else { Phase::Planning });
    let messages = prompt(env, state, ctx, strategy, !with_tools).await;
    let settings = env.settings.borrow().clone();
    let mut request = ChatRequest::new(settings.main_model.clone(), messages);
    if with_tools {
        let names = match strategy {
            Strategy::Writing => crate::tools::EDITORIAL_TOOLS,
            _ => crate::tools::RESEARCH_TOOLS,
        };
        request.tools = env.tools.specs(names);
    }
    // What the person sees of the model's text goes through a fence guard
    // (streamed in pieces, so the guard holds a line start until it can tell).
    let mut streamed = String::new();
    let mut guard = FenceGuard::default();
    let outcome = {
        let ctx_ref: &NodeContext<'_> = ctx;
        let guard = &mut guard;
        let mut on_delta = |delta: Delta| {
            if let Delta::Text { text } = delta {
                emit_content(ctx_ref, &guard.push(&text));
                streamed.push_str(&text);
            }
        };
        env.model.chat(request, &mut on_delta, ctx_ref.cancel).await.map_err(llm_failure)?
    };
    let mut output = state.output.clone();
    let text = outcome.message.text().to_owned();
    if !text.is_empty() {
        let rest = match text.strip_prefix(streamed.as_str()) {
            Some(rest) => guard.push(rest) + &guard.finish(),
            // The final text differs from the stream (a provider that
            // corrects itself): show what is missing, judged afresh.
            None => guard.finish() + &defuse_fences(text.get(streamed.len()..).unwrap_or_default()),
        };
        emit_content(ctx, &rest);
        output.push_str(&defuse_fences(&text));
    } else {
        emit_content(ctx, &guard.finish());
    }
    for call in outcome.message.tool_calls() {
        let block = render_call(call);
        emit_content(ctx, &block);
        output.push_str(&block);
    }
    Ok(AgentUpdate {
        messages: vec![outcome.message],
        loop_count: Some(state.loop_count + 1),
        output: Some(output),
        latest_node_name: Some(Some(if with_tools { "agent" } else { "chat" }.into())),
        current_phase: Some(Phase::Answering),
        ..Default::default()
    })
}

#[async_trait(?Send)]
impl Node<AgentState> for Chat {
    async fn run(&self, state: &AgentState, ctx: &mut NodeContext<'_>) -> Result<AgentUpdate, NodeError> {
        call_model(&self.0, state, ctx, false).await
    }
}

#[async_trait(?Send)]
impl Node<AgentState> for Agent {
    async fn run(&self, state: &AgentState, ctx: &mut NodeContext<'_>) -> Result<AgentUpdate, NodeError> {
        call_model(&self.0, state, ctx, true).await
    }
}

fn tool_context(env: &AgentEnv, ctx: &NodeContext<'_>) -> ToolContext {
    let settings = env.settings.borrow();
    ToolContext {
        db: env.db.clone(),
        session_id: ctx.thread_id.to_owned(),
        web: env.web.clone(),
        editor: env.model.clone(),
        editor_model: settings.main_model.clone(),
        page_chars: settings.page_chars.max(1000),
        cancel: ctx.cancel.clone(),
    }
}

/// What one call gave: the text for the model and the links it offers.
struct Executed {
    content: String,
    links: Vec<String>,
}

impl From<String> for Executed {
    fn from(content: String) -> Executed {
        Executed { content, links: Vec::new() }
    }
}

/// Runs one call: result text for the model; persisting tools' results
/// become artifacts (a failure to save is a warning, not a failed call).
async fn execute(env: &AgentEnv, call: &ToolCall, args: Value, ctx: &NodeContext<'_>) -> Executed {
    let Some(tool) = env.tools.get(&call.function.name) else {
        return format!("Error: there is no tool named {:?}.", call.function.name).into();
    };
    let tool_ctx = tool_context(env, ctx);
    match tool.call(&args, &tool_ctx).await {
        Ok(output) => {
            if let (Some(kind), false) = (tool.persists_as(), NON_PERSISTING.contains(&call.function.name.as_str())) {
                let title = output.artifact_title.clone().unwrap_or_else(|| call.function.name.clone());
                match env.db.create_artifact(ctx.thread_id, kind, &title, &output.content, Default::default(), crate::store::Origin::Agent).await {
                    Ok(a) => ctx.emit("artifact", json!({ "id": a.id, "action": "created", "title": a.title })),
                    Err(e) => ctx.emit("warning", json!({ "message": format!("the result of {} was not saved as an artifact: {e}", call.function.name) })),
                }
            }
            Executed { content: output.model_text().to_owned(), links: output.links }
        }
        Err(e) => format!("Error: {e}").into(),
    }
}

fn parse_arguments(call: &ToolCall) -> Result<Value, String> {
    if call.function.arguments.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(&call.function.arguments).map_err(|e| {
        format!(
            "Error: the arguments of {} are not valid JSON ({e}); call it again with a JSON object.",
            call.function.name
        )
    })
}

/// Runs the pending tool calls up to the first one that needs approval.
pub struct Tools(pub Rc<AgentEnv>);

#[async_trait(?Send)]
impl Node<AgentState> for Tools {
    async fn run(&self, state: &AgentState, ctx: &mut NodeContext<'_>) -> Result<AgentUpdate, NodeError> {
        let env = &self.0;
        emit_phase(ctx, Phase::Researching);
        let pending: Vec<ToolCall> =
            state.pending_calls().into_iter().take_while(|c| !env.needs_approval(&c.function.name)).collect();
        let mut results = Vec::with_capacity(pending.len());
        let merged_search = merge_searches(env, state, &pending, ctx).await?;

        // The outbound rule (see `outbound`): checked before each call, since
        // a search earlier in the batch can bring web material in.
        let mut exposed = outbound::exposed_by_messages(&state.messages)
            || outbound::exposed_by_artifacts(&env.db, ctx.thread_id).await.unwrap_or(true);
        let mut links = state.result_links.clone();
        let person = outbound::person_texts(&state.messages);
        let mut new_links = Vec::new();
        let mut hold = None;
        for call in &pending {
            if ctx.cancel.is_cancelled() {
                return Err(NodeError::Aborted);
            }
            let args = match (&merged_search, call.function.name.as_str()) {
                (Some((id, args)), "web_search") if *id == call.id => Ok(args.clone()),
                (Some((id, _)), "web_search") => Err(format!("Merged into the search of call {id}; see its result.")),
                _ => parse_arguments(call),
            };
            let args = match args {
                Ok(args) => args,
                Err(message) => {
                    results.push(Message::tool(call.id.clone(), message));
                    continue;
                }
            };
            if exposed {
                if let Some(reason) = outbound::hold_reason(call, &args, &person, &links, &env.db).await {
                    hold = Some(OutboundHold { call_id: call.id.clone(), reason });
                    break;
                }
            }
            ctx.emit("active_tool", json!({ "tool": call.function.name }));
            let done = execute(env, call, args, ctx).await;
            exposed |= crate::context::untrusted::is_fenced(&done.content);
            links.extend(done.links.iter().cloned());
            new_links.extend(done.links);
            results.push(Message::tool(call.id.clone(), done.content));
        }
        ctx.emit("active_tool", json!({ "tool": null }));
        Ok(AgentUpdate {
            messages: results,
            result_links: new_links,
            outbound_hold: Some(hold),
            active_tool: Some(None),
            latest_node_name: Some(Some("tools".into())),
            current_phase: Some(Phase::Researching),
            ..Default::default()
        })
    }
}

/// The search optimizer: all web searches of a batch become one query
/// (the first search call's, with the optimised query).
async fn merge_searches(
    env: &AgentEnv,
    state: &AgentState,
    batch: &[ToolCall],
    ctx: &NodeContext<'_>,
) -> Result<Option<(String, Value)>, NodeError> {
    let searches: Vec<&ToolCall> = batch.iter().filter(|c| c.function.name == "web_search").collect();
    let Some(first) = searches.first() else {
        return Ok(None);
    };
    let queries: Vec<String> =
        searches.iter().filter_map(|c| parse_arguments(c).ok()?.get("query")?.as_str().map(str::to_owned)).collect();
    let mut args = parse_arguments(first).unwrap_or(json!({}));
    if !queries.is_empty() {
        let query = optimize_query(env, &last_user_text(state), &queries, ctx).await?;
        ctx.emit("search_optimized", json!({ "from": queries, "query": query }));
        args["query"] = json!(query);
    }
    Ok(Some((first.id.clone(), args)))
}

async fn optimize_query(
    env: &AgentEnv,
    input: &str,
    queries: &[String],
    ctx: &NodeContext<'_>,
) -> Result<String, NodeError> {
    let sub = env.settings.borrow().sub_model.clone();
    let request = ChatRequest::new(
        sub,
        vec![
            Message::system(prompts::SEARCH_OPTIMIZER),
            Message::user(format!("The person asked: {input}\nSearch requests: {}", queries.join(" | "))),
        ],
    );
    let schema: Value = serde_json::from_str(prompts::SEARCH_SCHEMA).unwrap_or(Value::Null);
    match ask_structured(env.model.as_ref(), request, "search_query", &schema, ctx.cancel).await {
        Ok(answer) => Ok(answer
            .value
            .get("query")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
            .map_or_else(|| queries.join(" "), str::to_owned)),
        Err(LlmError::Aborted) => Err(NodeError::Aborted),
        Err(_) => Ok(queries.join(" ")),
    }
}

/// Works out the change a call needing approval would make (the diff, by
/// dry-running Adit) and stores it for review.
pub struct PrepareReview(pub Rc<AgentEnv>);

#[async_trait(?Send)]
impl Node<AgentState> for PrepareReview {
    async fn run(&self, state: &AgentState, ctx: &mut NodeContext<'_>) -> Result<AgentUpdate, NodeError> {
        let env = &self.0;
        let Some(call) = state.pending_calls().into_iter().next() else {
            return Ok(AgentUpdate { pending_review: Some(None), ..Default::default() });
        };
        let answered = |content: String| AgentUpdate {
            messages: vec![Message::tool(call.id.clone(), content)],
            pending_review: Some(None),
            ..Default::default()
        };
        let args = match parse_arguments(&call) {
            Ok(args) => args,
            Err(message) => return Ok(answered(message)),
        };
        let name = call.function.name.as_str();
        let is_edit = matches!(name, "edit_manuscript" | "update_manuscript" | "edit_artifact" | "update_artifact");
        let plan = if is_edit {
            match edit::plan(name, &args, &tool_context(env, ctx)).await {
                Ok(plan) => Some(plan),
                Err(ToolError::Failed { code, .. }) if code == "aborted" => return Err(NodeError::Aborted),
                // Nothing to review: the model learns why at once and can retry.
                Err(e) => return Ok(answered(format!("Error: {e}"))),
            }
        } else {
            None
        };
        let reason = state.outbound_hold.as_ref().filter(|h| h.call_id == call.id).map(|h| h.reason.clone());
        let payload = json!({
            "toolCallId": call.id,
            "tool": name,
            // Whole, never cut: the person approves exactly what will run.
            "arguments": serde_json::to_string_pretty(&args).unwrap_or_default(),
            "reason": reason,
            "target": plan.as_ref().map(|p| serde_json::to_value(&p.target).unwrap_or(Value::Null)),
            "diff": plan.as_ref().map(|p| p.diff.clone()),
            "path": plan.as_ref().map(|p| p.path.clone()),
        });
        Ok(AgentUpdate {
            pending_review: Some(Some(json!({ "call": call, "arguments": args, "plan": plan, "payload": payload }))),
            latest_node_name: Some(Some("prepare_review".into())),
            ..Default::default()
        })
    }
}

/// Pauses for the person's decision; runs the call (exactly the reviewed
/// change) on approval, or tells the model it was rejected and why.
pub struct Review(pub Rc<AgentEnv>);

#[async_trait(?Send)]
impl Node<AgentState> for Review {
    async fn run(&self, state: &AgentState, ctx: &mut NodeContext<'_>) -> Result<AgentUpdate, NodeError> {
        let env = &self.0;
        let pending =
            state.pending_review.clone().ok_or_else(|| NodeError::failed("invalid_state", "no review is pending"))?;
        let decision = ctx.interrupt(pending["payload"].clone())?;
        let call: ToolCall = serde_json::from_value(pending["call"].clone())
            .map_err(|e| NodeError::failed("invalid_state", e.to_string()))?;
        let approved = decision.get("approved").and_then(Value::as_bool).unwrap_or(false);
        let content = if approved {
            ctx.emit("active_tool", json!({ "tool": call.function.name }));
            let plan: Option<edit::EditPlan> = serde_json::from_value(pending["plan"].clone()).ok().flatten();
            match plan {
                Some(plan) => match plan.apply(&tool_context(env, ctx), &call.function.name).await {
                    Ok(message) => {
                        ctx.emit("changed", json!({ "tool": call.function.name, "target": plan.target }));
                        message
                    }
                    Err(e) => format!("Error: {e}"),
                },
                None => execute(env, &call, pending["arguments"].clone(), ctx).await.content,
            }
        } else {
            let reason = decision.get("reason").and_then(Value::as_str).filter(|r| !r.trim().is_empty());
            match reason {
                Some(reason) => format!("Rejected by the user: {reason}"),
                None => "Rejected by the user.".to_owned(),
            }
        };
        let note = if approved {
            format!("\n```tool\napproved: {}\n```\n", call.function.name)
        } else {
            format!("\n```tool\nrejected: {}\n```\n", call.function.name)
        };
        emit_content(ctx, &note);
        ctx.emit("active_tool", json!({ "tool": null }));
        Ok(AgentUpdate {
            messages: vec![Message::tool(call.id.clone(), content)],
            pending_review: Some(None),
            outbound_hold: Some(None),
            output: Some(format!("{}{note}", state.output)),
            active_tool: Some(None),
            latest_node_name: Some(Some("review".into())),
            ..Default::default()
        })
    }
}

/// Decides whether the turn holds a durable fact.
pub struct MemoryJudge(pub Rc<AgentEnv>);

/// Writes the fact as a tagged, dated memory.
pub struct MemoryRefiner(pub Rc<AgentEnv>);

fn exchange(state: &AgentState) -> String {
    let answer = state
        .turn()
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Assistant { .. }) && !m.text().is_empty())
        .map(|m| m.text().to_owned());
    format!("Person: {}\nAssistant: {}", last_user_text(state), answer.unwrap_or_else(|| state.output.clone()))
}

#[async_trait(?Send)]
impl Node<AgentState> for MemoryJudge {
    async fn run(&self, state: &AgentState, ctx: &mut NodeContext<'_>) -> Result<AgentUpdate, NodeError> {
        emit_phase(ctx, Phase::Memorizing);
        let sub = self.0.settings.borrow().sub_model.clone();
        let request =
            ChatRequest::new(sub, vec![Message::system(prompts::MEMORY_JUDGE), Message::user(exchange(state))]);
        let schema: Value = serde_json::from_str(prompts::MEMORY_JUDGE_SCHEMA).unwrap_or(Value::Null);
        let worthy = match ask_structured(self.0.model.as_ref(), request, "memory_judgement", &schema, ctx.cancel).await
        {
            Ok(answer) => answer.value.get("save").and_then(Value::as_bool).unwrap_or(false),
            Err(LlmError::Aborted) => return Err(NodeError::Aborted),
            Err(e) => {
                ctx.emit("warning", json!({ "message": format!("the memory judge failed: {e}") }));
                false
            }
        };
        Ok(AgentUpdate {
            memory_worthy: Some(worthy),
            current_phase: Some(Phase::Memorizing),
            latest_node_name: Some(Some("memory_judge".into())),
            ..Default::default()
        })
    }
}

#[async_trait(?Send)]
impl Node<AgentState> for MemoryRefiner {
    async fn run(&self, state: &AgentState, ctx: &mut NodeContext<'_>) -> Result<AgentUpdate, NodeError> {
        let sub = self.0.settings.borrow().sub_model.clone();
        let request =
            ChatRequest::new(sub, vec![Message::system(prompts::MEMORY_REFINER), Message::user(exchange(state))]);
        let schema: Value = serde_json::from_str(prompts::MEMORY_REFINER_SCHEMA).unwrap_or(Value::Null);
        match ask_structured(self.0.model.as_ref(), request, "memory", &schema, ctx.cancel).await {
            Ok(answer) => {
                let summary = answer.value.get("summary").and_then(Value::as_str).unwrap_or_default().trim().to_owned();
                let tags: Vec<String> = answer
                    .value
                    .get("tags")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str().map(str::to_lowercase))
                    .collect();
                if !summary.is_empty() {
                    let (iso, _) = crate::tools::describe_time(
                        crate::platform::now_ms(),
                        crate::platform::timezone_offset_minutes(),
                    );
                    match self.0.db.add_memory(&iso[..10], &summary, tags).await {
                        Ok(m) => ctx.emit("memory", json!({ "id": m.id, "date": m.date, "summary": m.summary })),
                        Err(e) => ctx.emit("warning", json!({ "message": format!("the memory was not saved: {e}") })),
                    }
                }
            }
            Err(LlmError::Aborted) => return Err(NodeError::Aborted),
            Err(e) => ctx.emit("warning", json!({ "message": format!("the memory refiner failed: {e}") })),
        }
        Ok(AgentUpdate {
            memory_worthy: Some(false),
            current_phase: Some(Phase::Idle),
            latest_node_name: Some(Some("memory_refiner".into())),
            ..Default::default()
        })
    }
}
