//! Typed call records in whole runs: what a call did is read from its
//! record, never from its words (a chapter that opens with "Error" is a
//! read); a session checkpointed before records resumes with them
//! back-filled; and an artifact the person turns off or deletes leaves the
//! next request, its place taken by a placeholder, until turned on again.

use super::*;
use crate::store::{Backend, Write};
use crate::tools::{NotRun, Outcome, Subject, Touch};

fn outcomes(h: &Harness) -> Vec<(String, Outcome)> {
    let state = block_on(h.agent.state("s1")).unwrap().unwrap();
    state.records.iter().map(|r| (r.tool.clone(), r.outcome.clone())).collect()
}

#[test]
fn a_chapter_that_opens_with_error_is_a_successful_read() {
    let h = harness(vec![]);
    let project = block_on(h.db.create_project("Logbook", "")).unwrap();
    let chapter = "Error 404: the ship's log was empty that morning.\nRejected by the sea, the crew sailed on.\n";
    let section = block_on(h.db.add_section(&project.id, None, "One", chapter)).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "writing", "reasoning": "read the chapter"})),
            calls(&[("get_manuscript", json!({"section_id": section.id}))]),
            calls(&[("respond", json!({"answer": "It opens with the empty log."}))]),
        ],
    );
    let done = block_on(h.agent.send("s1", "What does chapter one open with?", events_into(&log))).unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert!(done.content.contains("empty log"));
    assert!(!log.borrow().iter().any(|e| matches!(e, AgentEvent::Info(Info::Nudged { .. }))), "no nudge");
    let state = block_on(h.agent.state("s1")).unwrap().unwrap();
    let read = state.records.iter().find(|r| r.tool == "get_manuscript").unwrap();
    assert_eq!(read.outcome, Outcome::Done);
    assert_eq!(read.touched, Some(Touch::Reads(Subject::Section(section.id.clone()))));
    assert!(read.kept.is_some(), "kept as an artifact");
    let facts = crate::agent::facts::derive(&state.messages, &state.records);
    assert!(facts.about(&Subject::Section(section.id)).is_some_and(|f| f.result == chapter));
}

#[test]
fn every_answer_has_its_record_beside_it() {
    let h = harness(vec![]);
    let (_, section) = writing_setup(&h);
    let repeat = || ("get_manuscript", json!({"section_id": section}));
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "writing", "reasoning": "x"})),
            calls(&[repeat(), ("no_such_tool", json!({})), ("get_outline", json!({}))]),
            calls(&[repeat()]),
            calls(&[repeat()]),
            calls(&[("respond", json!({"answer": "Done."}))]),
        ],
    );
    block_on(h.agent.send("s1", "Read chapter one", agent_on())).unwrap();
    let state = block_on(h.agent.state("s1")).unwrap().unwrap();
    let tool_messages = state.messages.iter().filter(|m| matches!(m, Message::Tool { .. })).count();
    assert_eq!(state.records.len(), tool_messages);
    for record in &state.records {
        assert!(matches!(state.messages[record.at], Message::Tool { .. }), "{record:?}");
    }
    use crate::error::ErrorCode;
    assert_eq!(
        outcomes(&h).into_iter().map(|(_, o)| o).collect::<Vec<_>>(),
        [
            Outcome::Done,
            Outcome::Failed { code: ErrorCode::NotFound },
            Outcome::Failed { code: ErrorCode::InvalidArgument },
            Outcome::Known,
            Outcome::NotRun(NotRun::LoopGuard),
            Outcome::Done,
        ]
    );
}

/// A session saved by the code before typed records (fixture written by
/// it): a research turn and a writing turn paused at a review.
fn load_old_session(backend: &MemoryBackend) -> (String, Value) {
    let fixture: Value = serde_json::from_str(include_str!("checkpoint-before-records.json")).unwrap();
    let mut writes = Vec::new();
    for (store, records) in fixture.as_object().unwrap() {
        let Some(records) = records.as_array() else { continue };
        use crate::store::stores::*;
        let store = [ARTIFACTS, PROJECTS, SECTIONS, CHECKPOINTS, BLOBS, RECEIPTS, SESSIONS, TRANSCRIPT]
            .into_iter()
            .find(|s| *s == store.as_str())
            .unwrap();
        writes.extend(records.iter().map(|value| Write::Put { store, value: value.clone() }));
    }
    block_on(backend.write(writes)).unwrap();
    (fixture["section"].as_str().unwrap().to_owned(), fixture)
}

#[test]
fn a_checkpoint_from_before_records_resumes_with_its_records_back_filled() {
    let backend = Rc::new(MemoryBackend::new());
    let (section, _) = load_old_session(&backend);
    let h = harness_on(backend, vec![text("犬にしました。")]);
    let state = block_on(h.agent.state("s1")).unwrap().unwrap();
    let tools: Vec<&str> = state.records.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, ["web_search", "get_outline", "respond", "get_manuscript"]);
    assert!(state.records.iter().all(|r| r.outcome == Outcome::Done));
    let search = &state.records[0];
    assert_eq!(search.touched, Some(Touch::Reads(Subject::Search("tokyo weather".into()))));
    let artifacts = block_on(h.db.artifacts("s1")).unwrap();
    assert!(artifacts.iter().any(|a| Some(&a.id) == search.kept.as_ref()), "the kept artifact's id, read back");
    // The review it waited for is still there, and approving it finishes the run.
    assert_eq!(block_on(h.agent.pending_review("s1")).unwrap().unwrap().tool, "edit_manuscript");
    let done = block_on(h.agent.resume("s1", Decision::approve(), agent_on())).unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert!(block_on(h.db.section(&section)).unwrap().content.contains("吾輩は犬である。"));
    let state = block_on(h.agent.state("s1")).unwrap().unwrap();
    let edit = state.records.last().unwrap();
    assert_eq!((edit.tool.as_str(), &edit.outcome), ("edit_manuscript", &Outcome::Done));
    let facts = crate::agent::facts::derive(&state.messages, &state.records);
    assert_eq!(facts.writes.len(), 1, "the approved edit is a write");
    assert!(facts.writes[0].read_before, "the back-filled read counts as read before");
}

/// The text of `artifact` in any message of `request`.
fn carries(request: &ChatRequest, text: &str) -> bool {
    request
        .messages
        .iter()
        .any(|m| m.text().contains(text) || m.tool_calls().iter().any(|c| c.function.arguments.contains(text)))
}

#[test]
fn an_artifact_turned_off_leaves_every_message_of_the_next_request_until_turned_on() {
    let h = harness(vec![]);
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "general_agent", "reasoning": "search"})),
            calls(&[("web_search", json!({"query": "Tokyo weather"}))]),
            json_reply(json!({"query": "Tokyo weather", "reason": "local"})),
            calls(&[("create_artifact", json!({"title": "Plan", "content": "Visit the Kyoto moss garden."}))]),
            calls(&[("respond", json!({"answer": "Sunny."}))]),
        ],
    );
    block_on(h.agent.send("s1", "Search the weather in Tokyo and note a plan", agent_on())).unwrap();
    let artifacts = block_on(h.db.artifacts("s1")).unwrap();
    let search = artifacts.iter().find(|a| a.title.starts_with("Search")).unwrap().id.clone();
    let plan = artifacts.iter().find(|a| a.title == "Plan").unwrap().id.clone();
    let turn = |h: &Harness| {
        play(h, vec![json_reply(json!({"strategy": "general_agent", "reasoning": "x"})), text("OK.")]);
        block_on(h.agent.send("s1", "And now?", agent_on())).unwrap();
        h.model.requests().last().unwrap().clone()
    };
    let before = turn(&h);
    assert!(carries(&before, "Sunny, 18°C") && carries(&before, "moss garden"));

    block_on(h.db.set_artifact_active(&search, false)).unwrap();
    block_on(h.db.delete_artifact(&plan, Origin::User)).unwrap();
    let after = turn(&h);
    assert!(!carries(&after, "Sunny, 18°C"), "the search's text is in no message");
    assert!(!carries(&after, "moss garden"), "nor the deleted artifact's, written in the call's arguments");
    assert!(carries(&after, &format!("artifact {search} is turned off")));
    assert!(!carries(&after, "Search: Tokyo weather"), "nor its title");
    assert!(carries(&after, &format!("artifact {plan} was deleted")));
    assert_eq!(crate::llm::template_violation(&after.messages), None, "the strict chat template holds");

    block_on(h.db.set_artifact_active(&search, true)).unwrap();
    let again = turn(&h);
    assert!(carries(&again, "Sunny, 18°C"), "turned on again, its text is back");
    let first: Vec<_> = before.messages.iter().take(4).collect();
    assert_eq!(again.messages.iter().take(4).collect::<Vec<_>>(), first, "and the same bytes as before");
}
