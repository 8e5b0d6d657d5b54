//! Host tools, the approval policy and session grants in whole runs (the
//! host's side played by Rust runners here; the browser tests drive the
//! same through the JS glue, tests/e2e/host_tools.mjs).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use async_trait::async_trait;

use super::*;
use crate::tools::host::{HostApproval, HostCall, HostDeclaration, HostRunner, HostTool};
use crate::tools::{AnyTool, Decider, Outcome, Toolsets};

/// What the host tools of a test did: "start NAME", "end NAME".
type Log = Rc<RefCell<Vec<String>>>;

enum Behaviour {
    Reply(&'static str),
    Throw(&'static str),
    /// Cancels the run (as a Stop button would) and waits for the signal.
    StopTheRun(CancelToken),
    /// Yields to the executor once before it answers (lets another start).
    YieldThen(&'static str),
}

struct Runner {
    name: &'static str,
    log: Log,
    behaviour: Behaviour,
    /// Whether a call asks first, for `HostApproval::PerCall`.
    asks: fn(&Value) -> bool,
}

struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[async_trait(?Send)]
impl HostRunner for Runner {
    fn needs_approval(&self, args: &Value) -> bool {
        (self.asks)(args)
    }
    async fn execute(&self, args: &Value, call: HostCall<'_>) -> Result<String, String> {
        assert_eq!(call.session_id, "s1");
        self.log.borrow_mut().push(format!("start {}", self.name));
        let out = match &self.behaviour {
            Behaviour::Reply(text) => Ok(format!("{text} {args}")),
            Behaviour::Throw(message) => Err((*message).to_owned()),
            Behaviour::StopTheRun(run) => {
                run.cancel();
                call.cancel.cancelled().await;
                Err("aborted".into())
            }
            Behaviour::YieldThen(text) => {
                YieldOnce(false).await;
                Ok((*text).to_owned())
            }
        };
        self.log.borrow_mut().push(format!("end {}", self.name));
        out
    }
}

fn declaration(name: &str) -> HostDeclaration {
    HostDeclaration {
        name: name.into(),
        description: format!("The host's {name}."),
        parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        read_only: true,
        approval: None,
        sends_data: false,
        keep: None,
        toolsets: Toolsets::ALL,
    }
}

fn tool(declaration: HostDeclaration, log: &Log, behaviour: Behaviour) -> Rc<dyn AnyTool> {
    let name = Box::leak(declaration.name.clone().into_boxed_str());
    let runner = Runner { name, log: log.clone(), behaviour, asks: |_| true };
    Rc::new(HostTool::new(declaration, Rc::new(runner)).unwrap())
}

/// A tool with effects that asks first (`approval` "always" by default).
fn mailer(log: &Log) -> Rc<dyn AnyTool> {
    tool(HostDeclaration { read_only: false, ..declaration("send_mail") }, log, Behaviour::Reply("sent"))
}

fn host_harness(steps: Vec<Step>, added: Vec<Rc<dyn AnyTool>>) -> Harness {
    harness_with(Rc::new(MemoryBackend::new()), steps, added, None, None)
}

fn routed() -> Step {
    json_reply(json!({"strategy": "general_agent", "reasoning": "host tool"}))
}

fn answer(text: &str) -> Step {
    calls(&[("respond", json!({ "answer": text }))])
}

/// The tool results the model was sent, in order (each request repeats
/// the earlier ones: the last request's).
fn tool_results(h: &Harness) -> Vec<String> {
    let requests = h.model.requests();
    let last = requests.last().unwrap();
    last.messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(super::without_tail(content).to_owned()),
            _ => None,
        })
        .collect()
}

fn record_of(h: &Harness, tool: &str) -> crate::tools::CallRecord {
    let state = block_on(h.agent.state("s1")).unwrap().unwrap();
    state.records.iter().rev().find(|r| r.tool == tool).cloned().unwrap()
}

#[test]
fn a_read_only_host_tool_runs_and_its_result_reaches_the_model_and_bad_arguments_do_not_run_it() {
    let log = Log::default();
    let lookup = tool(declaration("lookup"), &log, Behaviour::Reply("found"));
    let h = host_harness(
        vec![
            routed(),
            calls(&[("lookup", json!({"q": 3}))]),
            calls(&[("lookup", json!({"q": "kyoto"}))]),
            answer("Kyoto found."),
        ],
        vec![lookup],
    );
    let done = block_on(h.agent.send("s1", "Ask the lookup tool about Kyoto", agent_on())).unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{}", done.content);
    assert_eq!(*log.borrow(), ["start lookup", "end lookup"], "the bad call never ran");
    let results = tool_results(&h);
    assert_eq!(results[0], "Error: invalid arguments for lookup: arguments.q: must be \"string\", not number");
    assert_eq!(results[1], r#"found {"q":"kyoto"}"#);
    // Offered to the model with its schema, in the strategy's tools.
    let spec = h.model.requests()[1].tools.iter().find(|t| t.function.name == "lookup").cloned().unwrap();
    assert_eq!(spec.function.parameters["required"], json!(["q"]));
}

#[test]
fn a_throwing_host_tool_tells_the_model_and_the_run_goes_on() {
    let log = Log::default();
    let broken = tool(declaration("lookup"), &log, Behaviour::Throw("the index is offline"));
    let h = host_harness(vec![routed(), calls(&[("lookup", json!({"q": "x"}))]), answer("It failed.")], vec![broken]);
    let done = block_on(h.agent.send("s1", "Ask the lookup tool about x", agent_on())).unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(tool_results(&h)[0], "Error: lookup failed: the index is offline");
    assert_eq!(record_of(&h, "lookup").outcome, Outcome::Failed { code: crate::error::ErrorCode::ToolFailed });
}

#[test]
fn a_host_tool_with_effects_is_reviewed_rejected_approved_and_approved_after_a_reload_exactly_once() {
    let log = Log::default();
    let backend = Rc::new(MemoryBackend::new());
    let mail = || calls(&[("send_mail", json!({"q": "hello"}))]);
    let h = harness_with(backend.clone(), vec![routed(), mail(), answer("Not sent.")], vec![mailer(&log)], None, None);
    let paused = block_on(h.agent.send("s1", "Mail hello", agent_on())).unwrap();
    assert_eq!(paused.status, RunStatus::Interrupted);
    assert_eq!(paused.review.unwrap().tool, "send_mail");
    let done = block_on(h.agent.resume("s1", Decision::reject(Some("not now")), agent_on())).unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert!(log.borrow().is_empty(), "rejected: never run");
    assert_eq!(record_of(&h, "send_mail").by, Some(Decider::Person));

    play(&h, vec![routed(), mail(), answer("Sent.")]);
    block_on(h.agent.send("s1", "Mail hello after all", agent_on())).unwrap();
    block_on(h.agent.resume("s1", Decision::approve(), agent_on())).unwrap();
    assert_eq!(log.borrow().len(), 2, "approved: run once");
    let record = record_of(&h, "send_mail");
    assert_eq!((record.outcome, record.by), (Outcome::Done, Some(Decider::Person)));

    // A review pending across a reload: a page that opens the agent
    // without the tool gets a clear error and the review stays; with it,
    // the approval runs the call once.
    play(&h, vec![routed(), mail()]);
    block_on(h.agent.send("s1", "And once more", agent_on())).unwrap();
    let without = harness_with(backend.clone(), vec![], vec![], None, None);
    let err = block_on(without.agent.resume("s1", Decision::approve(), agent_on())).unwrap_err();
    assert_eq!(err.code, "not_found");
    assert!(err.message.contains("send_mail is not one of this Agent's tools"), "{}", err.message);
    assert!(block_on(without.agent.pending_review("s1")).unwrap().is_some(), "the review stays");
    let reopened = harness_with(backend, vec![answer("Sent again.")], vec![mailer(&log)], None, None);
    let done = block_on(reopened.agent.resume("s1", Decision::approve(), agent_on())).unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{}", done.content);
    assert_eq!(log.borrow().len(), 4, "run exactly once more");
    assert!(block_on(reopened.agent.pending_review("s1")).unwrap().is_none());
}

#[test]
fn approve_for_this_session_grants_the_tool_until_revoked() {
    let log = Log::default();
    let mail = || calls(&[("send_mail", json!({"q": "hi"}))]);
    let h = host_harness(vec![routed(), mail(), answer("Sent.")], vec![mailer(&log)]);
    block_on(h.agent.send("s1", "Mail hi", agent_on())).unwrap();
    block_on(h.agent.resume("s1", Decision::approve_for_session(), agent_on())).unwrap();
    let grants = block_on(h.db.grants("s1")).unwrap();
    assert_eq!(grants.iter().map(|g| g.tool.as_str()).collect::<Vec<_>>(), ["send_mail"]);
    assert!(grants[0].created_at > 0.0);

    play(&h, vec![routed(), mail(), answer("Sent again.")]);
    let done = block_on(h.agent.send("s1", "Mail hi again", agent_on())).unwrap();
    assert_eq!(done.status, RunStatus::Completed, "granted: no review");
    assert!(done.content.contains("granted for this session: send_mail"), "{}", done.content);
    assert_eq!(log.borrow().len(), 4);
    assert_eq!(record_of(&h, "send_mail").by, Some(Decider::Grant));
    let transcript = block_on(h.db.transcript("s1")).unwrap();
    assert!(transcript.last().unwrap().text.contains("granted for this session: send_mail"));
    // The receipt held the record while the run went (cleared at its end):
    // its record says granted, as the state's does.

    block_on(h.db.revoke_grant("s1", "send_mail")).unwrap();
    assert!(block_on(h.db.grants("s1")).unwrap().is_empty());
    play(&h, vec![routed(), mail(), answer("Not sent.")]);
    let asked = block_on(h.agent.send("s1", "Mail hi a third time", agent_on())).unwrap();
    assert_eq!(asked.status, RunStatus::Interrupted, "revoked: reviewed again");
    // Another session never had the grant.
    block_on(h.agent.resume("s1", Decision::reject(None), agent_on())).unwrap();
    block_on(h.db.grant("s1", "send_mail")).unwrap();
    block_on(h.db.delete_session("s1")).unwrap();
    assert!(block_on(h.db.grants("s1")).unwrap().is_empty(), "a grant dies with its session");
}

/// A policy that answers by tool name and counts what it was asked.
struct Policy {
    answer: fn(&str) -> Result<Verdict, String>,
    asked: RefCell<Vec<String>>,
}

#[async_trait(?Send)]
impl ApprovalPolicy for Policy {
    async fn decide(&self, call: PolicyCall<'_>) -> Result<Verdict, String> {
        assert_eq!(call.session_id, "s1");
        self.asked.borrow_mut().push(format!("{} {}", call.tool, call.arguments));
        (self.answer)(call.tool)
    }
}

fn with_policy(
    steps: Vec<Step>,
    added: Vec<Rc<dyn AnyTool>>,
    answer: fn(&str) -> Result<Verdict, String>,
) -> (Harness, Rc<Policy>) {
    let policy = Rc::new(Policy { answer, asked: RefCell::new(Vec::new()) });
    let h = harness_with(Rc::new(MemoryBackend::new()), steps, added, Some(policy.clone()), None);
    (h, policy)
}

#[test]
fn the_policy_denies_with_a_reason_approves_without_a_review_and_asks() {
    let log = Log::default();
    let lookup = tool(declaration("lookup"), &log, Behaviour::Reply("found"));
    let steps = vec![
        routed(),
        calls(&[
            ("send_mail", json!({"q": "a"})),
            ("lookup", json!({"q": "b"})),
            ("web_search", json!({"query": "c"})),
        ]),
        answer("Done."),
    ];
    let (h, policy) = with_policy(steps, vec![mailer(&log), lookup], |tool| match tool {
        "send_mail" => Ok(Verdict::Deny(Some("mail is off in this app".into()))),
        "lookup" => Ok(Verdict::Approve),
        "web_search" => Ok(Verdict::Deny(None)),
        _ => Ok(Verdict::Default),
    });
    let done = block_on(h.agent.send("s1", "Mail a, query b, then c", agent_on())).unwrap();
    assert_eq!(done.status, RunStatus::Completed, "no review: {}", done.content);
    assert_eq!(*log.borrow(), ["start lookup", "end lookup"]);
    let results = tool_results(&h);
    assert_eq!(results[0], "Rejected by the app's approval policy: mail is off in this app");
    assert_eq!(results[2], "Rejected by the app's approval policy.", "built-in tools answer to it too");
    assert!(h.web.queries.borrow().is_empty());
    let state = block_on(h.agent.state("s1")).unwrap().unwrap();
    let by: Vec<_> = state.records.iter().map(|r| (r.tool.as_str(), r.by)).collect();
    assert_eq!(
        by[..3],
        [
            ("send_mail", Some(Decider::Policy)),
            ("lookup", Some(Decider::Policy)),
            ("web_search", Some(Decider::Policy))
        ]
    );
    assert_eq!(policy.asked.borrow()[0], r#"send_mail {"q":"a"}"#, "asked with the arguments");

    // "approve" runs a tool that asks by default without a review.
    let (h, _) = with_policy(
        vec![routed(), calls(&[("send_mail", json!({"q": "a"}))]), answer("Sent.")],
        vec![mailer(&log)],
        |_| Ok(Verdict::Approve),
    );
    let done = block_on(h.agent.send("s1", "Mail a", agent_on())).unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(log.borrow().len(), 4);

    // "ask" reviews a read-only call that never would; no answer leaves it to the tool.
    let (h, _) = with_policy(
        vec![routed(), calls(&[("lookup", json!({"q": "a"}))])],
        vec![tool(declaration("lookup"), &log, Behaviour::Reply("x"))],
        |_| Ok(Verdict::Ask),
    );
    assert_eq!(
        block_on(h.agent.send("s1", "Ask the lookup tool about a", agent_on())).unwrap().status,
        RunStatus::Interrupted
    );
    let (h, _) = with_policy(vec![routed(), calls(&[("send_mail", json!({"q": "a"}))])], vec![mailer(&log)], |_| {
        Ok(Verdict::Default)
    });
    assert_eq!(block_on(h.agent.send("s1", "Mail a", agent_on())).unwrap().status, RunStatus::Interrupted);
}

#[test]
fn a_failing_policy_asks_the_person_with_a_warning() {
    let log = Log::default();
    let lookup = tool(declaration("lookup"), &log, Behaviour::Reply("x"));
    let (h, _) = with_policy(vec![routed(), calls(&[("lookup", json!({"q": "a"}))])], vec![lookup], |_| {
        Err("TypeError: boom".into())
    });
    let events = Rc::new(RefCell::new(Vec::new()));
    let paused = block_on(h.agent.send("s1", "Ask the lookup tool about a", events_into(&events))).unwrap();
    assert_eq!(paused.status, RunStatus::Interrupted, "fail safe: reviewed");
    assert!(events
        .borrow()
        .iter()
        .any(|e| matches!(e, AgentEvent::Warning { message } if message.contains("TypeError: boom"))));
    assert!(log.borrow().is_empty());
}

#[test]
fn neither_a_grant_nor_the_policy_covers_data_leaving_once_web_material_is_in() {
    let log = Log::default();
    let share = || {
        tool(
            HostDeclaration { read_only: false, sends_data: true, ..declaration("share") },
            &log,
            Behaviour::Reply("shared"),
        )
    };
    let (h, _) = with_policy(vec![], vec![share()], |_| Ok(Verdict::Approve));
    block_on(h.db.grant("s1", "share")).unwrap();
    h.web.pages.borrow_mut().push(page("https://news.example/story", INJECTION));
    play(
        &h,
        vec![
            routed(),
            calls(&[("open_url", json!({"url": "https://news.example/story"}))]),
            calls(&[("share", json!({"q": "the chapter"}))]),
        ],
    );
    let held = block_on(h.agent.send("s1", "Read https://news.example/story", agent_on())).unwrap();
    assert_eq!(held.status, RunStatus::Interrupted, "held for review");
    let review = held.review.unwrap();
    assert_eq!(review.tool, "share");
    assert!(review.reason.is_some(), "the outbound rule's reason is shown");
    assert!(log.borrow().is_empty(), "nothing sent");
    // Before web material, the same call runs on the grant alone.
    let (h, _) =
        with_policy(vec![routed(), calls(&[("share", json!({"q": "x"}))]), answer("Shared.")], vec![share()], |_| {
            Ok(Verdict::Default)
        });
    block_on(h.db.grant("s1", "share")).unwrap();
    assert_eq!(block_on(h.agent.send("s1", "Share x", agent_on())).unwrap().status, RunStatus::Completed);
    assert_eq!(log.borrow().len(), 2);
}

#[test]
fn a_host_tool_that_keeps_its_result_makes_an_artifact() {
    let log = Log::default();
    let kept = tool(
        HostDeclaration { keep: Some("Weather report".into()), ..declaration("weather") },
        &log,
        Behaviour::Reply("sunny"),
    );
    let h = host_harness(vec![routed(), calls(&[("weather", json!({"q": "Kyoto"}))]), answer("Sunny.")], vec![kept]);
    block_on(h.agent.send("s1", "Weather in Kyoto?", agent_on())).unwrap();
    let artifacts = block_on(h.db.artifacts("s1")).unwrap();
    assert_eq!(artifacts.len(), 1);
    assert_eq!(artifacts[0].title, "Weather report");
    assert_eq!(artifacts[0].content, r#"sunny {"q":"Kyoto"}"#);
    assert_eq!(record_of(&h, "weather").kept.as_deref(), Some(artifacts[0].id.as_str()));
}

#[test]
fn host_tool_names_must_be_valid_and_free() {
    let log = Log::default();
    for (name, fragment) in [
        ("web_search", "already a tool named \"web_search\""),
        ("delegate", "already a tool named \"delegate\""),
        ("two words", "must be 1 to 64"),
        ("", "must be 1 to 64"),
    ] {
        let err = harness_with_result(vec![tool(declaration(name), &log, Behaviour::Reply(""))]).err().unwrap();
        assert_eq!(err.code, "invalid_argument");
        assert!(err.message.contains(fragment), "{name}: {}", err.message);
    }
    let twice =
        vec![tool(declaration("a"), &log, Behaviour::Reply("")), tool(declaration("a"), &log, Behaviour::Reply(""))];
    assert!(harness_with_result(twice).is_err());
    let list = HostTool::new(
        HostDeclaration { parameters: json!({"type": "array"}), ..declaration("x") },
        Rc::new(Runner { name: "x", log, behaviour: Behaviour::Reply(""), asks: |_| false }),
    );
    assert!(list.err().unwrap().contains("type \"object\""));
}

fn harness_with_result(added: Vec<Rc<dyn AnyTool>>) -> Result<Agent, AgentError> {
    let env = AgentEnv {
        scope: "t".into(),
        db: Db::new(Rc::new(MemoryBackend::new())),
        model: Rc::new(ScriptedModel::new(vec![])),
        web: Rc::new(ScriptedWeb::default()),
        tools: ToolRegistry::standard(),
        settings: RefCell::new(AgentSettings::default()),
        policy: None,
        mcp: None,
    };
    let cp = Rc::new(StoreCheckpointer::new(Rc::new(MemoryBackend::new()), PrunePolicy::default()));
    Agent::with_tools(env, cp, added)
}

#[test]
fn an_abort_while_a_host_tool_runs_ends_the_run_and_the_call_is_never_run_twice() {
    let log = Log::default();
    let cancel = CancelToken::new();
    let slow = tool(
        HostDeclaration { read_only: false, approval: Some(HostApproval::Never), ..declaration("deploy") },
        &log,
        Behaviour::StopTheRun(cancel.clone()),
    );
    let h = host_harness(vec![routed(), calls(&[("deploy", json!({"q": "site"}))])], vec![slow]);
    let options = SendOptions { agent_mode: true, cancel, on_event: None };
    let stopped = block_on(h.agent.send("s1", "Deploy the site", options)).unwrap();
    assert_eq!(stopped.status, RunStatus::Aborted);
    assert_eq!(*log.borrow(), ["start deploy", "end deploy"]);
    let state = block_on(h.agent.state("s1")).unwrap().unwrap();
    assert!(!state.messages.iter().any(|m| matches!(m, Message::Tool { .. })), "no half-recorded result");
    assert!(block_on(h.db.transcript("s1")).unwrap().iter().all(|e| e.role == crate::store::Speaker::Person));
    // The next turn learns the call's outcome is unknown; it is not run again.
    play(
        &h,
        vec![
            json_reply(json!({"strategy": "chat_only", "reasoning": "x"})),
            text("I cannot tell whether it deployed."),
        ],
    );
    block_on(h.agent.send("s1", "Did it deploy?", agent_on())).unwrap();
    assert_eq!(log.borrow().len(), 2, "never run twice");
    assert!(tool_results(&h)[0].contains("outcome of this call is unknown"), "{:?}", tool_results(&h));
}

#[test]
fn two_read_only_host_tools_of_one_step_run_together() {
    let log = Log::default();
    let a = tool(declaration("alpha"), &log, Behaviour::YieldThen("A"));
    let b = tool(declaration("beta"), &log, Behaviour::YieldThen("B"));
    let h = host_harness(
        vec![routed(), calls(&[("alpha", json!({"q": "1"})), ("beta", json!({"q": "2"}))]), answer("Both.")],
        vec![a, b],
    );
    block_on(h.agent.send("s1", "Both", agent_on())).unwrap();
    assert_eq!(*log.borrow(), ["start alpha", "start beta", "end alpha", "end beta"], "overlapping");
    assert_eq!(tool_results(&h)[..2], ["A".to_owned(), "B".to_owned()], "results in call order");
}
