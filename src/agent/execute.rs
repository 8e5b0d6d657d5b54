//! Running one resolved call, exactly once: the result text for the model
//! and its record; persisting tools' results become artifacts (a failure to
//! save is a warning, not a failed call).
//!
//! Effects are recorded with a [`Receipt`] so a step re-run after a crash
//! never repeats them: a kept result lands in one batch with its receipt; a
//! call with other effects gets a `started` receipt before it runs and a
//! `done` one after (a resumable tool keeps its progress in the `started`
//! one). Read-only calls need none (running them again changes nothing). A
//! receipt holds the text the model was given and the call's record, so a
//! replay answers with both.

use serde_json::{Map, Value};

use super::call::{Answer, Call};
use super::env::AgentEnv;
use super::events::{Ctx, Emit};
use crate::error::ErrorCode;
use crate::store::{Receipt, ReceiptOutcome};
use crate::tools::{kept_note, CallInfo, CallRecord, Outcome, ToolError, ToolEvent, ToolOutput};

/// The text a call cut off mid-way is answered with.
const UNKNOWN: &str = "Error: the outcome of this call is unknown: the page closed while it ran, and it was not run \
                       again. Check its target before calling it again.";

/// The receipt of `call` ending with `text` and `record`: its content is
/// `{"text": …, "record": …}`.
pub fn receipt(session: &str, key: &str, outcome: ReceiptOutcome, text: &str, record: &CallRecord) -> Receipt {
    let mut body = Map::new();
    body.insert("text".into(), text.into());
    body.insert("record".into(), record.to_value());
    Receipt::new(session, key, outcome, Value::Object(body).to_string())
}

/// Runs `call` (continuing a resumable tool from `resume`, the progress its
/// `started` receipt holds).
pub async fn execute(env: &AgentEnv, ctx: &Ctx<'_>, call: &Call, resume: Option<String>) -> Answer {
    let bound = match &call.bound {
        Ok(bound) => bound,
        Err(e) => return call.failed(e),
    };
    let about = bound.tool().about();
    let name = call.name();
    let session = ctx.thread_id;
    let effects = !about.read_only && about.persists.is_none();
    if effects && resume.is_none() {
        let started = Receipt::new(session, &call.key, ReceiptOutcome::Started, "");
        if let Err(e) = env.db.record_receipt(&started).await {
            // Nothing ran: the model (and the person) learn why.
            return call.failed(&ToolError::failed(e.code(), format!("{name} was not run: {e}")));
        }
    }
    let emit = |event: ToolEvent| ctx.tool(&call.call.id, &call.call.function.name, event);
    let info = CallInfo { id: call.call.id.clone(), key: call.key.clone(), resume };
    let answer = match bound.call(&env.tool_context(ctx, info, &emit)).await {
        Ok(output) => kept(env, ctx, call, output).await,
        // Cut off: its `started` receipt stays (a continued run finds it).
        Err(e) if e.code() == ErrorCode::Aborted => return call.failed(&e),
        Err(e) => call.failed(&e),
    };
    if effects {
        let done = receipt(session, &call.key, ReceiptOutcome::Done, &answer.text, &answer.record);
        if let Err(e) = env.db.record_receipt(&done).await {
            ctx.warning(format!("the outcome of {name} was not recorded: {e}"));
        }
    }
    answer
}

/// The answer for a call's output: a persisting tool's result is kept as an
/// artifact (with its receipt, in one batch), and the model learns its id.
async fn kept(env: &AgentEnv, ctx: &Ctx<'_>, call: &Call, output: ToolOutput) -> Answer {
    let mut text = output.model_text().to_owned();
    let mut record = CallRecord { artifact: output.artifact.clone(), ..call.record(output.outcome.clone()) };
    let persists = call.ok().and_then(|b| b.tool().about().persists);
    if let Some(kind) = persists {
        let title = output.artifact_title.clone().unwrap_or_else(|| call.name().to_owned());
        // The model learns the artifact's id with the result (and the index
        // then lists it in one line, not a second copy).
        let id = crate::platform::random_id();
        let plain = text.len();
        text.push_str(&kept_note(&id));
        record.kept = Some(id.clone());
        let receipt = receipt(ctx.thread_id, &call.key, ReceiptOutcome::Done, &text, &record);
        match env.db.save_tool_result(ctx.thread_id, &id, kind, &title, &output.content, &receipt).await {
            Ok(a) => {
                ctx.tool(&call.call.id, &call.call.function.name, ToolEvent::Artifact { id: a.id, title: a.title })
            }
            Err(e) => {
                text.truncate(plain);
                record.kept = None;
                ctx.warning(format!("the result of {} was not saved as an artifact: {e}", call.name()))
            }
        }
    }
    Answer { links: output.links, ..Answer::new(&call.call.id, text, record) }
}

/// The answer a call's receipt stands for, given to the model instead of
/// running the call again.
pub fn replayed(call: &Call, receipt: &Receipt) -> Answer {
    if receipt.outcome == ReceiptOutcome::Started {
        return Answer::new(&call.call.id, UNKNOWN, call.record(Outcome::Unknown));
    }
    let body: Value = serde_json::from_str(&receipt.content).unwrap_or_default();
    match (body.get("text").and_then(Value::as_str), body.get("record")) {
        (Some(text), Some(record)) => Answer::new(&call.call.id, text, CallRecord::from_value(record)),
        // A receipt written before calls had records: its text alone.
        _ => super::legacy::answer(call, &receipt.content),
    }
}
