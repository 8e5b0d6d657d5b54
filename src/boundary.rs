//! (test only) What the package really sends to JavaScript, checked against
//! what its TypeScript declarations say: this test serialises a sample of
//! every value a binding returns or an event carries — made by the Rust
//! types themselves, most of them by the real store and agent calls — into
//! `target/ts-samples/samples.ts`, and layer 3 of `cargo xtask test` checks
//! that file with `tsc --strict` against the generated `.d.ts` (through
//! `tests/ts-consumer`). Each sample must be assignable to its declared
//! type (no key the declaration lacks, no value outside its union), and a
//! key the Rust type always sends must not be declared optional.

use futures_executor::block_on;
use serde::Serialize;
use serde_json::json;

use crate::agent::{
    AgentEvent, AgentSettings, ArtifactChange, Info, Phase, ReviewPayload, Rule, RunResult, RunState, RunStatus,
    Strategy,
};
use crate::store::{ArtifactType, Db, Lifecycle, MemoryBackend, Origin, PlotItem};
use crate::tools::{EditTarget, Stage, ToolRegistry};

/// Keys the Rust types leave out when empty (`skip_serializing_if`): these
/// may be declared optional.
const OMITTED: &[&str] = &["status"];

/// The checks' helpers, in TypeScript.
const HELPERS: &str = r#"type OptionalKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? K : never }[keyof T];
/** The members of union `T` that sample `S` is one of. */
type Narrow<T, S> = T extends unknown ? (S extends T ? T : never) : never;
/**
 * `never` at every key of `S` that `T` declares optional (unless the Rust type omits it when empty) or lacks;
 * values `T` leaves open (`unknown`, a record of any keys) are not looked into.
 */
type Exact<T, S, O extends PropertyKey> = unknown extends T
  ? S
  : S extends readonly (infer E)[]
    ? readonly Exact<T extends readonly (infer U)[] ? U : never, E, O>[]
    : S extends object
      ? string extends keyof Narrow<T, S>
        ? S
        : {
            [K in keyof S]: K extends Exclude<OptionalKeys<Narrow<T, S>>, O>
              ? never
              : K extends keyof Narrow<T, S>
                ? Exact<Narrow<T, S>[K], S[K], O>
                : never;
          }
      : S;
function check<T>(): <S extends T>(sample: S & Exact<T, S, Omitted>) => void {
  return () => {};
}
"#;

struct Samples {
    out: String,
}

impl Samples {
    fn add<T: Serialize>(&mut self, ts_type: &str, value: &T) {
        let text = crate::json::to_text(value).unwrap();
        self.out.push_str(&format!("check<{ts_type}>()({text});\n"));
    }
}

#[test]
fn samples_of_every_value_sent_to_javascript() {
    let mut s = Samples { out: String::new() };
    // The store's records, as the bindings return them (real calls).
    let db = Db::new(std::rc::Rc::new(MemoryBackend::new()));
    let project = block_on(db.create_project("雪国", "a novel")).unwrap();
    let chapter = block_on(db.add_section(&project.id, None, "第一章", "本文\n")).unwrap();
    let section = block_on(db.add_section(&project.id, Some(&chapter.id), "一", "節\n")).unwrap();
    let now = crate::platform::now_ms();
    for parent in [None, Some("act".to_owned())] {
        let item = PlotItem {
            id: parent.as_ref().map_or("act".into(), |_| "scene".into()),
            project_id: project.id.clone(),
            parent_id: parent,
            title: "Act".into(),
            summary: "setup".into(),
            order: 1.0,
            created_at: now,
            updated_at: now,
        };
        block_on(db.save_plot_item(&item, Some(Origin::Agent), "add_plot_item")).unwrap();
    }
    s.add("Project[]", &block_on(db.projects()).unwrap());
    s.add("ManuscriptSection[]", &block_on(db.sections(&project.id)).unwrap());
    s.add("ManuscriptSection", &section);
    s.add("PlotItem[]", &block_on(db.plot(&project.id)).unwrap());
    let mut edited = chapter.clone();
    edited.content = "改稿\n".into();
    block_on(db.save_section(&edited, Some(Origin::Agent), "edit_manuscript")).unwrap();
    s.add("Revision[]", &block_on(db.revisions_of(&chapter.id)).unwrap());
    let undone = block_on(db.undo_last(Origin::Agent)).unwrap().map(crate::store::UndoneChange::from);
    s.add("UndoneChange | null", &undone);
    let notes = crate::store::continuity_session(&project.id);
    block_on(db.append_note(&notes, "Glossary", "- **雪**: snow (第一章)\n")).unwrap();
    s.add("ProjectExport", &block_on(db.export_project(&project.id)).unwrap());
    block_on(db.add_memory("2026-12-01", "Prefers British spelling", vec!["style".into()])).unwrap();
    s.add("string[]", &block_on(db.memory_dates()).unwrap());
    s.add("Memory[]", &block_on(db.memories_between("2026-01-01", "2026-12-31")).unwrap());
    block_on(db.record_input("s1", "こんにちは")).unwrap();
    block_on(db.record_interjection("s1", "Also the weather")).unwrap();
    block_on(db.record_output("s1", "Hello!", "completed")).unwrap();
    block_on(db.record_input("s1", "Edit it")).unwrap();
    block_on(db.record_output("s1", "```tool\nedit_manuscript(...)\n```", "interrupted")).unwrap();
    s.add("SessionInfo[]", &block_on(db.sessions()).unwrap());
    s.add("TranscriptEntry[]", &block_on(db.transcript("s1")).unwrap());
    for (kind, lifecycle) in [
        (ArtifactType::WebSearch, Lifecycle::Overwritable),
        (ArtifactType::ProjectData, Lifecycle::AppendOnly),
        (ArtifactType::Text, Lifecycle::Static),
    ] {
        block_on(db.create_artifact("s1", kind, "Search: x", "content", lifecycle, Origin::Agent)).unwrap();
    }
    s.add("Artifact[]", &block_on(db.artifacts("s1")).unwrap());

    // The agent's values.
    s.add("ToolInfo[]", &ToolRegistry::standard().infos());
    s.add("AgentSettings", &AgentSettings::default());
    let switched = AgentSettings::default().merged(&json!({ "mcp": { "notes": { "enabled": false } } })).unwrap();
    s.add("AgentSettings", &switched);
    let tool = crate::agent::McpToolInfo {
        name: "get-sum".into(),
        description: "Adds".into(),
        read_only: true,
        enabled: false,
        agent_name: "mcp_everything_get-sum".into(),
    };
    let servers = [
        crate::agent::McpServerInfo { name: "everything".into(), status: "ready", problem: None, tools: vec![tool] },
        crate::agent::McpServerInfo {
            name: "notes".into(),
            status: "unreachable",
            problem: Some("timeout".into()),
            tools: vec![],
        },
    ];
    s.add("McpServerInfo[]", &servers);
    let updated = crate::agent::continuity::Updated {
        project_id: project.id.clone(),
        section_id: chapter.id.clone(),
        appended: [1, 2, 0, 1],
    };
    s.add("ContinuityUpdate", &updated);
    let section_target = EditTarget::Section { id: chapter.id.clone(), title: "第一章".into() };
    let artifact_target = EditTarget::Artifact { id: "a1".into(), title: "Notes".into() };
    let review = ReviewPayload {
        tool_call_id: "call_1".into(),
        tool: "edit_manuscript".into(),
        arguments: "{}".into(),
        reason: Some("held".into()),
        target: Some(section_target.clone()),
        diff: Some("@@ -1 +1 @@".into()),
        path: Some("edits".into()),
    };
    let plain = ReviewPayload { reason: None, target: None, diff: None, path: None, ..review.clone() };
    for (status, review, strategy) in [
        (RunStatus::Completed, None, Some(Strategy::ChatOnly)),
        (RunStatus::Interrupted, Some(review.clone()), Some(Strategy::Writing)),
        (RunStatus::Interrupted, Some(plain.clone()), Some(Strategy::GeneralAgent)),
        (RunStatus::Aborted, None, None),
    ] {
        s.add("RunResult", &RunResult { status, content: "text".into(), review, strategy });
    }
    s.add("ReviewPayload | null", &Some(review.clone()));
    for state in [
        RunState::Idle,
        RunState::Review { review: plain },
        RunState::Unfinished { node: "tools".into() },
        RunState::Running,
    ] {
        s.add("RunState", &state);
    }
    let mut events = vec![
        AgentEvent::Node { node: "router".into() },
        AgentEvent::ActiveTool { tool: Some("web_search".into()) },
        AgentEvent::ActiveTool { tool: None },
        AgentEvent::Content { text: "Hello".into() },
        AgentEvent::Artifact { data: ArtifactChange { id: "a1".into(), action: "created", title: "Search: x".into() } },
        AgentEvent::Warning { message: "careful".into() },
        AgentEvent::Info(Info::Routed { strategy: Strategy::Writing, reasoning: "edit".into() }),
        AgentEvent::Info(Info::SearchOptimized { from: vec!["a".into(), "b".into()], query: "a b".into() }),
        AgentEvent::Info(Info::Changed { tool: "edit_manuscript".into(), target: section_target }),
        AgentEvent::Info(Info::Changed { tool: "edit_artifact".into(), target: artifact_target }),
        AgentEvent::Info(Info::Memory { id: "m1".into(), date: "2026-12-01".into(), summary: "s".into() }),
        AgentEvent::Info(Info::Continuity {
            project_id: project.id.clone(),
            section_id: chapter.id.clone(),
            appended: vec![1, 0, 0, 2],
        }),
        AgentEvent::Usage { prompt_tokens: 10, completion_tokens: 2, cached_tokens: 8 },
        AgentEvent::Facts { reads: 1, web: 2, changes: 0 },
    ];
    for phase in [Phase::Idle, Phase::Planning, Phase::Researching, Phase::Answering, Phase::Memorizing] {
        events.push(AgentEvent::Phase { phase });
    }
    for rule in [Rule::ReadFirst, Rule::NeedsSources] {
        events.push(AgentEvent::Info(Info::Nudged { rule }));
    }
    use crate::agent::compress::Reason;
    for reason in [Reason::TokenThreshold, Reason::HeavyTool, Reason::TurnLimit] {
        events.push(AgentEvent::Compressed { reason, tokens_before: 100, tokens_after: 40 });
    }
    for phase in [Stage::Started, Stage::Step, Stage::Wrote, Stage::Stopped, Stage::Done, Stage::Incomplete] {
        events.push(AgentEvent::Delegate { call_id: "call_1".into(), phase, detail: "d".into() });
    }
    for (total, message) in [(Some(4.0), Some("reading".to_owned())), (None, None)] {
        let tool = "mcp_notes_search".to_owned();
        events.push(AgentEvent::Progress { call_id: "call_1".into(), tool, progress: 1.5, total, message });
    }
    for event in &events {
        s.add("AgentEvent", event);
    }

    // Adit's.
    let edits = [crate::adit::Edit { search: "world".into(), replace: "there".into() }];
    s.add("AppliedEdits", &crate::adit::apply_edits("Hello world\n", &edits).unwrap());
    s.add("Edit[]", &crate::adit::parse_search_replace("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n").unwrap());
    s.add("EditsResponseFormat", &crate::adit::edits_response_format());
    s.add("{ stores: string[] }", &json!({ "stores": ["sessionArtifacts"] }));

    let omitted: Vec<String> = OMITTED.iter().map(|k| format!("\"{k}\"")).collect();
    let file = format!(
        "// Written by `cargo test -p atelier-agent --lib boundary` (src/boundary.rs): samples of every value the\n\
         // package sends to JavaScript, serialised by the Rust types, checked against the declarations.\n\
         import type {{\n  AgentEvent, AgentSettings, AppliedEdits, Artifact, ContinuityUpdate, Edit, EditsResponseFormat,\n  \
         ManuscriptSection, McpServerInfo, Memory, PlotItem, Project, ProjectExport, ReviewPayload, Revision, RunResult, RunState,\n  \
         SessionInfo, ToolInfo, TranscriptEntry, UndoneChange,\n}} from \"atelier-agent\";\n\n\
         type Omitted = {};\n{HELPERS}\n{}",
        omitted.join(" | "),
        s.out
    );
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/target/ts-samples");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(format!("{dir}/samples.ts"), file).unwrap();
}
