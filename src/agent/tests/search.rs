//! The local search tools in whole runs: `search_project` finds a passage
//! by its words (Japanese segmentation traps included) and the model reads
//! what it found; a repeated search is "already known" until the text
//! changes; `search_memories` finds an earlier conversation and gives its
//! date; bad arguments are the model's to fix.

use super::*;
use crate::agent::facts::KNOWN;

const TOKYO: &str = "\u{3000}祖母は東京都に住んでいた。「また来てね」と言った。";
const KYOTO: &str = "\u{3000}秋の京都で、灯台守の名を思い出した。エイダ、と彼女は言った。";

/// The tool messages of the last request, without the context at their end.
fn results(h: &Harness) -> Vec<String> {
    let requests = h.model.requests();
    let last = requests.last().unwrap();
    last.messages
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .map(|m| without_tail(m.text()).to_owned())
        .collect()
}

fn hits(result: &str) -> Vec<Value> {
    let value: Value = serde_json::from_str(result).unwrap_or_else(|e| panic!("{e}: {result}"));
    value["hits"].as_array().cloned().unwrap_or_default()
}

fn route(strategy: &str) -> Step {
    json_reply(json!({"strategy": strategy, "reasoning": "find it"}))
}

#[test]
fn search_project_finds_the_passage_by_its_words_and_the_model_reads_it() {
    let h = harness(vec![]);
    let project = block_on(h.db.create_project("灯台", "")).unwrap();
    block_on(h.db.add_section(&project.id, None, "第一章", TOKYO)).unwrap();
    let kyoto = block_on(h.db.add_section(&project.id, None, "第二章", KYOTO)).unwrap();
    play(
        &h,
        vec![
            route("writing"),
            calls(&[("search_project", json!({ "query": "京都" }))]),
            calls(&[("get_manuscript", json!({ "section_id": kyoto.id }))]),
            text("第二章です。"),
        ],
    );
    let result = block_on(h.agent.send("s1", "京都の場面はどの章？", agent_on())).unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{}", result.content);
    let results = results(&h);
    let found = hits(&results[0]);
    // 京都 is a word of its own: the chapter that only says 東京都 is no hit.
    assert_eq!(found.len(), 1, "{}", results[0]);
    assert_eq!(found[0]["id"], kyoto.id.as_str());
    assert_eq!(found[0]["kind"], "manuscript");
    assert_eq!(found[0]["title"], "第二章");
    assert_eq!(found[0]["projectId"], project.id.as_str());
    assert!(found[0]["snippet"].as_str().unwrap().contains("京都"), "{}", results[0]);
    assert!(results[1].contains("灯台守"), "the model read what it found");
}

#[test]
fn a_repeated_search_is_already_known_until_the_text_changes() {
    let h = harness(vec![]);
    let project = block_on(h.db.create_project("灯台", "")).unwrap();
    let kyoto = block_on(h.db.add_section(&project.id, None, "第二章", KYOTO)).unwrap();
    let find = || calls(&[("search_project", json!({ "query": "灯台守", "project_id": project.id }))]);
    play(&h, vec![route("writing"), find(), find(), text("第二章にあります。")]);
    let result = block_on(h.agent.send("s1", "灯台守が出てくるのは？", agent_on())).unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{}", result.content);
    let first = results(&h);
    assert_eq!(hits(&first[0]).len(), 1);
    assert!(first[1].starts_with(KNOWN), "{}", first[1]);

    // The person rewrites the chapter: the same search is run, and answered afresh.
    let mut section = block_on(h.db.section(&kyoto.id)).unwrap();
    section.content = "\u{3000}灯台は消えた。灯台守も、もういない。".into();
    block_on(h.db.save_section(&section, Some(Origin::User), "edit")).unwrap();
    play(&h, vec![route("writing"), find(), text("書き直されています。")]);
    let again = block_on(h.agent.send("s1", "もう一度探して", agent_on())).unwrap();
    assert_eq!(again.status, RunStatus::Completed, "{}", again.content);
    let last = results(&h);
    let fresh = last.last().unwrap();
    assert!(!fresh.starts_with(KNOWN) && fresh.contains("もういない"), "{fresh}");
}

#[test]
fn search_memories_finds_an_earlier_conversation_and_its_date() {
    let h = harness(vec![]);
    block_on(h.db.add_memory("2026-10-03", "灯台守の名前をエイダに決めた。", vec!["灯台".into()])).unwrap();
    block_on(h.db.add_memory("2026-11-20", "Chose the title of the second book.", vec![])).unwrap();
    play(
        &h,
        vec![
            route("general_agent"),
            calls(&[("search_memories", json!({ "query": "灯台守" }))]),
            calls(&[("read_memories_by_date", json!({ "start_date": "2026-10-03" }))]),
            text("十月三日にエイダと決めました。"),
        ],
    );
    let result = block_on(h.agent.send("s1", "前に灯台守の名前を決めたよね？", agent_on())).unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{}", result.content);
    let results = results(&h);
    let found = hits(&results[0]);
    assert_eq!(found.len(), 1, "{}", results[0]);
    assert_eq!(found[0]["kind"], "memory");
    assert_eq!(found[0]["date"], "2026-10-03");
    assert!(results[1].contains("エイダ"), "{}", results[1]);
}

#[test]
fn bad_search_arguments_go_back_to_the_model_and_any_query_answers() {
    let h = harness(vec![]);
    let project = block_on(h.db.create_project("灯台", "")).unwrap();
    block_on(h.db.add_section(&project.id, None, "第二章", KYOTO)).unwrap();
    let long = "京都 ".repeat(5000);
    play(
        &h,
        vec![
            route("writing"),
            calls(&[("search_project", json!({ "query": "  " }))]),
            calls(&[("search_project", json!({ "query": 7 }))]),
            calls(&[("search_project", json!({ "query": long, "limit": 1e9 }))]),
            calls(&[("search_project", json!({ "query": "」「。、" }))]),
            text("見つかりません。"),
        ],
    );
    let result = block_on(h.agent.send("s1", "探して", agent_on())).unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{}", result.content);
    let results = results(&h);
    assert!(results[0].contains("`query` is empty"), "{}", results[0]);
    assert!(results[1].contains("must be a string"), "{}", results[1]);
    assert_eq!(hits(&results[2]).len(), 1, "a long query answers: {}", results[2]);
    assert!(results[3].contains("Error") || hits(&results[3]).is_empty(), "{}", results[3]);
}
