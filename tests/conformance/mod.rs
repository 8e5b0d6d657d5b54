//! One store suite for both backends: every case here runs natively on
//! `MemoryBackend` (`tests/store_conformance.rs`, `#[test]`) and in Chromium
//! on IndexedDB (`tests/web_conformance.rs`, `wasm-bindgen-test`), through
//! the same public API, so the two cannot drift apart where bugs live
//! (guarded writes, the artifact index, the search index on every write
//! path, other tabs, reloads, a full disk). Add a case: write the `async fn`
//! here and list it in [`suite!`].
#![allow(dead_code)]

use std::rc::Rc;

use async_trait::async_trait;
use atelier_agent::search::SearchOptions;
use atelier_agent::store::{
    doc_key, stores, ArtifactType, Backend, Db, Guard, Lifecycle, Origin, PlotItem, StoreError, Write,
};
use serde_json::{json, Value};

/// What a backend under test provides.
#[async_trait(?Send)]
pub trait Fixture {
    type B: Backend + 'static;
    /// A fresh, empty database.
    async fn open(&self) -> Rc<Self::B>;
    /// The same database as a new page load opens it (nothing in memory).
    async fn reload(&self, backend: Rc<Self::B>) -> Rc<Self::B>;
    /// A second connection to the same database (another tab of the app).
    async fn other_tab(&self, backend: &Rc<Self::B>) -> Rc<Self::B>;
    /// The next batch on `backend` fails as a full disk fails it.
    fn fail_next_write(&self, backend: &Self::B);
    /// Lets other tabs' announcements arrive.
    async fn pause(&self);
    /// Closes (and deletes) the database.
    async fn done(&self, backend: Rc<Self::B>);
    /// Shows a measured figure in the test's output.
    fn report(&self, line: &str);
}

mod quality;

/// Lists the cases for a runner macro (`$run!(case)` each).
#[macro_export]
macro_rules! suite {
    ($run:ident) => {
        $run!(search_follows_every_write_path);
        $run!(search_survives_a_reload_without_segmenting_again);
        $run!(another_tabs_writes_are_searched_and_their_old_text_is_not);
        $run!(corrupted_or_stale_segmentations_are_made_again);
        $run!(a_full_disk_leaves_the_record_whole_or_not_at_all);
        $run!(records_without_segmentations_are_indexed_in_the_background);
        $run!(queries_are_checked_and_scopes_filter);
        $run!(a_failing_guard_writes_nothing);
        $run!(the_artifact_index_follows_every_write_and_the_bulk_rule);
        $run!(search_quality_on_planted_answers);
        $run!(a_new_artifact_is_imported_at_once_and_a_stored_one_is_checked);
    };
}

fn db(backend: &Rc<impl Backend + 'static>) -> Db {
    let backend: Rc<dyn Backend> = backend.clone();
    Db::new(backend)
}

/// The ids `query` finds (kind:id), best first.
async fn found(db: &Db, query: &str) -> Vec<String> {
    found_in(db, query, SearchOptions::default()).await
}

async fn found_in(db: &Db, query: &str, options: SearchOptions) -> Vec<String> {
    let answer = db.search(query, &options).await.unwrap();
    assert!(answer.status.complete, "{query}: {:?}", answer.status);
    answer.hits.iter().map(|h| format!("{}:{}", h.kind.scope_name(), h.id)).collect()
}

pub async fn search_follows_every_write_path<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    // The person's project and chapters.
    let project = db.create_project("灯台の町", "").await.unwrap();
    let chapter = db
        .add_section(&project.id, None, "第一章", "\u{3000}机の上の砂時計が、最後の一粒を落とした。\n")
        .await
        .unwrap();
    assert_eq!(found(&db, "砂時計").await, [format!("manuscripts:{}", chapter.id)]);
    // The person's save: the new text is found, the old is not.
    let mut edited = chapter.clone();
    edited.content = "\u{3000}祖父の羅針盤は、いつも少しだけ東を指した。\n".into();
    let saved = db.edit_section_as_person(edited).await.unwrap();
    assert!(found(&db, "砂時計").await.is_empty());
    assert_eq!(found(&db, "羅針盤").await.len(), 1);
    // The agent's approved edit (with a revision), then undo and restore.
    let mut agents = saved.clone();
    agents.content = "\u{3000}遠くで蒸気機関車の汽笛が聞こえた。\n".into();
    db.save_section(&agents, Some(Origin::Agent), "edit_manuscript").await.unwrap();
    assert_eq!(found(&db, "蒸気機関車").await.len(), 1);
    assert!(found(&db, "羅針盤").await.is_empty());
    db.undo_last(Origin::Agent).await.unwrap();
    assert_eq!(found(&db, "羅針盤").await.len(), 1, "undo brings the old text back to the index");
    assert!(found(&db, "蒸気機関車").await.is_empty());
    let history = db.revisions_of(&chapter.id).await.unwrap();
    let first_edit = history.iter().find(|r| r.reason == "edit").unwrap();
    db.restore_revision(&first_edit.id).await.unwrap();
    assert_eq!(found(&db, "砂時計").await.len(), 1, "restore");
    // Plot items.
    let item = PlotItem {
        id: "plot-1".into(),
        project_id: project.id.clone(),
        parent_id: None,
        title: "The brass compass".into(),
        summary: "He sets the compass on the chart table.".into(),
        order: 1.0,
        created_at: 1.0,
        updated_at: 1.0,
    };
    db.save_plot_item(&item, Some(Origin::Agent), "add_plot_item").await.unwrap();
    assert_eq!(found(&db, "compasses").await, ["plot:plot-1"]);
    db.delete_plot_item("plot-1", Some(Origin::Agent)).await.unwrap();
    assert!(found(&db, "compass").await.is_empty());
    // Artifacts: created, edited, toggled (text unchanged), deleted.
    let note = db
        .create_artifact(
            "s1",
            ArtifactType::Text,
            "Search: 京都",
            "京都の紅葉の見頃は十一月下旬。",
            Lifecycle::Overwritable,
            Origin::Agent,
        )
        .await
        .unwrap();
    assert_eq!(found(&db, "紅葉").await, [format!("artifacts:{}", note.id)]);
    db.set_artifact_content(note.clone(), "嵐山の竹林".into(), Origin::Agent, "update_artifact", Vec::new())
        .await
        .unwrap();
    assert!(found(&db, "紅葉").await.is_empty());
    db.set_artifact_active(&note.id, false).await.unwrap();
    assert_eq!(found(&db, "竹林").await.len(), 1, "an inactive artifact is still searched");
    // Imports (a project, artifacts).
    let exported = db.export_project(&project.id).await.unwrap();
    let mut doc = exported.clone();
    doc["manuscripts"][0]["content"] = json!("\u{3000}雪割草が、石垣の隙間に咲いていた。\n");
    db.import_project(&doc).await.unwrap();
    assert_eq!(found(&db, "雪割草").await.len(), 1);
    assert!(found(&db, "砂時計").await.is_empty(), "the import replaced the chapter");
    let imported = json!({"id": "imp-1", "sessionId": "s2", "type": "web_search", "title": "Harpoons", "content": "A rusted harpoon hung above the door.",
                          "isActive": true, "createdAt": 1.0, "updatedAt": 1.0});
    db.import_artifacts(vec![imported]).await.unwrap();
    assert_eq!(found(&db, "harpoons").await, ["artifacts:imp-1"]);
    // Memories and transcripts.
    db.add_memory("2026-01-20", "The person prefers first-person narration.", vec!["preference".into()]).await.unwrap();
    assert_eq!(found(&db, "narration").await.len(), 1);
    db.record_input("s2", "雷鳴の場面を書き直して").await.unwrap();
    db.record_output("s2", "雷鳴が、港の向こうで低く響いた。", "completed").await.unwrap();
    let talk = found(&db, "雷鳴").await;
    assert_eq!(talk.len(), 2, "both entries: {talk:?}");
    let answer = db.search("雷鳴", &SearchOptions::default()).await.unwrap();
    assert!(
        answer.hits.iter().all(|h| h.title == "雷鳴の場面を書き直して"),
        "a transcript hit shows its session's title"
    );
    db.rename_session("s2", "Thunder").await.unwrap();
    let answer = db.search("雷鳴", &SearchOptions::default()).await.unwrap();
    assert!(answer.hits.iter().all(|h| h.title == "Thunder"), "and follows a rename");
    // Cascades: a session with its transcript and artifacts, a project with its chapters.
    db.delete_session("s2").await.unwrap();
    assert!(found(&db, "雷鳴").await.is_empty());
    assert!(found(&db, "harpoon").await.is_empty());
    db.delete_artifact(&note.id, Origin::User).await.unwrap();
    assert!(found(&db, "竹林").await.is_empty());
    db.delete_project(&project.id).await.unwrap();
    assert!(found(&db, "雪割草").await.is_empty());
    // A deleted record's segmentation went in the same batch.
    db.search_settled().await.unwrap();
    let left = backend.all(stores::SEGMENTS).await.unwrap();
    assert!(left.is_empty(), "segmentations of deleted records: {left:?}");
    f.done(backend).await;
}

pub async fn search_survives_a_reload_without_segmenting_again<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    let project = db.create_project("P", "").await.unwrap();
    for i in 0..12 {
        let text = format!("\u{3000}第{i}の手紙を、花火大会の夜に書いた。The lighthouse keeper number {i}.\n");
        db.add_section(&project.id, None, &format!("第{i}章"), &text).await.unwrap();
    }
    let status = db.search_settled().await.unwrap();
    assert_eq!((status.indexed, status.pending, status.complete), (12, 0, true));
    assert_eq!(backend.all(stores::SEGMENTS).await.unwrap().len(), 12, "one stored segmentation per chapter");
    let before = found(&db, "花火大会").await;
    let backend = f.reload(backend).await;
    let db = Db::new(backend.clone());
    assert_eq!(found(&db, "花火大会").await, before);
    let all = SearchOptions { limit: Some(50.0), ..SearchOptions::default() };
    assert_eq!(found_in(&db, "keepers", all).await.len(), 12);
    let status = db.search_status().unwrap();
    assert_eq!((status.indexed, status.segmented), (12, 0), "read back, not segmented again: {status:?}");
    f.done(backend).await;
}

pub async fn another_tabs_writes_are_searched_and_their_old_text_is_not<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    let other = f.other_tab(&backend).await;
    let theirs = Db::new(other.clone());
    let project = db.create_project("P", "").await.unwrap();
    let chapter =
        db.add_section(&project.id, None, "一", "\u{3000}古い映写機が、白い壁に海を映した。\n").await.unwrap();
    assert_eq!(found(&theirs, "映写機").await.len(), 1, "the other tab loads it");
    // The other tab edits the chapter and adds an artifact.
    let mut edited = theirs.section(&chapter.id).await.unwrap();
    edited.content = "\u{3000}夏休み、駄菓子屋でラムネを分け合った。\n".into();
    theirs.edit_section_as_person(edited).await.unwrap();
    theirs
        .create_artifact(
            "s",
            ArtifactType::Text,
            "Notes",
            "屋上で天体観測をする約束",
            Lifecycle::Overwritable,
            Origin::User,
        )
        .await
        .unwrap();
    f.pause().await;
    assert_eq!(found(&db, "ラムネ").await, [format!("manuscripts:{}", chapter.id)]);
    assert!(found(&db, "映写機").await.is_empty(), "the old text is gone from this tab's index too");
    assert_eq!(found(&db, "天体観測").await.len(), 1);
    // And a delete there.
    theirs.delete_section(&chapter.id, Some(Origin::User)).await.unwrap();
    f.pause().await;
    assert!(found(&db, "ラムネ").await.is_empty());
    f.done(other).await;
    f.done(backend).await;
}

pub async fn corrupted_or_stale_segmentations_are_made_again<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    let project = db.create_project("P", "").await.unwrap();
    let a = db.add_section(&project.id, None, "一", "\u{3000}東京都に住む祖母。\n").await.unwrap();
    let b = db.add_section(&project.id, None, "二", "\u{3000}京都へ行った。\n").await.unwrap();
    let c = db.add_section(&project.id, None, "三", "\u{3000}遊園地の観覧車。\n").await.unwrap();
    db.search_settled().await.unwrap();
    // Garbage in every shape: breaks that do not fit the text, fingerprints
    // that are not one, unreadable breaks, an entry of no record.
    let key = |id: &str| doc_key(stores::SECTIONS, id);
    let hash = atelier_agent::search::text_hash(&a.title, &a.content) as f64;
    let bad = vec![
        // The right fingerprint, breaks of the wrong length (that say 東|京都).
        Write::Put { store: stores::SEGMENTS, value: json!({"key": key(&a.id), "hash": hash, "breaks": "3.DA"}) },
        Write::Put { store: stores::SEGMENTS, value: json!({"key": key(&b.id), "hash": "12", "breaks": ["x"]}) },
        Write::Put { store: stores::SEGMENTS, value: json!({"key": key(&c.id), "hash": 1.5, "breaks": "%%%"}) },
        Write::Put { store: stores::SEGMENTS, value: json!({"key": "manuscripts/none", "hash": 1, "breaks": "1.A"}) },
    ];
    backend.write(bad).await.unwrap();
    let backend = f.reload(backend).await;
    let db = Db::new(backend.clone());
    assert_eq!(found(&db, "京都").await, [format!("manuscripts:{}", b.id)], "京都 is not found in 東京都");
    assert_eq!(found(&db, "観覧車").await.len(), 1);
    assert_eq!(db.search_status().unwrap().segmented, 3, "all three made again");
    db.search_settled().await.unwrap();
    let stored = backend.all(stores::SEGMENTS).await.unwrap();
    assert_eq!(stored.len(), 3, "repaired, and the orphan gone: {stored:?}");
    f.done(backend).await;
}

pub async fn a_full_disk_leaves_the_record_whole_or_not_at_all<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    let project = db.create_project("P", "").await.unwrap();
    let chapter = db.add_section(&project.id, None, "一", "\u{3000}屋台の焼き芋が湯気を立てていた。\n").await.unwrap();
    db.search_settled().await.unwrap();
    let mut edited = chapter.clone();
    edited.content = "\u{3000}雷鳴が、港の向こうで低く響いた。\n".into();
    f.fail_next_write(&backend);
    let err = db.edit_section_as_person(edited.clone()).await.unwrap_err();
    assert_eq!(err.code(), "quota_exceeded", "{err}");
    assert_eq!(db.section(&chapter.id).await.unwrap().content, chapter.content, "nothing written");
    assert_eq!(found(&db, "焼き芋").await.len(), 1, "the index still has the text that is stored");
    assert!(found(&db, "雷鳴").await.is_empty());
    // The save goes through; storing its segmentation fails: the record is
    // whole, the index has it, and a reload segments it again.
    db.edit_section_as_person(edited).await.unwrap();
    f.fail_next_write(&backend);
    db.search_settled().await.unwrap();
    assert_eq!(found(&db, "雷鳴").await.len(), 1);
    let backend = f.reload(backend).await;
    let db = Db::new(backend.clone());
    assert_eq!(found(&db, "雷鳴").await.len(), 1);
    assert!(found(&db, "焼き芋").await.is_empty());
    f.done(backend).await;
}

pub async fn records_without_segmentations_are_indexed_in_the_background<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    let project = db.create_project("P", "").await.unwrap();
    for i in 0..30 {
        db.add_section(&project.id, None, &format!("{i}"), &format!("\u{3000}{i}番目の万年筆で書いた。\n"))
            .await
            .unwrap();
    }
    db.search_settled().await.unwrap();
    // As a database from before search finds itself: records, no segmentations.
    let keys: Vec<Write> = backend
        .all(stores::SEGMENTS)
        .await
        .unwrap()
        .iter()
        .map(|e| Write::Delete { store: stores::SEGMENTS, key: e["key"].as_str().unwrap().to_owned() })
        .collect();
    backend.write(keys).await.unwrap();
    let backend = f.reload(backend).await;
    let db = Db::new(backend.clone());
    backend.search_index().unwrap().set_search_wait(0.0);
    let answer = db.search("万年筆", &SearchOptions::default()).await.unwrap();
    assert!(!answer.status.complete, "answers at once, saying it is not whole: {:?}", answer.status);
    backend.search_index().unwrap().set_search_wait(10_000.0);
    let answer = db.search("万年筆", &SearchOptions { limit: Some(50.0), ..SearchOptions::default() }).await.unwrap();
    assert!(answer.status.complete);
    assert_eq!(answer.hits.len(), 30);
    assert_eq!(answer.status.segmented, 30);
    f.done(backend).await;
}

pub async fn queries_are_checked_and_scopes_filter<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    let p1 = db.create_project("P1", "").await.unwrap();
    let p2 = db.create_project("P2", "").await.unwrap();
    db.add_section(&p1.id, None, "一", "羅針盤を譲った。").await.unwrap();
    db.add_section(&p2.id, None, "一", "古い羅針盤。").await.unwrap();
    db.create_artifact("s1", ArtifactType::Text, "羅針盤のメモ", "メモ", Lifecycle::Overwritable, Origin::Agent)
        .await
        .unwrap();
    for empty in ["", "  ", "\u{3000}"] {
        assert_eq!(db.search(empty, &SearchOptions::default()).await.unwrap_err().code(), "invalid_argument");
    }
    let bad = SearchOptions { scope: vec!["chapters".into()], ..SearchOptions::default() };
    assert_eq!(db.search("羅針盤", &bad).await.unwrap_err().code(), "invalid_argument");
    assert_eq!(found(&db, "羅針盤").await.len(), 3);
    let project = SearchOptions { project_id: Some(p2.id.clone()), ..SearchOptions::default() };
    assert_eq!(found_in(&db, "羅針盤", project).await.len(), 1);
    let session = SearchOptions { session_id: Some("s1".into()), ..SearchOptions::default() };
    assert_eq!(found_in(&db, "羅針盤", session).await.len(), 1);
    let kinds = SearchOptions { scope: vec!["artifacts".into(), "memories".into()], ..SearchOptions::default() };
    assert_eq!(found_in(&db, "羅針盤", kinds).await.len(), 1);
    let one = SearchOptions { limit: Some(1.0), ..SearchOptions::default() };
    assert_eq!(found_in(&db, "羅針盤", one).await.len(), 1);
    let long = "羅針盤 ".repeat(100_000);
    assert_eq!(found(&db, &long).await.len(), 3, "a query of any length answers");
    assert!(found(&db, "！？。").await.is_empty());
    f.done(backend).await;
}

pub async fn a_failing_guard_writes_nothing<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let record = |content: &str| {
        json!({ "id": "a1", "sessionId": "s", "type": "text", "title": "Notes", "content": content,
                "isActive": true, "createdAt": 1.0, "updatedAt": 1.0, "lifecycle": "overwritable" })
    };
    backend.write(vec![Write::Put { store: stores::ARTIFACTS, value: record("v1") }]).await.unwrap();
    let seen = std::cell::RefCell::new(None);
    let check = |found: Vec<Option<Value>>| {
        *seen.borrow_mut() = found[0].clone();
        Err(StoreError::Backend("refused".into()))
    };
    let guard = Guard { reads: vec![(stores::ARTIFACTS, "a1".into())], check: Box::new(check) };
    let many: Vec<Write> = (0..300)
        .map(|i| {
            let mut value = record("many");
            value["id"] = json!(format!("m{i}"));
            Write::Put { store: stores::ARTIFACTS, value }
        })
        .chain([Write::Put { store: stores::ARTIFACTS, value: record("mine") }])
        .collect();
    assert!(backend.write_guarded(guard, many).await.is_err());
    let seen = seen.borrow().clone().unwrap();
    assert_eq!(seen["content"], "v1");
    assert!(seen.get("_index").is_none(), "a guard sees the record as stored, without storage fields");
    assert_eq!(backend.all(stores::ARTIFACTS).await.unwrap().len(), 1);
    assert_eq!(backend.get(stores::ARTIFACTS, "a1").await.unwrap().unwrap()["content"], "v1");
    let db = db(&backend);
    assert!(found(&db, "many").await.is_empty(), "nor did the index hear of it");
    f.done(backend).await;
}

pub async fn the_artifact_index_follows_every_write_and_the_bulk_rule<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    let a = db
        .create_artifact(
            "s1",
            ArtifactType::WebSearch,
            "Search: 東京",
            "結果🦀",
            Lifecycle::Overwritable,
            Origin::Agent,
        )
        .await
        .unwrap();
    assert_eq!(db.artifact_summaries("s1", true).await.unwrap()[0].snippet, "結果🦀");
    db.set_artifact_active(&a.id, false).await.unwrap();
    assert!(db.artifact_summaries("s1", true).await.unwrap().is_empty(), "the entry follows the toggle");
    let all = db.artifact_summaries("s1", false).await.unwrap();
    assert_eq!((all[0].length, all[0].active), (4, 0), "UTF-16 units, as JS counts");
    db.delete_artifact(&a.id, Origin::User).await.unwrap();
    assert!(db.artifact_summaries("s1", false).await.unwrap().is_empty(), "and the delete");
    // A bulk import leaves the index to each session's first read.
    let records: Vec<Value> = (0..300)
        .map(|i| {
            json!({"id": format!("b-{i:04}"), "sessionId": format!("bulk-{}", i % 2), "type": "text", "title": format!("Note {i}"),
                   "content": "とても長い本文🦀。".repeat(40), "isActive": i % 3 != 0, "createdAt": i as f64, "updatedAt": 0.0})
        })
        .collect();
    db.import_artifacts(records).await.unwrap();
    assert_eq!(backend.all(stores::INDEX_STALE).await.unwrap().len(), 2, "both sessions marked");
    let entries = db.artifact_summaries("bulk-0", true).await.unwrap();
    assert_eq!(entries.len(), 100);
    assert!(entries.iter().all(|e| e.snippet.chars().count() <= 300 && e.active == 1));
    assert_eq!(backend.all(stores::INDEX_STALE).await.unwrap().len(), 1, "the read indexed its session only");
    let stored = backend.get(stores::ARTIFACTS, "b-0001").await.unwrap().unwrap();
    assert!(stored.get("_index").is_none(), "storage fields never leave the backend");
    f.done(backend).await;
}

pub async fn search_quality_on_planted_answers<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    let (recall, planted, forbidden) = quality::measure(&db).await;
    f.report(&format!("search quality: recall@5 {recall:.2} of {planted} planted answers, {forbidden} forbidden hits"));
    assert_eq!((recall, forbidden), (1.0, 0));
    f.done(backend).await;
}

pub async fn a_new_artifact_is_imported_at_once_and_a_stored_one_is_checked<F: Fixture>(f: &F) {
    let backend = f.open().await;
    let db = db(&backend);
    let record = |session: &str, content: &str, lifecycle: &str| {
        json!({"id": "imp-1", "sessionId": session, "type": "text", "title": "Notes", "content": content,
               "isActive": true, "createdAt": 1.0, "updatedAt": 1.0, "lifecycle": lifecycle})
    };
    assert_eq!(db.import_artifacts(vec![record("s1", "one", "static")]).await.unwrap(), 1);
    // Stored now: the same id from another session, or a change a static artifact refuses, writes nothing.
    let err = db.import_artifacts(vec![record("s2", "one", "static")]).await.unwrap_err();
    assert_eq!(err.code(), "invalid_argument", "{err}");
    let err = db.import_artifacts(vec![record("s1", "two", "static")]).await.unwrap_err();
    assert_eq!(err.code(), "lifecycle", "{err}");
    // A batch with one new and one stored record takes the checked path whole.
    let mut fresh = record("s1", "fresh", "overwritable");
    fresh["id"] = json!("imp-2");
    let err = db.import_artifacts(vec![fresh.clone(), record("s2", "x", "static")]).await.unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
    assert!(backend.get(stores::ARTIFACTS, "imp-2").await.unwrap().is_none(), "nothing of the refused batch");
    assert_eq!(db.import_artifacts(vec![fresh, record("s1", "one", "static")]).await.unwrap(), 2);
    assert_eq!(db.artifact("imp-1").await.unwrap().content, "one");
    assert_eq!(found(&db, "fresh").await, ["artifacts:imp-2"]);
    f.done(backend).await;
}
