//! Artifact tools: the agent's own notes and material in the session.
//! References resolve by id, id prefix or title (see `store::resolve`).

use std::rc::Rc;

use serde::Deserialize;
use serde_json::json;

use super::{parse_args, string_arg, Subject, Tool, ToolError, ToolOutput, Touch};
use crate::store::{ArtifactType, Lifecycle, Origin};

pub fn tools() -> Vec<Rc<dyn Tool>> {
    vec![Rc::new(CreateArtifact), Rc::new(GetArtifact), Rc::new(ListArtifacts), Rc::new(DeleteArtifact)]
}

#[derive(Deserialize)]
struct RefArgs {
    #[serde(alias = "artifact_id", alias = "title")]
    id: String,
}

tool! {
    /// Creates a note in the session.
    CreateArtifact {
        name: "create_artifact",
        description: "Save a note, draft or plan as a session artifact. lifecycle: overwritable (default), append_only (only additions at the end: logs, glossaries) or static (read-only).",
        parameters: crate::tools::schema(
            r#"{
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "content": {"type": "string"},
                    "lifecycle": {"type": "string", "enum": ["overwritable", "append_only", "static"]}
                },
                "required": ["title", "content"]
            }"#,
        ),
        read_only: false,
        approval: false,
        persists: None,
        call: |args, ctx| {
            #[derive(Deserialize)]
            struct A { title: String, content: String, #[serde(default)] lifecycle: Lifecycle }
            let a: A = parse_args("create_artifact", args)?;
            if a.title.trim().is_empty() {
                return Err(ToolError::InvalidArguments { tool: "create_artifact".into(), message: "`title` is empty".into() });
            }
            let created = ctx.db.create_artifact(&ctx.session_id, ArtifactType::Text, a.title.trim(), &a.content, a.lifecycle, Origin::Agent).await?;
            Ok(ToolOutput::text(format!("Created artifact {} ({}).", created.id, created.title)))
        }
    }
}

tool! {
    /// The full content of an artifact.
    GetArtifact {
        name: "get_artifact",
        description: "Read the full content of an artifact (by id, id prefix or title).",
        parameters: crate::tools::one_string("id"),
        read_only: true,
        approval: false,
        heavy: true,
        touches: |a| string_arg(a, &["id", "artifact_id", "title"]).map(|id| Touch::Reads(Subject::Artifact(id))),
        persists: None,
        call: |args, ctx| {
            let a: RefArgs = parse_args("get_artifact", args)?;
            let art = ctx.db.resolve_artifact(&ctx.session_id, &a.id).await?;
            Ok(ToolOutput::text(format!("# {} [{}]\n\n{}", art.title, art.id, art.content)))
        }
    }
}

tool! {
    /// The session's artifacts.
    ListArtifacts {
        name: "list_artifacts",
        description: "List this session's artifacts (id, title, type, whether active, length).",
        parameters: crate::tools::no_arguments(),
        read_only: true,
        approval: false,
        persists: None,
        call: |_args, ctx| {
            let list: Vec<_> = ctx.db.artifacts(&ctx.session_id).await?.into_iter()
                .map(|a| json!({ "id": a.id, "title": a.title, "type": a.kind, "isActive": a.is_active, "characters": a.content.chars().count(), "lifecycle": a.lifecycle }))
                .collect();
            Ok(ToolOutput::json(&list))
        }
    }
}

tool! {
    /// Deletes an artifact.
    DeleteArtifact {
        name: "delete_artifact",
        description: "Delete an artifact from the session (static ones cannot be deleted by you).",
        parameters: crate::tools::one_string("id"),
        read_only: false,
        approval: true,
        touches: |a| string_arg(a, &["id", "artifact_id", "title"]).map(|id| Touch::Writes(Subject::Artifact(id))),
        persists: None,
        call: |args, ctx| {
            let a: RefArgs = parse_args("delete_artifact", args)?;
            let gone = ctx.db.agent_delete_artifact(&ctx.session_id, &a.id).await?;
            Ok(ToolOutput::text(format!("Deleted artifact {} ({}).", gone.id, gone.title)))
        }
    }
}
