//! The agent's tools, on an open registry.
//!
//! A tool implements [`Tool`]: its name and spec (JSON Schema of the
//! arguments), what it is ([`About`]: read-only, approval by default, the
//! toolsets it belongs to, whether its results are kept as artifacts...),
//! and what a call with its own typed `Args` reads or writes, sends out,
//! shows in the stream or previews for a review. The registry holds tools
//! by their runtime names ([`AnyTool`]); a model's call is bound once to its
//! tool and parsed arguments ([`Bound`]) and passed around as that. Built-in
//! tools, the agent's `delegate`, and later tools defined in JavaScript or
//! by an MCP server are the same kind of thing: one implementation each.

/// Declares a built-in tool: a unit struct and its [`Tool`] impl.
macro_rules! tool {
    (
        $(#[$meta:meta])*
        $ty:ident {
            name: $name:expr,
            description: $desc:expr,
            parameters: $params:expr,
            about: $about:expr,
            args: $args_ty:ty,
            parse: |$f:ident| $parse:expr,
            $(touches: |$targs:ident| $touches:expr,)?
            $(sends: |$sargs:ident| $sends:expr,)?
            call: |$args:ident, $ctx:ident| $body:block
        }
    ) => {
        $(#[$meta])*
        pub struct $ty;

        #[async_trait::async_trait(?Send)]
        impl $crate::tools::Tool for $ty {
            type Args = $args_ty;
            fn name(&self) -> &str {
                $name
            }
            fn spec(&self) -> $crate::llm::ToolSpec {
                $crate::llm::ToolSpec::function($name, $desc, $params)
            }
            fn about(&self) -> $crate::tools::About {
                $about
            }
            fn parse(&self, args: &serde_json::Value) -> Result<$args_ty, $crate::tools::ToolError> {
                let $f = $crate::tools::Fields::of($name, args)?;
                $parse
            }
            $(fn touches(&self, $targs: &$args_ty) -> Option<$crate::tools::Touch> {
                $touches
            })?
            $(fn sends(&self, $sargs: &$args_ty) -> Option<$crate::tools::Outbound> {
                $sends
            })?
            async fn call(
                &self,
                $args: &$args_ty,
                $ctx: &$crate::tools::ToolContext<'_>,
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
mod fields;
pub mod host;
mod json_schema;
mod mcp;
mod memory;
mod project;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod proxy_web;
mod record;
mod search;
mod utility;
mod web;

use std::any::Any;
use std::rc::Rc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use edit::{EditPlan, EditTarget};
pub use fields::Fields;
pub use mcp::{mcp_tools, McpAgentTool};
pub(crate) use project::outline;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use proxy_web::ProxyWeb;
pub use record::{CallRecord, Decider, NotRun, Outcome};
pub use utility::describe_time;
#[cfg(any(test, feature = "testing"))]
pub use web::ScriptedWeb;
pub use web::{SearchResult, WebPage, WebTools};

use crate::cancel::CancelToken;
use crate::error::ErrorCode;
use crate::llm::{ChatModel, ToolCall, ToolSpec};
use crate::store::{ArtifactType, Db};

/// Why a tool call failed; the message goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not match the tool's schema.
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments { tool: String, message: String },
    /// The tool ran (or could not start) and failed.
    #[error("{message}")]
    Failed { code: ErrorCode, message: String },
}

impl ToolError {
    pub fn failed(code: ErrorCode, message: impl Into<String>) -> ToolError {
        ToolError::Failed { code, message: message.into() }
    }

    /// Stable machine-readable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            ToolError::InvalidArguments { .. } => ErrorCode::InvalidArgument,
            ToolError::Failed { code, .. } => *code,
        }
    }
}

impl From<crate::store::StoreError> for ToolError {
    fn from(e: crate::store::StoreError) -> ToolError {
        ToolError::failed(e.code(), e.to_string())
    }
}

impl From<crate::llm::LlmError> for ToolError {
    fn from(e: crate::llm::LlmError) -> ToolError {
        ToolError::failed(e.code(), e.to_string())
    }
}

impl From<crate::adit::AditError> for ToolError {
    fn from(e: crate::adit::AditError) -> ToolError {
        ToolError::failed(e.code(), e.to_string())
    }
}

/// The arguments of a tool that takes none (any object is accepted).
pub struct NoArgs;

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
    /// The artifact whose text this call carries (read, created, changed):
    /// when the person turns it off, the call's text leaves the context.
    pub artifact: Option<String>,
    /// How the call ended, when not plainly done (a delegate that finished).
    pub outcome: Outcome,
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

    /// The result carries the text of artifact `id`.
    pub fn about_artifact(mut self, id: impl Into<String>) -> ToolOutput {
        self.artifact = Some(id.into());
        self
    }
}

/// The call a tool runs for: its id, its receipt key, and what a resumable
/// tool left in its `started` receipt when the call was cut off.
#[derive(Debug, Clone, Default)]
pub struct CallInfo {
    pub id: String,
    /// The receipt key (`<message index>:<call id>`), unique in the session.
    pub key: String,
    /// The progress a resumable tool (see [`About::resumable`]) recorded.
    pub resume: Option<String>,
}

/// Where a long call is, as a tool reports it while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Started,
    /// One of its steps ran (`detail`: what and the start of its result).
    Step,
    /// It wrote an output (`detail`: target → artifact id).
    Wrote,
    /// It stopped at its budget.
    Stopped,
    /// It finished.
    Done,
    /// It ended without finishing.
    Incomplete,
}

/// What a tool reports while it runs (the agent turns these into its events).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEvent {
    /// A step of a long call (a delegate's child).
    Stage { stage: Stage, detail: String },
    /// The call created or changed an artifact.
    Artifact { id: String, title: String },
    /// How far the call is, as its tool's server reports it (an MCP
    /// server's `notifications/progress`): `progress` of `total`, if known.
    Progress { progress: f64, total: Option<f64>, message: Option<String> },
}

/// Ignores a tool's events.
pub fn no_events(_: ToolEvent) {}

/// What a tool can use.
#[derive(Clone)]
pub struct ToolContext<'a> {
    pub db: Db,
    pub session_id: String,
    pub web: Rc<dyn WebTools>,
    /// The model edit tools ask for edits, and delegates' children run on.
    pub model: Rc<dyn ChatModel>,
    /// The model name (or alias) for edits.
    pub main_model: String,
    /// The model name (or alias) a delegate's child runs on.
    pub helper_model: String,
    /// Characters of one web page the model is given (the artifact keeps the page).
    pub page_chars: usize,
    /// Estimated tokens the model's copy of one page may take at most (a
    /// share of the context window: a page in a dense script reaches it
    /// before `page_chars`).
    pub page_tokens: usize,
    /// The main model's context window in tokens.
    pub context_window: usize,
    /// What scopes cross-tab locks (the database name).
    pub scope: String,
    pub cancel: CancelToken,
    pub call: CallInfo,
    /// Reports what the call does while it runs.
    pub emit: &'a dyn Fn(ToolEvent),
}

/// How the settings group the tools for the person (approval toggles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolGroup {
    /// Web search, artifacts, thinking, reading the projects, memory.
    General,
    /// Tools that change the manuscript.
    Manuscript,
    /// Tools that build or change the plot.
    Plot,
}

/// The sets of tools a strategy offers the model; each tool says which it
/// belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Toolsets(u8);

impl Toolsets {
    /// Research and general tasks (the general_agent strategy).
    pub const RESEARCH: Toolsets = Toolsets(1);
    /// Work on the person's projects (the writing strategy).
    pub const WRITING: Toolsets = Toolsets(2);
    pub const ALL: Toolsets = Toolsets(3);
    /// Offered by no strategy.
    pub const NONE: Toolsets = Toolsets(0);

    /// These sets and `other`.
    pub fn with(self, other: Toolsets) -> Toolsets {
        Toolsets(self.0 | other.0)
    }

    /// Whether these sets include any of `other`.
    pub fn has(self, other: Toolsets) -> bool {
        self.0 & other.0 != 0
    }
}

/// What a tool is, whatever its arguments.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// No effects: may run with the other reads of a step.
    pub read_only: bool,
    /// Asks the person first, unless the settings say otherwise.
    pub approval: bool,
    /// The group the settings show it in.
    pub group: ToolGroup,
    /// The artifact type its results are kept as (`None`: not kept).
    pub persists: Option<ArtifactType>,
    /// Its results are bulk text (pages, searches, manuscripts, artifacts):
    /// one as the last message lowers the compression threshold.
    pub heavy: bool,
    /// The strategies' toolsets it belongs to.
    pub toolsets: Toolsets,
    /// Its call delivers the turn's answer: after it the run ends (unless
    /// the completion rules turn it back).
    pub answers: bool,
    /// It keeps its progress in the call's `started` receipt and, cut off
    /// (a reload, a crash), continues from it instead of counting as
    /// "outcome unknown".
    pub resumable: bool,
    /// Argument fields that carry bulk text (summarised in chips and in the
    /// compressor's transcript; left out with an artifact turned off).
    pub bulk: &'static [&'static str],
}

impl About {
    /// A read-only tool of every toolset, nothing kept.
    pub const READ: About = About {
        read_only: true,
        approval: false,
        group: ToolGroup::General,
        persists: None,
        heavy: false,
        toolsets: Toolsets::ALL,
        answers: false,
        resumable: false,
        bulk: &[],
    };
    /// A tool with effects (no approval by default).
    pub const WRITE: About = About { read_only: false, ..About::READ };
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// A search of the person's local data (`search_project`,
    /// `search_memories`): `<tool>/<project or *>/<limit>/<words>`.
    Find(String),
}

impl Subject {
    /// `kind:id`, as a call's record stores it.
    pub fn to_text(&self) -> String {
        let (kind, id): (&str, &str) = match self {
            Subject::Section(id) => ("section", id),
            Subject::Artifact(id) => ("artifact", id),
            Subject::Project(id) => ("project", id),
            Subject::Outline(id) => ("outline", id),
            Subject::AnyOutline => ("any_outline", ""),
            Subject::Search(q) => ("search", q),
            Subject::Page(url) => ("page", url),
            Subject::Find(key) => ("find", key),
        };
        format!("{kind}:{id}")
    }

    /// The subject [`Subject::to_text`] wrote.
    pub fn from_text(text: &str) -> Option<Subject> {
        let (kind, id) = text.split_once(':')?;
        let id = id.to_owned();
        Some(match kind {
            "section" => Subject::Section(id),
            "artifact" => Subject::Artifact(id),
            "project" => Subject::Project(id),
            "outline" => Subject::Outline(id),
            "any_outline" => Subject::AnyOutline,
            "search" => Subject::Search(id),
            "page" => Subject::Page(id),
            "find" => Subject::Find(id),
            _ => return None,
        })
    }

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

/// What a call sends over the network, which the outbound rule judges
/// (see `agent::outbound`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outbound {
    /// A whole address to open (its host learns all of it).
    Address(String),
    /// A search query (it goes to the search API configured on the proxy).
    Query(String),
    /// The call's arguments go to a third party (`to`: who, in the
    /// person's words): `text` is what they carry.
    Data { to: String, text: String },
    /// The call's arguments go to a service the operator configured for
    /// its own data (an MCP server the proxy relays whose tool says it does
    /// not reach beyond it, `openWorldHint: false`): held only when `text`
    /// carries the person's project text.
    Configured { to: String, text: String },
}

/// The line a kept tool result ends with: the artifact's id.
pub fn kept_note(id: &str) -> String {
    format!("\n\n(Kept as session artifact {id}.)")
}

/// One tool, with its own typed arguments.
///
/// A call's arguments are parsed once ([`Tool::parse`], with [`Fields`])
/// into `Args`; every other method reads that value.
#[async_trait(?Send)]
pub trait Tool: 'static {
    /// The tool's arguments (a host tool's: the JSON value itself).
    type Args: 'static;
    /// The name models call it by.
    fn name(&self) -> &str;
    /// Name, description and argument schema.
    fn spec(&self) -> ToolSpec;
    /// What it is, whatever the arguments.
    fn about(&self) -> About;
    /// Whether argument `field` carries bulk text (default: [`About::bulk`]).
    fn is_bulk(&self, field: &str) -> bool {
        self.about().bulk.contains(&field)
    }
    /// Reads a call's arguments (`null`: none given), checking what the
    /// schema says and what it cannot (an empty query): the argument error
    /// goes back to the model.
    fn parse(&self, args: &Value) -> Result<Self::Args, ToolError>;
    /// Whether this call only reads: it may run with the other reads of
    /// its step.
    fn reads_only(&self, _args: &Self::Args) -> bool {
        self.about().read_only
    }
    /// Whether this call asks the person first by default.
    fn needs_approval(&self, _args: &Self::Args) -> bool {
        self.about().approval
    }
    /// Another tool whose approval setting this call also answers to (a
    /// call that writes what that tool writes asks whenever it would).
    fn approval_as(&self, _args: &Self::Args) -> Option<&str> {
        None
    }
    /// What the call reads or writes (the agent's tracked facts).
    fn touches(&self, _args: &Self::Args) -> Option<Touch> {
        None
    }
    /// What the call sends over the network. A tool that reaches the
    /// network must say so here.
    fn sends(&self, _args: &Self::Args) -> Option<Outbound> {
        None
    }
    /// How the call shows in the person's stream, when not as a tool chip
    /// (thoughts, plans, progress, the answer). Model-written text: the
    /// rendering must defuse fences.
    fn render(&self, _args: &Self::Args) -> Option<String> {
        None
    }
    /// The query of a web search (the search optimiser merges those of one
    /// step into one query).
    fn query(&self, _args: &Self::Args) -> Option<String> {
        None
    }
    /// The arguments `raw` with the query replaced by `query`.
    fn with_query(&self, _raw: &Value, _query: &str) -> Option<Value> {
        None
    }
    /// The change a call would make, worked out without writing (the edit
    /// tools' diff plan), for the person's review; `None`: the tool has no
    /// preview (the review shows the arguments).
    fn preview<'a>(&'a self, _args: &'a Self::Args, _ctx: &'a ToolContext<'_>) -> Option<Pinned<'a, EditPlan>> {
        None
    }
    /// Runs the call.
    async fn call(&self, args: &Self::Args, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolError>;
}

/// A boxed future of a tool's result.
pub type Pinned<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, ToolError>> + 'a>>;

/// A tool as the registry holds it (any [`Tool`], whatever its `Args`):
/// what needs no call, and the typed methods over arguments bound by
/// [`AnyTool::bind`] (nothing else makes them).
pub trait AnyTool {
    fn name(&self) -> &str;
    fn spec(&self) -> ToolSpec;
    fn about(&self) -> About;
    fn is_bulk(&self, field: &str) -> bool;
    fn with_query(&self, raw: &Value, query: &str) -> Option<Value>;
    /// Binds a call's arguments to the tool: parsed and checked once, and
    /// what the agent asks of the call worked out with them.
    fn bind(self: Rc<Self>, args: Value) -> Result<Bound, ToolError>;
    fn render(&self, args: &dyn Any) -> Option<String>;
    fn preview<'a>(&'a self, args: &'a dyn Any, ctx: &'a ToolContext<'_>) -> Option<Pinned<'a, EditPlan>>;
    fn call<'a>(&'a self, args: &'a dyn Any, ctx: &'a ToolContext<'_>) -> Pinned<'a, ToolOutput>;
}

impl<T: Tool> AnyTool for T {
    fn name(&self) -> &str {
        Tool::name(self)
    }
    fn spec(&self) -> ToolSpec {
        Tool::spec(self)
    }
    fn about(&self) -> About {
        Tool::about(self)
    }
    fn is_bulk(&self, field: &str) -> bool {
        Tool::is_bulk(self, field)
    }
    fn with_query(&self, raw: &Value, query: &str) -> Option<Value> {
        Tool::with_query(self, raw, query)
    }
    fn bind(self: Rc<Self>, raw: Value) -> Result<Bound, ToolError> {
        let args = self.parse(&raw)?;
        Ok(Bound {
            reads_only: self.reads_only(&args),
            needs_approval: self.needs_approval(&args),
            approval_as: self.approval_as(&args).map(str::to_owned),
            touches: self.touches(&args),
            sends: self.sends(&args),
            query: self.query(&args),
            args: Box::new(args),
            arguments: raw,
            tool: self,
        })
    }
    fn render(&self, args: &dyn Any) -> Option<String> {
        Tool::render(self, args.downcast_ref()?)
    }
    fn preview<'a>(&'a self, args: &'a dyn Any, ctx: &'a ToolContext<'_>) -> Option<Pinned<'a, EditPlan>> {
        Tool::preview(self, args.downcast_ref()?, ctx)
    }
    fn call<'a>(&'a self, args: &'a dyn Any, ctx: &'a ToolContext<'_>) -> Pinned<'a, ToolOutput> {
        // A bound call holds its own tool's arguments (`bind` made both and
        // they are private to `Bound`): the other branch cannot happen.
        let Some(args) = args.downcast_ref() else { unreachable!("a bound call holds its tool's own arguments") };
        Tool::call(self, args, ctx)
    }
}

/// A call bound to its tool, with its arguments parsed once and what the
/// agent asks of the call (read-only? approval? what it touches and
/// sends?) worked out from them: what the agent passes around once a call
/// is resolved.
pub struct Bound {
    tool: Rc<dyn AnyTool>,
    /// The tool's own `Args`.
    args: Box<dyn Any>,
    arguments: Value,
    reads_only: bool,
    needs_approval: bool,
    approval_as: Option<String>,
    touches: Option<Touch>,
    sends: Option<Outbound>,
    query: Option<String>,
}

impl Bound {
    pub fn tool(&self) -> &dyn AnyTool {
        &*self.tool
    }
    /// The arguments as the model gave them (JSON).
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }
    /// See [`Tool::reads_only`].
    pub fn reads_only(&self) -> bool {
        self.reads_only
    }
    /// See [`Tool::needs_approval`].
    pub fn needs_approval(&self) -> bool {
        self.needs_approval
    }
    /// See [`Tool::approval_as`].
    pub fn approval_as(&self) -> Option<&str> {
        self.approval_as.as_deref()
    }
    /// See [`Tool::touches`].
    pub fn touches(&self) -> Option<Touch> {
        self.touches.clone()
    }
    /// See [`Tool::sends`].
    pub fn sends(&self) -> Option<Outbound> {
        self.sends.clone()
    }
    /// See [`Tool::query`].
    pub fn query(&self) -> Option<String> {
        self.query.clone()
    }
    /// See [`Tool::render`].
    pub fn render(&self) -> Option<String> {
        self.tool.render(&*self.args)
    }
    /// The same call with another search query (the search optimiser's).
    pub fn with_query(&self, query: &str) -> Option<Bound> {
        let raw = self.tool.with_query(&self.arguments, query)?;
        self.tool.clone().bind(raw).ok()
    }
    /// The tool's preview of the call (see [`Tool::preview`]), if it has one.
    pub async fn preview(&self, ctx: &ToolContext<'_>) -> Result<Option<EditPlan>, ToolError> {
        match self.tool.preview(&*self.args, ctx) {
            Some(plan) => plan.await.map(Some),
            None => Ok(None),
        }
    }
    /// Runs the call.
    pub fn call<'a>(&'a self, ctx: &'a ToolContext<'_>) -> Pinned<'a, ToolOutput> {
        self.tool.call(&*self.args, ctx)
    }
}

/// Every tool the agent has, by name: those registered for good (built-in,
/// `delegate`, the host's) and those offered for a while (the tools of the
/// MCP servers the last check found, see [`ToolRegistry::offer`]).
pub struct ToolRegistry {
    tools: Vec<Rc<dyn AnyTool>>,
    offered: std::cell::RefCell<Rc<Vec<Rc<dyn AnyTool>>>>,
}

impl ToolRegistry {
    /// The built-in tools.
    pub fn standard() -> ToolRegistry {
        let mut tools: Vec<Rc<dyn AnyTool>> = Vec::new();
        tools.extend(project::tools());
        tools.extend(edit::tools());
        tools.extend(memory::tools());
        tools.extend(search::tools());
        tools.extend(web::tools());
        tools.extend(utility::tools());
        tools.extend(artifact::tools());
        ToolRegistry { tools, offered: Default::default() }
    }

    /// Replaces the tools offered for a while (every MCP server's, as the
    /// last check found them) with `tools`; a name a tool registered for
    /// good holds is skipped. A tool whose [`About::toolsets`] are
    /// [`Toolsets::NONE`] is known (a call to it is answered, with its
    /// error) but not offered to the model.
    pub fn offer(&self, tools: Vec<Rc<dyn AnyTool>>) {
        let tools = tools.into_iter().filter(|t| !self.tools.iter().any(|k| k.name() == t.name())).collect();
        *self.offered.borrow_mut() = Rc::new(tools);
    }

    /// Adds a tool from outside the package (the host's, an MCP server's),
    /// refusing a name that is invalid or taken (the error says which).
    pub fn add(&mut self, tool: Rc<dyn AnyTool>) -> Result<(), String> {
        let name = tool.name();
        let valid =
            (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b));
        if !valid {
            return Err(format!("tool name {name:?} must be 1 to 64 letters, digits, '_' or '-'"));
        }
        if self.get(name).is_some() {
            return Err(format!("there is already a tool named {name:?} (a built-in tool, or one given twice)"));
        }
        self.tools.push(tool);
        Ok(())
    }

    /// Adds a tool (replacing one of the same name).
    pub fn register(&mut self, tool: Rc<dyn AnyTool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    pub fn get(&self, name: &str) -> Option<Rc<dyn AnyTool>> {
        let found = self.tools.iter().find(|t| t.name() == name);
        found.cloned().or_else(|| self.offered.borrow().iter().find(|t| t.name() == name).cloned())
    }

    /// Every tool, those registered for good first.
    pub fn all(&self) -> Vec<Rc<dyn AnyTool>> {
        let mut all = self.tools.clone();
        all.extend(self.offered.borrow().iter().cloned());
        all
    }

    /// Binds a model's call to its tool and parsed arguments: the one place
    /// a call's arguments are read. The error is what the model is told.
    pub fn bind(&self, call: &ToolCall) -> Result<Bound, ToolError> {
        let name = &call.function.name;
        let tool = self
            .get(name)
            .ok_or_else(|| ToolError::failed(ErrorCode::NotFound, format!("there is no tool named {name:?}.")))?;
        let text = call.function.arguments.trim();
        let raw = if text.is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(text).map_err(|e| {
                ToolError::failed(
                    ErrorCode::InvalidArgument,
                    format!("the arguments of {name} are not valid JSON ({e}); call it again with a JSON object."),
                )
            })?
        };
        tool.bind(raw)
    }

    /// Whether a call of `name` delivers the turn's answer.
    pub fn answers(&self, name: &str) -> bool {
        self.get(name).is_some_and(|t| t.about().answers)
    }

    /// Every tool as the settings show it.
    pub fn infos(&self) -> Vec<ToolInfo> {
        self.all()
            .iter()
            .map(|t| {
                let spec = t.spec();
                let about = t.about();
                ToolInfo {
                    name: spec.function.name,
                    description: spec.function.description,
                    group: about.group,
                    read_only: about.read_only,
                    needs_approval_by_default: about.approval,
                }
            })
            .collect()
    }

    /// Specs of the tools of `toolsets`, in registry order.
    pub fn specs(&self, toolsets: Toolsets) -> Vec<ToolSpec> {
        self.all().iter().filter(|t| t.about().toolsets.has(toolsets)).map(|t| t.spec()).collect()
    }
}

#[cfg(test)]
mod tests;
