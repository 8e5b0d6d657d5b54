//! `delegate` (seeds 003, 004 §3): the main agent hands a task to a child
//! that runs in an isolated conversation, told exactly what to read and what
//! it may write, within a token budget. A tool like any other: it runs on
//! the context every call gets (the model, the call's receipt, its events).
//!
//! - The child sees only its read set (artifacts, sections, outlines), fitted
//!   to its budget in a fixed order (`context::budget`): whole texts become
//!   snippets (largest first), then the oldest items become one line, then
//!   optional items are dropped; if it still does not fit the call is
//!   refused (`budget`).
//! - It may write only its write set (artifacts: a title creates one, an id
//!   overwrites it under its lifecycle), one writer per target at a time
//!   (a Web Lock per target: a second delegate is refused), and an output
//!   counts only when it ends with the completion marker.
//! - The parent gets the written ids, a short summary and the usage, never
//!   the child's transcript. The child's progress is kept in the call's
//!   `started` receipt (with each write in the same batch): the tool is
//!   resumable, so a reload continues it without writing twice; its steps
//!   stream as `delegate` events.
//! - Children cannot delegate (depth 1); abort and the approval policy carry
//!   down (a write set that overwrites asks first, as `update_artifact` does).

mod args;
mod child;

pub use args::{is_id, spec, DelegateArgs, Kind, ReadItem, Source, WriteItem, NAME};
pub use child::{child_prompt, report, Progress, FINISHED, MARKER};

use async_trait::async_trait;

use crate::context::budget::{files_message, fit, File, Form};
use crate::error::ErrorCode;
use crate::llm::{estimate_request, ChatRequest, LlmError, Message};
use crate::store::{Receipt, ReceiptOutcome};
use crate::tools::{About, Fields, Outcome, Stage, Tool, ToolContext, ToolError, ToolEvent, ToolOutput};
use child::{child_call, child_tools, Output};

/// Most model calls one child makes.
const MAX_CHILD_STEPS: usize = 8;

/// Tokens kept free for the child's answer.
const OUTPUT_RESERVE: usize = 2048;

/// The `delegate` tool.
pub struct DelegateTool;

#[async_trait(?Send)]
impl Tool for DelegateTool {
    type Args = DelegateArgs;
    fn name(&self) -> &str {
        NAME
    }
    fn spec(&self) -> crate::llm::ToolSpec {
        spec()
    }
    fn about(&self) -> About {
        About { resumable: true, bulk: &["task"], ..About::WRITE }
    }
    fn parse(&self, args: &serde_json::Value) -> Result<DelegateArgs, ToolError> {
        DelegateArgs::parse(&Fields::of(NAME, args)?)
    }
    /// An explore delegate only reads: independent ones run together.
    fn reads_only(&self, args: &DelegateArgs) -> bool {
        args.kind == Kind::Explore
    }
    /// A write set that overwrites an artifact asks whenever
    /// `update_artifact` would (the person's setting for it carries down);
    /// creating new ones does not.
    fn approval_as(&self, args: &DelegateArgs) -> Option<&str> {
        args.overwrites().then_some("update_artifact")
    }
    async fn call(&self, args: &DelegateArgs, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        let resume = ctx.call.resume.as_deref().and_then(|text| crate::json::from_text(text).ok());
        match run(ctx, args, resume).await {
            Ok((report, complete)) => Ok(ToolOutput {
                outcome: if complete { Outcome::DelegateFinished } else { Outcome::Done },
                ..ToolOutput::text(report)
            }),
            Err(DelegateError::Aborted) => Err(ToolError::failed(ErrorCode::Aborted, "the run was stopped.")),
            Err(e) => Err(ToolError::failed(e.code(), format!("{e} [code: {}]", e.code()))),
        }
    }
}

/// Why a delegate could not run at all (the parent model gets it as the
/// call's error, with its code).
#[derive(Debug, thiserror::Error)]
pub enum DelegateError {
    #[error("the run was stopped")]
    Aborted,
    /// The arguments (or a file they name) are unusable.
    #[error("delegate: {0}")]
    InvalidArgument(String),
    /// The read set does not fit the budget even degraded.
    #[error(
        "delegate: the read set needs about {needed} tokens even as one line per file, more than the budget of \
         {budget}: give fewer files, mark some optional, or raise the budget"
    )]
    Budget { needed: usize, budget: usize },
    /// Another delegate holds a target of the write set.
    #[error("delegate: {0:?} is being written by another delegate; wait for it, or write elsewhere")]
    Busy(String),
    /// The child's model call failed.
    #[error("delegate: the helper's model call failed: {0}")]
    Model(LlmError),
}

impl DelegateError {
    /// The stable code (as the JS errors have).
    pub fn code(&self) -> ErrorCode {
        match self {
            DelegateError::Aborted => ErrorCode::Aborted,
            DelegateError::InvalidArgument(_) => ErrorCode::InvalidArgument,
            DelegateError::Budget { .. } => ErrorCode::Budget,
            DelegateError::Busy(_) => ErrorCode::Busy,
            DelegateError::Model(e) => e.code(),
        }
    }
}

fn invalid(message: impl Into<String>) -> DelegateError {
    DelegateError::InvalidArgument(message.into())
}

/// A file of the read set, whole.
fn file(key: String, title: String, purpose: &str, text: String, at: f64, optional: bool) -> File {
    File { key, title, purpose: purpose.to_owned(), text, at, optional, form: Form::Whole }
}

/// Reads the read set from the session and the projects.
async fn resolve(ctx: &ToolContext<'_>, reads: &[ReadItem]) -> Result<Vec<File>, DelegateError> {
    let db = &ctx.db;
    let mut out = Vec::new();
    for item in reads {
        let Some((source, id)) = &item.source else {
            return Err(invalid(
                "reads: each item names an artifact, a section, an outline or a project's continuity notes",
            ));
        };
        match source {
            Source::Artifact => {
                let a = db.artifact(id).await.map_err(|e| invalid(format!("reads: {e}")))?;
                if a.session_id != ctx.session_id {
                    return Err(invalid(format!("reads: artifact {id} is not in this session")));
                }
                out.push(file(
                    format!("artifact:{id}"),
                    a.title,
                    &item.purpose,
                    a.content,
                    a.created_at,
                    item.optional,
                ));
            }
            Source::Section => {
                let s = db.section(id).await.map_err(|e| invalid(format!("reads: {e}")))?;
                out.push(file(format!("section:{id}"), s.title, &item.purpose, s.content, s.updated_at, item.optional));
            }
            Source::Outline => {
                let (text, _) =
                    crate::tools::outline(db, id).await.map_err(|e| invalid(format!("reads: outline of {id}: {e}")))?;
                let now = crate::platform::now_ms();
                out.push(file(format!("outline:{id}"), "Outline".into(), &item.purpose, text, now, item.optional));
            }
            Source::Continuity => {
                let notes = db
                    .artifacts(&crate::store::continuity_session(id))
                    .await
                    .map_err(|e| invalid(format!("reads: continuity of {id}: {e}")))?;
                let purpose = if item.purpose.is_empty() { "continuity" } else { &item.purpose };
                for note in notes.into_iter().filter(|n| !n.content.trim().is_empty()) {
                    let key = format!("artifact:{}", note.id);
                    out.push(file(key, note.title, purpose, note.content, note.created_at, item.optional));
                }
            }
        }
    }
    Ok(out)
}

/// Runs (or, with `resume`, continues) a delegate call: the report the
/// parent model gets, and whether the child finished.
async fn run(
    ctx: &ToolContext<'_>,
    args: &DelegateArgs,
    resume: Option<Progress>,
) -> Result<(String, bool), DelegateError> {
    if args.task.trim().is_empty() {
        return Err(invalid("the task is empty"));
    }
    if args.kind == Kind::Explore && !args.writes.is_empty() {
        return Err(invalid("an explore delegate writes nothing; use kind \"write\""));
    }
    let room = ctx.context_window.saturating_sub(OUTPUT_RESERVE);
    let budget = args.budget.map_or(room, |b| b.min(room));
    // One writer per target at a time, in every tab.
    let mut locks = Vec::new();
    for w in &args.writes {
        let name = format!("atelier-agent/write/{}/{}/{}", ctx.scope, ctx.session_id, w.target.trim());
        match crate::platform::try_lock(&name).await {
            Some(lock) => locks.push(lock),
            None => return Err(DelegateError::Busy(w.target.clone())),
        }
    }
    let tools = child_tools(args.kind);
    let mut progress = match resume {
        Some(p) => p,
        None => {
            let mut files = resolve(ctx, &args.reads).await?;
            let system = child_prompt(args, &files);
            let fixed = estimate_request(&ChatRequest {
                tools: tools.clone(),
                ..ChatRequest::new("", vec![Message::system(system.clone())])
            });
            fit(&mut files, budget, fixed).map_err(|(needed, budget)| DelegateError::Budget { needed, budget })?;
            let system = child_prompt(args, &files);
            Progress {
                messages: vec![Message::system(system), Message::user(files_message(&files))],
                budget,
                exposed: files.iter().any(|f| crate::context::untrusted::is_fenced(&f.text)),
                ..Progress::default()
            }
        }
    };
    let stage = |stage: Stage, detail: String| (ctx.emit)(ToolEvent::Stage { stage, detail });
    stage(Stage::Started, args.task.chars().take(120).collect());
    // The step's progress, and its write if any, in one batch: a reload
    // resumes after it and never writes twice.
    let started = |p: &Progress| {
        let text = crate::json::to_text(p).unwrap_or_default();
        Receipt::new(&ctx.session_id, &ctx.call.key, ReceiptOutcome::Started, text)
    };
    let mut summary = String::new();
    let mut complete = false;
    for _ in 0..MAX_CHILD_STEPS {
        let mut request = ChatRequest::new(ctx.helper_model.clone(), progress.messages.clone());
        request.tools = tools.clone();
        let estimate = estimate_request(&request);
        if estimate > progress.budget {
            stage(Stage::Stopped, format!("its next request ({estimate} tokens) would exceed the budget"));
            break;
        }
        let outcome = match crate::llm::chat_reading_written_calls(&*ctx.model, request, &mut |_| {}, &ctx.cancel).await
        {
            Ok(o) => o,
            Err(LlmError::Aborted) => return Err(DelegateError::Aborted),
            Err(e) => return Err(DelegateError::Model(e)),
        };
        progress.prompt_tokens += outcome.usage.map_or(estimate, |u| u.prompt_tokens as usize);
        progress.completion_tokens += outcome
            .usage
            .map_or_else(|| crate::llm::estimate_tokens(outcome.message.text()), |u| u.completion_tokens as usize);
        let calls = outcome.message.tool_calls().to_vec();
        if calls.is_empty() {
            summary = outcome.message.text().to_owned();
            complete = summary.contains(MARKER);
            progress.messages.push(outcome.message);
            break;
        }
        progress.messages.push(outcome.message);
        let mut pending_write = None;
        for c in &calls {
            let (result, write) = child_call(&ctx.db, args, &progress, c).await;
            stage(Stage::Step, format!("{}: {}", c.function.name, result.chars().take(100).collect::<String>()));
            if write.is_some() {
                pending_write = write;
            }
            progress.messages.push(Message::tool(c.id.clone(), result));
        }
        // An output lands in one batch with the progress that names it;
        // otherwise the progress is recorded on its own.
        let mut wrote = false;
        if let Some(Output { target, id, title, content, unmarked }) = pending_write {
            if unmarked {
                progress.unmarked.push(target);
            } else {
                let mut next = progress.clone();
                let id = id.unwrap_or_else(crate::platform::random_id);
                next.written.retain(|(t, _)| *t != target);
                next.written.push((target.clone(), id.clone()));
                match ctx.db.write_delegate_output(&ctx.session_id, &id, &title, &content, &started(&next)).await {
                    Ok(()) => {
                        progress = next;
                        wrote = true;
                        stage(Stage::Wrote, format!("{target} → {id}"));
                        (ctx.emit)(ToolEvent::Artifact { id, title });
                    }
                    Err(e) => {
                        if let Some(Message::Tool { content, .. }) = progress.messages.last_mut() {
                            *content = format!("Error: the output was not written: {e}");
                        }
                    }
                }
            }
        }
        if !wrote {
            let _ = ctx.db.record_receipt(&started(&progress)).await;
        }
    }
    drop(locks);
    stage(if complete { Stage::Done } else { Stage::Incomplete }, summary.chars().take(160).collect());
    Ok((report(&progress, &summary, complete), complete))
}
