//! Browser tests of the storage layer on real IndexedDB in Chromium: CRUD,
//! index queries, schema upgrades, Dexie interop, revisions and undo,
//! export/import, a simulated full disk, and the agent resuming a pending
//! review after a reload.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

use std::cell::RefCell;
use std::rc::Rc;

use atelier_agent::agent::{Agent, AgentEnv, AgentSettings, Decision, RunStatus, SendOptions};
use atelier_agent::graph::PrunePolicy;
use atelier_agent::llm::{ChatOutcome, ScriptedModel, Step, ToolCall};
use atelier_agent::platform::random_id;
use atelier_agent::store::{
    schema, stores, ArtifactSnippet, ArtifactType, Backend, Db, IdbBackend, Lifecycle, Origin, SessionArtifact,
    StoreCheckpointer, Write,
};
use atelier_agent::tools::{ScriptedWeb, ToolRegistry};
use js_sys::{Array, Function, Object, Promise, Reflect};
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

// Dexie from npm, copied to a .js path by `cargo xtask test` (the test
// runner serves only .js as JavaScript).
#[wasm_bindgen(module = "/target/test-support/dexie.js")]
extern "C" {
    type Dexie;
    #[wasm_bindgen(constructor)]
    fn new(name: &str) -> Dexie;
}

// The `active` parts of a session's `bySessionActive` keys, read on a
// connection of the test's own; a count of the write transactions on the
// checkpoints store (the function returned stops counting and answers).
#[wasm_bindgen(inline_js = r#"
export function countCheckpointTransactions() {
  const original = IDBDatabase.prototype.transaction;
  let count = 0;
  IDBDatabase.prototype.transaction = function (stores, mode, options) {
    const names = typeof stores === "string" ? [stores] : [...stores];
    if (mode === "readwrite" && names.includes("checkpoints")) count++;
    return original.call(this, stores, mode, options);
  };
  return () => {
    IDBDatabase.prototype.transaction = original;
    return count;
  };
}

export function indexActivity(name, session) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(name);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const out = [];
      const request = db.transaction("sessionArtifacts").objectStore("sessionArtifacts").index("bySessionActive")
        .openKeyCursor(IDBKeyRange.bound([session], [session, []]));
      request.onsuccess = () => {
        const cursor = request.result;
        if (cursor === null) { db.close(); resolve(out); return; }
        out.push(cursor.key[1]);
        cursor.continue();
      };
      request.onerror = () => { db.close(); reject(request.error); };
    };
  });
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = countCheckpointTransactions)]
    fn count_checkpoint_transactions() -> Function;
    #[wasm_bindgen(js_name = indexActivity)]
    fn index_activity(name: &str, session: &str) -> Promise;
}

/// How many of `session`'s artifacts have a `bySessionActive` key, failing
/// if an inactive one has.
async fn indexed_artifacts(db_name: &str, session: &str) -> usize {
    let keys: Array = JsFuture::from(index_activity(db_name, session)).await.unwrap().unchecked_into();
    assert!(keys.iter().all(|k| k.as_f64() == Some(1.0)), "only active artifacts are indexed ({session})");
    keys.length() as usize
}

fn name(prefix: &str) -> String {
    format!("{prefix}-{}", random_id())
}

async fn open(name: &str) -> (Rc<IdbBackend>, Db) {
    let backend = Rc::new(IdbBackend::open(name).await.unwrap());
    (backend.clone(), Db::new(backend))
}

#[wasm_bindgen_test]
async fn crud_index_queries_revisions_and_undo() {
    let db_name = name("crud");
    let (backend, db) = open(&db_name).await;
    let project = db.create_project("猫の話", "").await.unwrap();
    let original = "\u{3000}吾輩は猫である。\r\n名前はまだ無い。\r\n";
    let mut section = db.add_section(&project.id, None, "第一章", original).await.unwrap();
    db.add_section(&project.id, None, "第二章", "").await.unwrap();
    assert_eq!(db.sections(&project.id).await.unwrap().len(), 2);
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
    db.create_artifact("s2", ArtifactType::Text, "Other", "x", Lifecycle::Overwritable, Origin::User).await.unwrap();
    assert_eq!(db.artifacts("s1").await.unwrap(), vec![a.clone()]);
    assert_eq!(db.artifact_summaries("s1", true).await.unwrap()[0].snippet, "結果🦀");
    assert_eq!(indexed_artifacts(&db_name, "s1").await, 1);
    db.set_artifact_active(&a.id, false).await.unwrap();
    assert!(!db.artifact(&a.id).await.unwrap().is_active);
    assert!(db.artifact_summaries("s1", true).await.unwrap().is_empty(), "the index entry follows the toggle");
    assert_eq!(indexed_artifacts(&db_name, "s1").await, 0, "an inactive artifact has no index key");
    let mut edited = db.artifact(&a.id).await.unwrap();
    edited.content = "新しい結果".into();
    db.save_artifact(&edited, Some(Origin::Agent), "edit_artifact").await.unwrap();
    let all = db.artifact_summaries("s1", false).await.unwrap();
    assert_eq!((all[0].snippet.as_str(), all[0].length, all[0].active), ("新しい結果", 5, 0), "and the edit");
    db.undo_last(Origin::Agent).await.unwrap();
    assert_eq!(db.artifact_summaries("s1", false).await.unwrap()[0].snippet, "結果🦀", "and the undo");
    assert_eq!(db.artifact_summaries("s1", false).await.unwrap()[0].length, 4, "UTF-16 units, as JS counts");
    let stored = backend.get(stores::ARTIFACTS, &a.id).await.unwrap().unwrap();
    assert!(stored.get("_index").is_none(), "the index fields stay in storage: {stored}");

    section.content = "\u{3000}吾輩は犬である。\r\n名前はまだ無い。\r\n".into();
    db.save_section(&section, Some(Origin::Agent), "edit_manuscript").await.unwrap();
    // Read back from IndexedDB (numbers come back as integers), the record
    // still matches what the agent wrote: no false conflict.
    db.undo_last(Origin::Agent).await.unwrap();
    // Once the person writes after the agent, undo refuses and changes nothing.
    let mut agents = db.section(&section.id).await.unwrap();
    agents.content = "agent".into();
    db.save_section(&agents, Some(Origin::Agent), "edit_manuscript").await.unwrap();
    let mut persons = agents.clone();
    persons.content = "agent, then mine".into();
    db.edit_section_as_person(persons).await.unwrap();
    assert_eq!(db.undo_last(Origin::Agent).await.unwrap_err().code(), "conflict");
    assert_eq!(db.section(&section.id).await.unwrap().content, "agent, then mine");
    let history = db.revisions_of(&section.id).await.unwrap();
    assert_eq!(history.len(), 2, "read through the recordId index: {history:?}");
    db.restore_revision(&history[1].id).await.unwrap();
    assert_eq!(db.section(&section.id).await.unwrap().content, original);
    assert_eq!(db.section(&section.id).await.unwrap().content, original, "byte for byte");
    db.delete_project(&project.id).await.unwrap();
    assert!(db.sections(&project.id).await.unwrap().is_empty());
    backend.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

#[wasm_bindgen_test]
async fn upgrades_from_every_earlier_version_keep_the_data() {
    for from in 1..schema::current_version() {
        let db_name = name("upgrade");
        let old = IdbBackend::open_at(&db_name, from).await.unwrap();
        assert!(old.store_names().contains(&"sessionArtifacts".to_owned()));
        // What that release wrote: an artifact record, straight into its store.
        let a = SessionArtifact {
            id: "kept-1".into(),
            session_id: "s".into(),
            kind: ArtifactType::Text,
            title: "kept".into(),
            content: "content".into(),
            is_active: true,
            created_at: 1.0,
            updated_at: 2.0,
            lifecycle: Lifecycle::Static,
        };
        old.write(vec![Write::Put { store: stores::ARTIFACTS, value: serde_json::to_value(&a).unwrap() }])
            .await
            .unwrap();
        // v9's segmentations (search) are kept by the v10 upgrade.
        let segments = serde_json::json!({"key": "sessionArtifacts/kept-1", "words": ["content"]});
        if from >= 9 {
            old.write(vec![Write::Put { store: stores::SEGMENTS, value: segments.clone() }]).await.unwrap();
        }
        old.close();
        let (backend, db) = open(&db_name).await;
        if from >= 9 {
            let kept = backend.get(stores::SEGMENTS, "sessionArtifacts/kept-1").await.unwrap();
            assert_eq!(kept.as_ref().and_then(|v| v.get("words")), segments.get("words"), "from v{from}");
        }
        let mut names = backend.store_names();
        names.sort();
        assert_eq!(
            names,
            [
                "artifactIndexStale",
                "checkpointBlobs",
                "checkpoints",
                "manuscripts",
                "memories",
                "plots",
                "projects",
                "revisions",
                "searchSegments",
                "sessionArtifacts",
                "sessionGrants",
                "sessions",
                "settings",
                "toolReceipts",
                "transcript"
            ]
        );
        assert_eq!(db.artifact(&a.id).await.unwrap(), a);
        // v10's grants store works on the upgraded database.
        db.grant("s", "lookup").await.unwrap();
        let tools: Vec<String> = db.grants("s").await.unwrap().into_iter().map(|g| g.tool).collect();
        assert_eq!(tools, ["lookup"], "grants after the upgrade from v{from}");
        let entries = db.artifact_summaries("s", true).await.unwrap();
        assert_eq!(entries, vec![ArtifactSnippet::of(&a)], "index entries were built by the upgrade (from v{from})");
        backend.close();
        IdbBackend::delete(&db_name).await.unwrap();
    }
}

async fn call(target: &JsValue, method: &str, args: &[JsValue]) -> JsValue {
    let f: Function = Reflect::get(target, &method.into()).unwrap().unchecked_into();
    let result = f.apply(target, &args.iter().collect::<Array>()).unwrap();
    // Dexie returns its own thenables: adopt them into a native promise.
    JsFuture::from(Promise::resolve(&result)).await.unwrap()
}

#[wasm_bindgen_test]
async fn artifacts_written_by_a_dexie_app_read_back() {
    let db_name = name("dexie");
    let dexie: JsValue = Dexie::new(&db_name).into();
    let version = call(&dexie, "version", &[1.into()]).await;
    let stores = Object::new();
    Reflect::set(&stores, &"sessionArtifacts".into(), &"id, sessionId".into()).unwrap();
    call(&version, "stores", &[stores.into()]).await;
    let table = call(&dexie, "table", &["sessionArtifacts".into()]).await;
    let records = js_sys::JSON::parse(
        r#"[{"id":"d-1","sessionId":"s","type":"web_search","title":"Search: 京都","content":"寺","isActive":true,"createdAt":1700000000000,"updatedAt":1700000000000},
            {"id":"d-2","sessionId":"s","type":"text","title":"Note","content":"n","isActive":false,"createdAt":1700000001000,"updatedAt":1700000002000}]"#,
    )
    .unwrap();
    call(&table, "bulkPut", &[records]).await;
    assert_eq!(call(&table, "count", &[]).await.as_f64(), Some(2.0));
    call(&dexie, "close", &[]).await;

    let (backend, db) = open(&db_name).await;
    let list = db.artifacts("s").await.unwrap();
    assert_eq!(list.len(), 2);
    let d1 = db.artifact("d-1").await.unwrap();
    assert_eq!(
        (d1.title.as_str(), d1.kind, d1.is_active, d1.lifecycle),
        ("Search: 京都", ArtifactType::WebSearch, true, Lifecycle::Overwritable)
    );
    assert_eq!(d1.created_at, 1_700_000_000_000.0);
    // The upgrade built their index entries.
    let active = db.artifact_summaries("s", true).await.unwrap();
    assert_eq!(active.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["d-1"]);
    assert_eq!(active[0].snippet, "寺");
    assert_eq!(db.artifact_summaries("s", false).await.unwrap().len(), 2);
    backend.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

/// `count` artifacts as JS objects in sessions `bulk-0` and `bulk-1`, every
/// third one inactive, with contents long enough to be cut.
fn bulk_records(count: usize) -> Vec<serde_json::Value> {
    (0..count)
        .map(|i| {
            json!({
                "id": format!("b-{i:04}"), "sessionId": format!("bulk-{}", i % 2), "type": "text",
                "title": format!("Note {i}"), "content": "とても長い本文🦀。".repeat(40 + i % 7),
                "isActive": i % 3 != 0, "createdAt": 1_700_000_000_000.0 + i as f64, "updatedAt": 1_700_000_000_000.0,
                // A stale index part from an older copy must not reach the index.
                "_index": {"active": 1, "snippet": "stale", "length": 1},
            })
        })
        .collect()
}

async fn assert_index_matches_records(backend: &IdbBackend, db: &Db, db_name: &str, session: &str) {
    for active_only in [true, false] {
        let mut expected: Vec<ArtifactSnippet> = db
            .artifacts(session)
            .await
            .unwrap()
            .iter()
            .filter(|a| a.is_active || !active_only)
            .map(ArtifactSnippet::of)
            .collect();
        expected.sort_by(|a, b| a.id.cmp(&b.id));
        assert!(!expected.is_empty());
        assert_eq!(backend.artifact_index(session, active_only).await.unwrap(), expected, "{session} {active_only}");
        if active_only {
            assert_eq!(indexed_artifacts(db_name, session).await, expected.len());
        }
    }
}

#[wasm_bindgen_test]
async fn a_bulk_write_leaves_the_index_to_the_first_read() {
    let db_name = name("bulk");
    let (backend, db) = open(&db_name).await;
    // Through the person's import (the benchmark's path too).
    let records = bulk_records(300);
    assert_eq!(db.import_artifacts(records.clone()).await.unwrap(), 300);
    assert_eq!(backend.count(stores::INDEX_STALE).await.unwrap(), 2, "both sessions are marked stale");
    assert_index_matches_records(&backend, &db, &db_name, "bulk-0").await;
    assert_eq!(backend.count(stores::INDEX_STALE).await.unwrap(), 1, "the read indexed its session only");
    assert_index_matches_records(&backend, &db, &db_name, "bulk-1").await;
    assert_eq!(backend.count(stores::INDEX_STALE).await.unwrap(), 0);
    // A single write afterwards keeps the index current at once.
    db.import_artifacts(records[..1].to_vec()).await.unwrap();
    assert_eq!(backend.count(stores::INDEX_STALE).await.unwrap(), 0);
    assert_index_matches_records(&backend, &db, &db_name, "bulk-0").await;
    // A record IndexedDB refuses (no key) fails the whole batch, typed, and nothing of it is written.
    let before = backend.count(stores::ARTIFACTS).await.unwrap();
    let mut fresh = bulk_records(1).remove(0);
    fresh["id"] = json!("fresh");
    let mut keyless = fresh.clone();
    keyless.as_object_mut().unwrap().remove("id");
    let writes = [fresh, keyless].map(|value| Write::Put { store: stores::ARTIFACTS, value });
    let err = backend.write(writes.to_vec()).await.unwrap_err();
    assert!(matches!(err, atelier_agent::store::StoreError::Codec { .. }), "{err:?}");
    assert_eq!(backend.count(stores::ARTIFACTS).await.unwrap(), before);

    // The same through the typed batch path.
    let writes = bulk_records(300)
        .into_iter()
        .map(|mut r| {
            r["sessionId"] = json!(format!("typed-{}", r["sessionId"].as_str().unwrap()));
            r["id"] = json!(format!("t-{}", r["id"].as_str().unwrap()));
            Write::Put { store: stores::ARTIFACTS, value: r }
        })
        .collect();
    backend.write(writes).await.unwrap();
    assert_eq!(backend.count(stores::INDEX_STALE).await.unwrap(), 2);
    assert_index_matches_records(&backend, &db, &db_name, "typed-bulk-1").await;
    let stored = backend.get(stores::ARTIFACTS, "t-b-0001").await.unwrap().unwrap();
    assert!(stored.get("_index").is_none());
    backend.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_snippet_cut_inside_an_emoji_sequence_steps_back_to_its_start() {
    // 300 characters in 315 UTF-16 units, then a skin-tone modifier that
    // belongs to the thumbs-up before it and straddles unit 316.
    let content = format!("{}{}👍🏽 and more", "😀".repeat(14), "a".repeat(285));
    let db_name = name("emoji");
    let (backend, db) = open(&db_name).await;
    let record = json!({"id": "e", "sessionId": "s", "type": "text", "title": "T", "content": content,
                        "isActive": true, "createdAt": 1.0, "updatedAt": 1.0});
    db.import_artifacts(vec![record]).await.unwrap();
    let entry = &backend.artifact_index("s", true).await.unwrap()[0];
    assert_eq!(entry.snippet, format!("{}{}", "😀".repeat(14), "a".repeat(285)));
    assert_eq!(entry, &ArtifactSnippet::of(&db.artifact("e").await.unwrap()), "the same cut as in Rust");
    backend.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

#[wasm_bindgen_test]
async fn snippet_cuts_follow_the_grapheme_rules_on_every_write_path() {
    // What sits at characters 299 | 300 (the cut), after 299 plain characters.
    let cuts = [
        "ab",
        "あい",
        "漢字",
        "a。",
        "「」",
        "ＡＢ", // plain: cut in JS
        "e\u{301}",
        "か\u{3099}",
        "\r\n",
        "가\u{11A8}",
        "\u{1100}\u{1161}",
        "क\u{94D}ष",
        "a\u{200D}",
        "\u{600}a",
        "🇯🇵",
        "👍🏽",
        "a👍",
        "x\u{FE0F}",
        "\u{302A}漢",
        "漢\u{302A}",
        "ｶ\u{FF9E}",
    ];
    let db_name = name("cuts");
    let (backend, db) = open(&db_name).await;
    let mut records = Vec::new();
    for (i, cut) in cuts.iter().enumerate() {
        for prefix in ["a", "あ"] {
            let content = format!("{}{cut} and the rest", prefix.repeat(299));
            let record = json!({"id": format!("c{i:02}{prefix}"), "sessionId": "cuts", "type": "text", "title": cut,
                                "content": content, "isActive": true, "createdAt": 1.0, "updatedAt": 1.0});
            records.push(record);
        }
    }
    // One by one (each write indexes its record), then as one import large
    // enough to leave the index to the first read.
    for record in &records {
        db.import_artifacts(vec![record.clone()]).await.unwrap();
    }
    let mut batch: Vec<serde_json::Value> = records
        .iter()
        .map(|r| {
            let mut copy = r.clone();
            copy["id"] = json!(format!("b{}", r["id"].as_str().unwrap()));
            copy["sessionId"] = json!("cuts-batch");
            copy
        })
        .collect();
    for i in 0..300 {
        batch.push(json!({"id": format!("filler-{i}"), "sessionId": "filler", "type": "text", "title": "f",
                          "content": "f", "isActive": true, "createdAt": 1.0, "updatedAt": 1.0}));
    }
    db.import_artifacts(batch).await.unwrap();
    for session in ["cuts", "cuts-batch"] {
        let entries = backend.artifact_index(session, true).await.unwrap();
        assert_eq!(entries.len(), records.len());
        for entry in entries {
            let expected = ArtifactSnippet::of(&db.artifact(&entry.id).await.unwrap());
            assert_eq!(entry, expected, "cut {:?} ({session})", entry.title);
        }
    }
    backend.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_full_disk_is_typed_and_nothing_is_half_written() {
    let db_name = name("quota");
    let (backend, db) = open(&db_name).await;
    let project = db.create_project("P", "").await.unwrap();
    let section = db.add_section(&project.id, None, "C", "before").await.unwrap();
    let mut changed = section.clone();
    changed.content = "after".into();
    atelier_agent::store::idb_testing::fail_next_write_with("QuotaExceededError");
    let err = db.save_section(&changed, Some(Origin::Agent), "update_manuscript").await.unwrap_err();
    assert_eq!(err.code(), "quota_exceeded");
    assert_eq!(db.section(&section.id).await.unwrap().content, "before");
    assert!(db.revisions(Origin::Agent).await.unwrap().is_empty(), "the revision went with the aborted batch");
    backend.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

#[wasm_bindgen_test]
async fn export_import_round_trip() {
    let (a_backend, a) = open(&name("export-a")).await;
    let p = a.create_project("Novel", "story").await.unwrap();
    a.add_section(&p.id, None, "第一章", "本文\n").await.unwrap();
    let exported = a.export_project(&p.id).await.unwrap();
    let (b_backend, b) = open(&name("export-b")).await;
    b.import_project(&exported).await.unwrap();
    assert_eq!(b.export_project(&p.id).await.unwrap(), exported);
    a_backend.close();
    b_backend.close();
}

fn agent_on(backend: Rc<IdbBackend>, model: ScriptedModel) -> Agent {
    let env = AgentEnv {
        scope: random_id(),
        db: Db::new(backend.clone()),
        model: Rc::new(model),
        web: Rc::new(ScriptedWeb::default()),
        tools: ToolRegistry::standard(),
        settings: RefCell::new(AgentSettings::default()),
        policy: None,
        mcp: None,
    };
    Agent::new(env, Rc::new(StoreCheckpointer::new(backend, PrunePolicy::default())))
}

#[wasm_bindgen_test]
async fn a_pending_review_survives_a_reload_and_can_be_approved() {
    let db_name = name("reload");
    let (backend, db) = open(&db_name).await;
    let p = db.create_project("P", "").await.unwrap();
    let s = db.add_section(&p.id, None, "一", "\u{3000}吾輩は猫である。\n").await.unwrap();
    let model = ScriptedModel::new([
        Step::Reply(ChatOutcome::text(r#"{"strategy":"writing","reasoning":"edit"}"#)),
        Step::Reply(ChatOutcome::tool_calls(vec![ToolCall::new("c0", "get_manuscript", &json!({"section_id": s.id}))])),
        Step::Reply(ChatOutcome::tool_calls(vec![ToolCall::new(
            "c1",
            "edit_manuscript",
            &json!({"section_id": s.id, "edits": [{"search": "猫", "replace": "犬"}]}),
        )])),
    ]);
    let agent = agent_on(backend.clone(), model);
    let options = SendOptions { agent_mode: true, ..SendOptions::default() };
    let paused = agent.send("session", "猫を犬に", options.clone()).await.unwrap();
    assert_eq!(paused.status, RunStatus::Interrupted);
    drop(agent);
    backend.close();

    // A new page load: new connection, new engine.
    let (backend, db) = open(&db_name).await;
    let agent = agent_on(backend.clone(), ScriptedModel::new([Step::Reply(ChatOutcome::text("Done."))]));
    let review = agent.pending_review("session").await.unwrap().expect("the review survived");
    assert!(review.diff.as_deref().unwrap().contains("+\u{3000}吾輩は犬である。"));
    let done = agent.resume("session", Decision::approve(), options).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(db.section(&s.id).await.unwrap().content, "\u{3000}吾輩は犬である。\n");
    backend.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

/// An agent whose web tools serve `pages`.
fn agent_with_pages(backend: Rc<IdbBackend>, model: ScriptedModel, pages: Vec<atelier_agent::tools::WebPage>) -> Agent {
    let web = ScriptedWeb::default();
    web.pages.borrow_mut().extend(pages);
    let env = AgentEnv {
        scope: "web-store-tests".into(),
        db: Db::new(backend.clone()),
        model: Rc::new(model),
        web: Rc::new(web),
        tools: ToolRegistry::standard(),
        settings: RefCell::new(AgentSettings::default()),
        policy: None,
        mcp: None,
    };
    Agent::new(env, Rc::new(StoreCheckpointer::new(backend, PrunePolicy::default())))
}

#[wasm_bindgen_test]
async fn large_tool_results_are_stored_once_and_read_back_whole_after_a_reload() {
    let db_name = name("blobs");
    let (backend, _db) = open(&db_name).await;
    let url = "https://long.example/page";
    let text = "長い頁。".repeat(20_000);
    // Two pages (a page read again would be answered from the tracked fact).
    let page = |n: u32| atelier_agent::tools::WebPage {
        url: format!("{url}?n={n}"),
        title: "Long".into(),
        markdown: text.clone(),
    };
    let turn = |n: u32| {
        vec![
            Step::Reply(ChatOutcome::text(r#"{"strategy":"general_agent","reasoning":"read"}"#)),
            Step::Reply(ChatOutcome::tool_calls(vec![ToolCall::new(
                format!("o{n}"),
                "open_url",
                &json!({"url": format!("{url}?n={n}")}),
            )])),
            Step::Reply(ChatOutcome::text("Read.")),
        ]
    };
    let agent = agent_with_pages(
        backend.clone(),
        ScriptedModel::new(turn(1).into_iter().chain(turn(2))),
        vec![page(1), page(2)],
    );
    // Storage is measured here, not compression (two capped pages fit the window).
    agent.env().settings.borrow_mut().compression.enabled = false;
    let options = SendOptions { agent_mode: true, ..SendOptions::default() };
    for n in 1..=2 {
        let done = agent.send("session", &format!("Read {url}?n={n}"), options.clone()).await.unwrap();
        assert_eq!(done.status, RunStatus::Completed, "{}", done.content);
    }
    drop(agent);
    // Each read's model copy is in every later checkpoint's state, stored once.
    let blobs = backend.by_index(stores::BLOBS, "threadId", "session").await.unwrap();
    let checkpoints = backend.by_index(stores::CHECKPOINTS, "threadId", "session").await.unwrap();
    assert_eq!(blobs.len(), 2, "one blob per read (each fenced afresh), not one per checkpoint");
    assert!(checkpoints.len() >= 6, "{} checkpoints share them", checkpoints.len());
    let largest = checkpoints.iter().map(|c| c.to_string().len()).max().unwrap();
    assert!(largest < 20_000, "checkpoints reference the page instead of copying it ({largest} bytes)");
    backend.close();

    // A new page load reads the state back whole.
    let (backend, db) = open(&db_name).await;
    let agent = agent_on(backend.clone(), ScriptedModel::new([]));
    let state = agent.state("session").await.unwrap().unwrap();
    let pages = state.messages.iter().filter(|m| m.text().contains(&"長い頁。".repeat(1000))).count();
    assert_eq!(pages, 2, "both reads come back with their text");
    db.delete_session("session").await.unwrap();
    assert!(
        backend.by_index(stores::BLOBS, "threadId", "session").await.unwrap().is_empty(),
        "blobs go with the session"
    );
    backend.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

#[wasm_bindgen_test]
async fn plots_memories_and_settings_on_indexeddb() {
    let db_name = name("stores");
    let (backend, db) = open(&db_name).await;
    let p = db.create_project("P", "").await.unwrap();
    let act = atelier_agent::store::PlotItem {
        id: "act".into(),
        project_id: p.id.clone(),
        parent_id: None,
        title: "Act 1".into(),
        summary: "setup".into(),
        order: 1.0,
        created_at: 0.0,
        updated_at: 0.0,
    };
    let scene = atelier_agent::store::PlotItem { id: "scene".into(), parent_id: Some("act".into()), ..act.clone() };
    db.save_plot_item(&act, None, "add").await.unwrap();
    db.save_plot_item(&scene, Some(Origin::Agent), "add").await.unwrap();
    assert_eq!(db.plot(&p.id).await.unwrap().len(), 2);
    db.delete_plot_item("act", Some(Origin::Agent)).await.unwrap();
    assert!(db.plot(&p.id).await.unwrap().is_empty(), "children go with their parent");

    db.add_memory("2026-01-20", "likes SF", vec!["preference".into()]).await.unwrap();
    db.add_memory("2026-01-26", "first person", vec!["decision".into()]).await.unwrap();
    assert_eq!(db.memory_dates().await.unwrap(), ["2026-01-20", "2026-01-26"]);
    assert_eq!(db.memories_between("2026-01-21", "2026-01-31").await.unwrap().len(), 1);

    db.set_setting("fullThreshold", json!(800)).await.unwrap();
    assert_eq!(db.setting("fullThreshold").await.unwrap(), Some(json!(800)));
    backend.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

#[wasm_bindgen_test]
async fn an_upgrade_in_another_tab_makes_this_one_reload_required() {
    let db_name = name("tabs");
    let (this_tab, db) = open(&db_name).await;
    db.create_project("before", "").await.unwrap();
    // Another tab opens a newer schema: this connection steps aside.
    let newer = IdbBackend::open_at(&db_name, schema::current_version() + 1).await.unwrap();
    let err = db.projects().await.unwrap_err();
    assert_eq!(err.code(), "reload_required", "{err}");
    let err = db.create_project("after", "").await.unwrap_err();
    assert_eq!(err.code(), "reload_required");
    newer.close();
    this_tab.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

#[wasm_bindgen_test]
async fn an_upgrade_blocked_by_a_connection_that_never_closes_fails_with_blocked() {
    let db_name = name("blocked");
    let (this_tab, _db) = open(&db_name).await;
    this_tab.close();
    // A connection that ignores `versionchange` (an older copy of an app, another app).
    let stubborn = js_sys::Promise::new(&mut |resolve, _| {
        let request = web_sys::window().unwrap().indexed_db().unwrap().unwrap().open(&db_name).unwrap();
        let keep = request.clone();
        let done = wasm_bindgen::closure::Closure::once_into_js(move || {
            resolve.call1(&JsValue::NULL, &keep.result().unwrap()).unwrap();
        });
        request.set_onsuccess(Some(done.unchecked_ref()));
    });
    let stubborn: web_sys::IdbDatabase = wasm_bindgen_futures::JsFuture::from(stubborn).await.unwrap().unchecked_into();
    let started = js_sys::Date::now();
    let err = match IdbBackend::open_at(&db_name, schema::current_version() + 1).await {
        Ok(_) => panic!("the upgrade cannot go through while the stubborn connection is open"),
        Err(e) => e,
    };
    assert_eq!(err.code(), "blocked", "{err}");
    assert!(err.to_string().contains("close or reload the other tabs"), "{err}");
    assert!(js_sys::Date::now() - started < 15_000.0, "it does not hang");
    // Once the other connection goes, the database is usable (the late
    // upgrade's connection was closed, so nothing is left open).
    stubborn.close();
    let (again, db) = open(&db_name).await;
    db.create_project("after", "").await.unwrap();
    again.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

/// Another tab's raw connection to `db_name` (no schema of ours: it
/// writes through the IndexedDB API directly, as any tab's code would).
async fn raw_connection(db_name: &str) -> web_sys::IdbDatabase {
    let opened = js_sys::Promise::new(&mut |resolve, _| {
        let request = web_sys::window().unwrap().indexed_db().unwrap().unwrap().open(db_name).unwrap();
        let keep = request.clone();
        let done = wasm_bindgen::closure::Closure::once_into_js(move || {
            resolve.call1(&JsValue::NULL, &keep.result().unwrap()).unwrap();
        });
        request.set_onsuccess(Some(done.unchecked_ref()));
    });
    JsFuture::from(opened).await.unwrap().unchecked_into()
}

/// A guarded batch reads, checks and writes in one transaction: a write
/// another tab issues while the check runs must wait for the batch
/// (IndexedDB runs overlapping readwrite transactions in the order they were
/// requested), so it lands after the batch, and the check saw the record
/// the batch replaced. Were the reads a transaction of their own, the other
/// tab's write would land between them and the batch, and be overwritten.
#[wasm_bindgen_test]
async fn a_guarded_batch_checks_and_writes_before_another_tabs_write_lands() {
    let db_name = name("guard");
    let (this_tab, _db) = open(&db_name).await;
    let other_tab = raw_connection(&db_name).await;
    let record = |content: &str| {
        json!({ "id": "a1", "sessionId": "s", "type": "text", "title": "Notes", "content": content,
                "isActive": true, "createdAt": 1.0, "updatedAt": 1.0, "lifecycle": "overwritable" })
    };
    this_tab.write(vec![Write::Put { store: stores::ARTIFACTS, value: record("v1") }]).await.unwrap();

    let seen = Rc::new(RefCell::new(None));
    let check = {
        let (seen, other_tab) = (seen.clone(), other_tab.clone());
        move |found: Vec<Option<serde_json::Value>>| {
            *seen.borrow_mut() = found[0].as_ref().and_then(|r| r["content"].as_str().map(str::to_owned));
            // The other tab writes now, while this batch is between its read and its write.
            let theirs = js_sys::JSON::parse(&record("theirs").to_string()).unwrap();
            let tx = other_tab
                .transaction_with_str_and_mode(stores::ARTIFACTS, web_sys::IdbTransactionMode::Readwrite)
                .unwrap();
            tx.object_store(stores::ARTIFACTS).unwrap().put(&theirs).unwrap();
            Ok(())
        }
    };
    let guard = atelier_agent::store::Guard { reads: vec![(stores::ARTIFACTS, "a1".into())], check: Box::new(check) };
    this_tab.write_guarded(guard, vec![Write::Put { store: stores::ARTIFACTS, value: record("mine") }]).await.unwrap();
    assert_eq!(seen.borrow().as_deref(), Some("v1"));
    // Wait for the other tab's transaction: a read on its connection runs after it.
    let after = js_sys::Promise::new(&mut |resolve, _| {
        let tx = other_tab.transaction_with_str(stores::ARTIFACTS).unwrap();
        let request = tx.object_store(stores::ARTIFACTS).unwrap().get(&JsValue::from_str("a1")).unwrap();
        let keep = request.clone();
        let done = wasm_bindgen::closure::Closure::once_into_js(move || {
            resolve.call1(&JsValue::NULL, &keep.result().unwrap()).unwrap();
        });
        request.set_onsuccess(Some(done.unchecked_ref()));
    });
    let stored = JsFuture::from(after).await.unwrap();
    assert_eq!(
        Reflect::get(&stored, &"content".into()).unwrap().as_string().as_deref(),
        Some("theirs"),
        "the batch landed before the other tab's write (else theirs would be overwritten)"
    );

    // A failing check writes nothing.
    let refuse = |_: Vec<Option<serde_json::Value>>| Err(atelier_agent::store::StoreError::Backend("no".into()));
    let guard = atelier_agent::store::Guard { reads: vec![(stores::ARTIFACTS, "a1".into())], check: Box::new(refuse) };
    let err = this_tab.write_guarded(guard, vec![Write::Put { store: stores::ARTIFACTS, value: record("x") }]).await;
    assert!(err.is_err());
    assert_eq!(this_tab.get(stores::ARTIFACTS, "a1").await.unwrap().unwrap()["content"], "theirs");
    // So does one whose writes (a large batch, all issued before the check
    // has its answer) are already queued behind the reads.
    let many: Vec<Write> = (0..300)
        .map(|i| {
            let mut value = record("many");
            value["id"] = json!(format!("m{i}"));
            Write::Put { store: stores::ARTIFACTS, value }
        })
        .chain([Write::Put { store: stores::ARTIFACTS, value: record("many") }])
        .collect();
    let guard = atelier_agent::store::Guard { reads: vec![(stores::ARTIFACTS, "a1".into())], check: Box::new(refuse) };
    assert!(this_tab.write_guarded(guard, many).await.is_err());
    assert_eq!(this_tab.count(stores::ARTIFACTS).await.unwrap(), 1);
    assert_eq!(this_tab.get(stores::ARTIFACTS, "a1").await.unwrap().unwrap()["content"], "theirs");
    other_tab.close();
    this_tab.close();
    IdbBackend::delete(&db_name).await.unwrap();
}

atelier_agent::graph_state! {
    /// A thread's state for the checkpointer test.
    pub struct Steps, update StepsUpdate {
        append seen: Vec<u64>,
    }
}

fn step_checkpoint(step: u64) -> atelier_agent::graph::Checkpoint<Steps> {
    atelier_agent::graph::Checkpoint {
        id: atelier_agent::graph::Checkpoint::<Steps>::id_for(step),
        thread_id: "thread".into(),
        parent_id: step.checked_sub(1).map(atelier_agent::graph::Checkpoint::<Steps>::id_for),
        step,
        state: Steps { seen: (0..=step).collect() },
        next: Some("node".into()),
        interrupt: None,
        created_at: 0.0,
    }
}

/// Steps that end in one synchronous stretch share one transaction, and
/// their checkpoints land once the page yields, without a flush: a tab
/// closed mid-run keeps them. The other tabs hear of them.
#[wasm_bindgen_test]
async fn checkpoints_of_one_stretch_share_a_transaction_and_land_without_a_flush() {
    use atelier_agent::graph::Checkpointer;
    use std::time::Duration;
    let db_name = name("stretch");
    let backend = Rc::new(IdbBackend::open(&db_name).await.unwrap());
    let other = IdbBackend::open(&db_name).await.unwrap();
    let heard = Rc::new(RefCell::new(Vec::<JsValue>::new()));
    let keep = heard.clone();
    let listener = Closure::<dyn FnMut(JsValue)>::new(move |change| keep.borrow_mut().push(change));
    let _stop = other.on_change(listener.as_ref().unchecked_ref());
    let saver = StoreCheckpointer::<Steps>::new(backend.clone(), PrunePolicy { keep_per_thread: 2 });
    let transactions = count_checkpoint_transactions();
    // The first put reads the thread's keys (a real wait); the next three run without yielding.
    for step in 0..4 {
        saver.put(step_checkpoint(step)).await.unwrap();
    }
    // What the other connection sees once the newest step is there.
    let landed = |newest: u64| {
        let other = &other;
        async move {
            for _ in 0..200 {
                let stored = other.by_index(stores::CHECKPOINTS, "threadId", "thread").await.unwrap();
                let mut steps: Vec<u64> = stored.iter().filter_map(|c| c["step"].as_u64()).collect();
                if steps.contains(&newest) {
                    steps.sort_unstable();
                    return steps;
                }
                atelier_agent::platform::sleep(Duration::from_millis(5)).await;
            }
            panic!("the checkpoints did not land without a flush");
        }
    };
    assert_eq!(landed(3).await, [2, 3], "the newest two kept, the older ones deleted in the same batch");
    // A later stretch is a transaction of its own; a read waits for it.
    saver.put(step_checkpoint(4)).await.unwrap();
    let latest = saver.latest("thread").await.unwrap().unwrap();
    assert_eq!(latest.state.seen, [0, 1, 2, 3, 4]);
    assert_eq!(landed(4).await, [3, 4]);
    let count = transactions.call0(&JsValue::NULL).unwrap().as_f64().unwrap();
    assert_eq!(count, 2.0, "five steps in two stretches: two transactions");
    atelier_agent::platform::sleep(Duration::from_millis(50)).await;
    let told = |change: &JsValue| Reflect::get(change, &"stores".into()).unwrap().unchecked_into::<Array>();
    assert!(
        heard.borrow().iter().any(|c| told(c).includes(&"checkpoints".into(), 0)),
        "the other connection hears of the checkpoints"
    );
    backend.close();
    other.close();
    let _ = IdbBackend::delete(&db_name).await;
}
