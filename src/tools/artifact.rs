//! Artifact tools: the agent's own notes and material in the session.
//! References resolve by id, id prefix or title (see `store::resolve`).

use std::rc::Rc;

use serde_json::json;

use super::{About, AnyTool, NoArgs, Subject, ToolOutput, Touch};
use crate::store::{ArtifactType, Lifecycle, Origin};

pub fn tools() -> Vec<Rc<dyn AnyTool>> {
    vec![Rc::new(CreateArtifact), Rc::new(GetArtifact), Rc::new(ListArtifacts), Rc::new(DeleteArtifact)]
}

/// An artifact by id, id prefix or title (`id`, or `artifact_id`, `title`).
pub struct RefArgs {
    id: String,
}

const REF: &[&str] = &["id", "artifact_id", "title"];

pub struct CreateArgs {
    title: String,
    content: String,
    lifecycle: Lifecycle,
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
        about: About { bulk: &["content"], ..About::WRITE },
        args: CreateArgs,
        parse: |f| {
            let title = f.text(&["title"])?;
            if title.trim().is_empty() {
                return Err(f.invalid("`title` is empty"));
            }
            Ok(CreateArgs { title, content: f.text(&["content"])?, lifecycle: f.value("lifecycle")?.unwrap_or_default() })
        },
        call: |a, ctx| {
            let created = ctx.db.create_artifact(&ctx.session_id, ArtifactType::Text, a.title.trim(), &a.content, a.lifecycle, Origin::Agent).await?;
            Ok(ToolOutput::text(format!("Created artifact {} ({}).", created.id, created.title)).about_artifact(created.id))
        }
    }
}

tool! {
    /// The full content of an artifact.
    GetArtifact {
        name: "get_artifact",
        description: "Read the full content of an artifact (by id, id prefix or title).",
        parameters: crate::tools::one_string("id"),
        about: About { heavy: true, ..About::READ },
        args: RefArgs,
        parse: |f| Ok(RefArgs { id: f.text(REF)? }),
        touches: |a| Some(Touch::Reads(Subject::Artifact(a.id.trim().to_owned()))),
        call: |a, ctx| {
            let art = ctx.db.resolve_artifact(&ctx.session_id, &a.id).await?;
            Ok(ToolOutput::text(format!("# {} [{}]\n\n{}", art.title, art.id, art.content)).about_artifact(art.id))
        }
    }
}

tool! {
    /// The session's artifacts.
    ListArtifacts {
        name: "list_artifacts",
        description: "List this session's artifacts (id, title, type, whether active, length).",
        parameters: crate::tools::no_arguments(),
        about: About::READ,
        args: NoArgs,
        parse: |_f| Ok(NoArgs),
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
        about: About { approval: true, ..About::WRITE },
        args: RefArgs,
        parse: |f| Ok(RefArgs { id: f.text(REF)? }),
        touches: |a| Some(Touch::Writes(Subject::Artifact(a.id.trim().to_owned()))),
        call: |a, ctx| {
            let gone = ctx.db.agent_delete_artifact(&ctx.session_id, &a.id).await?;
            Ok(ToolOutput::text(format!("Deleted artifact {} ({}).", gone.id, gone.title)))
        }
    }
}
