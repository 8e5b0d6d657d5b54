//! Project tools: read the person's projects, outline and manuscript, edit
//! the manuscript through Adit, and shape the plot.

use std::rc::Rc;

use serde_json::{json, Value};

use super::{About, AnyTool, NoArgs, Subject, ToolContext, ToolError, ToolGroup, ToolOutput, Toolsets, Touch};
use crate::error::ErrorCode;
use crate::store::{ArtifactType, Db, Origin, PlotItem};

/// A read of the person's project data, kept as a `project_data` artifact.
const PROJECT_READ: About = About { persists: Some(ArtifactType::ProjectData), ..About::READ };
/// A change of the plot (writing only).
const PLOT_WRITE: About = About { group: ToolGroup::Plot, toolsets: Toolsets::WRITING, ..About::WRITE };

pub fn tools() -> Vec<Rc<dyn AnyTool>> {
    vec![
        Rc::new(ListProjects),
        Rc::new(GetProject),
        Rc::new(GetOutline),
        Rc::new(GetManuscript),
        Rc::new(AddPlotItem),
        Rc::new(UpdatePlotItem),
        Rc::new(MovePlotItem),
        Rc::new(DeletePlotItem),
    ]
}

/// A project, by `project_id` (or `id`).
pub struct ProjectArgs {
    project_id: String,
}

/// A chapter or section, by `section_id` (or `id`, `chapter_id`).
pub struct SectionArgs {
    section_id: String,
}

/// A plot item, by `item_id` (or `id`).
pub struct ItemArgs {
    item_id: String,
}

const PROJECT_ID: &[&str] = &["project_id", "id"];
const ITEM_ID: &[&str] = &["item_id", "id"];

/// What `get_outline` returns: a project's chapters and sections (ids,
/// titles, lengths) and its plot tree, as JSON text (delegates read it too).
pub(crate) async fn outline(db: &Db, project_id: &str) -> Result<(String, String), ToolError> {
    let p = db.project(project_id).await?;
    let sections: Vec<Value> = db
        .sections(&p.id)
        .await?
        .into_iter()
        .map(|s| json!({ "id": s.id, "parentId": s.parent_id, "title": s.title, "characters": s.content.chars().count() }))
        .collect();
    let plot: Vec<Value> = db
        .plot(&p.id)
        .await?
        .into_iter()
        .map(|i| json!({ "id": i.id, "parentId": i.parent_id, "title": i.title, "summary": i.summary, "order": i.order }))
        .collect();
    let text = ToolOutput::json(&json!({ "project": p.title, "manuscript": sections, "plot": plot })).content;
    Ok((text, p.title))
}

/// "Chapter 3: Title" for top-level sections, "Section: Title" otherwise.
async fn section_label(ctx: &ToolContext<'_>, project_id: &str, id: &str, title: &str) -> String {
    let sections = ctx.db.sections(project_id).await.unwrap_or_default();
    match sections.iter().filter(|s| s.parent_id.is_none()).position(|s| s.id == id) {
        Some(i) => format!("Chapter {}: {title}", i + 1),
        None => format!("Section: {title}"),
    }
}

tool! {
    /// Lists the person's projects.
    ListProjects {
        name: "list_projects",
        description: "List the person's writing projects (id, title, description). Use it to find a project id.",
        parameters: crate::tools::no_arguments(),
        about: PROJECT_READ,
        args: NoArgs,
        parse: |_f| Ok(NoArgs),
        call: |_args, ctx| {
            let projects: Vec<Value> = ctx.db.projects().await?.into_iter()
                .map(|p| json!({ "id": p.id, "title": p.title, "description": p.description }))
                .collect();
            Ok(ToolOutput::json(&projects).titled("Projects"))
        }
    }
}

tool! {
    /// One project's metadata.
    GetProject {
        name: "get_project",
        description: "Get a project's title, description and the size of its manuscript and plot.",
        parameters: crate::tools::one_string("project_id"),
        about: PROJECT_READ,
        args: ProjectArgs,
        parse: |f| Ok(ProjectArgs { project_id: f.text(PROJECT_ID)? }),
        touches: |a| Some(Touch::Reads(Subject::Project(a.project_id.trim().to_owned()))),
        call: |a, ctx| {
            let p = ctx.db.project(&a.project_id).await?;
            let sections = ctx.db.sections(&p.id).await?;
            let plot = ctx.db.plot(&p.id).await?;
            let words: usize = sections.iter().map(|s| s.content.chars().count()).sum();
            Ok(ToolOutput::json(&json!({
                "id": p.id, "title": p.title, "description": p.description,
                "chapters": sections.iter().filter(|s| s.parent_id.is_none()).count(),
                "sections": sections.len(), "characters": words, "plotItems": plot.len(),
            })).titled(format!("Project: {}", p.title)))
        }
    }
}

tool! {
    /// Chapters, sections and plot as a tree of ids and titles.
    GetOutline {
        name: "get_outline",
        description: "Get a project's outline: chapters and sections (ids, titles, lengths) and the plot tree. Use the ids with get_manuscript and the plot tools.",
        parameters: crate::tools::one_string("project_id"),
        about: PROJECT_READ,
        args: ProjectArgs,
        parse: |f| Ok(ProjectArgs { project_id: f.text(PROJECT_ID)? }),
        touches: |a| Some(Touch::Reads(Subject::Outline(a.project_id.trim().to_owned()))),
        call: |a, ctx| {
            let (text, title) = outline(&ctx.db, &a.project_id).await?;
            Ok(ToolOutput::text(text).titled(format!("Outline: {title}")))
        }
    }
}

tool! {
    /// The raw text of one chapter or section.
    GetManuscript {
        name: "get_manuscript",
        description: "Get the exact raw text of a chapter or section (copy from it verbatim when editing).",
        parameters: crate::tools::one_string("section_id"),
        about: About { heavy: true, ..PROJECT_READ },
        args: SectionArgs,
        parse: |f| Ok(SectionArgs { section_id: f.text(&["section_id", "id", "chapter_id"])? }),
        touches: |a| Some(Touch::Reads(Subject::Section(a.section_id.trim().to_owned()))),
        call: |a, ctx| {
            let s = ctx.db.section(&a.section_id).await?;
            let label = section_label(ctx, &s.project_id, &s.id, &s.title).await;
            Ok(ToolOutput::text(s.content).titled(label))
        }
    }
}

pub struct AddPlotArgs {
    project_id: String,
    title: String,
    summary: String,
    parent_id: Option<String>,
}

tool! {
    /// Adds a plot item.
    AddPlotItem {
        name: "add_plot_item",
        description: "Add a plot item (act, scene, beat) at the end of its parent's children.",
        parameters: crate::tools::schema(
            r#"{
                "type": "object",
                "properties": {
                    "project_id": {"type": "string"},
                    "title": {"type": "string"},
                    "summary": {"type": "string"},
                    "parent_id": {"type": "string"}
                },
                "required": ["project_id", "title"]
            }"#,
        ),
        about: PLOT_WRITE,
        args: AddPlotArgs,
        parse: |f| Ok(AddPlotArgs {
            project_id: f.text(&["project_id"])?,
            title: f.text(&["title"])?,
            summary: f.opt_text(&["summary"])?.unwrap_or_default(),
            parent_id: f.opt_text(&["parent_id"])?,
        }),
        touches: |a| Some(Touch::Writes(Subject::Outline(a.project_id.trim().to_owned()))),
        call: |a, ctx| {
            ctx.db.project(&a.project_id).await?;
            let siblings = ctx.db.plot(&a.project_id).await?;
            let order = siblings.iter().filter(|i| i.parent_id == a.parent_id).map(|i| i.order).fold(0.0, f64::max) + 1.0;
            let now = crate::platform::now_ms();
            let item = PlotItem {
                id: crate::platform::random_id(),
                project_id: a.project_id.clone(),
                parent_id: a.parent_id.clone(),
                title: a.title.clone(),
                summary: a.summary.clone(),
                order,
                created_at: now,
                updated_at: now,
            };
            ctx.db.save_plot_item(&item, Some(Origin::Agent), "add_plot_item").await?;
            Ok(ToolOutput::text(format!("Added plot item {} ({}).", item.id, item.title)))
        }
    }
}

pub struct UpdatePlotArgs {
    item_id: String,
    title: Option<String>,
    summary: Option<String>,
}

tool! {
    /// Renames or re-summarises a plot item.
    UpdatePlotItem {
        name: "update_plot_item",
        description: "Change a plot item's title and/or summary.",
        parameters: crate::tools::schema(
            r#"{
                "type": "object",
                "properties": {
                    "item_id": {"type": "string"},
                    "title": {"type": "string"},
                    "summary": {"type": "string"}
                },
                "required": ["item_id"]
            }"#,
        ),
        about: About { approval: true, ..PLOT_WRITE },
        args: UpdatePlotArgs,
        parse: |f| Ok(UpdatePlotArgs {
            item_id: f.text(ITEM_ID)?,
            title: f.opt_text(&["title"])?,
            summary: f.opt_text(&["summary"])?,
        }),
        touches: |_a| Some(Touch::Writes(Subject::AnyOutline)),
        call: |a, ctx| {
            let mut item = ctx.db.plot_item(&a.item_id).await?;
            if let Some(t) = &a.title { item.title = t.clone(); }
            if let Some(s) = &a.summary { item.summary = s.clone(); }
            item.updated_at = crate::platform::now_ms();
            ctx.db.save_plot_item(&item, Some(Origin::Agent), "update_plot_item").await?;
            Ok(ToolOutput::text(format!("Updated plot item {}.", item.title)))
        }
    }
}

pub struct MovePlotArgs {
    item_id: String,
    parent_id: Option<String>,
    order: f64,
}

tool! {
    /// Moves a plot item under another parent or to another position.
    MovePlotItem {
        name: "move_plot_item",
        description: "Move a plot item: set its parent (omit for top level) and its order among siblings.",
        parameters: crate::tools::schema(
            r#"{
                "type": "object",
                "properties": {
                    "item_id": {"type": "string"},
                    "parent_id": {"type": "string"},
                    "order": {"type": "number"}
                },
                "required": ["item_id", "order"]
            }"#,
        ),
        about: About { approval: true, ..PLOT_WRITE },
        args: MovePlotArgs,
        parse: |f| Ok(MovePlotArgs {
            item_id: f.text(ITEM_ID)?,
            parent_id: f.opt_text(&["parent_id"])?,
            order: f.number("order")?.ok_or_else(|| f.invalid("missing field `order`"))?,
        }),
        touches: |_a| Some(Touch::Writes(Subject::AnyOutline)),
        call: |a, ctx| {
            let mut item = ctx.db.plot_item(&a.item_id).await?;
            if let Some(parent) = &a.parent_id {
                if parent == &item.id {
                    return Err(ToolError::failed(ErrorCode::InvalidArgument, "an item cannot be its own parent"));
                }
                ctx.db.plot_item(parent).await?;
            }
            item.parent_id = a.parent_id.clone();
            item.order = a.order;
            item.updated_at = crate::platform::now_ms();
            ctx.db.save_plot_item(&item, Some(Origin::Agent), "move_plot_item").await?;
            Ok(ToolOutput::text(format!("Moved plot item {}.", item.title)))
        }
    }
}

tool! {
    /// Deletes a plot item and its children.
    DeletePlotItem {
        name: "delete_plot_item",
        description: "Delete a plot item and everything under it.",
        parameters: crate::tools::one_string("item_id"),
        about: About { approval: true, ..PLOT_WRITE },
        args: ItemArgs,
        parse: |f| Ok(ItemArgs { item_id: f.text(ITEM_ID)? }),
        touches: |_a| Some(Touch::Writes(Subject::AnyOutline)),
        call: |a, ctx| {
            let item = ctx.db.plot_item(&a.item_id).await?;
            ctx.db.delete_plot_item(&item.id, Some(Origin::Agent)).await?;
            Ok(ToolOutput::text(format!("Deleted plot item {}.", item.title)))
        }
    }
}
