//! Native tests of the storage layer on the in-memory backend (the browser
//! tests run the same operations on IndexedDB).

use std::rc::Rc;

use futures_executor::block_on;
use serde_json::json;

use super::*;
use crate::adit::Edit;

fn db() -> Db {
    Db::new(Rc::new(MemoryBackend::new()))
}

#[test]
fn artifacts_crud_per_session_newest_first() {
    let db = db();
    let a = block_on(db.create_artifact(
        "s1",
        ArtifactType::WebSearch,
        "Search: 東京",
        "結果",
        Lifecycle::Overwritable,
        Origin::Agent,
    ))
    .unwrap();
    let b =
        block_on(db.create_artifact("s1", ArtifactType::Text, "Notes", "n", Lifecycle::Overwritable, Origin::Agent))
            .unwrap();
    block_on(db.create_artifact("s2", ArtifactType::Text, "Other", "o", Lifecycle::Overwritable, Origin::User))
        .unwrap();
    let list = block_on(db.artifacts("s1")).unwrap();
    assert_eq!(list.len(), 2);
    assert!(list[0].created_at >= list[1].created_at);
    block_on(db.set_artifact_active(&a.id, false)).unwrap();
    assert!(!block_on(db.artifact(&a.id)).unwrap().is_active);
    assert_eq!(block_on(db.artifact_summaries("s1", true)).unwrap().len(), 1, "the index entry follows the toggle");
    assert_eq!(block_on(db.artifact_summaries("s1", false)).unwrap().len(), 2);
    block_on(db.delete_artifact(&b.id, Origin::User)).unwrap();
    assert_eq!(block_on(db.artifact_summaries("s1", false)).unwrap().len(), 1, "and the deletion");
    assert_eq!(block_on(db.artifacts("s1")).unwrap().len(), 1);
    assert_eq!(block_on(db.artifact(&b.id)).unwrap_err().code(), "not_found");
}

#[test]
fn a_dexie_written_record_reads_back() {
    let backend = Rc::new(MemoryBackend::new());
    let record = json!({"id": "d1", "sessionId": "s", "type": "project_data", "title": "Chapter 3: 雨",
        "content": "c", "isActive": true, "createdAt": 1700000000000.0, "updatedAt": 1700000000000.0});
    block_on(backend.write(vec![Write::Put { store: stores::ARTIFACTS, value: record }])).unwrap();
    let a = block_on(Db::new(backend).artifact("d1")).unwrap();
    assert_eq!((a.kind, a.lifecycle), (ArtifactType::ProjectData, Lifecycle::Overwritable));
}

#[test]
fn agent_edits_keep_revisions_and_undo_restores_byte_for_byte() {
    let db = db();
    let project = block_on(db.create_project("Novel", "")).unwrap();
    let original = "\u{3000}吾輩は猫である。\r\n名前はまだ無い。\r\n";
    let mut section = block_on(db.add_section(&project.id, None, "Chapter 1", original)).unwrap();
    section.content = "\u{3000}吾輩は犬である。\r\n名前はまだ無い。\r\n".into();
    block_on(db.save_section(&section, Some(Origin::Agent), "edit_manuscript")).unwrap();
    let art =
        block_on(db.create_artifact("s", ArtifactType::Text, "Notes", "a\n", Lifecycle::Overwritable, Origin::Agent))
            .unwrap();
    edit_artifact(&db, &art.id, &[Edit::new("a\n", "b\n")]).unwrap();

    // Newest first: the artifact edit, then its creation, then the section edit.
    let undone = block_on(db.undo_last(Origin::Agent)).unwrap().unwrap();
    assert_eq!(undone.reason, "edit_artifact");
    assert_eq!(block_on(db.artifact(&art.id)).unwrap().content, "a\n");
    assert_eq!(
        block_on(db.artifact_summaries("s", true)).unwrap()[0].snippet,
        "a\n",
        "undo restores the index entry too"
    );
    block_on(db.undo_last(Origin::Agent)).unwrap();
    assert_eq!(block_on(db.artifact(&art.id)).unwrap_err().code(), "not_found", "undoing a creation removes it");
    block_on(db.undo_last(Origin::Agent)).unwrap();
    assert_eq!(block_on(db.section(&section.id)).unwrap().content, original, "byte for byte");
    assert!(block_on(db.undo_last(Origin::Agent)).unwrap().is_none());
}

/// An agent's Adit edit of an artifact, as the edit tools make it.
fn edit_artifact(db: &Db, reference: &str, edits: &[Edit]) -> Result<SessionArtifact> {
    let artifact = block_on(db.resolve_artifact("s", reference))?;
    let text = crate::adit::apply_edits(&artifact.content, edits).map_err(|e| StoreError::Edit(e.to_string()))?.text;
    block_on(db.set_artifact_content(artifact, text, Origin::Agent, "edit_artifact", Vec::new()))
}

#[test]
fn lifecycles_are_enforced_by_the_store() {
    let db = db();
    let glossary = block_on(db.create_artifact(
        "s",
        ArtifactType::Text,
        "Glossary",
        "猫: cat\n",
        Lifecycle::AppendOnly,
        Origin::Agent,
    ))
    .unwrap();
    edit_artifact(&db, "Glossary", &[Edit::new("", "犬: dog\n")]).unwrap();
    assert_eq!(block_on(db.artifact(&glossary.id)).unwrap().content, "猫: cat\n犬: dog\n");
    let err = edit_artifact(&db, "glossary", &[Edit::new("猫: cat\n", "")]).unwrap_err();
    assert_eq!(err.code(), "lifecycle");
    let fixed =
        block_on(db.create_artifact("s", ArtifactType::Text, "Source", "quote", Lifecycle::Static, Origin::Agent))
            .unwrap();
    assert_eq!(
        block_on(db.set_artifact_content(
            fixed.clone(),
            "changed".into(),
            Origin::Agent,
            "update_artifact",
            Vec::new()
        ))
        .unwrap_err()
        .code(),
        "lifecycle"
    );
    assert_eq!(block_on(db.agent_delete_artifact("s", &fixed.id)).unwrap_err().code(), "lifecycle");
    block_on(db.delete_artifact(&fixed.id, Origin::User)).unwrap();
    // A failed Adit edit changes nothing.
    let err = edit_artifact(&db, "Glossary", &[Edit::new("missing", "x")]).unwrap_err();
    assert_eq!(err.code(), "edit_failed");
    assert_eq!(block_on(db.artifact(&glossary.id)).unwrap().content, "猫: cat\n犬: dog\n");
}

#[test]
fn a_full_disk_is_a_typed_error_and_writes_nothing() {
    let db = Db::new(Rc::new(MemoryBackend::with_quota(600)));
    let project = block_on(db.create_project("P", "")).unwrap();
    let section = block_on(db.add_section(&project.id, None, "C1", "short")).unwrap();
    let mut big = section.clone();
    big.content = "x".repeat(2000);
    let err = block_on(db.save_section(&big, Some(Origin::Agent), "update_manuscript")).unwrap_err();
    assert_eq!(err.code(), "quota_exceeded");
    assert_eq!(block_on(db.section(&section.id)).unwrap().content, "short");
    assert!(block_on(db.revisions(Origin::Agent)).unwrap().is_empty(), "no orphan revision");
}

#[test]
fn manuscripts_and_plots_keep_order_and_cascade() {
    let db = db();
    let p = block_on(db.create_project("P", "")).unwrap();
    let c1 = block_on(db.add_section(&p.id, None, "One", "")).unwrap();
    let c2 = block_on(db.add_section(&p.id, None, "Two", "")).unwrap();
    block_on(db.add_section(&p.id, Some(&c1.id), "One.a", "")).unwrap();
    let titles: Vec<String> =
        block_on(db.sections(&p.id)).unwrap().into_iter().filter(|s| s.parent_id.is_none()).map(|s| s.title).collect();
    assert_eq!(titles, ["One", "Two"]);
    block_on(db.delete_section(&c1.id, None)).unwrap();
    let left: Vec<String> = block_on(db.sections(&p.id)).unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(left, vec![c2.id], "the chapter went with its section");

    let act = PlotItem {
        id: "act1".into(),
        project_id: p.id.clone(),
        parent_id: None,
        title: "Act 1".into(),
        summary: String::new(),
        order: 1.0,
        created_at: 0.0,
        updated_at: 0.0,
    };
    let scene = PlotItem { id: "scene1".into(), parent_id: Some("act1".into()), title: "Scene".into(), ..act.clone() };
    block_on(db.save_plot_item(&act, None, "add")).unwrap();
    block_on(db.save_plot_item(&scene, None, "add")).unwrap();
    block_on(db.delete_plot_item("act1", Some(Origin::Agent))).unwrap();
    assert!(block_on(db.plot(&p.id)).unwrap().is_empty());
    block_on(db.delete_project(&p.id)).unwrap();
    assert!(block_on(db.sections(&p.id)).unwrap().is_empty());
}

#[test]
fn export_import_round_trip() {
    let db = db();
    let p = block_on(db.create_project("Novel", "a story")).unwrap();
    block_on(db.add_section(&p.id, None, "第一章", "本文\n")).unwrap();
    let notes = super::continuity_session(&p.id);
    block_on(db.append_note(&notes, "Glossary", "- **本文**: the text\n")).unwrap();
    let exported = block_on(db.export_project(&p.id)).unwrap();
    assert_eq!(exported["continuity"].as_array().unwrap().len(), 1, "the continuity notes travel with the project");
    let other = self::db();
    let imported = block_on(other.import_project(&exported)).unwrap();
    assert_eq!(imported, p);
    assert_eq!(block_on(other.export_project(&p.id)).unwrap(), exported);
    let glossary = block_on(other.artifacts(&notes)).unwrap();
    assert_eq!(glossary[0].lifecycle, Lifecycle::AppendOnly);
    assert_eq!(block_on(other.import_project(&json!({"format": "x"}))).unwrap_err().code(), "invalid_argument");
    // A note that claims another session is refused, and nothing is written.
    let mut hostile = exported.clone();
    hostile["continuity"][0]["sessionId"] = json!("someone-else");
    hostile["project"]["title"] = json!("Changed");
    let err = block_on(other.import_project(&hostile)).unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
    assert!(err.to_string().contains("continuity[0].sessionId"), "{err}");
    assert_eq!(block_on(other.project(&p.id)).unwrap().title, "Novel");
    // An export from before the notes existed imports and keeps the notes there.
    let mut older = exported.clone();
    older.as_object_mut().unwrap().remove("continuity");
    block_on(other.import_project(&older)).unwrap();
    assert_eq!(block_on(other.artifacts(&notes)).unwrap().len(), 1);
}

#[test]
fn artifacts_import_whole_or_not_at_all() {
    let db = db();
    let a =
        block_on(db.create_artifact("s", ArtifactType::Text, "Glossary", "語彙", Lifecycle::AppendOnly, Origin::User))
            .unwrap();
    let backup: Vec<serde_json::Value> =
        block_on(db.artifacts("s")).unwrap().iter().map(|a| serde_json::to_value(a).unwrap()).collect();
    let other = self::db();
    assert_eq!(block_on(other.import_artifacts(backup.clone())).unwrap(), 1);
    assert_eq!(block_on(other.artifact(&a.id)).unwrap(), a);
    // A Dexie app's row (no lifecycle) is accepted; a record missing its content refuses the batch.
    let dexie_row = json!({"id": "d", "sessionId": "s", "type": "web_search", "title": "Search: x", "content": "y",
                           "isActive": true, "createdAt": 1.0, "updatedAt": 1.0});
    let broken = json!({"id": "b", "sessionId": "s", "type": "text", "title": "T", "isActive": true,
                        "createdAt": 1.0, "updatedAt": 1.0});
    let err = block_on(other.import_artifacts(vec![dexie_row.clone(), broken])).unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
    assert!(err.to_string().contains("artifacts[1]: (id b)") && err.to_string().contains("content"), "{err}");
    assert!(block_on(other.artifact("d")).is_err(), "nothing of a refused import is written");
    assert_eq!(block_on(other.import_artifacts(vec![dexie_row])).unwrap(), 1);
    assert_eq!(block_on(other.artifact("d")).unwrap().lifecycle, Lifecycle::Overwritable);
}

#[test]
fn memories_by_date_and_range() {
    let db = db();
    block_on(db.add_memory("2026-01-21", "likes SF", vec!["preference".into()])).unwrap();
    block_on(db.add_memory("2026-01-20", "novel is set in 2050", vec!["project".into()])).unwrap();
    block_on(db.add_memory("2026-01-26", "chose first person", vec![])).unwrap();
    assert_eq!(block_on(db.memory_dates()).unwrap(), ["2026-01-20", "2026-01-21", "2026-01-26"]);
    let range = block_on(db.memories_between("2026-01-20", "2026-01-21")).unwrap();
    assert_eq!(range.iter().map(|m| m.summary.as_str()).collect::<Vec<_>>(), ["novel is set in 2050", "likes SF"]);
}

#[test]
fn settings_round_trip() {
    let db = db();
    block_on(db.set_setting("fullThreshold", json!(800))).unwrap();
    assert_eq!(block_on(db.setting("fullThreshold")).unwrap(), Some(json!(800)));
    assert_eq!(block_on(db.setting("missing")).unwrap(), None);
}

#[test]
fn every_step_is_checkpointed_when_it_ends_and_old_ones_are_pruned() {
    use crate::graph::{Checkpoint, Checkpointer, PrunePolicy};
    let backend = Rc::new(MemoryBackend::new());
    let saver = StoreCheckpointer::<crate::agent::AgentState>::new(backend.clone(), PrunePolicy { keep_per_thread: 3 });
    let checkpoint = |step: u64, interrupt: Option<serde_json::Value>| Checkpoint {
        id: Checkpoint::<crate::agent::AgentState>::id_for(step),
        thread_id: "t".into(),
        parent_id: None,
        step,
        state: crate::agent::AgentState::default(),
        next: Some("agent".into()),
        interrupt,
        created_at: 0.0,
    };
    let stored = || block_on(backend.by_index(stores::CHECKPOINTS, "threadId", "t")).unwrap().len();
    block_on(saver.put(checkpoint(0, None))).unwrap();
    assert_eq!(stored(), 1, "issued when the step ends (this backend commits at once)");
    block_on(saver.put(checkpoint(1, None))).unwrap();
    assert_eq!(stored(), 2);
    block_on(saver.put(checkpoint(2, None))).unwrap();
    block_on(saver.put(checkpoint(3, Some(json!({"tool": "edit_manuscript"}))))).unwrap();
    assert_eq!(stored(), 3, "a pause is durable at once, and pruning keeps the newest 3");
    let latest = block_on(saver.latest("t")).unwrap().unwrap();
    assert_eq!(latest.step, 3);
}

#[test]
fn only_active_artifacts_get_an_index_snippet() {
    let record =
        |active: bool| json!({"id": "a", "sessionId": "s", "content": "本文🦀".repeat(200), "isActive": active});
    let active = ArtifactSnippet::index_field(&record(true));
    assert_eq!(active["active"], 1);
    assert_eq!(active["snippet"].as_str().unwrap().chars().count(), SNIPPET_CHARS);
    assert_eq!(active["length"], 800, "UTF-16 units");
    // No snippet: the `bySessionActive` key path does not resolve, so no key.
    assert_eq!(ArtifactSnippet::index_field(&record(false)), json!({"active": 0, "length": 800}));
    // A Dexie app's record without isActive counts as inactive.
    assert!(ArtifactSnippet::index_field(&json!({"id": "b", "content": "x"})).get("snippet").is_none());
}

/// Small imports look up their own ids, large ones read the key list
/// first: both find the stored artifacts they would replace.
#[test]
fn imports_of_any_size_check_the_artifacts_they_replace() {
    let db = db();
    let theirs = block_on(db.create_artifact(
        "other",
        ArtifactType::Text,
        "Theirs",
        "t",
        Lifecycle::Overwritable,
        Origin::Agent,
    ))
    .unwrap();
    let fixed =
        block_on(db.create_artifact("s", ArtifactType::Text, "Fixed", "f", Lifecycle::Static, Origin::User)).unwrap();
    let row = |id: &str, session: &str, content: &str, lifecycle: &str| {
        json!({"id": id, "sessionId": session, "type": "text", "title": "T", "content": content,
               "isActive": true, "createdAt": 1.0, "updatedAt": 1.0, "lifecycle": lifecycle})
    };
    for size in [1, 200] {
        let fresh = |n: usize| (0..n).map(|i| row(&format!("new-{size}-{i}"), "s", "x", "overwritable"));
        let mut taking = fresh(size - 1).collect::<Vec<_>>();
        taking.push(row(&theirs.id, "s", "mine now", "overwritable"));
        let err = block_on(db.import_artifacts(taking)).unwrap_err();
        assert!(err.to_string().contains("belongs to another session"), "{size}: {err}");
        let mut changing = fresh(size - 1).collect::<Vec<_>>();
        changing.push(row(&fixed.id, "s", "changed", "static"));
        assert_eq!(block_on(db.import_artifacts(changing)).unwrap_err().code(), "lifecycle", "{size}");
        assert!(block_on(db.artifact(&format!("new-{size}-0"))).is_err(), "{size}: nothing was written");
        assert_eq!(block_on(db.artifact(&theirs.id)).unwrap(), theirs);
        let mut same = fresh(size - 1).collect::<Vec<_>>();
        same.push(serde_json::to_value(&fixed).unwrap());
        assert_eq!(block_on(db.import_artifacts(same)).unwrap(), size, "an unchanged static artifact imports");
    }
}

#[test]
fn an_import_never_takes_another_projects_records() {
    let db = db();
    let mine = block_on(db.create_project("Mine", "")).unwrap();
    let theirs = block_on(db.create_project("Theirs", "")).unwrap();
    let their_chapter = block_on(db.add_section(&theirs.id, None, "第一章", "their text\n")).unwrap();
    let mut exported = block_on(db.export_project(&mine.id)).unwrap();
    exported["manuscripts"] = json!([{
        "id": their_chapter.id, "projectId": mine.id, "parentId": null, "title": "stolen", "order": 1.0,
        "content": "overwritten", "createdAt": 1.0, "updatedAt": 1.0
    }]);
    let err = block_on(db.import_project(&exported)).unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
    assert!(err.to_string().starts_with("manuscripts[0].id"), "{err}");
    assert_eq!(block_on(db.section(&their_chapter.id)).unwrap(), their_chapter, "their chapter is untouched");
}

#[test]
fn imports_with_looping_or_foreign_parents_or_wrong_types_write_nothing() {
    let db = db();
    let p = block_on(db.create_project("P", "")).unwrap();
    block_on(db.add_section(&p.id, None, "kept", "text\n")).unwrap();
    let base = block_on(db.export_project(&p.id)).unwrap();
    let plot = |id: &str, parent: Option<&str>| {
        json!({"id": id, "projectId": p.id, "parentId": parent, "title": id, "summary": "", "order": 1.0,
               "createdAt": 1.0, "updatedAt": 1.0})
    };
    let cases = [
        ("plots", json!([plot("a", Some("b")), plot("b", Some("a"))]), "plots[0].parentId"),
        ("plots", json!([plot("a", Some("elsewhere"))]), "plots[0].parentId"),
        ("plots", json!([plot("a", None), plot("a", None)]), "plots[1].id"),
        ("plots", json!([{"id": "a", "projectId": p.id, "title": 5}]), "plots[0]"),
        ("plots", json!("not a list"), "plots"),
        (
            "manuscripts",
            json!([{"id": "x", "projectId": "other", "title": "t", "order": 1.0, "content": "",
                                 "createdAt": 1.0, "updatedAt": 1.0}]),
            "manuscripts[0].projectId",
        ),
    ];
    for (field, value, at) in cases {
        let mut doc = base.clone();
        doc[field] = value;
        let err = block_on(db.import_project(&doc)).unwrap_err();
        assert_eq!(err.code(), "invalid_argument", "{at}");
        assert!(err.to_string().starts_with(at), "{at}: {err}");
        assert_eq!(block_on(db.export_project(&p.id)).unwrap(), base, "nothing written for {at}");
    }
    // After the refusals the same database works.
    let mut doc = base.clone();
    doc["plots"] = json!([plot("a", None), plot("b", Some("a"))]);
    block_on(db.import_project(&doc)).unwrap();
    assert_eq!(block_on(db.plot(&p.id)).unwrap().len(), 2);
}

#[test]
fn plot_and_section_writes_keep_each_project_a_forest() {
    let db = db();
    let p = block_on(db.create_project("P", "")).unwrap();
    let q = block_on(db.create_project("Q", "")).unwrap();
    let now = crate::platform::now_ms();
    let item = |id: &str, project: &str, parent: Option<&str>| PlotItem {
        id: id.into(),
        project_id: project.into(),
        parent_id: parent.map(str::to_owned),
        title: id.into(),
        summary: String::new(),
        order: 1.0,
        created_at: now,
        updated_at: now,
    };
    block_on(db.save_plot_item(&item("a", &p.id, None), None, "t")).unwrap();
    block_on(db.save_plot_item(&item("b", &p.id, Some("a")), None, "t")).unwrap();
    block_on(db.save_plot_item(&item("z", &q.id, None), None, "t")).unwrap();
    for (bad, why) in [
        (item("a", &p.id, Some("b")), "a loop"),
        (item("a", &p.id, Some("a")), "its own parent"),
        (item("b", &p.id, Some("z")), "a parent in another project"),
        (item("b", &q.id, None), "a move to another project"),
        (item("c", "no-such-project", None), "no project"),
    ] {
        let err = block_on(db.save_plot_item(&bad, Some(Origin::Agent), "t")).unwrap_err();
        assert_eq!(err.code(), "invalid_argument", "{why}");
    }
    assert_eq!(block_on(db.plot_item("a")).unwrap().parent_id, None);
    let chapter = block_on(db.add_section(&p.id, None, "1", "x\n")).unwrap();
    assert!(block_on(db.add_section(&q.id, Some(&chapter.id), "stray", "")).is_err(), "a parent of another project");
}

#[test]
fn deletes_end_on_looping_data_another_app_wrote() {
    let backend = Rc::new(MemoryBackend::new());
    let db = Db::new(backend.clone());
    let p = block_on(db.create_project("P", "")).unwrap();
    let record = |id: &str, parent: &str| {
        json!({"id": id, "projectId": p.id, "parentId": parent, "title": id, "summary": "", "order": 1.0,
               "createdAt": 1.0, "updatedAt": 1.0})
    };
    let writes = vec![
        Write::Put { store: stores::PLOTS, value: record("a", "c") },
        Write::Put { store: stores::PLOTS, value: record("b", "a") },
        Write::Put { store: stores::PLOTS, value: record("c", "b") },
    ];
    block_on(backend.write(writes)).unwrap();
    block_on(db.delete_plot_item("a", Some(Origin::User))).unwrap();
    assert!(block_on(db.plot(&p.id)).unwrap().is_empty());
}

// ---- history: undo that never clobbers the person ----------------------------

#[test]
fn undo_refuses_once_the_person_wrote_after_the_agent() {
    let db = db();
    let project = block_on(db.create_project("Novel", "")).unwrap();
    let mut section = block_on(db.add_section(&project.id, None, "Chapter 1", "cat\n")).unwrap();
    section.content = "dog\n".into();
    block_on(db.save_section(&section, Some(Origin::Agent), "edit_manuscript")).unwrap();
    section.content = "dog, and my own new paragraph\n".into();
    block_on(db.edit_section_as_person(section.clone())).unwrap();
    let refused = block_on(db.undo_last(Origin::Agent)).unwrap_err();
    assert_eq!(refused.code(), "conflict", "{refused}");
    assert_eq!(block_on(db.section(&section.id)).unwrap().content, "dog, and my own new paragraph\n");
    assert_eq!(block_on(db.revisions(Origin::Agent)).unwrap().len(), 1, "the revision is kept");
    // The history still offers the agent's starting point.
    let history = block_on(db.revisions_of(&section.id)).unwrap();
    assert_eq!(history.iter().map(|r| r.origin.as_str()).collect::<Vec<_>>(), ["user", "agent"]);
    let restored = block_on(db.restore_revision(&history[1].id)).unwrap();
    assert_eq!(restored.reason, "edit_manuscript");
    assert_eq!(block_on(db.section(&section.id)).unwrap().content, "cat\n");
    // The restore is a change of its own, and restorable in turn.
    let history = block_on(db.revisions_of(&section.id)).unwrap();
    assert_eq!(history[0].reason, "restore");
    block_on(db.restore_revision(&history[0].id)).unwrap();
    assert_eq!(block_on(db.section(&section.id)).unwrap().content, "dog, and my own new paragraph\n");
}

#[test]
fn a_cascaded_delete_is_one_undo() {
    let db = db();
    let project = block_on(db.create_project("Novel", "")).unwrap();
    let chapter = block_on(db.add_section(&project.id, None, "Chapter 1", "one")).unwrap();
    let a = block_on(db.add_section(&project.id, Some(&chapter.id), "1.1", "a")).unwrap();
    block_on(db.add_section(&project.id, Some(&a.id), "1.1.1", "deep")).unwrap();
    block_on(db.delete_section(&chapter.id, Some(Origin::Agent))).unwrap();
    assert!(block_on(db.sections(&project.id)).unwrap().is_empty());
    block_on(db.undo_last(Origin::Agent)).unwrap().unwrap();
    assert_eq!(block_on(db.sections(&project.id)).unwrap().len(), 3, "the whole subtree is back");
    assert!(block_on(db.undo_last(Origin::Agent)).unwrap().is_none());
}

#[test]
fn a_record_keeps_its_newest_revisions_only() {
    let db = db();
    let project = block_on(db.create_project("Novel", "")).unwrap();
    let mut section = block_on(db.add_section(&project.id, None, "Chapter 1", "v0")).unwrap();
    for i in 1..=(KEEP_PER_RECORD + 7) {
        section.content = format!("v{i}");
        block_on(db.save_section(&section, Some(Origin::Agent), "edit_manuscript")).unwrap();
    }
    let history = block_on(db.revisions_of(&section.id)).unwrap();
    assert_eq!(history.len(), KEEP_PER_RECORD);
    assert_eq!(history[0].before_chars, format!("v{}", KEEP_PER_RECORD + 6).chars().count());
    // The oldest kept is the change from v7 to v8.
    block_on(db.restore_revision(&history.last().unwrap().id)).unwrap();
    assert_eq!(block_on(db.section(&section.id)).unwrap().content, "v7");
}

#[test]
fn a_fingerprint_survives_the_trip_through_indexeddbs_numbers() {
    use crate::store::history_fingerprint as fingerprint;
    let written = json!({"id": "s", "order": 1.0, "createdAt": 1700000000000.0, "title": "章"});
    let read_back = json!({"title": "章", "createdAt": 1700000000000u64, "order": 1, "id": "s"});
    assert_eq!(fingerprint(Some(&written)), fingerprint(Some(&read_back)));
    assert_ne!(fingerprint(Some(&written)), fingerprint(Some(&json!({"id": "s", "order": 2.0}))));
    assert_ne!(fingerprint(None), fingerprint(Some(&serde_json::Value::Null)));
}

#[test]
fn a_save_based_on_a_stale_copy_is_refused_with_the_current_text() {
    let db = db();
    let project = block_on(db.create_project("Novel", "")).unwrap();
    let loaded = block_on(db.add_section(&project.id, None, "Chapter 1", "start\n")).unwrap();
    // Two tabs loaded the same version.
    let (mut tab_a, mut tab_b) = (loaded.clone(), loaded.clone());
    tab_a.content = "A's text\n".into();
    let saved = block_on(db.edit_section_as_person(tab_a)).unwrap();
    assert!(saved.updated_at > loaded.updated_at);
    tab_b.content = "B's text\n".into();
    let refused = block_on(db.edit_section_as_person(tab_b.clone())).unwrap_err();
    assert_eq!(refused.code(), "conflict");
    let StoreError::Conflict { current: Some(current), .. } = refused else { panic!("{refused:?}") };
    assert_eq!(current["content"], "A's text\n", "the caller can offer the text that is there now");
    assert_eq!(block_on(db.section(&loaded.id)).unwrap().content, "A's text\n", "nothing was written");
    // B keeps its own text deliberately: a save based on the current version.
    tab_b.updated_at = current["updatedAt"].as_f64().unwrap();
    block_on(db.edit_section_as_person(tab_b)).unwrap();
    assert_eq!(block_on(db.section(&loaded.id)).unwrap().content, "B's text\n");
    // An agent edit moves the version too: the person's old copy is stale.
    let mut by_agent = block_on(db.section(&loaded.id)).unwrap();
    let stale = by_agent.clone();
    by_agent.content = "agent\n".into();
    by_agent.updated_at += 5.0;
    block_on(db.save_section(&by_agent, Some(Origin::Agent), "edit_manuscript")).unwrap();
    assert_eq!(block_on(db.edit_section_as_person(stale)).unwrap_err().code(), "conflict");
    // Artifacts: the same with an explicit base.
    let art =
        block_on(db.create_artifact("s", ArtifactType::Text, "Notes", "n", Lifecycle::Overwritable, Origin::User))
            .unwrap();
    block_on(db.edit_artifact_as_person(&art.id, "first".into(), Some(art.updated_at))).unwrap();
    let stale = block_on(db.edit_artifact_as_person(&art.id, "second".into(), Some(art.updated_at)));
    assert_eq!(stale.unwrap_err().code(), "conflict");
}

// ---- lifecycles on every write path -------------------------------------------

// ---- another tab writes between a change's reads and its batch -------------

fn racing() -> (Rc<super::racing::Racing>, Db) {
    let backend = Rc::new(super::racing::Racing::default());
    (backend.clone(), Db::new(backend))
}

#[test]
fn a_save_racing_another_tabs_save_is_refused_and_theirs_is_kept() {
    let (tab, db) = racing();
    let project = block_on(db.create_project("P", "")).unwrap();
    let section = block_on(db.add_section(&project.id, None, "One", "original")).unwrap();
    // The other tab saved the same version a moment before this save's batch.
    let mut theirs = section.clone();
    theirs.content = "their text".into();
    theirs.updated_at += 5.0;
    tab.before_next_batch(vec![Write::Put { store: stores::SECTIONS, value: serde_json::to_value(&theirs).unwrap() }]);
    let mut mine = section.clone();
    mine.content = "my text".into();
    let err = block_on(db.edit_section_as_person(mine)).unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    assert_eq!(block_on(db.section(&section.id)).unwrap().content, "their text");
    assert!(block_on(db.revisions_of(&section.id)).unwrap().is_empty(), "no revision of a save that did not land");

    // Plot items the same way.
    let item = PlotItem {
        id: "beat".into(),
        project_id: project.id.clone(),
        parent_id: None,
        title: "Beat".into(),
        summary: String::new(),
        order: 1.0,
        created_at: 1.0,
        updated_at: 1.0,
    };
    block_on(db.save_plot_item(&item, None, "add")).unwrap();
    let mut theirs = item.clone();
    theirs.title = "Their beat".into();
    theirs.updated_at += 5.0;
    tab.before_next_batch(vec![Write::Put { store: stores::PLOTS, value: serde_json::to_value(&theirs).unwrap() }]);
    let mut mine = item.clone();
    mine.title = "My beat".into();
    assert_eq!(block_on(db.edit_plot_item_as_person(mine)).unwrap_err().code(), "conflict");
    assert_eq!(block_on(db.plot_item(&item.id)).unwrap().title, "Their beat");
}

#[test]
fn an_agent_edit_racing_the_persons_save_is_refused_and_the_save_is_kept() {
    let (tab, db) = racing();
    let a = block_on(db.create_artifact("s", ArtifactType::Text, "Notes", "v1", Lifecycle::Overwritable, Origin::User))
        .unwrap();
    let mut saved = a.clone();
    saved.content = "the person's v2".into();
    saved.updated_at += 5.0;
    tab.before_next_batch(vec![Write::Put { store: stores::ARTIFACTS, value: serde_json::to_value(&saved).unwrap() }]);
    let err =
        block_on(db.set_artifact_content(a.clone(), "agent's v2".into(), Origin::Agent, "edit_artifact", Vec::new()))
            .unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    assert_eq!(block_on(db.artifact(&a.id)).unwrap().content, "the person's v2");
}

#[test]
fn an_undo_racing_a_save_or_another_tabs_undo_changes_nothing() {
    let (tab, db) = racing();
    let a = block_on(db.create_artifact("s", ArtifactType::Text, "Notes", "v1", Lifecycle::Overwritable, Origin::User))
        .unwrap();
    let a =
        block_on(db.set_artifact_content(a, "agent's v2".into(), Origin::Agent, "edit_artifact", Vec::new())).unwrap();
    // The person saves just before the undo's batch: the save stays.
    let mut saved = a.clone();
    saved.content = "the person's v3".into();
    saved.updated_at += 5.0;
    tab.before_next_batch(vec![Write::Put { store: stores::ARTIFACTS, value: serde_json::to_value(&saved).unwrap() }]);
    assert_eq!(block_on(db.undo_last(Origin::Agent)).unwrap_err().code(), "conflict");
    assert_eq!(block_on(db.artifact(&a.id)).unwrap().content, "the person's v3");

    // Another tab undid the same change a moment before: nothing more happens.
    let (tab, db) = racing();
    let a = block_on(db.create_artifact("s", ArtifactType::Text, "Notes", "v1", Lifecycle::Overwritable, Origin::User))
        .unwrap();
    let before = a.clone();
    block_on(db.set_artifact_content(a, "agent's v2".into(), Origin::Agent, "edit_artifact", Vec::new())).unwrap();
    let revision = block_on(db.revisions(Origin::Agent)).unwrap().remove(0);
    let mut newer = before.clone();
    newer.content = "typed after the other tab's undo".into();
    newer.updated_at += 10.0;
    tab.before_next_batch(vec![
        Write::Delete { store: stores::REVISIONS, key: revision.id.clone() },
        Write::Put { store: stores::ARTIFACTS, value: serde_json::to_value(&newer).unwrap() },
    ]);
    let err = block_on(db.undo_last(Origin::Agent)).unwrap_err();
    assert!(err.to_string().contains("undone elsewhere"), "{err}");
    assert_eq!(block_on(db.artifact(&before.id)).unwrap().content, "typed after the other tab's undo");
}

#[cfg(not(target_arch = "wasm32"))]
mod lifecycle_props {
    use super::*;
    use proptest::prelude::*;

    /// A write the agent (or an import) can attempt on artifact `usize`.
    #[derive(Debug, Clone)]
    enum Write {
        Edit(usize, String),
        Append(usize, String),
        Save(usize, String, u8),
        Import(usize, String, u8),
        Toggle(usize),
        Delete(usize),
    }

    fn write() -> impl Strategy<Value = Write> {
        let text = "[aあ\u{3000}\n]{0,5}";
        prop_oneof![
            (0..3usize, text).prop_map(|(i, t)| Write::Edit(i, t)),
            (0..3usize, text).prop_map(|(i, t)| Write::Append(i, t)),
            (0..3usize, text, 0..3u8).prop_map(|(i, t, l)| Write::Save(i, t, l)),
            (0..3usize, text, 0..3u8).prop_map(|(i, t, l)| Write::Import(i, t, l)),
            (0..3usize).prop_map(Write::Toggle),
            (0..3usize).prop_map(Write::Delete),
        ]
    }

    fn lifecycle(n: u8) -> Lifecycle {
        [Lifecycle::Overwritable, Lifecycle::AppendOnly, Lifecycle::Static][n as usize % 3]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn agent_writes_never_break_a_lifecycle(writes in prop::collection::vec(write(), 1..25)) {
            let db = db();
            let ids: Vec<String> = (0..3u8)
                .map(|n| {
                    block_on(db.create_artifact("s", ArtifactType::Text, "a", "base", lifecycle(n), Origin::Agent))
                        .unwrap()
                        .id
                })
                .collect();
            let mut seen: Vec<String> = vec!["base".into(); 3];
            let mut violations = Vec::new();
            for w in writes {
                let current = |i: usize| block_on(db.artifact(&ids[i]));
                // Every attempt may be refused; what matters is what is stored after it.
                let _ = match &w {
                    Write::Edit(i, t) => current(*i).and_then(|a| {
                        block_on(db.set_artifact_content(a, t.clone(), Origin::Agent, "edit_artifact", Vec::new())).map(|_| ())
                    }),
                    Write::Append(i, t) => current(*i).and_then(|a| {
                        let longer = format!("{}{t}", a.content);
                        block_on(db.set_artifact_content(a, longer, Origin::Agent, "edit_artifact", Vec::new())).map(|_| ())
                    }),
                    Write::Save(i, t, l) => current(*i).and_then(|mut a| {
                        a.content = t.clone();
                        a.lifecycle = lifecycle(*l);
                        block_on(db.save_artifact(&a, Some(Origin::Agent), "save"))
                    }),
                    Write::Import(i, t, l) => current(*i).and_then(|mut a| {
                        a.content = t.clone();
                        a.lifecycle = lifecycle(*l);
                        block_on(db.import_artifacts(vec![serde_json::to_value(&a).unwrap()])).map(|_| ())
                    }),
                    Write::Toggle(i) => current(*i).and_then(|a| block_on(db.set_artifact_active(&a.id, !a.is_active))),
                    Write::Delete(i) => block_on(db.agent_delete_artifact("s", &ids[*i])).map(|_| ()),
                };
                for (i, id) in ids.iter().enumerate().skip(1) {
                    match block_on(db.artifact(id)) {
                        Ok(a) if a.lifecycle != lifecycle(i as u8) => violations.push(format!("{w:?}: {id} became {:?}", a.lifecycle)),
                        Ok(a) if i == 2 && a.content != "base" => violations.push(format!("{w:?}: static changed to {:?}", a.content)),
                        Ok(a) if i == 1 && !a.content.starts_with(&seen[i]) => {
                            violations.push(format!("{w:?}: append-only {:?} → {:?}", seen[i], a.content))
                        }
                        Ok(a) => seen[i] = a.content,
                        Err(e) => violations.push(format!("{w:?}: {id} is gone ({e})")),
                    }
                }
            }
            prop_assert!(violations.is_empty(), "{violations:?}");
        }
    }
}
