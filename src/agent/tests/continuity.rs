//! Continuity memory with the scripted model: notes appended after an
//! approved chapter edit, never rewritten, read by the writer later.

use super::*;
use crate::agent::continuity::{self, NOTES};

fn entries(summary: &str, terms: &[(&str, &str)]) -> Step {
    json_reply(json!({
        "summary": summary,
        "glossary": terms.iter().map(|(t, d)| json!({"term": t, "definition": d})).collect::<Vec<_>>(),
        "motifs": [{"motif": "猫の目", "note": "the narrator's outsider view"}],
        "cross_references": []
    }))
}

fn note(h: &Harness, project: &str, title: &str) -> String {
    block_on(h.db.artifacts(&continuity::session_of(project)))
        .unwrap()
        .into_iter()
        .find(|a| a.title == title)
        .map(|a| a.content)
        .unwrap_or_default()
}

#[test]
fn an_approved_edit_appends_to_the_projects_notes_and_the_writer_reads_them_later() {
    let h = harness(vec![]);
    let (project, section) = writing_setup(&h);
    play(&h, edit_script(&section));
    assert_eq!(block_on(h.agent.send("s1", "猫を犬に", agent_on())).unwrap().status, RunStatus::Interrupted);
    play(&h, vec![text_step("犬にしました。"), entries("吾輩は犬になった。", &[("吾輩", "the narrator")])]);
    let log = Rc::new(RefCell::new(Vec::new()));
    let done = block_on(h.agent.resume("s1", Decision::approve(), events_into(&log))).unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let summaries = note(&h, &project, NOTES[0]);
    assert!(summaries.contains("### 第一章\n吾輩は犬になった。"), "{summaries}");
    assert!(note(&h, &project, NOTES[1]).contains("- **吾輩**: the narrator (第一章)"));
    let reported = log
        .borrow()
        .iter()
        .any(|e| matches!(e, AgentEvent::Info(Info::Continuity { appended, .. }) if appended[..] == [1, 1, 1, 0]));
    assert!(reported, "the continuity event reports what was appended");
    // The person's undo still reaches the chapter edit, not the notes.
    block_on(h.db.undo_last(Origin::Agent)).unwrap();
    assert!(block_on(h.db.section(&section)).unwrap().content.contains("吾輩は猫である"));

    // Asked again (the person's request): only what is new is appended;
    // the old text stays a prefix (append-only).
    let before = note(&h, &project, NOTES[1]);
    h.model.push(entries("吾輩は猫に戻った。", &[("吾輩", "the narrator, again"), ("名前", "still none")]));
    block_on(h.agent.update_continuity(&section)).unwrap();
    let after = note(&h, &project, NOTES[1]);
    assert!(after.starts_with(&before), "append-only");
    assert_eq!(after.matches("**吾輩**").count(), 1, "a known term is not repeated: {after}");
    assert!(after.contains("**名前**"));
    assert_eq!(note(&h, &project, NOTES[0]).matches("### 第一章").count(), 1, "one summary per chapter");

    // The writer's next request carries the notes as its file pointers.
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "writing", "reasoning": "next chapter"})),
            calls(&[("get_outline", json!({"project_id": project}))]),
            text_step("第二章の案です。"),
        ],
    );
    block_on(h.agent.send("s1", "第二章を考えて", agent_on())).unwrap();
    let last = h.model.requests().into_iter().rfind(|r| r.model == "main").unwrap();
    // Sent once in the turn (where it was sent, it stays: the requests after
    // it extend it), at the end of a message the templates accept.
    let text: Vec<&str> = last.messages.iter().map(|m| m.text()).collect();
    let notes = text.iter().filter(|t| t.contains("## Continuity notes of this project")).count();
    assert!(notes == 1 && text.iter().any(|t| t.contains("**名前**")), "{text:?}");
    // Deleting the project deletes its notes.
    block_on(h.db.delete_project(&project)).unwrap();
    assert!(block_on(h.db.artifacts(&continuity::session_of(&project))).unwrap().is_empty());
}

#[test]
fn a_failing_note_keeper_warns_and_the_run_still_completes() {
    let h = harness(vec![]);
    let (project, section) = writing_setup(&h);
    play(&h, edit_script(&section));
    block_on(h.agent.send("s1", "猫を犬に", agent_on())).unwrap();
    play(&h, vec![text_step("犬にしました。"), text_step("not json"), text_step("still not json")]);
    let log = Rc::new(RefCell::new(Vec::new()));
    let done = block_on(h.agent.resume("s1", Decision::approve(), events_into(&log))).unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let warned =
        log.borrow().iter().any(|e| matches!(e, AgentEvent::Warning { message } if message.contains("continuity")));
    assert!(warned);
    assert!(block_on(h.agent.continuity_notes(&project)).unwrap().is_empty(), "nothing written");
    // Off in the settings: no sub-agent call at all.
    h.agent.env().settings.borrow_mut().continuity_memory = false;
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "writing", "reasoning": "edit"})),
            calls(&[("get_manuscript", json!({"section_id": section}))]),
            calls(&[(
                "edit_manuscript",
                json!({"section_id": section, "edits": [{"search": "吾輩は犬である。", "replace": "吾輩は猫である。"}]}),
            )]),
        ],
    );
    block_on(h.agent.send("s1", "もう一度", agent_on())).unwrap();
    play(&h, vec![text_step("はい。")]);
    block_on(h.agent.resume("s1", Decision::approve(), agent_on())).unwrap();
    assert_eq!(h.model.remaining(), 0);
}

#[test]
fn a_delegate_can_read_the_continuity_notes() {
    let h = harness(vec![]);
    let (project, section) = writing_setup(&h);
    h.model.push(entries("吾輩は猫である。", &[("吾輩", "the narrator")]));
    block_on(h.agent.update_continuity(&section)).unwrap();
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "writing", "reasoning": "x"})),
            calls(&[(
                crate::agent::delegate::NAME,
                json!({"task": "Check names", "reads": [{"continuity": project}, {"section": section}]}),
            )]),
            text_step("Names are consistent.\n[[complete]]"),
            text_step("一貫しています。"),
        ],
    );
    block_on(h.agent.send("s1", "名前の一貫性を確認", agent_on())).unwrap();
    let child =
        h.model.requests().into_iter().find(|r| r.tools.iter().any(|t| t.function.name == "read_file")).unwrap();
    let text = serde_json::to_string(&child).unwrap();
    assert!(text.contains("**吾輩**") && text.contains("Chapter summaries"), "{text}");
}
