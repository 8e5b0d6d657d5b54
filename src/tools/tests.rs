//! Tool tests: schemas, defaults, bad arguments, the Adit hybrid.

use std::rc::Rc;

use futures_executor::block_on;
use serde_json::json;

use super::*;
use crate::llm::{ChatOutcome, LlmError, ScriptedModel, Step, ToolCall};
use crate::store::{MemoryBackend, Origin};

fn context(model: ScriptedModel) -> ToolContext<'static> {
    ToolContext {
        db: Db::new(Rc::new(MemoryBackend::new())),
        session_id: "s".into(),
        web: Rc::new(ScriptedWeb::default()),
        model: Rc::new(model),
        main_model: "main".into(),
        helper_model: "sub".into(),
        page_chars: 60_000,
        page_tokens: 13_107,
        context_window: 32_768,
        scope: "tests".into(),
        cancel: CancelToken::new(),
        call: CallInfo::default(),
        emit: &no_events,
    }
}

/// Binds a call of `name` with `args` (its arguments parsed once).
fn bind(registry: &ToolRegistry, name: &str, args: &serde_json::Value) -> Result<Bound, ToolError> {
    registry.bind(&ToolCall::new("c1", name, args))
}

/// Runs a call of `name` with `args`.
fn run(
    registry: &ToolRegistry,
    name: &str,
    args: serde_json::Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    block_on(bind(registry, name, &args)?.call(ctx))
}

/// Plans an `edit_manuscript` call with `args` (the tool's preview).
fn plan_chapter_edit(ctx: &ToolContext, args: &serde_json::Value) -> EditPlan {
    let registry = ToolRegistry::standard();
    block_on(bind(&registry, "edit_manuscript", args).unwrap().preview(ctx))
        .unwrap()
        .expect("an edit previews its plan")
}

#[test]
fn every_tool_has_an_object_schema_and_sensible_defaults() {
    let registry = ToolRegistry::standard();
    assert!(registry.all().len() >= 25);
    // The schemas kept as text parse (`schema` would give null otherwise).
    let schemas = registry
        .all()
        .into_iter()
        .map(|t| t.spec().function.parameters)
        .chain([crate::agent::delegate::spec().function.parameters, crate::adit::edits_json_schema()]);
    for schema in schemas {
        assert_eq!(schema["type"], "object", "{schema}");
        assert!(schema["properties"].is_object(), "{schema}");
    }
    let said = json!({"message": "m", "thought": "t", "answer": "a", "goal": "g", "steps": ["s"]});
    for tool in registry.all() {
        let spec = tool.spec();
        let about = tool.about();
        assert_eq!(spec.function.parameters["type"], "object", "{}", spec.function.name);
        assert!(!spec.function.description.is_empty());
        let destructive = ["edit_", "update_", "delete_", "move_"].iter().any(|p| spec.function.name.starts_with(p));
        assert_eq!(about.approval, destructive, "{}", spec.function.name);
        if destructive {
            assert!(!about.read_only);
        }
        assert_eq!(tool.name(), spec.function.name);
        assert!(about.toolsets.has(Toolsets::ALL), "{}: in no toolset", tool.name());
        if tool.clone().bind(said.clone()).ok().and_then(|b| b.render()).is_some() {
            assert!(about.persists.is_none(), "{}: what the stream shows is not kept", tool.name());
        }
    }
    // The toolsets are the tools' own: research gets the web, writing the manuscript and the plot.
    let names = |set| registry.specs(set).into_iter().map(|s| s.function.name).collect::<Vec<_>>();
    let (research, writing) = (names(Toolsets::RESEARCH), names(Toolsets::WRITING));
    assert!(research.contains(&"web_search".to_owned()) && !writing.contains(&"web_search".to_owned()));
    assert!(writing.contains(&"edit_manuscript".to_owned()) && !research.contains(&"edit_manuscript".to_owned()));
    assert!(writing.contains(&"move_plot_item".to_owned()) && !research.contains(&"add_plot_item".to_owned()));
    for both in ["get_manuscript", "respond", "edit_artifact", "read_memories_by_date"] {
        assert!(research.contains(&both.to_owned()) && writing.contains(&both.to_owned()), "{both}");
    }
}

#[test]
fn bad_arguments_are_errors_for_the_model_not_crashes() {
    let registry = ToolRegistry::standard();
    let ctx = context(ScriptedModel::default());
    for (name, args) in [
        ("get_manuscript", json!({})),
        ("web_search", json!({"query": 42})),
        ("web_search", json!({"query": "  "})),
        ("read_memories_by_date", json!({"start_date": "yesterday"})),
        ("plan_task", json!({"goal": "x"})),
        ("move_plot_item", json!({"item_id": "a"})),
        ("create_artifact", json!({"title": " ", "content": "x"})),
        ("update_manuscript", json!({"section_id": "s1"})),
        ("respond", json!({"nothing": "here"})),
    ] {
        let err = bind(&registry, name, &args).err().unwrap_or_else(|| panic!("{name} {args} binds"));
        assert_eq!(err.code(), crate::error::ErrorCode::InvalidArgument, "{name}: {err}");
        assert!(err.to_string().starts_with(&format!("invalid arguments for {name}")), "{err}");
    }
    let mut call = ToolCall::new("c", "get_manuscript", &json!({}));
    call.function.arguments = "{not json".into();
    assert!(registry.bind(&call).err().unwrap().to_string().contains("are not valid JSON"));
    call.function.name = "no_such_tool".into();
    assert_eq!(registry.bind(&call).err().unwrap().code(), "not_found");
    let err = run(&registry, "get_manuscript", json!({"section_id": "nope"}), &ctx).unwrap_err();
    assert_eq!(err.code(), "not_found");
}

/// Arguments are read once, into the tool's own type: aliases models use
/// land in the same field every method reads.
#[test]
fn a_call_is_bound_once_and_read_from_its_typed_arguments() {
    let registry = ToolRegistry::standard();
    for (name, args, touch) in [
        ("get_manuscript", json!({"chapter_id": " s1 "}), Touch::Reads(Subject::Section("s1".into()))),
        ("get_outline", json!({"id": "p1"}), Touch::Reads(Subject::Outline("p1".into()))),
        ("edit_artifact", json!({"artifact_id": "a1", "edits": []}), Touch::Writes(Subject::Artifact("a1".into()))),
        (
            "web_search",
            json!({"query": "  Victorian   Trains "}),
            Touch::Reads(Subject::Search("victorian trains".into())),
        ),
    ] {
        assert_eq!(bind(&registry, name, &args).unwrap().touches(), Some(touch), "{name}");
    }
    let search = bind(&registry, "web_search", &json!({"query": "a", "max_results": 3})).unwrap();
    assert_eq!(search.sends(), Some(Outbound::Query("a".into())));
    let merged = search.with_query("b").unwrap();
    assert_eq!((merged.query().as_deref(), merged.arguments()["max_results"].as_u64()), (Some("b"), Some(3)));
    let open = bind(&registry, "open_url", &json!({"url": "https://a.example/"})).unwrap();
    assert_eq!(open.sends(), Some(Outbound::Address("https://a.example/".into())));
    assert!(bind(&registry, "respond", &json!({"content": "**Done**"}))
        .unwrap()
        .render()
        .unwrap()
        .contains("**Done**"));
    assert!(registry.answers("respond") && !registry.answers("record_thought"));
    assert!(registry.get("create_artifact").unwrap().is_bulk("content"));
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
    let ctx2 = ToolContext { model: Rc::new(model), ..ctx.clone() };
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
    let created = run(
        &registry,
        "create_artifact",
        json!({"title": "Glossary", "content": "a\n", "lifecycle": "append_only"}),
        &ctx,
    )
    .unwrap();
    let got = run(&registry, "get_artifact", json!({"id": "glossary"}), &ctx).unwrap();
    assert!(got.content.contains("# Glossary"));
    assert_eq!(got.artifact, created.artifact, "both carry the artifact's text: it is named");
    let err = run(&registry, "update_artifact", json!({"id": "Glossary", "content": "b\n"}), &ctx).unwrap_err();
    assert_eq!(err.code(), "lifecycle");
    run(&registry, "edit_artifact", json!({"id": "Glossary", "edits": [{"search": "", "replace": "b\n"}]}), &ctx)
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
