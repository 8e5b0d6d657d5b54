//! Tracked facts and completion rules with a "forgetful" scripted model
//! (it repeats calls) and an "eager" one (it answers before doing the work).

use super::*;
use crate::agent::completion::NUDGE;
use crate::agent::facts::KNOWN;

fn nudged(log: &Rc<RefCell<Vec<AgentEvent>>>) -> Vec<crate::agent::completion::Rule> {
    log.borrow()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Info(Info::Nudged { rule }) => Some(*rule),
            _ => None,
        })
        .collect()
}

#[test]
fn a_forgetful_model_gets_one_real_execution_per_fact_across_turns() {
    let h = harness(vec![]);
    let (_, section) = writing_setup(&h);
    let url = "https://rail.example/history";
    h.web.pages.borrow_mut().push(page(url, "Trains ran on time in 1900."));
    let research = |query: &str| {
        vec![
            json_reply(json!({"strategy": "general_agent", "reasoning": "look up"})),
            calls(&[("web_search", json!({"query": query})), ("open_url", json!({"url": url}))]),
        ]
    };
    let mut first = research("Victorian trains");
    first.push(json_reply(json!({"query": "victorian trains", "reason": "english"})));
    first.push(text_step("They ran on time [^1]."));
    play(&h, first);
    let ask = format!("Search for Victorian trains and read {url}");
    assert_eq!(block_on(h.agent.send("s1", &ask, agent_on())).unwrap().status, RunStatus::Completed);
    // The next turn repeats both calls (spelled differently): no network,
    // no optimiser call, the model is told where the results are.
    let mut again = research("  victorian   TRAINS ");
    again.push(text_step("As found before."));
    play(&h, again);
    assert_eq!(block_on(h.agent.send("s1", "And again?", agent_on())).unwrap().status, RunStatus::Completed);
    assert_eq!(h.web.queries.borrow().len(), 1, "one real search");
    assert_eq!(h.web.opened.borrow().len(), 1, "one real page fetch");
    assert_eq!(h.model.remaining(), 0, "no optimiser call for a known search");
    let last = h.model.requests().pop().unwrap();
    let known: Vec<&str> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } if content.starts_with(KNOWN) => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(known.len(), 2, "{known:?}");
    assert!(known.iter().all(|k| k.contains("artifact ")), "the answers name the artifacts: {known:?}");
    // The facts ride in the tail of a request when they change, and stay
    // where they were sent: the newest ones the conversation shows count both.
    let facts = last.messages.iter().rev().map(|m| m.text()).find(|t| t.contains("## What this session already knows"));
    assert!(facts.is_some_and(|t| t.contains("2 web search(es) or page(s)")), "{facts:?}");

    // A chapter: read once; the repeat is answered; an out-of-band change
    // by the person (a save in the editor) makes it stale; so does an
    // approved edit.
    let read = || calls(&[("get_manuscript", json!({"section_id": section}))]);
    let chapters = || block_on(h.db.artifacts("s1")).unwrap().iter().filter(|a| a.title.contains("第一章")).count();
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "writing", "reasoning": "read"})),
            read(),
            read(),
            text_step("読みました。"),
        ],
    );
    block_on(h.agent.send("s1", "第一章を読んで", agent_on())).unwrap();
    assert_eq!(chapters(), 1, "the repeat in the same turn was answered from the fact");
    let mut current = block_on(h.db.section(&section)).unwrap();
    current.content = "\u{3000}吾輩は猫である。\n\u{3000}名前はもう有る。\n".into();
    block_on(h.db.save_section(&current, None, "the person's save")).unwrap();
    play(
        &h,
        vec![json_reply(json!({"strategy": "writing", "reasoning": "read"})), read(), text_step("変わりました。")],
    );
    block_on(h.agent.send("s1", "もう一度読んで", agent_on())).unwrap();
    assert_eq!(chapters(), 2, "the person's change made the fact stale: a real read");
    let facts = {
        let state = block_on(h.agent.state("s1")).unwrap().unwrap();
        crate::agent::facts::derive(&state.messages, &state.records)
    };
    assert!(facts.about(&crate::tools::Subject::Section(section.clone())).is_some());
}

#[test]
fn an_approved_edit_makes_the_read_of_its_chapter_stale() {
    let h = harness(vec![]);
    let (_, section) = writing_setup(&h);
    play(&h, edit_script(&section));
    let paused = block_on(h.agent.send("s1", "猫を犬に", agent_on())).unwrap();
    assert_eq!(paused.status, RunStatus::Interrupted);
    play(&h, vec![calls(&[("get_manuscript", json!({"section_id": section}))]), text_step("犬になりました。")]);
    let done = block_on(h.agent.resume("s1", Decision::approve(), agent_on())).unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{}", done.content);
    let reads = block_on(h.db.artifacts("s1")).unwrap().iter().filter(|a| a.title.contains("第一章")).count();
    assert_eq!(reads, 2, "the read after the approved edit ran");
    let last = h.model.requests().pop().unwrap();
    let result = last.messages.iter().rev().find(|m| matches!(m, Message::Tool { .. })).unwrap().text();
    assert!(result.contains("吾輩は犬である。"), "{result}");
}

#[test]
fn an_eager_writer_is_nudged_to_read_first_then_accepted() {
    let h = harness(vec![]);
    let (_, section) = writing_setup(&h);
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "writing", "reasoning": "rewrite"})),
            text_step("Here is a more vivid opening: 吾輩は堂々たる猫である。"),
            calls(&[("get_manuscript", json!({"section_id": section}))]),
            text_step("読んだうえで: 吾輩は堂々たる猫である。"),
        ],
    );
    let log = Rc::new(RefCell::new(Vec::new()));
    let done = block_on(h.agent.send("s1", "第一章の冒頭をもっと生き生きと", events_into(&log))).unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{}", done.content);
    assert_eq!(nudged(&log), [crate::agent::completion::Rule::ReadFirst]);
    let requests = h.model.requests();
    let after_nudge = &requests[2];
    assert!(after_nudge.messages.iter().any(|m| matches!(m, Message::User { content } if content.starts_with(NUDGE))));
    assert_eq!(h.model.remaining(), 0);
}

#[test]
fn an_eager_respond_is_turned_back_and_the_cap_ends_the_run_with_incomplete() {
    let h = harness(vec![]);
    writing_setup(&h);
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "writing", "reasoning": "x"})),
            calls(&[("respond", json!({"answer": "Done without looking."}))]),
            text_step("Still without looking."),
            calls(&[("respond", json!({"answer": "Really done."}))]),
        ],
    );
    let log = Rc::new(RefCell::new(Vec::new()));
    let err = block_on(h.agent.send("s1", "第一章を直して", events_into(&log))).unwrap_err();
    assert_eq!(err.code, "incomplete", "{err:?}");
    assert_eq!(nudged(&log).len(), 2);
    let second = &h.model.requests()[2];
    let turned_back =
        second.messages.iter().any(|m| matches!(m, Message::Tool { content, .. } if content.starts_with(NUDGE)));
    assert!(turned_back, "the respond call got the nudge as its result");
    assert!(h.model.requests().len() < 6, "the cap ends the run early");
}

#[test]
fn research_asked_to_search_cannot_finish_without_a_source() {
    let h = harness(vec![]);
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "general_agent", "reasoning": "news"})),
            text_step("Tokyo is probably sunny."),
            calls(&[("web_search", json!({"query": "Tokyo weather"}))]),
            json_reply(json!({"query": "東京 天気", "reason": "local"})),
            text_step("Sunny, 18°C [^1]."),
        ],
    );
    let log = Rc::new(RefCell::new(Vec::new()));
    let done = block_on(h.agent.send("s1", "Search the latest Tokyo weather", events_into(&log))).unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(nudged(&log), [crate::agent::completion::Rule::NeedsSources]);
    assert_eq!(h.web.queries.borrow().len(), 1);
    let facts: Vec<(usize, usize, usize)> = log
        .borrow()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Facts { reads, web, changes } => Some((*reads, *web, *changes)),
            _ => None,
        })
        .collect();
    assert_eq!(facts.first(), Some(&(0, 0, 0)));
    assert_eq!(facts.last(), Some(&(0, 1, 0)), "the status line counts the search");
    // A question that asks for no search finishes without one.
    play(&h, vec![json_reply(json!({"strategy": "general_agent", "reasoning": "x"})), text_step("Four.")]);
    let log = Rc::new(RefCell::new(Vec::new()));
    block_on(h.agent.send("s1", "What is two plus two?", events_into(&log))).unwrap();
    assert!(nudged(&log).is_empty());
}
