//! Tool tests: schemas, defaults, bad arguments, the Adit hybrid.

use std::rc::Rc;

use futures_executor::block_on;
use serde_json::json;

use super::*;
use crate::llm::{ChatOutcome, LlmError, ScriptedModel, Step};
use crate::store::{MemoryBackend, Origin};

fn context(model: ScriptedModel) -> ToolContext {
    ToolContext {
        db: Db::new(Rc::new(MemoryBackend::new())),
        session_id: "s".into(),
        web: Rc::new(ScriptedWeb::default()),
        editor: Rc::new(model),
        editor_model: "main".into(),
        page_chars: 60_000,
        page_tokens: 13_107,
        cancel: CancelToken::new(),
    }
}

/// Plans an `edit_manuscript` call with `args`.
fn plan_chapter_edit(ctx: &ToolContext, args: &serde_json::Value) -> EditPlan {
    block_on(edit::plan("edit_manuscript", EditKind { section: true, replace: false }, args, ctx)).unwrap()
}

#[test]
fn every_tool_has_an_object_schema_and_sensible_defaults() {
    let registry = ToolRegistry::standard();
    assert!(registry.all().len() >= 25);
    // The schemas kept as text parse (`schema` would give null otherwise).
    let schemas = registry
        .all()
        .iter()
        .map(|t| t.spec().function.parameters)
        .chain([crate::agent::delegate::spec().function.parameters, crate::adit::edits_json_schema()]);
    for schema in schemas {
        assert_eq!(schema["type"], "object", "{schema}");
        assert!(schema["properties"].is_object(), "{schema}");
    }
    for tool in registry.all() {
        let spec = tool.spec();
        assert_eq!(spec.function.parameters["type"], "object", "{}", spec.function.name);
        assert!(!spec.function.description.is_empty());
        let destructive = ["edit_", "update_", "delete_", "move_"].iter().any(|p| spec.function.name.starts_with(p));
        assert_eq!(tool.needs_approval_by_default(), destructive, "{}", spec.function.name);
        if destructive {
            assert!(!tool.read_only());
        }
        assert_eq!(tool.name(), spec.function.name);
        if tool.render(&json!({})).is_some() {
            assert!(tool.persists_as().is_none(), "{}: what the stream shows is not kept", tool.name());
        }
    }
    // `delegate` is the agent's own (registered by `Agent::new`).
    for name in RESEARCH_TOOLS.iter().chain(EDITORIAL_TOOLS).filter(|n| **n != "delegate") {
        assert!(registry.get(name).is_some(), "{name} is listed but missing");
    }
}

#[test]
fn bad_arguments_are_errors_for_the_model_not_crashes() {
    let registry = ToolRegistry::standard();
    let ctx = context(ScriptedModel::default());
    for (name, args) in [
        ("get_manuscript", json!({})),
        ("web_search", json!({"query": 42})),
        ("read_memories_by_date", json!({"start_date": "yesterday"})),
        ("plan_task", json!({"goal": "x"})),
        ("move_plot_item", json!({"item_id": "a"})),
        ("create_artifact", json!({"title": " ", "content": "x"})),
    ] {
        let err = block_on(registry.get(name).unwrap().call(&args, &ctx)).unwrap_err();
        assert_eq!(err.code(), "invalid_arguments", "{name}: {err}");
    }
    let err = block_on(registry.get("get_manuscript").unwrap().call(&json!({"section_id": "nope"}), &ctx)).unwrap_err();
    assert_eq!(err.code(), "not_found");
}

#[test]
fn instruction_edits_use_structured_output_then_fall_back_to_blocks() {
    // The upstream refuses response_format: the editor falls back to SEARCH/REPLACE blocks.
    let model = ScriptedModel::new([
        Step::Fail(LlmError::StructuredOutputRefused("no json_schema".into())),
        Step::Reply(ChatOutcome::text("<<<<<<< SEARCH\n名前はまだ無い。\n=======\n名前はタマ。\n>>>>>>> REPLACE\n")),
    ]);
    let ctx = context(model);
    let p = block_on(ctx.db.create_project("P", "")).unwrap();
    let s = block_on(ctx.db.add_section(&p.id, None, "一", "\u{3000}名前はまだ無い。\n")).unwrap();
    let plan = plan_chapter_edit(&ctx, &json!({"section_id": s.id, "instruction": "name the cat Tama"}));
    assert_eq!(plan.path, "instruction/search_replace");
    assert_eq!(plan.after, "\u{3000}名前はタマ。\n");
    assert!(plan.diff.contains("+\u{3000}名前はタマ。"));
    block_on(plan.apply(&ctx, "edit_manuscript", None)).unwrap();
    assert_eq!(block_on(ctx.db.section(&s.id)).unwrap().content, "\u{3000}名前はタマ。\n");

    // A model that honours the schema takes the structured path.
    let model =
        ScriptedModel::new([Step::Reply(ChatOutcome::text(r#"{"edits":[{"search":"タマ","replace":"ミケ"}]}"#))]);
    let ctx2 = ToolContext { editor: Rc::new(model), ..ctx.clone() };
    let plan = plan_chapter_edit(&ctx2, &json!({"section_id": s.id, "instruction": "rename"}));
    assert_eq!(plan.path, "instruction/structured");
}

#[test]
fn a_plan_whose_text_changed_meanwhile_is_rebased_or_refused() {
    let ctx = context(ScriptedModel::default());
    let p = block_on(ctx.db.create_project("P", "")).unwrap();
    let mut s = block_on(ctx.db.add_section(&p.id, None, "一", "a\nb\n")).unwrap();
    let plan = plan_chapter_edit(&ctx, &json!({"section_id": s.id, "edits": [{"search": "b\n", "replace": "B\n"}]}));
    s.content = "a\nb\nc\n".into();
    block_on(ctx.db.save_section(&s, Some(Origin::User), "typing")).unwrap();
    block_on(plan.apply(&ctx, "edit_manuscript", None)).unwrap();
    assert_eq!(block_on(ctx.db.section(&s.id)).unwrap().content, "a\nB\nc\n", "the same edit applied to the new text");
    let stale = plan_chapter_edit(&ctx, &json!({"section_id": s.id, "edits": [{"search": "c\n", "replace": "C\n"}]}));
    s.content = "rewritten\n".into();
    block_on(ctx.db.save_section(&s, Some(Origin::User), "typing")).unwrap();
    assert_eq!(block_on(stale.apply(&ctx, "edit_manuscript", None)).unwrap_err().code(), "conflict");
    assert_eq!(block_on(ctx.db.section(&s.id)).unwrap().content, "rewritten\n");
}

/// The person saves the chapter while an approved edit is being written:
/// the save stays and the model is told to start again from the new text.
#[test]
fn an_edit_racing_the_persons_save_keeps_the_save() {
    let racing = Rc::new(crate::store::racing::Racing::default());
    let ctx = ToolContext { db: Db::new(racing.clone()), ..context(ScriptedModel::default()) };
    let p = block_on(ctx.db.create_project("P", "")).unwrap();
    let s = block_on(ctx.db.add_section(&p.id, None, "一", "a\nb\n")).unwrap();
    let plan = plan_chapter_edit(&ctx, &json!({"section_id": s.id, "edits": [{"search": "b\n", "replace": "B\n"}]}));
    let mut saved = s.clone();
    saved.content = "a\nb\nthe person's new line\n".into();
    saved.updated_at += 5.0;
    racing.before_next_batch(vec![crate::store::Write::Put {
        store: crate::store::stores::SECTIONS,
        value: serde_json::to_value(&saved).unwrap(),
    }]);
    let err = block_on(plan.apply(&ctx, "edit_manuscript", None)).unwrap_err();
    assert_eq!(err.code(), "conflict");
    assert!(err.to_string().contains("read it again"), "{err}");
    assert_eq!(block_on(ctx.db.section(&s.id)).unwrap().content, "a\nb\nthe person's new line\n");
}

#[test]
fn artifact_tools_resolve_titles_and_respect_lifecycles() {
    let registry = ToolRegistry::standard();
    let ctx = context(ScriptedModel::default());
    block_on(
        registry
            .get("create_artifact")
            .unwrap()
            .call(&json!({"title": "Glossary", "content": "a\n", "lifecycle": "append_only"}), &ctx),
    )
    .unwrap();
    let got = block_on(registry.get("get_artifact").unwrap().call(&json!({"id": "glossary"}), &ctx)).unwrap();
    assert!(got.content.contains("# Glossary"));
    let err =
        block_on(registry.get("update_artifact").unwrap().call(&json!({"id": "Glossary", "content": "b\n"}), &ctx))
            .unwrap_err();
    assert_eq!(err.code(), "lifecycle");
    block_on(
        registry
            .get("edit_artifact")
            .unwrap()
            .call(&json!({"id": "Glossary", "edits": [{"search": "", "replace": "b\n"}]}), &ctx),
    )
    .unwrap();
    assert_eq!(block_on(ctx.db.resolve_artifact("s", "Glossary")).unwrap().content, "a\nb\n");
}

#[test]
fn the_settings_group_tools_as_the_person_thinks_of_them() {
    let infos = ToolRegistry::standard().infos();
    let group_of = |name: &str| infos.iter().find(|t| t.name == name).map(|t| t.group);
    assert_eq!(group_of("edit_manuscript"), Some(ToolGroup::Manuscript));
    assert_eq!(group_of("update_manuscript"), Some(ToolGroup::Manuscript));
    for plot in ["add_plot_item", "update_plot_item", "move_plot_item", "delete_plot_item"] {
        assert_eq!(group_of(plot), Some(ToolGroup::Plot), "{plot}");
    }
    assert_eq!(group_of("web_search"), Some(ToolGroup::General));
    // Everything that overwrites the person's work asks first by default (adding does not).
    for info in infos.iter().filter(|t| t.group != ToolGroup::General && !t.read_only && !t.name.starts_with("add_")) {
        assert!(info.needs_approval_by_default, "{}", info.name);
    }
    assert!(infos.iter().all(|t| !t.description.is_empty()));
}
