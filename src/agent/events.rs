//! What a frontend hears during a run: typed events, emitted by the nodes
//! through the graph's `NodeContext::emit` and passed on unchanged.

use serde::{Deserialize, Serialize};

use super::strategy::Strategy;
use crate::graph::{GraphEvent, NodeContext};
use crate::tools::{EditTarget, Stage, ToolEvent};

/// What the agent is doing, for the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    #[default]
    Idle,
    Planning,
    Researching,
    Answering,
    Memorizing,
}

/// Which completion rule an early final answer broke (see `agent::completion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Writing without having read the project.
    ReadFirst,
    /// Research asked for a search and has no source.
    NeedsSources,
}

/// Something a run reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum AgentEvent {
    /// The agent's phase changed (planning, researching, answering, memorizing, idle).
    Phase { phase: Phase },
    /// A graph node started.
    Node { node: String },
    /// The tool being run (none between tools).
    ActiveTool { tool: Option<String> },
    /// More of the visible Markdown stream.
    Content { text: String },
    /// An artifact was created or changed.
    Artifact { data: ArtifactChange },
    /// Something went wrong without failing the run.
    Warning { message: String },
    /// What the run decided or did along the way.
    Info(Info),
    /// The token counts of a main-model call, as the upstream reported them
    /// (`cachedTokens`: prompt tokens served from its prompt cache).
    Usage { prompt_tokens: u64, completion_tokens: u64, cached_tokens: u64 },
    /// The older part of the conversation was summarised before a model
    /// call (estimated tokens of that call's request before and after).
    Compressed { reason: super::compress::Reason, tokens_before: usize, tokens_after: usize },
    /// What the session knows before a model call (the status line):
    /// local reads, web searches and pages, and changes made.
    Facts { reads: usize, web: usize, changes: usize },
    /// A `delegate` child's progress, under its call's chip: `started`,
    /// `step`, `wrote`, `stopped`, then `done` or `incomplete`.
    Delegate { call_id: String, phase: Stage, detail: String },
    /// How far a running call is, as its tool's server reports it (MCP
    /// progress): `progress` of `total` when the server knows it, and its
    /// message (at most 200 characters of a server nobody vetted: text).
    Progress { call_id: String, tool: String, progress: f64, total: Option<f64>, message: Option<String> },
}

/// An artifact a tool result became.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArtifactChange {
    pub id: String,
    /// "created".
    pub action: &'static str,
    pub title: String,
}

/// The run's decisions and changes, as `{ type: "info", name, data }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "name", content = "data", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Info {
    /// The router chose a strategy.
    Routed { strategy: Strategy, reasoning: String },
    /// The searches of one batch became one query.
    SearchOptimized { from: Vec<String>, query: String },
    /// An approved edit was written.
    Changed { tool: String, target: EditTarget },
    /// A long-term memory was stored.
    Memory { id: String, date: String, summary: String },
    /// An early final answer broke a completion rule; the model was told
    /// what is missing and the run goes on.
    Nudged { rule: Rule },
    /// A project's continuity notes gained entries (per note, in
    /// `continuity::NOTES` order).
    Continuity { project_id: String, section_id: String, appended: Vec<usize> },
}

/// A listener for a run's events.
pub type EventListener = std::rc::Rc<dyn Fn(&AgentEvent)>;

/// What the assistant's nodes see of a run.
pub type Ctx<'a> = NodeContext<'a, AgentEvent>;

/// The event a frontend hears for a graph event, if any (node events pass
/// through; a run's end sets the phase back to idle).
pub(super) fn relay(event: &GraphEvent<'_, AgentEvent>, sink: &dyn Fn(&AgentEvent)) {
    match event {
        GraphEvent::Node { event, .. } => sink(event),
        GraphEvent::NodeStart { node, .. } => sink(&AgentEvent::Node { node: (*node).to_owned() }),
        GraphEvent::RunEnd { .. } => sink(&AgentEvent::Phase { phase: Phase::Idle }),
        _ => {}
    }
}

/// Typed shorthands for the events nodes send.
pub(super) trait Emit {
    fn phase(&self, phase: Phase);
    fn content(&self, text: &str);
    fn active_tool(&self, tool: Option<&str>);
    fn warning(&self, message: String);
    fn info(&self, info: Info);
    /// What call `call_id` (of the tool `tool`) reports while it runs.
    fn tool(&self, call_id: &str, tool: &str, event: ToolEvent);
}

impl Emit for Ctx<'_> {
    fn phase(&self, phase: Phase) {
        self.emit(AgentEvent::Phase { phase });
    }
    fn content(&self, text: &str) {
        if !text.is_empty() {
            self.emit(AgentEvent::Content { text: text.to_owned() });
        }
    }
    fn active_tool(&self, tool: Option<&str>) {
        self.emit(AgentEvent::ActiveTool { tool: tool.map(str::to_owned) });
    }
    fn warning(&self, message: String) {
        self.emit(AgentEvent::Warning { message });
    }
    fn info(&self, info: Info) {
        self.emit(AgentEvent::Info(info));
    }
    fn tool(&self, call_id: &str, tool: &str, event: ToolEvent) {
        self.emit(match event {
            ToolEvent::Stage { stage, detail } => {
                AgentEvent::Delegate { call_id: call_id.to_owned(), phase: stage, detail }
            }
            ToolEvent::Artifact { id, title } => {
                AgentEvent::Artifact { data: ArtifactChange { id, action: "created", title } }
            }
            ToolEvent::Progress { progress, total, message } => AgentEvent::Progress {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                progress,
                total,
                message: message.map(|m| m.chars().filter(|c| !c.is_control()).take(200).collect()),
            },
        });
    }
}
