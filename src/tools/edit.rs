//! Editing a manuscript section or an artifact through Adit, in two steps so
//! a person can review the exact change: [`plan`] works out the edits (given
//! outright, as SEARCH/REPLACE blocks, or asked of the editor model from an
//! instruction: structured output first, SEARCH/REPLACE blocks when that is
//! refused or unreadable), dry-runs them and computes the unified diff;
//! [`EditPlan::apply`] writes exactly that change, with a revision.

use std::rc::Rc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use super::{About, AnyTool, Subject, Tool, ToolContext, ToolError, ToolGroup, ToolOutput, Toolsets};
use crate::adit::{self, edits_response_format, parse_edits_json, parse_search_replace, Edit};
use crate::error::ErrorCode;
use crate::llm::{ChatRequest, LlmError, Message};
use crate::store::{check_lifecycle, Origin, Receipt};

/// What an edit changes. Read by hand (a derived internally tagged enum
/// buffers its fields and compiled to 7 KB of WASM).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EditTarget {
    Section { id: String, title: String },
    Artifact { id: String, title: String },
}

crate::decode_by_hand!(EditTarget, |f| EditTarget::from_value(f.0));

impl EditTarget {
    /// The target as serialised.
    pub fn from_value(value: &Value) -> Result<EditTarget, String> {
        let f = crate::json::Fields(value);
        let (id, title) = (f.text("id", true)?, f.text("title", true)?);
        match f.text("kind", true)?.as_str() {
            "section" => Ok(EditTarget::Section { id, title }),
            "artifact" => Ok(EditTarget::Artifact { id, title }),
            other => Err(format!("unknown edit target kind {other:?}")),
        }
    }
}

/// A change worked out and dry-run, ready for review and then for writing.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditPlan {
    pub target: EditTarget,
    /// The text the plan was made against.
    pub before: String,
    /// The text after the change.
    pub after: String,
    /// How the edits were obtained: "edits", "search_replace",
    /// "instruction/structured", "instruction/search_replace" or "replace".
    pub path: String,
    pub edits: Vec<Edit>,
    /// Unified diff of `before` → `after`.
    pub diff: String,
}

impl EditPlan {
    /// The plan as checkpointed with its review.
    pub fn from_value(value: &Value) -> Result<EditPlan, String> {
        let f = crate::json::Fields(value);
        let edits = f.each("edits", true, |v| {
            let e = crate::json::Fields(v);
            Ok(Edit { search: e.text("search", true)?, replace: e.text("replace", true)? })
        })?;
        Ok(EditPlan {
            target: EditTarget::from_value(f.need("target")?)?,
            before: f.text("before", true)?,
            after: f.text("after", true)?,
            path: f.text("path", true)?,
            edits,
            diff: f.text("diff", true)?,
        })
    }
}

/// The arguments of the four edit tools.
pub struct EditArgs {
    /// `id`, or `section_id`, `artifact_id`, `target`.
    id: String,
    edits: Option<Vec<Edit>>,
    search_replace: Option<String>,
    instruction: Option<String>,
    content: Option<String>,
}

/// What an edit tool works on and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EditKind {
    /// A manuscript section (else a session artifact).
    section: bool,
    /// The call gives the whole new text (else edits, blocks or an instruction).
    replace: bool,
}

/// One of the four edit tools (`edit_`/`update_` × `manuscript`/`artifact`):
/// each previews its call as a plan (a diff for the review) and writes
/// exactly the plan.
pub struct EditTool {
    name: &'static str,
    description: &'static str,
    kind: EditKind,
}

pub fn tools() -> Vec<Rc<dyn AnyTool>> {
    let tool = |name, description, section, replace| -> Rc<dyn AnyTool> {
        Rc::new(EditTool { name, description, kind: EditKind { section, replace } })
    };
    vec![
        tool(
            "edit_manuscript",
            "Change part of a chapter or section: give exact `edits`, SEARCH/REPLACE blocks, or an `instruction`. \
             The person reviews the diff first.",
            true,
            false,
        ),
        tool(
            "update_manuscript",
            "Replace the whole text of a chapter or section (for rewrites; prefer edit_manuscript for changes).",
            true,
            true,
        ),
        tool(
            "edit_artifact",
            "Change part of an artifact: exact `edits`, SEARCH/REPLACE blocks, or an `instruction`.",
            false,
            false,
        ),
        tool("update_artifact", "Replace an artifact's whole content.", false, true),
    ]
}

/// The arguments of the edit tools (`$id`: the target's id field).
const EDITS_SCHEMA: &str = r#"{
    "type": "object",
    "properties": {
        "$id": {"type": "string"},
        "edits": {"type": "array", "description": "Exact search/replace pairs, applied in order.",
                  "items": {"type": "object", "properties": {"search": {"type": "string"}, "replace": {"type": "string"}},
                            "required": ["search", "replace"]}},
        "search_replace": {"type": "string", "description": "Alternatively, SEARCH/REPLACE blocks."},
        "instruction": {"type": "string",
                        "description": "Alternatively, what to change, in words: the editor model works out the edits."}
    },
    "required": ["$id"]
}"#;

/// The arguments of the whole-text replacements.
const REPLACE_SCHEMA: &str = r#"{
    "type": "object",
    "properties": {"$id": {"type": "string"}, "content": {"type": "string", "description": "The full new text."}},
    "required": ["$id", "content"]
}"#;

#[async_trait(?Send)]
impl Tool for EditTool {
    type Args = EditArgs;
    fn name(&self) -> &str {
        self.name
    }
    fn spec(&self) -> crate::llm::ToolSpec {
        let id = if self.kind.section { "section_id" } else { "id" };
        let text = if self.kind.replace { REPLACE_SCHEMA } else { EDITS_SCHEMA };
        crate::llm::ToolSpec::function(self.name, self.description, super::schema(&text.replace("$id", id)))
    }
    fn about(&self) -> About {
        let (group, toolsets) = if self.kind.section {
            (ToolGroup::Manuscript, Toolsets::WRITING)
        } else {
            (ToolGroup::General, Toolsets::ALL)
        };
        About { approval: true, group, toolsets, bulk: &["content", "edits", "search_replace"], ..About::WRITE }
    }
    fn parse(&self, args: &serde_json::Value) -> Result<EditArgs, ToolError> {
        let f = super::Fields::of(self.name, args)?;
        let args = EditArgs {
            id: f.text(&["id", "section_id", "artifact_id", "target"])?,
            edits: f.value("edits")?,
            search_replace: f.opt_text(&["search_replace"])?,
            instruction: f.opt_text(&["instruction"])?,
            content: f.opt_text(&["content"])?,
        };
        if self.kind.replace && args.content.is_none() {
            return Err(f.invalid("`content` (the full new text) is required"));
        }
        Ok(args)
    }
    fn touches(&self, args: &EditArgs) -> Option<super::Touch> {
        let id = args.id.trim().to_owned();
        Some(super::Touch::Writes(if self.kind.section { Subject::Section(id) } else { Subject::Artifact(id) }))
    }
    fn preview<'a>(&'a self, args: &'a EditArgs, ctx: &'a ToolContext<'_>) -> Option<super::Pinned<'a, EditPlan>> {
        Some(Box::pin(plan(self.name, self.kind, args, ctx)))
    }
    async fn call(&self, args: &EditArgs, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        let plan = plan(self.name, self.kind, args, ctx).await?;
        let message = plan.apply(ctx, self.name, None).await?;
        Ok(match &plan.target {
            EditTarget::Artifact { id, .. } => ToolOutput::text(message).about_artifact(id.clone()),
            EditTarget::Section { .. } => ToolOutput::text(message),
        })
    }
}

async fn target_text(
    kind: EditKind,
    args: &EditArgs,
    ctx: &ToolContext<'_>,
) -> Result<(EditTarget, String), ToolError> {
    if kind.section {
        let section = ctx.db.section(&args.id).await?;
        Ok((EditTarget::Section { id: section.id.clone(), title: section.title.clone() }, section.content))
    } else {
        let artifact = ctx.db.resolve_artifact(&ctx.session_id, &args.id).await?;
        check_lifecycle(&artifact, &artifact.content).map_err(ToolError::from)?;
        if artifact.lifecycle == crate::store::Lifecycle::Static {
            return Err(ToolError::failed(
                ErrorCode::Lifecycle,
                format!("artifact {} is static (read-only)", artifact.id),
            ));
        }
        Ok((EditTarget::Artifact { id: artifact.id.clone(), title: artifact.title.clone() }, artifact.content))
    }
}

/// Works out the call of edit tool `tool` without writing.
async fn plan(tool: &str, kind: EditKind, args: &EditArgs, ctx: &ToolContext<'_>) -> Result<EditPlan, ToolError> {
    let (target, before) = target_text(kind, args, ctx).await?;
    let (path, edits, after) = if kind.replace {
        ("replace".to_owned(), Vec::new(), args.content.clone().unwrap_or_default())
    } else {
        let (path, edits) =
            match (&args.edits, &args.search_replace, &args.instruction) {
                (Some(edits), _, _) if !edits.is_empty() => ("edits".to_owned(), edits.clone()),
                (_, Some(blocks), _) => ("search_replace".to_owned(), parse_search_replace(blocks)?),
                (_, _, Some(instruction)) => ask_editor(&before, instruction, ctx).await?,
                _ => return Err(ToolError::InvalidArguments {
                    tool: tool.into(),
                    message:
                        "give `edits` ([{search, replace}]), `search_replace` (SEARCH/REPLACE blocks) or `instruction`"
                            .into(),
                }),
            };
        if edits.is_empty() {
            return Err(ToolError::failed(ErrorCode::Parse, "no edit was given"));
        }
        let applied = adit::apply_edits(&before, &edits).map_err(|e| {
            ToolError::failed(e.code(), format!("{e}. Nothing was changed; fix this edit and call the tool again."))
        })?;
        (path, edits, applied.text)
    };
    let name = match &target {
        EditTarget::Section { title, .. } | EditTarget::Artifact { title, .. } => title.clone(),
    };
    let diff = adit::unified_diff(&before, &after, &name);
    Ok(EditPlan { target, before, after, path, edits, diff })
}

/// Asks the editor model for edits implementing `instruction`: structured
/// output first; SEARCH/REPLACE blocks when the upstream refuses the schema
/// or answers something that is not valid edits JSON.
async fn ask_editor(
    document: &str,
    instruction: &str,
    ctx: &ToolContext<'_>,
) -> Result<(String, Vec<Edit>), ToolError> {
    let base = vec![
        Message::system(
            "You edit a document by exact search/replace pairs. Each search must copy the document's text exactly, \
             with enough surrounding lines to occur only once. Change nothing the instruction does not ask for.",
        ),
        Message::user(format!("Document:\n<<<\n{document}\n>>>\n\nInstruction: {instruction}")),
    ];
    let mut structured = ChatRequest::new(ctx.main_model.clone(), base.clone());
    structured.response_format = Some(edits_response_format());
    match ctx.model.chat(structured, &mut |_| {}, &ctx.cancel).await {
        Ok(outcome) => {
            if let Ok(edits) = parse_edits_json(outcome.message.text()) {
                return Ok(("instruction/structured".into(), edits));
            }
        }
        Err(
            LlmError::StructuredOutputRefused(_)
            | LlmError::BadRequest { status: 400, .. }
            | LlmError::MalformedResponse(_),
        ) => {}
        Err(other) => return Err(other.into()),
    }
    let mut messages = base;
    crate::llm::add_user_text(
        &mut messages,
        "Answer only with SEARCH/REPLACE blocks:\n<<<<<<< SEARCH\nexact lines from the document\n=======\nthe new lines\n>>>>>>> REPLACE",
    );
    let outcome = ctx.model.chat(ChatRequest::new(ctx.main_model.clone(), messages), &mut |_| {}, &ctx.cancel).await?;
    let edits = parse_search_replace(outcome.message.text())?;
    Ok(("instruction/search_replace".into(), edits))
}

impl EditPlan {
    /// Writes the planned change (with a revision). If the text changed since
    /// the plan was made, the same edits are applied to the current text.
    /// With `receipt` (the call's receipt for the returned message), the
    /// change and the receipt land in one atomic batch: both or neither.
    pub async fn apply(
        &self,
        ctx: &ToolContext<'_>,
        reason: &str,
        receipt: Option<&dyn Fn(&str) -> Receipt>,
    ) -> Result<String, ToolError> {
        let with = |message: &str| -> Result<Vec<crate::store::Write>, ToolError> {
            match receipt {
                Some(receipt) => Ok(vec![receipt(message).write()?]),
                None => Ok(Vec::new()),
            }
        };
        match &self.target {
            EditTarget::Section { id, .. } => {
                let mut section = ctx.db.section(id).await?;
                // Written only if the chapter is still the version rebased on.
                let read = section.updated_at;
                section.content = self.rebase(&section.content)?;
                // A later version than the one replaced: the person's editor copy is now stale.
                section.updated_at = crate::platform::now_ms().max(section.updated_at + 1.0);
                let message = format!(
                    "Updated \"{}\" ({} characters, via {}).",
                    section.title,
                    section.content.chars().count(),
                    self.path
                );
                ctx.db
                    .save_section_with(&section, Some(Origin::Agent), reason, with(&message)?, Some(read))
                    .await
                    .map_err(saved_meanwhile)?;
                Ok(message)
            }
            EditTarget::Artifact { id, .. } => {
                let artifact = ctx.db.artifact(id).await?;
                let text = self.rebase(&artifact.content)?;
                let message = format!("Updated artifact \"{}\" (via {}).", artifact.title, self.path);
                ctx.db
                    .set_artifact_content(artifact, text, Origin::Agent, reason, with(&message)?)
                    .await
                    .map_err(saved_meanwhile)?;
                Ok(message)
            }
        }
    }

    fn rebase(&self, current: &str) -> Result<String, ToolError> {
        if current == self.before {
            return Ok(self.after.clone());
        }
        if self.edits.is_empty() {
            return Err(ToolError::failed(
                ErrorCode::Conflict,
                "the text changed since the review; nothing was written",
            ));
        }
        adit::apply_edits(current, &self.edits).map(|a| a.text).map_err(|e| {
            ToolError::failed(
                ErrorCode::Conflict,
                format!("the text changed since the review and the edit no longer applies: {e}"),
            )
        })
    }
}

/// A `conflict` while an edit is written means the text was saved in the
/// meantime (the person, another tab): the model is told to start again
/// from the current text.
fn saved_meanwhile(e: crate::store::StoreError) -> ToolError {
    match e {
        crate::store::StoreError::Conflict { .. } => ToolError::failed(
            ErrorCode::Conflict,
            "the text was saved elsewhere (the person, another tab) while this edit was being written; nothing was \
             written: read it again and make the edit on the current text",
        ),
        other => other.into(),
    }
}
