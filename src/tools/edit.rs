//! Editing a manuscript section or an artifact through Adit, in two steps so
//! a person can review the exact change: [`plan`] works out the edits (given
//! outright, as SEARCH/REPLACE blocks, or asked of the editor model from an
//! instruction: structured output first, SEARCH/REPLACE blocks when that is
//! refused or unreadable), dry-runs them and computes the unified diff;
//! [`EditPlan::apply`] writes exactly that change, with a revision.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use similar::TextDiff;

use super::{parse_args, ToolContext, ToolError};
use crate::adit::{self, edits_response_format, parse_edits_json, parse_search_replace, Edit};
use crate::llm::{ChatRequest, LlmError, Message};
use crate::store::{check_lifecycle, Origin};

/// What an edit changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EditTarget {
    Section { id: String, title: String },
    Artifact { id: String, title: String },
}

/// A change worked out and dry-run, ready for review and then for writing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

#[derive(Deserialize)]
struct EditArgs {
    #[serde(alias = "section_id", alias = "artifact_id", alias = "target")]
    id: String,
    #[serde(default)]
    edits: Option<Vec<Edit>>,
    #[serde(default)]
    search_replace: Option<String>,
    #[serde(default)]
    instruction: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

async fn target_text(tool: &str, args: &EditArgs, ctx: &ToolContext) -> Result<(EditTarget, String), ToolError> {
    if tool.ends_with("manuscript") {
        let section = ctx.db.section(&args.id).await?;
        Ok((EditTarget::Section { id: section.id.clone(), title: section.title.clone() }, section.content))
    } else {
        let artifact = ctx.db.resolve_artifact(&ctx.session_id, &args.id).await?;
        check_lifecycle(&artifact, &artifact.content).map_err(ToolError::from)?;
        if artifact.lifecycle == crate::store::Lifecycle::Static {
            return Err(ToolError::failed("lifecycle", format!("artifact {} is static (read-only)", artifact.id)));
        }
        Ok((EditTarget::Artifact { id: artifact.id.clone(), title: artifact.title.clone() }, artifact.content))
    }
}

/// Unified diff with three lines of context.
pub fn unified_diff(before: &str, after: &str, name: &str) -> String {
    TextDiff::from_lines(before, after).unified_diff().context_radius(3).header(name, name).to_string()
}

/// Works out an edit tool call (`edit_*` or `update_*`) without writing.
pub async fn plan(tool: &str, args: &Value, ctx: &ToolContext) -> Result<EditPlan, ToolError> {
    let parsed: EditArgs = parse_args(tool, args)?;
    let (target, before) = target_text(tool, &parsed, ctx).await?;
    let (path, edits, after) = if tool.starts_with("update_") {
        let content = parsed.content.clone().ok_or_else(|| ToolError::InvalidArguments {
            tool: tool.into(),
            message: "`content` (the full new text) is required".into(),
        })?;
        ("replace".to_owned(), Vec::new(), content)
    } else {
        let (path, edits) =
            match (&parsed.edits, &parsed.search_replace, &parsed.instruction) {
                (Some(edits), _, _) if !edits.is_empty() => ("edits".to_owned(), edits.clone()),
                (_, Some(blocks), _) => (
                    "search_replace".to_owned(),
                    parse_search_replace(blocks).map_err(|e| ToolError::failed(e.code(), e.to_string()))?,
                ),
                (_, _, Some(instruction)) => ask_editor(&before, instruction, ctx).await?,
                _ => return Err(ToolError::InvalidArguments {
                    tool: tool.into(),
                    message:
                        "give `edits` ([{search, replace}]), `search_replace` (SEARCH/REPLACE blocks) or `instruction`"
                            .into(),
                }),
            };
        if edits.is_empty() {
            return Err(ToolError::failed("parse", "no edit was given"));
        }
        let applied = adit::apply_edits(&before, &edits).map_err(|e| {
            ToolError::failed(e.code(), format!("{e}. Nothing was changed; fix this edit and call the tool again."))
        })?;
        (path, edits, applied.text)
    };
    let name = match &target {
        EditTarget::Section { title, .. } | EditTarget::Artifact { title, .. } => title.clone(),
    };
    let diff = unified_diff(&before, &after, &name);
    Ok(EditPlan { target, before, after, path, edits, diff })
}

/// Asks the editor model for edits implementing `instruction`: structured
/// output first; SEARCH/REPLACE blocks when the upstream refuses the schema
/// or answers something that is not valid edits JSON.
async fn ask_editor(document: &str, instruction: &str, ctx: &ToolContext) -> Result<(String, Vec<Edit>), ToolError> {
    let base = vec![
        Message::system(
            "You edit a document by exact search/replace pairs. Each search must copy the document's text exactly, \
             with enough surrounding lines to occur only once. Change nothing the instruction does not ask for.",
        ),
        Message::user(format!("Document:\n<<<\n{document}\n>>>\n\nInstruction: {instruction}")),
    ];
    let mut structured = ChatRequest::new(ctx.editor_model.clone(), base.clone());
    structured.response_format = Some(edits_response_format());
    let failed = |e: LlmError| ToolError::failed(e.code(), e.to_string());
    match ctx.editor.chat(structured, &mut |_| {}, &ctx.cancel).await {
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
        Err(other) => return Err(failed(other)),
    }
    let mut messages = base;
    messages.push(Message::system(
        "Answer only with SEARCH/REPLACE blocks:\n<<<<<<< SEARCH\nexact lines from the document\n=======\nthe new lines\n>>>>>>> REPLACE",
    ));
    let outcome = ctx
        .editor
        .chat(ChatRequest::new(ctx.editor_model.clone(), messages), &mut |_| {}, &ctx.cancel)
        .await
        .map_err(failed)?;
    let edits = parse_search_replace(outcome.message.text()).map_err(|e| ToolError::failed(e.code(), e.to_string()))?;
    Ok(("instruction/search_replace".into(), edits))
}

impl EditPlan {
    /// Writes the planned change (with a revision). If the text changed since
    /// the plan was made, the same edits are applied to the current text.
    pub async fn apply(&self, ctx: &ToolContext, reason: &str) -> Result<String, ToolError> {
        match &self.target {
            EditTarget::Section { id, .. } => {
                let mut section = ctx.db.section(id).await?;
                section.content = self.rebase(&section.content)?;
                section.updated_at = crate::platform::now_ms();
                ctx.db.save_section(&section, Some(Origin::Agent), reason).await?;
                Ok(format!(
                    "Updated \"{}\" ({} characters, via {}).",
                    section.title,
                    section.content.chars().count(),
                    self.path
                ))
            }
            EditTarget::Artifact { id, .. } => {
                let mut artifact = ctx.db.artifact(id).await?;
                let text = self.rebase(&artifact.content)?;
                check_lifecycle(&artifact, &text)?;
                artifact.content = text;
                artifact.updated_at = crate::platform::now_ms();
                ctx.db.save_artifact(&artifact, Some(Origin::Agent), reason).await?;
                Ok(format!("Updated artifact \"{}\" (via {}).", artifact.title, self.path))
            }
        }
    }

    fn rebase(&self, current: &str) -> Result<String, ToolError> {
        if current == self.before {
            return Ok(self.after.clone());
        }
        if self.edits.is_empty() {
            return Err(ToolError::failed("conflict", "the text changed since the review; nothing was written"));
        }
        adit::apply_edits(current, &self.edits).map(|a| a.text).map_err(|e| {
            ToolError::failed(
                "conflict",
                format!("the text changed since the review and the edit no longer applies: {e}"),
            )
        })
    }
}
