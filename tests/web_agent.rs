//! The `Agent` JS class in Chromium, against the real proxy binary and the
//! scripted fake upstream (chat and search) that `cargo xtask test` starts:
//! a greeting, a research turn whose search becomes an artifact that can be
//! toggled out of the next request, a review approved across a reload, an
//! abort through an AbortSignal, the codes of a full disk and of another
//! tab's upgrade through `send`, and the data methods (projects, plot,
//! export/import, artifact import).
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

use atelier_agent::platform::random_id;
use atelier_agent::wasm::agent::JsAgent;
use js_sys::{Array, Function, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

mod support;
use support::{control, script, PROXY};

fn js(v: Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).unwrap()
}

fn prop(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &k.into()).unwrap()
}

async fn open(db: &str) -> JsAgent {
    let config = json!({ "proxyUrl": PROXY.expect("ATELIER_TEST_PROXY"), "dbName": db });
    let agent = JsFuture::from(JsAgent::open(js(config))).await.unwrap();
    // The promise resolves to the JS wrapper; take the Rust value back.
    <JsAgent as wasm_bindgen::convert::TryFromJsValue>::try_from_js_value(agent).unwrap_or_else(|_| panic!("an Agent"))
}

fn options(agent_mode: bool) -> Option<atelier_agent::wasm::agent::RunOptionsJs> {
    Some(js(json!({ "agentMode": agent_mode })).unchecked_into())
}

#[wasm_bindgen_test]
async fn a_greeting_is_answered_without_tools() {
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"chat_only\",\"reasoning\":\"greeting\"}" },
        { "type": "text", "text": "こんにちは！" }
    ]))
    .await;
    let agent = open(&format!("agent-{}", random_id())).await;
    let result = JsFuture::from(agent.send("s".into(), "こんにちは".into(), options(true))).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("completed"));
    assert_eq!(prop(&result, "content").as_string().as_deref(), Some("こんにちは！"));
    let log = control("/__log", json!({})).await;
    let requests = log["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2);
    assert!(requests[1]["body"].get("tools").is_none(), "no tools for a greeting");

    // The turn is in the session's transcript, in IndexedDB, for any app on the package.
    let sessions: Array = JsFuture::from(agent.sessions()).await.unwrap().unchecked_into();
    assert_eq!(sessions.length(), 1);
    assert_eq!(prop(&sessions.get(0), "title").as_string().as_deref(), Some("こんにちは"));
    let transcript: Array = JsFuture::from(agent.transcript("s".into())).await.unwrap().unchecked_into();
    let roles: Vec<String> = transcript.iter().map(|e| prop(&e, "role").as_string().unwrap()).collect();
    assert_eq!(roles, ["person", "agent"]);
    assert_eq!(prop(&transcript.get(1), "text").as_string().as_deref(), Some("こんにちは！"));
    JsFuture::from(agent.rename_session("s".into(), "挨拶".into())).await.unwrap();
    let sessions: Array = JsFuture::from(agent.sessions()).await.unwrap().unchecked_into();
    assert_eq!(prop(&sessions.get(0), "title").as_string().as_deref(), Some("挨拶"));
    JsFuture::from(agent.delete_session("s".into())).await.unwrap();
    let sessions: Array = JsFuture::from(agent.sessions()).await.unwrap().unchecked_into();
    assert_eq!(sessions.length(), 0);
    let transcript: Array = JsFuture::from(agent.transcript("s".into())).await.unwrap().unchecked_into();
    assert_eq!(transcript.length(), 0);
}

#[wasm_bindgen_test]
async fn research_becomes_an_artifact_that_can_be_toggled_out() {
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"general_agent\",\"reasoning\":\"facts\"}" },
        { "type": "tool_calls", "calls": [{ "name": "web_search", "arguments": { "query": "Rust 2024 edition" } }] },
        { "type": "text", "text": "{\"query\":\"Rust 2024 edition release\",\"reason\":\"technical\"}" },
        { "type": "text", "text": "It shipped with Rust 1.85." },
        { "type": "text", "text": "{\"strategy\":\"chat_only\",\"reasoning\":\"follow-up\"}" },
        { "type": "text", "text": "Anything else?" }
    ]))
    .await;
    let agent = open(&format!("agent-{}", random_id())).await;
    let events = Array::new();
    let sink = events.clone();
    let on_event = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
        sink.push(&e);
    });
    let opts = options(true);
    Reflect::set(opts.as_ref().unwrap(), &"onEvent".into(), on_event.as_ref().unchecked_ref::<Function>()).unwrap();
    let result =
        JsFuture::from(agent.send("s".into(), "When did the Rust 2024 edition ship?".into(), opts)).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("completed"));
    let artifacts: Array = JsFuture::from(agent.list_artifacts("s".into())).await.unwrap().unchecked_into();
    assert_eq!(artifacts.length(), 1);
    let artifact = artifacts.get(0);
    assert_eq!(prop(&artifact, "title").as_string().as_deref(), Some("Search: Rust 2024 edition release"));
    assert!(prop(&artifact, "content").as_string().unwrap().contains("What is known about Rust 2024 edition release"));
    let kinds: Vec<String> = events.iter().map(|e| prop(&e, "type").as_string().unwrap()).collect();
    assert!(kinds.contains(&"artifact".to_owned()) && kinds.contains(&"content".to_owned()), "{kinds:?}");

    // Toggled off, it is no longer in what the model is sent.
    let id = prop(&artifact, "id").as_string().unwrap();
    JsFuture::from(agent.set_artifact_active(id.clone(), false)).await.unwrap();
    JsFuture::from(agent.send("s".into(), "Thanks".into(), options(true))).await.unwrap();
    let log = control("/__log", json!({})).await;
    let requests = log["requests"].as_array().unwrap();
    let search = requests.iter().find(|r| r["path"] == "/search").expect("the search went through the proxy");
    assert_eq!(search["body"]["query"], "Rust 2024 edition release");
    let answer_with_artifact = requests.iter().filter(|r| r["path"] != "/search").nth(3).unwrap().to_string();
    assert!(answer_with_artifact.contains(&id), "the answering call saw the artifact");
    // The person's control is real: the next request carries none of the
    // artifact's text, in any message; a placeholder names it as turned off.
    let last = requests.last().unwrap();
    let messages = last["body"]["messages"].as_array().unwrap();
    let text = "What is known about Rust 2024 edition release";
    assert!(messages.iter().all(|m| !m.to_string().contains(text)), "the artifact's text left the request: {last}");
    let tail = messages.last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(!tail.contains(&format!("[ID: {id}]")), "after the toggle the artifact is left out of the index: {tail}");
    assert!(
        messages.iter().any(|m| m["role"] == "tool"
            && m.to_string().contains(&format!("artifact {id}"))
            && m.to_string().contains("is turned off")),
        "a placeholder names it: {last}"
    );
}

/// A fresh database with an agent and one project of one chapter, seeded
/// through the storage layer of the same database.
struct Seeded {
    db: String,
    agent: JsAgent,
    backend: std::rc::Rc<atelier_agent::store::IdbBackend>,
    store: atelier_agent::store::Db,
    project: atelier_agent::store::Project,
    section: atelier_agent::store::ManuscriptSection,
}

async fn seeded(chapter: &str) -> Seeded {
    let db = format!("agent-{}", random_id());
    let agent = open(&db).await;
    let backend = std::rc::Rc::new(atelier_agent::store::IdbBackend::open(&db).await.unwrap());
    let store = atelier_agent::store::Db::new(backend.clone());
    let project = store.create_project("P", "").await.unwrap();
    let section = store.add_section(&project.id, None, "一", chapter).await.unwrap();
    Seeded { db, agent, backend, store, project, section }
}

#[wasm_bindgen_test]
async fn a_review_waits_for_approval_across_a_reload() {
    let Seeded { db, agent, backend, store, project: _, section: s } = seeded("\u{3000}雨が降っていた。\n").await;
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"writing\",\"reasoning\":\"edit\"}" },
        { "type": "tool_calls", "calls": [{ "name": "get_manuscript", "arguments": { "section_id": s.id } }] },
        { "type": "tool_calls", "calls": [{ "name": "edit_manuscript", "arguments": { "section_id": s.id, "edits": [{ "search": "雨", "replace": "雪" }] } }] },
        { "type": "text", "text": "雪にしました。" }
    ]))
    .await;
    let paused = JsFuture::from(agent.send("s".into(), "雨を雪に".into(), options(true))).await.unwrap();
    assert_eq!(prop(&paused, "status").as_string().as_deref(), Some("interrupted"));
    let diff = prop(&prop(&paused, "review"), "diff").as_string().unwrap();
    assert!(diff.contains("+\u{3000}雪が降っていた。"), "{diff}");
    drop(agent);

    let reloaded = open(&db).await;
    let pending = JsFuture::from(reloaded.pending_review("s".into())).await.unwrap();
    assert_eq!(prop(&pending, "tool").as_string().as_deref(), Some("edit_manuscript"));
    let decision = js(json!({ "approved": true }));
    let done = JsFuture::from(reloaded.resume("s".into(), decision, options(true))).await.unwrap();
    assert_eq!(prop(&done, "status").as_string().as_deref(), Some("completed"));
    assert_eq!(store.section(&s.id).await.unwrap().content, "\u{3000}雪が降っていた。\n");
    backend.close();
}

#[wasm_bindgen_test]
async fn an_abort_signal_stops_the_run() {
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"chat_only\",\"reasoning\":\"x\"}" },
        { "type": "hold", "first": "Once upon" }
    ]))
    .await;
    let agent = open(&format!("agent-{}", random_id())).await;
    let controller = web_sys::AbortController::new().unwrap();
    let stop = controller.clone();
    let on_event = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
        if prop(&e, "type").as_string().as_deref() == Some("content") {
            stop.abort();
        }
    });
    let opts = options(true);
    Reflect::set(opts.as_ref().unwrap(), &"signal".into(), &controller.signal()).unwrap();
    Reflect::set(opts.as_ref().unwrap(), &"onEvent".into(), on_event.as_ref().unchecked_ref::<Function>()).unwrap();
    let result = JsFuture::from(agent.send("s".into(), "Tell me a long story".into(), opts)).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("aborted"));
    assert_eq!(prop(&result, "content").as_string().as_deref(), Some(""), "nothing half-written");
}

#[wasm_bindgen_test]
async fn bad_arguments_are_coded_errors() {
    let err = JsFuture::from(JsAgent::open(js(json!({ "nope": 1 })))).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("invalid_argument"));
    let agent = open(&format!("agent-{}", random_id())).await;
    let err = JsFuture::from(agent.resume("s".into(), js(json!({ "approved": "yes" })), None)).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("invalid_argument"));
    let err = JsFuture::from(agent.resume("s".into(), js(json!({ "approved": true })), None)).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("nothing_to_resume"));
}

#[wasm_bindgen_test]
async fn project_plot_export_and_memories_through_the_js_api() {
    let agent = open(&format!("agent-{}", random_id())).await;
    let project = JsFuture::from(agent.create_project("雪国".into(), Some("a novel".into()))).await.unwrap();
    let project_id = prop(&project, "id").as_string().unwrap();
    JsFuture::from(agent.add_section(project_id.clone(), "第一章".into(), Some("本文\n".into()), None)).await.unwrap();
    let item =
        js(json!({ "id": "act-1", "projectId": project_id, "parentId": null, "title": "Act 1", "summary": "setup",
        "order": 1, "createdAt": 0, "updatedAt": 0 }));
    JsFuture::from(agent.save_plot_item(item)).await.unwrap();
    let plot: Array = JsFuture::from(agent.plot(project_id.clone())).await.unwrap().unchecked_into();
    assert_eq!(plot.length(), 1);

    let exported = JsFuture::from(agent.export_project(project_id.clone())).await.unwrap();
    assert_eq!(prop(&exported, "format").as_string().as_deref(), Some("atelier-agent/project"));
    JsFuture::from(agent.delete_project(project_id.clone())).await.unwrap();
    let projects: Array = JsFuture::from(agent.projects()).await.unwrap().unchecked_into();
    assert_eq!(projects.length(), 0);
    JsFuture::from(agent.import_project(exported)).await.unwrap();
    let sections: Array = JsFuture::from(agent.sections(project_id.clone())).await.unwrap().unchecked_into();
    assert_eq!(prop(&sections.get(0), "content").as_string().as_deref(), Some("本文\n"));
    let plot: Array = JsFuture::from(agent.plot(project_id)).await.unwrap().unchecked_into();
    assert_eq!(plot.length(), 1, "the plot came back with the import");

    let dates: Array = JsFuture::from(agent.memory_dates()).await.unwrap().unchecked_into();
    assert_eq!(dates.length(), 0);
    let err = JsFuture::from(agent.edit_artifact("missing".into(), "x".into(), None)).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("not_found"));
}

/// `search_project` on real IndexedDB: the index the JS API's writes kept
/// finds the chapter by its word (not the one with 東京都), and the model
/// reads the hit's id.
#[wasm_bindgen_test]
async fn the_agent_searches_the_project_it_was_given_through_the_js_api() {
    let agent = open(&format!("agent-{}", random_id())).await;
    let project = JsFuture::from(agent.create_project("灯台".into(), None)).await.unwrap();
    let project_id = prop(&project, "id").as_string().unwrap();
    let tokyo = "\u{3000}祖母は東京都に住んでいた。";
    let kyoto = "\u{3000}秋の京都で、灯台守の名を思い出した。";
    JsFuture::from(agent.add_section(project_id.clone(), "第一章".into(), Some(tokyo.into()), None)).await.unwrap();
    let second =
        JsFuture::from(agent.add_section(project_id.clone(), "第二章".into(), Some(kyoto.into()), None)).await.unwrap();
    let second_id = prop(&second, "id").as_string().unwrap();
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"writing\",\"reasoning\":\"find\"}" },
        { "type": "tool_calls", "calls": [{ "name": "search_project", "arguments": { "query": "京都", "project_id": project_id } }] },
        { "type": "text", "text": "第二章です。" }
    ]))
    .await;
    let result = JsFuture::from(agent.send("s".into(), "京都の場面はどこ？".into(), options(true))).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("completed"));
    let log = control("/__log", json!({})).await;
    let chats: Vec<&Value> = log["requests"].as_array().unwrap().iter().filter(|r| r["path"] != "/search").collect();
    let messages = chats.last().unwrap()["body"]["messages"].as_array().unwrap();
    let found = messages.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap();
    assert!(found.contains(&second_id) && found.contains("京都"), "{found}");
    let ids_in = |text: &str| text.matches("\"id\"").count();
    assert_eq!(ids_in(found.split("\n\n## ").next().unwrap()), 1, "only the chapter with 京都: {found}");
}

#[wasm_bindgen_test]
async fn artifacts_import_through_the_js_api_whole_or_not_at_all() {
    let agent = open(&format!("agent-{}", random_id())).await;
    // A Dexie app's rows (no lifecycle), enough to take the bulk path.
    let rows: Vec<Value> = (0..300)
        .map(|i| {
            json!({ "id": format!("d-{i:03}"), "sessionId": "imported", "type": "web_search",
                    "title": format!("Search: {i}"), "content": "結果".repeat(200), "isActive": i % 2 == 0,
                    "createdAt": 1_700_000_000_000u64 + i, "updatedAt": 1_700_000_000_000u64 + i })
        })
        .collect();
    let stored = JsFuture::from(agent.import_artifacts(js(json!(rows)))).await.unwrap();
    assert_eq!(stored.as_f64(), Some(300.0));
    let list: Array = JsFuture::from(agent.list_artifacts("imported".into())).await.unwrap().unchecked_into();
    assert_eq!(list.length(), 300);
    assert_eq!(prop(&list.get(0), "lifecycle").as_string().as_deref(), Some("overwritable"));
    assert!(prop(&list.get(0), "_index").is_undefined(), "storage fields stay in storage");

    let bad = json!([{ "id": "new", "sessionId": "imported", "type": "text", "title": "T", "content": "c",
                       "isActive": true, "createdAt": 1, "updatedAt": 1 },
                     { "id": "worse", "sessionId": "imported", "type": "video", "title": "T", "content": "c",
                       "isActive": true, "createdAt": 1, "updatedAt": 1 }]);
    let err = JsFuture::from(agent.import_artifacts(js(bad))).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("invalid_argument"));
    let message = prop(&err, "message").as_string().unwrap();
    assert!(message.contains("artifacts[1]: (id worse)"), "{message}");
    let list: Array = JsFuture::from(agent.list_artifacts("imported".into())).await.unwrap().unchecked_into();
    assert_eq!(list.length(), 300, "nothing of the refused import was written");

    // Lifecycles: only the person changes them, and every write path keeps them.
    let code = |e: JsValue| prop(&e, "code").as_string();
    let fixed = JsFuture::from(agent.set_artifact_lifecycle("d-000".into(), "static".into())).await.unwrap();
    assert_eq!(prop(&fixed, "lifecycle").as_string().as_deref(), Some("static"));
    let refused = JsFuture::from(agent.edit_artifact("d-000".into(), "changed".into(), None)).await.unwrap_err();
    assert_eq!(code(refused).as_deref(), Some("lifecycle"));
    let mut row = rows[0].clone();
    row["content"] = json!("overwritten by an import");
    row["lifecycle"] = json!("static");
    let refused = JsFuture::from(agent.import_artifacts(js(json!([row])))).await.unwrap_err();
    assert_eq!(code(refused).as_deref(), Some("lifecycle"), "an import cannot change a static artifact");
    let mut moved = rows[1].clone();
    moved["sessionId"] = json!("another");
    let refused = JsFuture::from(agent.import_artifacts(js(json!([moved])))).await.unwrap_err();
    assert_eq!(code(refused).as_deref(), Some("invalid_argument"), "nor move an artifact to another session");
    // A large import (which reads the key list first) checks the same.
    let mut batch: Vec<Value> = (0..100)
        .map(|i| {
            let mut r = rows[2].clone();
            r["id"] = json!(format!("n-{i:03}"));
            r
        })
        .collect();
    batch.push(moved);
    let refused = JsFuture::from(agent.import_artifacts(js(json!(batch)))).await.unwrap_err();
    assert_eq!(code(refused).as_deref(), Some("invalid_argument"), "a large import cannot move one either");
    let list: Array = JsFuture::from(agent.list_artifacts("imported".into())).await.unwrap().unchecked_into();
    assert_eq!(list.length(), 300, "nothing of the refused import was written");
    let refused = JsFuture::from(agent.set_artifact_lifecycle("d-000".into(), "frozen".into())).await.unwrap_err();
    assert_eq!(code(refused).as_deref(), Some("invalid_argument"));
    // The person's deliberate way to edit it.
    JsFuture::from(agent.set_artifact_lifecycle("d-000".into(), "overwritable".into())).await.unwrap();
    let edited = JsFuture::from(agent.edit_artifact("d-000".into(), "changed".into(), None)).await.unwrap();
    assert_eq!(prop(&edited, "content").as_string().as_deref(), Some("changed"));
}

/// Evaluates JS source (test-only: builds objects JSON cannot express).
fn eval(source: &str) -> JsValue {
    Function::new_no_args(&format!("return ({source});")).call0(&JsValue::NULL).unwrap()
}

async fn refused(promise: js_sys::Promise, field: &str) {
    let err = JsFuture::from(promise).await.expect_err("must be refused");
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("invalid_argument"), "{err:?}");
    let message = prop(&err, "message").as_string().unwrap_or_default();
    assert!(message.contains(field), "{field:?} not named in {message:?}");
}

#[wasm_bindgen_test]
async fn hostile_documents_are_refused_and_the_agent_keeps_working() {
    let agent = open(&format!("agent-{}", random_id())).await;
    let cyclic =
        eval("(() => { const d = { format: 'atelier-agent/project', version: 1 }; d.project = d; return d; })()");
    refused(agent.import_project(cyclic), "nested deeper").await;
    let deep = eval("(() => { let v = {}; for (let i = 0; i < 100000; i++) v = { v }; return v; })()");
    refused(agent.import_project(deep), "nested deeper").await;
    let deep_list = eval("(() => { let v = []; for (let i = 0; i < 100000; i++) v = [v]; return v; })()");
    refused(agent.import_artifacts(deep_list), "nested deeper").await;
    let proto = eval(
        r#"JSON.parse('{"format":"atelier-agent/project","version":1,"project":{"__proto__":{"polluted":true}}}')"#,
    );
    refused(agent.import_project(proto), "project.__proto__").await;
    assert!(eval("({}).polluted").is_undefined(), "nothing was polluted");
    refused(agent.update_settings(js(json!({ "fullThreshold": "many" }))), "settings").await;
    refused(agent.update_settings(eval("(() => { const s = {}; s.approvals = s; return s; })()")), "settings").await;
    let cyclic_config =
        eval("(() => { const c = { proxyUrl: '/api' }; c.settings = { c }; c.settings.c = c; return c; })()");
    refused(JsAgent::open(cyclic_config), "AgentConfig").await;

    // Another project's chapter cannot be taken over by an import.
    let mine = JsFuture::from(agent.create_project("mine".into(), None)).await.unwrap();
    let theirs = JsFuture::from(agent.create_project("theirs".into(), None)).await.unwrap();
    let (mine_id, theirs_id) = (prop(&mine, "id").as_string().unwrap(), prop(&theirs, "id").as_string().unwrap());
    let chapter =
        JsFuture::from(agent.add_section(theirs_id.clone(), "1".into(), Some("theirs\n".into()), None)).await.unwrap();
    let chapter_id = prop(&chapter, "id").as_string().unwrap();
    let export = JsFuture::from(agent.export_project(mine_id.clone())).await.unwrap();
    let stolen = js(json!([{ "id": chapter_id, "projectId": mine_id, "parentId": null, "title": "mine now",
        "order": 1, "content": "overwritten", "createdAt": 0, "updatedAt": 0 }]));
    Reflect::set(&export, &"manuscripts".into(), &stolen).unwrap();
    refused(agent.import_project(export), "manuscripts[0].id").await;
    let sections: Array = JsFuture::from(agent.sections(theirs_id.clone())).await.unwrap().unchecked_into();
    assert_eq!(prop(&sections.get(0), "content").as_string().as_deref(), Some("theirs\n"));

    // Plot items: no loops, no parents from another project.
    let item = |id: &str, project: &str, parent: Option<&str>| {
        js(json!({ "id": id, "projectId": project, "parentId": parent, "title": id, "summary": "", "order": 1,
                   "createdAt": 0, "updatedAt": 0 }))
    };
    let a = JsFuture::from(agent.save_plot_item(item("a", &mine_id, None))).await.unwrap();
    let b = JsFuture::from(agent.save_plot_item(item("b", &mine_id, Some("a")))).await.unwrap();
    // Based on the stored version (a stale one is refused first, with `conflict`).
    let looped = item("a", &mine_id, Some("b"));
    Reflect::set(&looped, &"updatedAt".into(), &prop(&a, "updatedAt")).unwrap();
    refused(agent.save_plot_item(looped), "plotItem.parentId").await;
    let stale = JsFuture::from(agent.save_plot_item(item("a", &mine_id, None))).await.unwrap_err();
    assert_eq!(prop(&stale, "code").as_string().as_deref(), Some("conflict"), "a save based on an old copy is refused");
    assert_eq!(prop(&prop(&stale, "current"), "id").as_string().as_deref(), Some("a"), "with the item as it is now");
    JsFuture::from(agent.save_plot_item(item("z", &theirs_id, None))).await.unwrap();
    let moved = item("b", &mine_id, Some("z"));
    Reflect::set(&moved, &"updatedAt".into(), &prop(&b, "updatedAt")).unwrap();
    refused(agent.save_plot_item(moved), "plotItem.parentId").await;

    // After every refusal, ordinary calls still work.
    JsFuture::from(agent.update_settings(js(json!({ "fullThreshold": 500 })))).await.unwrap();
    JsFuture::from(agent.delete_plot_item("a".into())).await.unwrap();
    let plot: Array = JsFuture::from(agent.plot(mine_id)).await.unwrap().unchecked_into();
    assert_eq!(plot.length(), 0, "the subtree went with its root");
}

#[wasm_bindgen_test]
async fn two_agents_on_one_database_run_one_turn_per_session() {
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"chat_only\",\"reasoning\":\"story\"}" },
        { "type": "hold", "first": "昔々", "rest": "あるところに。" }
    ]))
    .await;
    // Two Agents on one database stand for two tabs: Web Locks are per origin.
    let db = format!("agent-{}", random_id());
    let (tab_a, tab_b) = (open(&db).await, open(&db).await);
    let running = tab_a.send("s".into(), "長い話をして".into(), options(true));
    for _ in 0..100 {
        if log_requests().await >= 2 {
            break;
        }
        gloo_timers::future::TimeoutFuture::new(50).await;
    }
    let err = JsFuture::from(tab_b.send("s".into(), "割り込み".into(), options(true))).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("busy"));
    control("/__release", json!({})).await;
    let result = JsFuture::from(running).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("completed"));
    assert_eq!(prop(&result, "content").as_string().as_deref(), Some("昔々あるところに。"));
    // Free again: the other tab may run now.
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"chat_only\",\"reasoning\":\"x\"}" },
        { "type": "text", "text": "どうぞ。" }
    ]))
    .await;
    let result = JsFuture::from(tab_b.send("s".into(), "続けて".into(), options(true))).await.unwrap();
    assert_eq!(prop(&result, "status").as_string().as_deref(), Some("completed"));
}

async fn log_requests() -> usize {
    control("/__log", json!({})).await["requests"].as_array().map_or(0, Vec::len)
}

#[wasm_bindgen_test]
async fn a_delegate_writes_its_output_artifact_through_the_proxy() {
    let Seeded { agent, backend, project: p, section: s, .. } = seeded("\u{3000}アキラは駅へ歩いた。\n").await;
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"writing\",\"reasoning\":\"notes\"}" },
        { "type": "tool_calls", "calls": [{ "name": "get_outline", "arguments": { "project_id": p.id } }] },
        { "type": "tool_calls", "calls": [{ "name": "delegate", "arguments": {
            "task": "Write the chapter summary", "kind": "write",
            "reads": [{ "section": s.id, "purpose": "the chapter" }],
            "writes": [{ "target": "Summary 1", "purpose": "two sentences" }] } }] },
        { "type": "tool_calls", "calls": [{ "name": "write_output", "arguments": { "target": "Summary 1", "content": "アキラが駅へ歩く。\n[[complete]]" } }] },
        { "type": "text", "text": "Summary written.\n[[complete]]" },
        { "type": "text", "text": "要約を書きました。" }
    ]))
    .await;
    let events = Array::new();
    let sink = events.clone();
    let on_event = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
        sink.push(&e);
    });
    let opts = options(true);
    Reflect::set(opts.as_ref().unwrap(), &"onEvent".into(), on_event.as_ref().unchecked_ref::<Function>()).unwrap();
    let done = JsFuture::from(agent.send("s".into(), "第一章の要約を".into(), opts)).await.unwrap();
    assert_eq!(prop(&done, "status").as_string().as_deref(), Some("completed"));
    let artifacts: Array = JsFuture::from(agent.list_artifacts("s".into())).await.unwrap().unchecked_into();
    let summary = artifacts.iter().find(|a| prop(a, "title").as_string().as_deref() == Some("Summary 1"));
    let summary = summary.expect("the delegate's output is an artifact in IndexedDB");
    assert_eq!(prop(&summary, "content").as_string().as_deref(), Some("アキラが駅へ歩く。"));
    let phases: Vec<String> = events
        .iter()
        .filter(|e| prop(e, "type").as_string().as_deref() == Some("delegate"))
        .map(|e| prop(&e, "phase").as_string().unwrap())
        .collect();
    assert_eq!(phases.first().map(String::as_str), Some("started"), "{phases:?}");
    assert!(phases.contains(&"wrote".to_owned()) && phases.last().map(String::as_str) == Some("done"), "{phases:?}");
    // The child's request went to the sub model and held only its file.
    let log = control("/__log", json!({})).await;
    let chats: Vec<&serde_json::Value> =
        log["requests"].as_array().unwrap().iter().filter(|r| r["path"] != "/search").collect();
    let child = chats.iter().find(|r| r["body"].to_string().contains("write_output")).expect("the child's request");
    assert!(child["body"].to_string().contains("アキラは駅へ歩いた"), "its read set");
    assert!(!child["body"].to_string().contains("get_outline"), "not the parent's conversation");
    backend.close();
}

/// Another tab opened a newer version of the database before this tab's
/// `send`: the run rejects with `reload_required` (the demo asks for a
/// reload), not with a generic storage error.
#[wasm_bindgen_test]
async fn a_send_after_another_tabs_upgrade_rejects_with_reload_required() {
    let db = format!("agent-{}", random_id());
    let agent = open(&db).await;
    let newer = atelier_agent::store::IdbBackend::open_at(&db, atelier_agent::store::schema::current_version() + 1)
        .await
        .unwrap();
    let err = JsFuture::from(agent.send("s".into(), "Hello".into(), options(true))).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("reload_required"), "{err:?}");
    let err = JsFuture::from(agent.pending_review("s".into())).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("reload_required"), "every read says so");
    newer.close();
}

/// The disk fills up while a run works (the step's checkpoint is refused):
/// `send` rejects with `quota_exceeded`, and once there is room the session
/// goes on.
#[wasm_bindgen_test]
async fn a_full_disk_during_a_run_rejects_send_with_quota_exceeded() {
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"chat_only\",\"reasoning\":\"x\"}" },
        { "type": "text", "text": "A long answer." }
    ]))
    .await;
    let agent = open(&format!("agent-{}", random_id())).await;
    // When the chat node starts, the disk fills up: its checkpoint is the next write.
    let on_event = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
        if prop(&e, "type").as_string().as_deref() == Some("node")
            && prop(&e, "node").as_string().as_deref() == Some("chat")
        {
            atelier_agent::store::idb_testing::fail_next_write_with("QuotaExceededError");
        }
    });
    let opts = options(true);
    Reflect::set(opts.as_ref().unwrap(), &"onEvent".into(), on_event.as_ref().unchecked_ref::<Function>()).unwrap();
    let err = JsFuture::from(agent.send("s".into(), "Tell me".into(), opts)).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("quota_exceeded"), "{err:?}");
    script(json!([
        { "type": "text", "text": "{\"strategy\":\"chat_only\",\"reasoning\":\"x\"}" },
        { "type": "text", "text": "Room again." }
    ]))
    .await;
    let result = JsFuture::from(agent.send("s".into(), "Again".into(), options(true))).await.unwrap();
    assert_eq!(prop(&result, "content").as_string().as_deref(), Some("Room again."));
}

#[wasm_bindgen_test]
async fn search_through_the_js_api_answers_js_objects_and_checks_its_options() {
    let agent = open(&format!("agent-{}", random_id())).await;
    let project = JsFuture::from(agent.create_project("雪国".into(), None)).await.unwrap();
    let project_id = prop(&project, "id").as_string().unwrap();
    let body = "\u{3000}祖母は東京都に住んでいる。\n秋、二人は京都へ行った。\n";
    let section =
        JsFuture::from(agent.add_section(project_id.clone(), "第一章".into(), Some(body.into()), None)).await.unwrap();
    let opts = |v: Value| Some(js(v).unchecked_into());
    let hits =
        JsFuture::from(agent.search("京都".into(), opts(json!({ "scope": ["manuscripts"], "projectId": project_id }))))
            .await
            .unwrap();
    let hits: Array = hits.unchecked_into();
    assert_eq!(hits.length(), 1, "京都 once: not inside 東京都");
    assert_eq!(prop(&hits, "complete").as_bool(), Some(true));
    let hit = hits.get(0);
    assert_eq!(prop(&hit, "kind").as_string().as_deref(), Some("manuscript"));
    assert_eq!(prop(&hit, "id").as_string(), prop(&section, "id").as_string());
    assert_eq!(prop(&hit, "title").as_string().as_deref(), Some("第一章"));
    assert_eq!(prop(&hit, "projectId").as_string(), Some(project_id.clone()));
    assert!(prop(&hit, "sessionId").is_undefined(), "an absent field is left out");
    let (start, end) = (prop(&hit, "start").as_f64().unwrap() as usize, prop(&hit, "end").as_f64().unwrap() as usize);
    let units: Vec<u16> = body.encode_utf16().collect();
    assert_eq!(String::from_utf16(&units[start..end]).unwrap(), "京都");
    assert!(prop(&hit, "snippet").as_string().unwrap().contains("京都へ行った"));
    assert!(prop(&hit, "score").as_f64().unwrap() > 0.0);
    // Options of the wrong type are refused, naming the field.
    for (bad, field) in
        [(json!({ "limit": "3" }), "limit"), (json!({ "scope": "plot" }), "scope"), (json!(5), "options")]
    {
        let err = JsFuture::from(agent.search("京都".into(), opts(bad))).await.unwrap_err();
        assert_eq!(prop(&err, "code").as_string().as_deref(), Some("invalid_argument"));
        assert!(prop(&err, "message").as_string().unwrap().contains(field), "{field}");
    }
    let err = JsFuture::from(agent.search(" ".into(), None)).await.unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("invalid_argument"));
    let status = agent.search_status();
    assert_eq!(prop(&status, "indexed").as_f64(), Some(1.0));
    assert_eq!(prop(&status, "complete").as_bool(), Some(true));
    assert!(prop(&status, "longestSliceMs").as_f64().is_some());
}

/// Issue 24: a whole research turn (two searches asked at once) and its
/// follow-up through the `Agent` for each dialect the fake upstream speaks,
/// through the real proxy: the fake holds every request to the dialect's
/// template family (Mistral's for `mistral`; Gemma 3's and Gemma 2's asked
/// for below), DeepSeek refuses a tool-call turn without its reasoning, and
/// Gemma 2 any system message: both learned from the refusal and sent again.
/// Reasoning is shown as a thought, never as the answer.
#[wasm_bindgen_test]
async fn every_dialect_runs_a_research_turn_and_a_follow_up_through_the_agent() {
    let cases = [
        ("openai", None),
        ("ollama-v1", None),
        ("gemini", None),
        ("deepseek", None),
        ("mistral", None),
        ("think", None),
        ("think-close", None),
        ("object-args", None),
        ("openrouter", None),
        ("llamacpp", None),
        ("vllm", None),
        ("azure", None),
        ("framing", None),
        ("text-calls", None),
        ("openai", Some("gemma3")),
        ("openai", Some("gemma2")),
    ];
    let router = |why: &str| json!({ "type": "text", "text": format!("{{\"strategy\":\"general_agent\",\"reasoning\":\"{why}\"}}") });
    for (dialect, template) in cases {
        let name = format!("{dialect}/{}", template.unwrap_or("its own"));
        control("/__reset", json!({})).await;
        let mut script = json!({ "dialect": dialect, "chat": [
            router("research"),
            { "type": "tool_calls", "reasoning": "Two searches at once.", "calls": [
                { "name": "web_search", "arguments": { "query": "Rust 2024 edition" } },
                { "name": "web_search", "arguments": { "query": "Rust 1.85 release" } } ] },
            { "type": "text", "text": "{\"query\":\"Rust 2024 edition release\",\"reason\":\"merged\"}" },
            { "type": "text", "text": "It shipped with Rust 1.85 [^1].", "reasoning": "The search says so." },
            router("follow-up"),
            { "type": "text", "text": "It was February 2025.", "reasoning": "From the same source." }
        ] });
        if let Some(template) = template {
            script["template"] = json!(template);
        }
        control("/__script", script).await;
        let agent = open(&format!("dialect-{}", random_id())).await;
        let events = Array::new();
        let sink = events.clone();
        let on_event = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
            sink.push(&e);
        });
        let opts = options(true);
        Reflect::set(opts.as_ref().unwrap(), &"onEvent".into(), on_event.as_ref().unchecked_ref::<Function>()).unwrap();
        let first = JsFuture::from(agent.send("s".into(), "When did the Rust 2024 edition ship? Search.".into(), opts))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(prop(&first, "status").as_string().as_deref(), Some("completed"), "{name}");
        let content = prop(&first, "content").as_string().unwrap();
        assert!(content.contains("It shipped with Rust 1.85"), "{name}: {content}");
        assert!(!content.contains("<think>") && !content.contains("</think>"), "{name}: {content}");
        let next = JsFuture::from(agent.send("s".into(), "And the month?".into(), options(true)))
            .await
            .unwrap_or_else(|e| panic!("{name}: the follow-up: {e:?}"));
        assert_eq!(prop(&next, "status").as_string().as_deref(), Some("completed"), "{name}");
        let answer = prop(&next, "content").as_string().unwrap();
        assert!(answer.contains("It was February 2025."), "{name}: {answer}");
        let log = control("/__log", json!({})).await;
        let chats: Vec<&Value> =
            log["requests"].as_array().unwrap().iter().filter(|r| r["path"] != "/search").collect();
        // The two calls stayed two, in one assistant message, in every later request.
        let last = &chats.last().unwrap()["body"]["messages"];
        let with_calls: Vec<&Value> = last.as_array().unwrap().iter().filter(|m| m["tool_calls"].is_array()).collect();
        assert_eq!(with_calls.len(), 1, "{name}: {last}");
        assert_eq!(with_calls[0]["tool_calls"].as_array().unwrap().len(), 2, "{name}: never merged");
        let names: Vec<&str> = with_calls[0]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["web_search", "web_search"], "{name}");
        if dialect == "deepseek" {
            assert!(with_calls[0]["reasoning_content"].is_string(), "{name}: the reasoning went back");
        } else {
            assert!(with_calls[0].get("reasoning_content").is_none(), "{name}: never where not asked");
        }
        if template == Some("gemma2") {
            assert!(last.as_array().unwrap().iter().all(|m| m["role"] != "system"), "{name}: {last}");
        }
        let reasoned =
            !matches!(dialect, "openai" | "gemini" | "mistral" | "object-args" | "azure" | "framing" | "text-calls");
        if reasoned {
            let live: String = events
                .iter()
                .filter(|e| prop(e, "type").as_string().as_deref() == Some("content"))
                .map(|e| prop(&e, "text").as_string().unwrap())
                .collect();
            assert!(live.contains("```thought\n"), "{name}: the reasoning is a thought block: {live}");
            let sent = last.to_string();
            assert!(!sent.contains("The search says so"), "{name}: reasoning never in the answer sent back");
        }
        drop(on_event);
    }
}
