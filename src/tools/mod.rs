//! The agent's tools: each has a JSON Schema for its arguments, a clear
//! error for bad arguments (returned to the model, never a crash), whether
//! it only reads, whether it needs the person's approval by default, and
//! whether its result is kept as a session artifact.

/// Declares a tool: a unit struct and its [`Tool`] impl.
macro_rules! tool {
    (
        $(#[$meta:meta])*
        $ty:ident {
            name: $name:expr,
            description: $desc:expr,
            parameters: $params:expr,
            read_only: $ro:expr,
            approval: $approval:expr,
            $(group: $group:expr,)?
            $(heavy: $heavy:expr,)?
            $(merges_queries: $merges:expr,)?
            $(sends: |$sargs:ident| $sends:expr,)?
            $(touches: |$targs:ident| $touches:expr,)?
            persists: $persists:expr,
            call: |$args:ident, $ctx:ident| $body:block
        }
    ) => {
        $(#[$meta])*
        pub struct $ty;

        #[async_trait::async_trait(?Send)]
        impl $crate::tools::Tool for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn spec(&self) -> $crate::llm::ToolSpec {
                $crate::llm::ToolSpec::function($name, $desc, $params)
            }
            fn read_only(&self) -> bool {
                $ro
            }
            fn needs_approval_by_default(&self) -> bool {
                $approval
            }
            fn group(&self) -> $crate::tools::ToolGroup {
                #[allow(unused_variables)]
                let group = $crate::tools::ToolGroup::General;
                $(let group = $group;)?
                group
            }
            fn persists_as(&self) -> Option<$crate::store::ArtifactType> {
                $persists
            }
            $(fn heavy_result(&self) -> bool {
                $heavy
            })?
            $(fn merges_queries(&self) -> bool {
                $merges
            })?
            $(fn sends(&self, $sargs: &serde_json::Value) -> Option<$crate::tools::Outbound> {
                $sends
            })?
            $(fn touches(&self, $targs: &serde_json::Value) -> Option<$crate::tools::Touch> {
                $touches
            })?
            async fn call(
                &self,
                $args: &serde_json::Value,
                $ctx: &$crate::tools::ToolContext,
            ) -> Result<$crate::tools::ToolOutput, $crate::tools::ToolError> $body
        }
    };
}

/// A JSON Schema from its text. Schemas are kept as text in the package: a
/// `json!` literal compiles to code that builds the value node by node,
/// several times the size of the text. A test parses every tool's schema.
pub(crate) fn schema(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_default()
}

/// The schema of arguments that are one required string, `field`.
pub(crate) fn one_string(field: &str) -> serde_json::Value {
    schema(&r#"{"type": "object", "properties": {"$": {"type": "string"}}, "required": ["$"]}"#.replace('$', field))
}

/// The schema of a tool without arguments.
pub(crate) fn no_arguments() -> serde_json::Value {
    schema(r#"{"type": "object", "properties": {}, "required": []}"#)
}

mod artifact;
pub mod edit;
mod memory;
mod project;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod proxy_web;
mod utility;
mod web;

use std::rc::Rc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

pub use edit::{EditKind, EditPlan, EditTarget};
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use proxy_web::ProxyWeb;
pub use utility::describe_time;
pub use web::{ScriptedWeb, SearchResult, WebPage, WebTools};

use crate::cancel::CancelToken;
use crate::llm::{ChatModel, ToolSpec};
use crate::store::{ArtifactType, Db};

/// Why a tool call failed; the message goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not match the tool's schema.
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments { tool: String, message: String },
    /// The tool ran and failed.
    #[error("{message}")]
    Failed { code: String, message: String },
}

impl ToolError {
    pub fn failed(code: &str, message: impl Into<String>) -> ToolError {
        ToolError::Failed { code: code.to_owned(), message: message.into() }
    }

    /// Stable machine-readable code.
    pub fn code(&self) -> &str {
        match self {
            ToolError::InvalidArguments { .. } => "invalid_arguments",
            ToolError::Failed { code, .. } => code,
        }
    }
}

impl From<crate::store::StoreError> for ToolError {
    fn from(e: crate::store::StoreError) -> ToolError {
        ToolError::failed(e.code(), e.to_string())
    }
}

/// Reads a tool's arguments into `T`, or explains what is wrong.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, ToolError> {
    let args = if args.is_null() { Value::Object(Default::default()) } else { args.clone() };
    crate::json::from_value(args)
        .map_err(|e| ToolError::InvalidArguments { tool: tool.to_owned(), message: e.to_string() })
}

/// What a tool returns: the text for the model and, for persisting tools,
/// the artifact to keep.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// The result (and the artifact's content, for persisting tools).
    pub content: String,
    /// A title for the artifact this result becomes (persisting tools).
    pub artifact_title: Option<String>,
    /// What the model sees instead of `content`, when that is shorter (a long
    /// page is capped for the model; the artifact keeps it whole).
    pub for_model: Option<String>,
    /// URLs the result offers to open (a search's result list): opening one
    /// of them is ordinary research, never a leak (see `agent::outbound`).
    pub links: Vec<String>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> ToolOutput {
        ToolOutput { content: content.into(), ..ToolOutput::default() }
    }

    /// The text the model gets.
    pub fn model_text(&self) -> &str {
        self.for_model.as_deref().unwrap_or(&self.content)
    }

    pub fn json<T: Serialize>(value: &T) -> ToolOutput {
        ToolOutput::text(serde_json::to_string_pretty(value).unwrap_or_default())
    }

    pub fn titled(mut self, title: impl Into<String>) -> ToolOutput {
        self.artifact_title = Some(title.into());
        self
    }
}

/// What a tool can use.
#[derive(Clone)]
pub struct ToolContext {
    pub db: Db,
    pub session_id: String,
    pub web: Rc<dyn WebTools>,
    /// The model edit tools ask for edits when given an instruction.
    pub editor: Rc<dyn ChatModel>,
    /// The model name (or alias) for edits.
    pub editor_model: String,
    /// Characters of one web page the model is given (the artifact keeps the page).
    pub page_chars: usize,
    /// Estimated tokens the model's copy of one page may take at most (a
    /// share of the context window: a page in a dense script reaches it
    /// before `page_chars`).
    pub page_tokens: usize,
    pub cancel: CancelToken,
}

/// How the settings group the tools for the person (approval toggles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolGroup {
    /// Web search, artifacts, thinking, reading the projects, memory.
    General,
    /// Tools that change the manuscript.
    Manuscript,
    /// Tools that build or change the plot.
    Plot,
}

/// What the person's settings show of a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub group: ToolGroup,
    pub read_only: bool,
    /// Whether it asks the person first unless the settings say otherwise.
    pub needs_approval_by_default: bool,
}

/// Something a call reads or writes, as the agent's tracked facts name it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum Subject {
    Section(String),
    Artifact(String),
    Project(String),
    Outline(String),
    /// Every project's outline (a plot write that names no project).
    AnyOutline,
    /// A web search, by its query (lowercase, single spaces).
    Search(String),
    Page(String),
}

impl Subject {
    /// Whether a write of `self` changes what a read of `read` saw.
    pub fn covers(&self, read: &Subject) -> bool {
        self == read
            || matches!(
                (self, read),
                (Subject::AnyOutline, Subject::Outline(_)) | (Subject::Outline(_), Subject::AnyOutline)
            )
    }
}

/// A call's effect on what the agent knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touch {
    Reads(Subject),
    Writes(Subject),
}

/// What a call sends over the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outbound {
    /// A whole address to open (its host learns all of it).
    Address(String),
    /// A search query (it goes to the search API configured on the proxy).
    Query(String),
}

/// The argument `key` as trimmed text ("" when it is missing or not a string).
pub fn text_arg(args: &Value, key: &str) -> String {
    args.get(key).and_then(Value::as_str).map(str::trim).unwrap_or_default().to_owned()
}

/// The first of `keys` that `args` holds as a non-empty string.
pub fn string_arg(args: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

const KEPT_NOTE: &str = "\n\n(Kept as session artifact ";

/// The line a kept tool result ends with: the artifact's id.
pub fn kept_note(id: &str) -> String {
    format!("{KEPT_NOTE}{id}.)")
}

/// The artifact id a tool result's [`kept_note`] names, if any.
pub fn kept_artifact_id(result: &str) -> Option<&str> {
    let at = result.rfind(KEPT_NOTE)?;
    result[at + KEPT_NOTE.len()..].strip_suffix(".)")
}

/// One tool.
#[async_trait(?Send)]
pub trait Tool {
    /// The name models call it by.
    fn name(&self) -> &'static str;
    /// Name, description and argument schema.
    fn spec(&self) -> ToolSpec;
    /// Reads only (may run in parallel with other read-only tools).
    fn read_only(&self) -> bool;
    /// Asks the person before running, unless the settings say otherwise.
    fn needs_approval_by_default(&self) -> bool {
        false
    }
    /// Whether this call (with `args`) only reads: it may run with the other
    /// reads of its step. Most tools decide by name alone.
    fn reads_only(&self, _args: &Value) -> bool {
        self.read_only()
    }
    /// Whether this call asks the person first by default.
    fn needs_approval_for(&self, _args: &Value) -> bool {
        self.needs_approval_by_default()
    }
    /// Another tool whose approval setting this call also answers to (a
    /// call that writes what that tool writes asks whenever it would).
    fn approval_as(&self, _args: &Value) -> Option<&'static str> {
        None
    }
    /// The group the settings show it in.
    fn group(&self) -> ToolGroup {
        ToolGroup::General
    }
    /// The artifact type its results are kept as (`None`: not kept).
    fn persists_as(&self) -> Option<ArtifactType>;
    /// Its results are bulk text (pages, searches, manuscripts, artifacts):
    /// one as the last message lowers the compression threshold.
    fn heavy_result(&self) -> bool {
        false
    }
    /// What a call with `args` reads or writes (the agent's tracked facts).
    fn touches(&self, _args: &Value) -> Option<Touch> {
        None
    }
    /// For edit tools: what they edit, so a review can plan the change first.
    fn edit_kind(&self) -> Option<EditKind> {
        None
    }
    /// How a call shows in the person's stream, when not as a tool chip
    /// (thoughts, plans, progress, the answer). Model-written text: the
    /// rendering must defuse fences.
    fn render(&self, _args: &Value) -> Option<String> {
        None
    }
    /// Its call delivers the turn's answer: after it the run ends (unless
    /// the completion rules turn it back).
    fn delivers_answer(&self) -> bool {
        false
    }
    /// Its calls are web searches: the search optimiser merges those of one
    /// step into one query.
    fn merges_queries(&self) -> bool {
        false
    }
    /// What a call with `args` sends over the network, which the outbound
    /// rule judges (see `agent::outbound`). A tool that reaches the network
    /// must say so here.
    fn sends(&self, _args: &Value) -> Option<Outbound> {
        None
    }
    /// Runs the tool.
    async fn call(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Every tool the agent has, by name.
pub struct ToolRegistry {
    tools: Vec<Rc<dyn Tool>>,
}

impl ToolRegistry {
    /// The full tool set.
    pub fn standard() -> ToolRegistry {
        let mut tools: Vec<Rc<dyn Tool>> = Vec::new();
        tools.extend(project::tools());
        tools.extend(edit::tools());
        tools.extend(memory::tools());
        tools.extend(web::tools());
        tools.extend(utility::tools());
        tools.extend(artifact::tools());
        ToolRegistry { tools }
    }

    /// Adds a tool (the agent adds the ones it runs itself, like `delegate`).
    pub fn register(&mut self, tool: Rc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    /// Whether `call` delivers the turn's answer (see [`Tool::delivers_answer`]).
    pub fn delivers_answer(&self, call: &crate::llm::ToolCall) -> bool {
        self.get(&call.function.name).is_some_and(|t| t.delivers_answer())
    }

    /// What `call` sends over the network (see [`Tool::sends`]).
    pub fn sends(&self, call: &crate::llm::ToolCall, args: &Value) -> Option<Outbound> {
        self.get(&call.function.name)?.sends(args)
    }

    /// Whether `call` is a web search the optimiser merges (see [`Tool::merges_queries`]).
    pub fn merges_queries(&self, call: &crate::llm::ToolCall) -> bool {
        self.get(&call.function.name).is_some_and(|t| t.merges_queries())
    }

    pub fn get(&self, name: &str) -> Option<&Rc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub fn all(&self) -> &[Rc<dyn Tool>] {
        &self.tools
    }

    /// Every tool as the settings show it.
    pub fn infos(&self) -> Vec<ToolInfo> {
        self.tools
            .iter()
            .map(|t| {
                let spec = t.spec();
                ToolInfo {
                    name: spec.function.name.clone(),
                    description: spec.function.description.clone(),
                    group: t.group(),
                    read_only: t.read_only(),
                    needs_approval_by_default: t.needs_approval_by_default(),
                }
            })
            .collect()
    }

    /// Specs of the named tools (unknown names are skipped).
    pub fn specs(&self, names: &[&str]) -> Vec<ToolSpec> {
        names.iter().filter_map(|n| self.get(n)).map(|t| t.spec()).collect()
    }
}

/// Tools for research (general_agent strategy).
pub const RESEARCH_TOOLS: &[&str] = &[
    "delegate",
    "web_search",
    "open_url",
    "current_time",
    "report_progress",
    "record_thought",
    "plan_task",
    "respond",
    "list_memory_dates",
    "read_memories_by_date",
    "create_artifact",
    "get_artifact",
    "list_artifacts",
    "edit_artifact",
    "update_artifact",
    "delete_artifact",
    "list_projects",
    "get_project",
    "get_outline",
    "get_manuscript",
];

/// Tools for writing (writing strategy).
pub const EDITORIAL_TOOLS: &[&str] = &[
    "delegate",
    "list_projects",
    "get_project",
    "get_outline",
    "get_manuscript",
    "edit_manuscript",
    "update_manuscript",
    "add_plot_item",
    "update_plot_item",
    "move_plot_item",
    "delete_plot_item",
    "current_time",
    "report_progress",
    "record_thought",
    "plan_task",
    "respond",
    "create_artifact",
    "get_artifact",
    "list_artifacts",
    "edit_artifact",
    "update_artifact",
    "delete_artifact",
    "list_memory_dates",
    "read_memories_by_date",
];

#[cfg(test)]
mod tests;
