//! The `tools` node: runs the pending calls up to the first that needs
//! approval, applying the outbound rule before each, and keeps persisting
//! tools' results as artifacts.

use std::rc::Rc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::super::delegate;
use super::super::events::{AgentEvent, ArtifactChange, Ctx, Emit};
use super::super::facts::{self, Facts};
use super::super::loop_guard;
use super::super::outbound::{self, OutboundHold};
use super::super::state::{AgentState, AgentUpdate, Phase};
use super::super::AgentEnv;
use super::search::merge_searches;
use crate::graph::{Node, NodeError};
use crate::llm::{Message, ToolCall};
use crate::store::{Receipt, ReceiptOutcome};
use crate::tools::{ToolContext, Touch};

pub(in crate::agent) fn tool_context(env: &AgentEnv, ctx: &Ctx<'_>) -> ToolContext {
    let settings = env.settings.borrow();
    ToolContext {
        db: env.db.clone(),
        session_id: ctx.thread_id.to_owned(),
        web: env.web.clone(),
        editor: env.model.clone(),
        editor_model: settings.main_model.clone(),
        page_chars: settings.page_chars.max(1000),
        // Two fifths of the window: one page never crowds out the rest of the request.
        page_tokens: (settings.context_window * 2 / 5).max(500),
        cancel: ctx.cancel.clone(),
    }
}

/// What one call gave: the text for the model and the links it offers.
pub(in crate::agent) struct Executed {
    pub(in crate::agent) content: String,
    links: Vec<String>,
}

impl From<String> for Executed {
    fn from(content: String) -> Executed {
        Executed { content, links: Vec::new() }
    }
}

/// Runs one call: result text for the model; persisting tools' results
/// become artifacts (a failure to save is a warning, not a failed call).
///
/// Effects are recorded with a [`Receipt`] so a step re-run after a crash
/// never repeats them: a kept result lands in one batch with its receipt; a
/// call with other effects gets a `started` receipt before it runs and a
/// `done` one after. Read-only calls need none (running them again changes
/// nothing).
pub(in crate::agent) async fn execute(
    env: &AgentEnv,
    call: &ToolCall,
    key: &str,
    args: Value,
    ctx: &Ctx<'_>,
) -> Executed {
    let Some(tool) = env.tools.get(&call.function.name) else {
        return format!("Error: there is no tool named {:?}.", call.function.name).into();
    };
    if call.function.name == delegate::NAME {
        return run_delegate(env, call, key, &args, ctx, None).await;
    }
    let tool_ctx = tool_context(env, ctx);
    let session = ctx.thread_id;
    let effects = !tool.read_only() && tool.persists_as().is_none();
    if effects {
        let started = Receipt::new(session, key, ReceiptOutcome::Started, "");
        if let Err(e) = env.db.record_receipt(&started).await {
            // Nothing ran: the model (and the person) learn why.
            return format!("Error: {} was not run: {e}", call.function.name).into();
        }
    }
    let executed = match tool.call(&args, &tool_ctx).await {
        Ok(output) => {
            let mut content = output.model_text().to_owned();
            if let Some(kind) = tool.persists_as() {
                let title = output.artifact_title.clone().unwrap_or_else(|| call.function.name.clone());
                // The model learns the artifact's id with the result (and
                // the index then lists it in one line, not a second copy).
                let id = crate::platform::random_id();
                let plain = content.len();
                content.push_str(&crate::tools::kept_note(&id));
                let receipt = Receipt::new(session, key, ReceiptOutcome::Done, content.clone());
                let saved = env.db.save_tool_result(session, &id, kind, &title, &output.content, &receipt).await;
                match saved {
                    Ok(a) => ctx.emit(AgentEvent::Artifact {
                        data: ArtifactChange { id: a.id, action: "created", title: a.title },
                    }),
                    Err(e) => {
                        content.truncate(plain);
                        ctx.warning(format!("the result of {} was not saved as an artifact: {e}", call.function.name))
                    }
                }
            }
            Executed { content, links: output.links }
        }
        Err(e) => format!("Error: {e}").into(),
    };
    if effects {
        let done = Receipt::new(session, key, ReceiptOutcome::Done, executed.content.clone());
        if let Err(e) = env.db.record_receipt(&done).await {
            ctx.warning(format!("the outcome of {} was not recorded: {e}", call.function.name));
        }
    }
    executed
}

/// Runs (or resumes) a delegate: a `started` receipt first (the child
/// keeps its progress in it), the report in a `done` one after.
async fn run_delegate(
    env: &AgentEnv,
    call: &ToolCall,
    key: &str,
    args: &Value,
    ctx: &Ctx<'_>,
    progress: Option<delegate::Progress>,
) -> Executed {
    let session = ctx.thread_id;
    if progress.is_none() {
        let started = Receipt::new(session, key, ReceiptOutcome::Started, "");
        if let Err(e) = env.db.record_receipt(&started).await {
            return format!("Error: delegate was not run: {e}").into();
        }
    }
    let content = match delegate::run(env, ctx, call, key, args, progress).await {
        Ok(report) => report,
        Err(delegate::DelegateError::Aborted) => return "Error: the run was stopped.".to_owned().into(),
        Err(e) => format!("Error: {e} [code: {}]", e.code()),
    };
    let done = Receipt::new(session, key, ReceiptOutcome::Done, content.clone());
    if let Err(e) = env.db.record_receipt(&done).await {
        ctx.warning(format!("the outcome of delegate was not recorded: {e}"));
    }
    content.into()
}

/// The result a call's receipt stands for, given to the model instead of
/// running the call again.
pub(in crate::agent) fn replayed(receipt: &Receipt) -> String {
    match receipt.outcome {
        ReceiptOutcome::Done | ReceiptOutcome::Rejected => receipt.content.clone(),
        ReceiptOutcome::Started => "Error: the outcome of this call is unknown: the page closed while it ran, and it \
                                    was not run again. Check its target before calling it again."
            .to_owned(),
    }
}

pub(in crate::agent) fn parse_arguments(call: &ToolCall) -> Result<Value, String> {
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

/// What the calls of one step gave so far, in call order.
struct Outcomes {
    results: Vec<Message>,
    /// Web material is in the run (the outbound rule applies).
    exposed: bool,
    links: Vec<String>,
    new_links: Vec<String>,
}

impl Outcomes {
    fn record(&mut self, call: &ToolCall, done: Executed) {
        self.exposed |= crate::context::untrusted::is_fenced(&done.content);
        self.links.extend(done.links.iter().cloned());
        self.new_links.extend(done.links);
        self.results.push(Message::tool(call.id.clone(), done.content));
    }

    fn answer(&mut self, call: &ToolCall, content: String) {
        self.results.push(Message::tool(call.id.clone(), content));
    }
}

/// A read-only call waiting to run with the others of its step.
struct Gathered {
    call: ToolCall,
    key: String,
    args: Value,
}

/// Runs the gathered read-only calls, `width` at a time, and records their
/// results in call order. The cancel token reaches every call, so an abort
/// stops them all.
async fn run_reads(
    env: &AgentEnv,
    ctx: &Ctx<'_>,
    reads: &mut Vec<Gathered>,
    width: usize,
    out: &mut Outcomes,
) -> Result<(), NodeError> {
    let reads = std::mem::take(reads);
    for chunk in reads.chunks(width) {
        if ctx.cancel.is_cancelled() {
            return Err(NodeError::Aborted);
        }
        for read in chunk {
            ctx.active_tool(Some(&read.call.function.name));
        }
        let runs = chunk.iter().map(|r| execute(env, &r.call, &r.key, r.args.clone(), ctx));
        let done = crate::platform::join_all(runs.collect()).await;
        for (read, done) in chunk.iter().zip(done) {
            out.record(&read.call, done);
        }
    }
    if ctx.cancel.is_cancelled() {
        return Err(NodeError::Aborted);
    }
    Ok(())
}

/// The answer for a read the session already knows, if its fact holds: a
/// web search or page is not fetched again (its artifact keeps it); local
/// data (a chapter, an artifact, an outline) is read again to check that it
/// is unchanged, and the model is not sent the same text twice. A fact whose
/// local result was summarised away is no answer: the call runs.
async fn known(
    env: &AgentEnv,
    ctx: &Ctx<'_>,
    facts: &Facts,
    upto: usize,
    call: &ToolCall,
    args: &Value,
) -> Option<String> {
    let tool = env.tools.get(&call.function.name)?;
    let Some(Touch::Reads(subject)) = tool.touches(args) else { return None };
    let fact = facts.about(&subject)?;
    let visible = fact.at >= upto;
    if facts::local(&subject) {
        if !visible {
            return None;
        }
        let now = tool.call(args, &tool_context(env, ctx)).await.ok()?;
        (now.model_text() == fact.result).then(|| facts::known_answer(fact, true))
    } else {
        (visible || fact.artifact.is_some()).then(|| facts::known_answer(fact, visible))
    }
}

/// Whether `call` is a web read the session already knows (answered
/// without the network).
fn web_known(env: &AgentEnv, facts: &Facts, upto: usize, call: &ToolCall) -> bool {
    let Some(tool) = env.tools.get(&call.function.name) else { return false };
    let Ok(args) = parse_arguments(call) else { return false };
    match tool.touches(&args) {
        Some(Touch::Reads(subject)) if !facts::local(&subject) => {
            facts.about(&subject).is_some_and(|f| f.at >= upto || f.artifact.is_some())
        }
        _ => false,
    }
}

/// Runs the pending tool calls up to the first one that needs approval.
pub struct Tools(pub Rc<AgentEnv>);

#[async_trait(?Send)]
impl Node<AgentState> for Tools {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        let env = &self.0;
        ctx.phase(Phase::Researching);
        let pending: Vec<ToolCall> =
            state.pending_calls().into_iter().take_while(|c| !env.call_needs_approval(c)).collect();
        let facts = facts::derive(&state.messages, &env.tools);
        let upto = state.compaction.as_ref().map_or(0, |c| c.upto);
        // Searches the session already made are not optimised again.
        let fresh: Vec<ToolCall> = pending.iter().filter(|c| !web_known(env, &facts, upto, c)).cloned().collect();
        let merged_search = merge_searches(env, state, &fresh, ctx).await?;
        // Calls of this step that ran before a crash are not run again.
        let receipts = env
            .db
            .receipts(ctx.thread_id)
            .await
            .map_err(|e| NodeError::failed(e.code(), format!("reading the session's tool receipts: {e}")))?;

        // The outbound rule (see `outbound`): checked before each call, since
        // a search earlier in the batch can bring web material in.
        let exposed = outbound::exposed_by_messages(&state.messages)
            || outbound::exposed_by_artifacts(&env.db, ctx.thread_id).await.unwrap_or(true);
        let mut out =
            Outcomes { results: Vec::new(), exposed, links: state.result_links.clone(), new_links: Vec::new() };
        let person = outbound::person_texts(&state.messages);
        let mut hold = None;
        // The loop guard's view of the turn: every call before each pending one.
        let turn = state.turn();
        let mut earlier = loop_guard::signatures(turn);
        let batch = turn.iter().rev().find(|m| !m.tool_calls().is_empty()).map_or(0, |m| m.tool_calls().len());
        let answered_in_batch = batch - state.pending_calls().len();
        earlier.truncate(earlier.len() - batch + answered_in_batch);
        let mut refused = loop_guard::refusals(turn);
        // Consecutive read-only calls are gathered and run together; any
        // other outcome first runs what was gathered, so results stay in
        // call order and writes run after the reads before them.
        let width = env.settings.borrow().parallel_reads.max(1);
        let mut reads: Vec<Gathered> = Vec::new();
        for call in &pending {
            if ctx.cancel.is_cancelled() {
                return Err(NodeError::Aborted);
            }
            let key = state.call_key(call);
            if let Some(receipt) = receipts.get(&key) {
                run_reads(env, ctx, &mut reads, width, &mut out).await?;
                earlier.push(loop_guard::signature(call));
                // A delegate cut off mid-way resumes from its progress.
                if call.function.name == delegate::NAME && receipt.outcome == ReceiptOutcome::Started {
                    let args = parse_arguments(call).unwrap_or_default();
                    let progress = crate::json::from_text(&receipt.content).ok();
                    let done = run_delegate(env, call, &key, &args, ctx, progress).await;
                    out.record(call, done);
                    continue;
                }
                out.answer(call, replayed(receipt));
                continue;
            }
            let verdict = loop_guard::judge(refused, &earlier, call);
            earlier.push(loop_guard::signature(call));
            match verdict {
                loop_guard::Verdict::Run => {}
                loop_guard::Verdict::Refuse(reason) => {
                    refused += 1;
                    run_reads(env, ctx, &mut reads, width, &mut out).await?;
                    ctx.warning(format!("{} was not run again: the model is repeating itself", call.function.name));
                    out.answer(call, reason);
                    continue;
                }
                loop_guard::Verdict::Stop(reason) => return Err(NodeError::failed("tool_loop", reason)),
            }
            // A read whose fact holds is answered from it, not run again.
            if let Ok(args) = parse_arguments(call) {
                if let Some(answer) = known(env, ctx, &facts, upto, call, &args).await {
                    run_reads(env, ctx, &mut reads, width, &mut out).await?;
                    out.answer(call, answer);
                    continue;
                }
            }
            let args = match &merged_search {
                Some((id, args)) if env.tools.merges_queries(call) && *id == call.id => Ok(args.clone()),
                Some((id, _)) if env.tools.merges_queries(call) => {
                    Err(format!("Merged into the search of call {id}; see its result."))
                }
                _ => parse_arguments(call),
            };
            let args = match args {
                Ok(args) => args,
                Err(message) => {
                    run_reads(env, ctx, &mut reads, width, &mut out).await?;
                    out.answer(call, message);
                    continue;
                }
            };
            // The outbound rule, judged as if the gathered reads had run
            // (they may bring web material in): when it would hold the
            // call, they run first and the rule is asked again.
            if (out.exposed || !reads.is_empty())
                && outbound::hold_reason(&env.tools, call, &args, &person, &out.links, &env.db).await.is_some()
            {
                run_reads(env, ctx, &mut reads, width, &mut out).await?;
                if out.exposed {
                    if let Some(reason) =
                        outbound::hold_reason(&env.tools, call, &args, &person, &out.links, &env.db).await
                    {
                        hold = Some(OutboundHold { call_id: call.id.clone(), reason });
                        break;
                    }
                }
            }
            if env.tools.get(&call.function.name).is_some_and(|t| t.reads_only(&args)) {
                reads.push(Gathered { call: call.clone(), key, args });
                continue;
            }
            run_reads(env, ctx, &mut reads, width, &mut out).await?;
            ctx.active_tool(Some(&call.function.name));
            let done = execute(env, call, &key, args, ctx).await;
            out.record(call, done);
        }
        run_reads(env, ctx, &mut reads, width, &mut out).await?;
        let Outcomes { results, new_links, .. } = out;
        ctx.active_tool(None);
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
