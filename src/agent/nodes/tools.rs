//! The `tools` node: resolves every pending call once (its tool and parsed
//! arguments, or the argument error), then answers them in order up to the
//! first that waits for the person (its approval, or the outbound rule):
//! from a receipt, the loop guard, a tracked fact or the search optimiser
//! when those answer it, else by running it; the reads of a step run
//! together.

use std::rc::Rc;

use async_trait::async_trait;

use super::super::call::{Answer, Answers, Call};
use super::super::consent::Consent;
use super::super::env::AgentEnv;
use super::super::events::{Ctx, Emit, Phase};
use super::super::execute::{execute, replayed};
use super::super::facts::{self, Facts};
use super::super::loop_guard;
use super::super::outbound;
use super::super::state::{AgentState, AgentUpdate, Hold};
use super::search::merge_searches;
use crate::error::ErrorCode;
use crate::graph::{Node, NodeError};
use crate::tools::{no_events, CallInfo, Decider, NotRun, Outcome, Touch};

/// What the calls of one step gave so far, in call order.
struct Step {
    answers: Answers,
    /// Web material is in the run (the outbound rule applies).
    exposed: bool,
    links: Vec<String>,
    new_links: Vec<String>,
}

impl Step {
    fn record(&mut self, answer: Answer) {
        self.exposed |= crate::context::untrusted::is_fenced(&answer.text);
        self.links.extend(answer.links.iter().cloned());
        self.new_links.extend(answer.links.iter().cloned());
        self.answers.push(answer);
    }
}

/// Runs the gathered read-only calls (indices into `calls`), `width` at a
/// time, and records their results in call order. The cancel token reaches
/// every call, so an abort stops them all.
async fn run_reads(
    env: &AgentEnv,
    ctx: &Ctx<'_>,
    calls: &[Call],
    reads: &mut Vec<usize>,
    width: usize,
    step: &mut Step,
) -> Result<(), NodeError> {
    let reads = std::mem::take(reads);
    for chunk in reads.chunks(width) {
        if ctx.cancel.is_cancelled() {
            return Err(NodeError::Aborted);
        }
        for i in chunk {
            ctx.active_tool(Some(calls[*i].name()));
        }
        let runs = chunk.iter().map(|i| execute(env, ctx, &calls[*i], None));
        for answer in crate::platform::join_all(runs.collect()).await {
            step.record(answer);
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
async fn known(env: &AgentEnv, ctx: &Ctx<'_>, facts: &Facts, upto: usize, call: &Call) -> Option<Answer> {
    let bound = call.ok()?;
    let Some(Touch::Reads(subject)) = bound.touches() else { return None };
    let fact = facts.about(&subject)?;
    let visible = fact.at >= upto;
    let text = if facts::local(&subject) {
        if !visible {
            return None;
        }
        let info = CallInfo { id: call.call.id.clone(), key: call.key.clone(), resume: None };
        let now = bound.call(&env.tool_context(ctx, info, &no_events)).await.ok()?;
        (now.model_text() == fact.result).then(|| facts::known_answer(fact, true))?
    } else {
        (visible || fact.artifact.is_some()).then(|| facts::known_answer(fact, visible))?
    };
    Some(Answer::new(&call.call.id, text, call.record(Outcome::Known)))
}

/// Whether `call` is a web read the session already knows (answered
/// without the network).
fn web_known(facts: &Facts, upto: usize, call: &Call) -> bool {
    match call.ok().and_then(|b| b.touches()) {
        Some(Touch::Reads(subject)) if !facts::local(&subject) => {
            facts.about(&subject).is_some_and(|f| f.at >= upto || f.artifact.is_some())
        }
        _ => false,
    }
}

/// What to do with a call of the step.
enum Next {
    /// Answer it with this (no run).
    Answer(Answer),
    /// Gather it with the step's reads.
    Read,
    /// Run it (continuing a resumable call from its progress).
    Run(Option<String>),
    /// Stop the step: the outbound rule holds it, for this reason.
    Hold(String),
}

/// Runs the pending tool calls up to the first one that waits for the person.
pub struct Tools(pub Rc<AgentEnv>);

#[async_trait(?Send)]
impl Node<AgentState> for Tools {
    async fn run(&self, state: &AgentState, ctx: &mut Ctx<'_>) -> Result<AgentUpdate, NodeError> {
        let env = &self.0;
        ctx.phase(Phase::Researching);
        // A resumed run (after a reload) reaches its MCP calls from here.
        env.offer_mcp_tools(&ctx.cancel).await;
        let mut calls: Vec<Call> = state.pending_calls().into_iter().map(|c| env.resolve(state, c)).collect();
        // Calls of this step that ran before a crash are not run again.
        let receipts = env
            .db
            .receipts(ctx.thread_id)
            .await
            .map_err(|e| NodeError::failed(e.code(), format!("reading the session's tool receipts: {e}")))?;
        // Each call's consent (the policy, the approvals, the grants), in
        // order: the first that needs the person's review ends the step.
        let granted: Vec<String> = match env.db.grants(ctx.thread_id).await {
            Ok(list) => list.into_iter().map(|g| g.tool).collect(),
            Err(e) => {
                ctx.warning(format!("the session's grants were not read ({e}): calls that ask are reviewed"));
                Vec::new()
            }
        };
        let mut consents = Vec::new();
        let mut hold = None;
        for call in &calls {
            let consent = match call.ok() {
                Some(bound) if !receipts.contains_key(&call.key) => env.consent(ctx, bound, &granted).await,
                _ => Consent::Run(None),
            };
            if consent == Consent::Review {
                hold = Some(Hold { call_id: call.call.id.clone(), reason: None });
                break;
            }
            consents.push(consent);
        }
        calls.truncate(consents.len());
        for (call, consent) in calls.iter_mut().zip(&consents) {
            call.by = match consent {
                Consent::Run(by) => *by,
                _ => Some(Decider::Policy),
            };
        }
        let active = env.db.artifact_summaries(ctx.thread_id, true).await;
        let mut facts = facts::derive(&state.messages, &state.records);
        if let Ok(active) = &active {
            // Results the person turned off are no longer above.
            facts.known.retain(|f| f.artifacts().all(|id| active.iter().any(|a| a.id == id)));
        }
        let upto = state.compaction.as_ref().map_or(0, |c| c.upto);
        // Searches the session already made (or the policy refused) are not optimised again.
        let fresh: Vec<usize> = (0..calls.len())
            .filter(|i| !web_known(&facts, upto, &calls[*i]) && !matches!(consents[*i], Consent::Refuse(_)))
            .collect();
        let merged_into = merge_searches(env, state, &mut calls, &fresh, ctx).await?;

        // The outbound rule (see `outbound`): checked before each call, since
        // a search earlier in the batch can bring web material in.
        let exposed = outbound::exposed_by_messages(&state.messages)
            || active.as_ref().map_or(true, |list| outbound::exposed_by_snippets(list));
        let mut step = Step {
            answers: Answers::at(state.messages.len()),
            exposed,
            links: state.result_links.clone(),
            new_links: Vec::new(),
        };
        let person = outbound::person_texts(&state.messages);
        // The loop guard's view of the turn: every call before each pending one.
        let turn = state.turn();
        let mut earlier = loop_guard::signatures(turn);
        let batch = turn.iter().rev().find(|m| !m.tool_calls().is_empty()).map_or(0, |m| m.tool_calls().len());
        let answered_in_batch = batch - state.pending_calls().len();
        earlier.truncate(earlier.len() - batch + answered_in_batch);
        let mut refused = state.refusals();
        // Consecutive read-only calls are gathered and run together; any
        // other outcome first runs what was gathered, so results stay in
        // call order and writes run after the reads before them.
        let width = env.settings.borrow().parallel_reads.max(1);
        let mut reads: Vec<usize> = Vec::new();
        let mut notes = String::new();
        for (i, call) in calls.iter().enumerate() {
            if ctx.cancel.is_cancelled() {
                return Err(NodeError::Aborted);
            }
            let next = if let Some(receipt) = receipts.get(&call.key) {
                earlier.push(loop_guard::signature(&call.call));
                // A resumable call cut off mid-way continues from its progress.
                let resumable = call.ok().is_some_and(|b| b.tool().about().resumable);
                if resumable && receipt.outcome == crate::store::ReceiptOutcome::Started {
                    Next::Run(Some(receipt.content.clone()))
                } else {
                    Next::Answer(replayed(call, receipt))
                }
            } else if let Consent::Refuse(reason) = &consents[i] {
                earlier.push(loop_guard::signature(&call.call));
                Next::Answer(call.refused(Decider::Policy, reason.as_deref()))
            } else {
                let verdict = loop_guard::judge(refused, &earlier, &call.call);
                earlier.push(loop_guard::signature(&call.call));
                match verdict {
                    loop_guard::Verdict::Stop(reason) => return Err(NodeError::failed(ErrorCode::ToolLoop, reason)),
                    loop_guard::Verdict::Refuse(reason) => {
                        refused += 1;
                        ctx.warning(format!("{} was not run again: the model is repeating itself", call.name()));
                        Next::Answer(Answer::new(
                            &call.call.id,
                            reason,
                            call.record(Outcome::NotRun(NotRun::LoopGuard)),
                        ))
                    }
                    // A read whose fact holds is answered from it, not run again.
                    loop_guard::Verdict::Run => match known(env, ctx, &facts, upto, call).await {
                        Some(answer) => Next::Answer(answer),
                        None => match (&call.bound, &merged_into) {
                            (Ok(bound), Some(first)) if bound.query().is_some() && *first != call.call.id => {
                                let text = format!("Merged into the search of call {first}; see its result.");
                                let record = call.record(Outcome::Merged { into: first.clone() });
                                Next::Answer(Answer::new(&call.call.id, text, record))
                            }
                            (Err(e), _) => Next::Answer(call.failed(e)),
                            (Ok(bound), _) => {
                                // The outbound rule, judged as if the gathered reads had
                                // run (they may bring web material in): when it would hold
                                // the call, they run first and the rule is asked again.
                                let sends = bound.sends();
                                let mut held = None;
                                if (step.exposed || !reads.is_empty())
                                    && outbound::hold_reason(sends.clone(), &person, &step.links, &env.db)
                                        .await
                                        .is_some()
                                {
                                    run_reads(env, ctx, &calls, &mut reads, width, &mut step).await?;
                                    if step.exposed {
                                        held = outbound::hold_reason(sends, &person, &step.links, &env.db).await;
                                    }
                                }
                                match held {
                                    Some(reason) => Next::Hold(reason),
                                    None if bound.reads_only() => Next::Read,
                                    None => Next::Run(None),
                                }
                            }
                        },
                    },
                }
            };
            if matches!(next, Next::Read | Next::Run(_)) && call.by == Some(Decider::Grant) {
                // The transcript shows that the person's grant ran it.
                let note = format!("\n```tool\ngranted for this session: {}\n```\n", call.name());
                ctx.content(&note);
                notes.push_str(&note);
            }
            match next {
                Next::Read => reads.push(i),
                Next::Hold(reason) => {
                    hold = Some(Hold { call_id: call.call.id.clone(), reason: Some(reason) });
                    break;
                }
                Next::Answer(answer) => {
                    run_reads(env, ctx, &calls, &mut reads, width, &mut step).await?;
                    step.record(answer);
                }
                Next::Run(resume) => {
                    run_reads(env, ctx, &calls, &mut reads, width, &mut step).await?;
                    ctx.active_tool(Some(call.name()));
                    step.record(execute(env, ctx, call, resume).await);
                }
            }
        }
        run_reads(env, ctx, &calls, &mut reads, width, &mut step).await?;
        ctx.active_tool(None);
        let Step { answers, new_links, .. } = step;
        Ok(AgentUpdate {
            messages: answers.messages,
            records: answers.records,
            result_links: new_links,
            hold: Some(hold),
            output: (!notes.is_empty()).then(|| format!("{}{notes}", state.output)),
            ..Default::default()
        })
    }
}
