//! The `Agent` JS class: `open` (the browser database, the stored settings,
//! the proxy client), runs and reviews, tools and settings. The methods on
//! the person's data are grouped by concept in `sessions.rs`, `artifacts.rs`,
//! `projects.rs` and `memories.rs`; every binding only converts.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use js_sys::{Function, Promise};
use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::convert::{from_js, to_js};
use super::error;
use crate::agent::{Agent, AgentEnv, AgentEvent, AgentSettings, Decision, SendOptions};
use crate::cancel::CancelToken;
use crate::graph::PrunePolicy;
use crate::llm::{ProxyConfig, ProxyModel, RetryPolicy};
use crate::mcp::{McpServers, ProxyRelay};
use crate::store::{schema, Db, IdbBackend, StoreCheckpointer};
use crate::tools::{ProxyWeb, ToolRegistry};

/// `wasm_bindgen_futures::future_to_promise` through one boxed future type:
/// called with each method's own future type, it compiles a copy per method
/// (about 2.6 KB of WASM each).
pub(super) fn future_to_promise(future: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
    let boxed: Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>> = Box::pin(future);
    wasm_bindgen_futures::future_to_promise(boxed)
}

#[wasm_bindgen(typescript_custom_section)]
const TS_AGENT: &'static str = r#"
/** How to open an agent. */
export interface AgentConfig {
  /** Base URL of the proxy's API, e.g. "/api" or "https://host/api". */
  proxyUrl: string;
  /** Bearer token, when the proxy requires one (ATELIER_CLIENT_TOKEN). */
  clientToken?: string;
  /** IndexedDB database name (default "atelier-agent"). */
  dbName?: string;
  /** Initial settings (merged over the defaults and the stored ones). */
  settings?: SettingsPatch;
  /** The page's own tools, offered to the model beside the built-in ones (see `HostTool`). */
  tools?: HostTool[];
  /**
   * Decides each tool call (built-in or the page's) before the tool's own approval: "approve" runs it
   * without a review, "deny" refuses it (the model is told, with `reason`), "ask" asks the person (unless
   * they approved the tool for the session); nothing leaves it to the settings and the tool. A throw
   * counts as "ask". A call that would send project text to a third party after web material came in is
   * always reviewed, whatever this says.
   */
  approve?: (call: ToolCallInfo) => ApprovalAnswer | Promise<ApprovalAnswer>;
  /**
   * Offer the tools of the MCP servers the proxy relays (`ATELIER_MCP_SERVERS`) to the model (default true).
   * False: no server is contacted.
   */
  mcp?: boolean;
}
/**
 * A change of settings: the fields given replace the current ones (a partial `compression` changes only its
 * fields; `mcp`, when given, is the new map, each server's switches with their defaults).
 */
export type SettingsPatch = Partial<Omit<AgentSettings, "compression" | "mcp" | "contextWindow" | "contextWindowSource">> & {
  compression?: Partial<CompressionSettings>;
  mcp?: Record<string, Partial<McpServerSettings>>;
  /** A number of tokens (the person's), or "auto": the window the proxy reports for the main model. */
  contextWindow?: number | "auto";
};
/** The agent's settings. */
export interface AgentSettings {
  /** Model or proxy alias for answers and edits (default "main"). */
  mainModel: string;
  /** Model or proxy alias for routing, search optimisation, memory (default "sub"). */
  subModel: string;
  /** Per-tool approval overrides: tool name → ask first? */
  approvals: Record<string, boolean>;
  /** Artifacts shorter than this (UTF-16 units) are injected whole. */
  fullThreshold: number;
  longTermMemory: boolean;
  recursionLimit: number;
  /** Characters of one web page the model is given (default 60000; the artifact keeps the page). */
  pageChars: number;
  /** Read-only tool calls of one step run at once, at most this many (default 4; 1 runs them one after another). */
  parallelReads: number;
  /** The main model's context window in tokens, in effect: a request estimated above it is not sent (`context_overflow`).
   *  With contextWindowSource "auto" (the default) the window the proxy reports for the main model at each turn's
   *  start (what its server really processes), else 32768. */
  contextWindow: number;
  /** Where contextWindow comes from: "auto" (the proxy) or "person" (a number given in updateSettings). */
  contextWindowSource: "auto" | "person";
  /** When the older conversation is summarised (a partial object changes only the fields it names). */
  compression: CompressionSettings;
  /** The model a `delegate` child runs on: "sub" (default) or "main". */
  delegationModel: "sub" | "main";
  /** Update the project's continuity notes after a run with an approved chapter edit (default true). */
  continuityMemory: boolean;
  /** The person's switches for the relayed MCP servers, by server name (a server not listed is on, with every tool). */
  mcp: Record<string, McpServerSettings>;
  /** `search` also ranks by meaning when the proxy has an embedding model (default true): the records' text
   *  goes to that model, through the proxy, in the background. Off: nothing is embedded, the search is by words. */
  searchByMeaning: boolean;
}
/** The person's switches for one relayed MCP server. */
export interface McpServerSettings {
  /** Off: the server is not contacted and its tools are not offered (default true). */
  enabled: boolean;
  /** Tools by the server's name for them: false turns one off (not offered to the model). */
  tools: Record<string, boolean>;
}
/** A relayed MCP server, as `mcpServers()` reports it. */
export interface McpServerInfo {
  /** Its name on the proxy (`/api/mcp/<name>`), the key of the `mcp` setting. */
  name: string;
  /** "off": turned off in the settings (not contacted); "error": it answered, but not with its tools. */
  status: "ready" | "unreachable" | "error" | "off";
  /** Why it is not ready, or null. */
  problem: string | null;
  /** Its tools in name order (when it is not ready, those it had: not offered). */
  tools: McpToolInfo[];
}
/** A tool of a relayed MCP server. */
export interface McpToolInfo {
  /** The server's name for it, the key of `mcp[server].tools`. */
  name: string;
  description: string;
  /** `readOnlyHint`: runs with the other reads of a step, no approval; otherwise it asks like an edit (unless `destructiveHint: false`). */
  readOnly: boolean;
  /** The person's switch for it. */
  enabled: boolean;
  /** The name the model calls it by (`mcp_<server>_<tool>`), the key of `approvals`. */
  agentName: string;
}
/** Context compression: before a main-model call, the sub model summarises all but the newest steps. */
export interface CompressionSettings {
  /** Default true. */
  enabled: boolean;
  /** Compress when a request would exceed this share of contextWindow (default 0.6). */
  tokenRatio: number;
  /** ... or this share when the last message is a heavy tool result: a page, search, chapter or artifact (default 0.4). */
  heavyToolRatio: number;
  /** ... or after this many main-model calls since the last compression (default 30; 0: never by count). */
  turnLimit: number;
  /** Newest steps kept word for word: a person's message, or a model call with its tool results (default 5). */
  keepTurns: number;
}
export interface RunOptions {
  /** Tools on (default false: plain chat with every active artifact injected whole). */
  agentMode?: boolean;
  signal?: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
}
export type Phase = "idle" | "planning" | "researching" | "answering" | "memorizing";
export type Strategy = "chat_only" | "general_agent" | "writing";
export type AgentEvent =
  | { type: "phase"; phase: Phase }
  | { type: "node"; node: string }
  | { type: "active_tool"; tool: string | null }
  | { type: "content"; text: string }
  /** A tool result was kept as an artifact, or a delegate wrote one. */
  | { type: "artifact"; data: { id: string; action: "created"; title: string } }
  | { type: "warning"; message: string }
  | { type: "info"; name: "routed"; data: { strategy: Strategy; reasoning: string } }
  | { type: "info"; name: "search_optimized"; data: { from: string[]; query: string } }
  | { type: "info"; name: "changed"; data: { tool: string; target: EditTarget } }
  | { type: "info"; name: "memory"; data: { id: string; date: string; summary: string } }
  /** An early final answer broke the strategy's completion rule; the model was told what is missing. */
  | { type: "info"; name: "nudged"; data: { rule: "read_first" | "needs_sources" } }
  /** A project's continuity notes gained entries (per note). */
  | { type: "info"; name: "continuity"; data: { projectId: string; sectionId: string; appended: number[] } }
  /** What the session knows before a model call: local reads, web searches and pages, changes made. */
  | { type: "facts"; reads: number; web: number; changes: number }
  /** A delegate child's progress (callId: the delegate call's id; phase: started, step, wrote, stopped, done, incomplete). */
  | { type: "delegate"; callId: string; phase: "started" | "step" | "wrote" | "stopped" | "done" | "incomplete"; detail: string }
  /** How far a running call is, as its MCP server reports it (progress of total when known; message: the server's words, at most 200 characters). */
  | { type: "progress"; callId: string; tool: string; progress: number; total: number | null; message: string | null }
  /** A main-model call's token counts as the upstream reported them (cachedTokens: served from its prompt cache). */
  | { type: "usage"; promptTokens: number; completionTokens: number; cachedTokens: number }
  /** The older conversation was summarised before a model call (estimated tokens of that request before and after). */
  | { type: "compressed"; reason: "token_threshold" | "heavy_tool" | "turn_limit"; tokensBefore: number; tokensAfter: number };
/** What `updateContinuity` appended: entries per note (Chapter summaries, Glossary, Motifs and metaphors, Cross references). */
export interface ContinuityUpdate { projectId: string; sectionId: string; appended: [number, number, number, number] }
/** What an edit changes. */
export interface EditTarget { kind: "section" | "artifact"; id: string; title: string }
/** What a paused run asks the person to review. */
export interface ReviewPayload {
  toolCallId: string;
  tool: string;
  /** The call's arguments in full (pretty JSON): what will run if approved. */
  arguments: string;
  /** Why a network call was held for approval (web content in the run), or null. */
  reason: string | null;
  target: EditTarget | null;
  /** Unified diff of the change (text edits). */
  diff: string | null;
  /** How the edits were obtained. */
  path: string | null;
}
export interface RunResult {
  status: "completed" | "interrupted" | "aborted";
  /** The turn's Markdown stream (```thought, ```plan and ```tool blocks, then the answer). */
  content: string;
  review: ReviewPayload | null;
  strategy: Strategy | null;
}
/**
 * Where a session's run stands: idle, waiting for a review, unfinished
 * (the tab closed or crashed mid-run, or it was aborted: `continueRun`
 * goes on from its last completed step, `send` starts a new turn instead),
 * or running right now (in another tab, or another call in this one).
 */
export type RunState =
  | { state: "idle" }
  | { state: "review"; review: ReviewPayload }
  | { state: "unfinished"; node: string }
  | { state: "running" };
/** A tool as the settings show it (for per-tool approval toggles). */
export interface ToolInfo {
  name: string;
  description: string;
  /** "general": web, artifacts, thinking, reading projects; "manuscript": changes chapters; "plot": builds the plot. */
  group: "general" | "manuscript" | "plot";
  readOnly: boolean;
  /** Asks the person first unless `settings().approvals` says otherwise. */
  needsApprovalByDefault: boolean;
}
"#;

#[wasm_bindgen]
extern "C" {
    /// `RunOptions` as it arrives from JS.
    #[wasm_bindgen(typescript_type = "RunOptions")]
    pub type RunOptionsJs;
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Config {
    proxy_url: String,
    #[serde(default)]
    client_token: Option<String>,
    #[serde(default)]
    db_name: Option<String>,
    #[serde(default)]
    settings: Option<serde_json::Value>,
    #[serde(default)]
    mcp: Option<bool>,
}

/// The in-browser agent.
///
/// ```js
/// const agent = await Agent.open({ proxyUrl: "/api" });
/// const result = await agent.send("session-1", "Hello!", { agentMode: true, onEvent: console.log });
/// ```
#[wasm_bindgen(js_name = Agent)]
pub struct JsAgent {
    pub(super) agent: Rc<Agent>,
    pub(super) db: Db,
    /// The IndexedDB connection (for other tabs' change notices).
    backend: Rc<IdbBackend>,
    /// Search by meaning, when the proxy has an embedding model.
    pub(super) meaning: super::meaning::Meaning,
}

/// An abort listener to remove when the run ends.
type AbortWiring = (web_sys::AbortSignal, Closure<dyn FnMut()>);

/// Reads `RunOptions`: the flags, the abort signal (wired to a token) and
/// the event callback.
fn run_options(options: &JsValue) -> Result<(SendOptions, Option<AbortWiring>), JsValue> {
    let given = !options.is_undefined() && !options.is_null();
    let agent_mode =
        given && js_sys::Reflect::get(options, &"agentMode".into()).ok().and_then(|v| v.as_bool()) == Some(true);
    let cancel = CancelToken::new();
    let mut wiring = None;
    if given {
        let signal = js_sys::Reflect::get(options, &"signal".into()).unwrap_or(JsValue::UNDEFINED);
        if let Ok(signal) = signal.dyn_into::<web_sys::AbortSignal>() {
            if signal.aborted() {
                cancel.cancel();
            }
            let token = cancel.clone();
            let on_abort = Closure::<dyn FnMut()>::new(move || token.cancel());
            signal.add_event_listener_with_callback("abort", on_abort.as_ref().unchecked_ref())?;
            wiring = Some((signal, on_abort));
        }
    }
    let callback =
        given.then(|| js_sys::Reflect::get(options, &"onEvent".into()).ok()?.dyn_into::<Function>().ok()).flatten();
    let on_event = callback.map(|f| {
        Rc::new(move |event: &AgentEvent| {
            if let Ok(value) = to_js(event) {
                // A throwing listener must not break the run.
                if let Err(e) = f.call1(&JsValue::NULL, &value) {
                    web_sys::console::warn_2(&"atelier-agent: onEvent threw".into(), &e);
                }
            }
        }) as crate::agent::EventListener
    });
    Ok((SendOptions { agent_mode, cancel, on_event }, wiring))
}

fn unwire(wiring: Option<AbortWiring>) {
    if let Some((signal, closure)) = wiring {
        let _ = signal.remove_event_listener_with_callback("abort", closure.as_ref().unchecked_ref());
    }
}

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// Opens the agent: the database (created or upgraded), the stored
    /// settings, and the proxy client.
    #[wasm_bindgen(unchecked_return_type = "Promise<Agent>")]
    pub fn open(#[wasm_bindgen(unchecked_param_type = "AgentConfig")] config: JsValue) -> Promise {
        future_to_promise(async move {
            let host_tools = super::host::tools(&config)?;
            let policy = super::host::policy(&config)?;
            let config: Config = from_js("AgentConfig must be { proxyUrl: string, ... }", config)?;
            let name = config.db_name.clone().unwrap_or_else(|| schema::DB_NAME.to_owned());
            let idb = Rc::new(IdbBackend::open(&name).await.map_err(error::store)?);
            let backend: Rc<dyn crate::store::Backend> = idb.clone();
            let db = Db::new(backend.clone());
            let mut settings = AgentSettings::from_stored(db.setting("agent").await.map_err(error::store)?);
            if let Some(overrides) = config.settings {
                settings = settings.merged(&overrides).map_err(|e| error::invalid_argument("settings", e))?;
            }
            let model = ProxyModel::new(ProxyConfig {
                base_url: config.proxy_url.clone(),
                client_token: config.client_token.clone(),
                retry: RetryPolicy::default(),
            });
            let mcp = (config.mcp != Some(false)).then(|| {
                let relay =
                    ProxyRelay { proxy_url: config.proxy_url.clone(), client_token: config.client_token.clone() };
                Rc::new(McpServers::new(Box::new(relay)))
            });
            let meaning = super::meaning::Meaning::new(&name, &config.proxy_url, config.client_token.clone());
            let web = ProxyWeb { base_url: config.proxy_url, client_token: config.client_token };
            let env = AgentEnv {
                scope: name.clone(),
                db: db.clone(),
                model: Rc::new(model),
                web: Rc::new(web),
                tools: ToolRegistry::standard(),
                settings: RefCell::new(settings),
                policy,
                mcp,
            };
            let checkpointer = Rc::new(StoreCheckpointer::new(backend, PrunePolicy::default()));
            let agent = Agent::with_tools(env, checkpointer, host_tools).map_err(error::agent)?;
            Ok(JsAgent { agent: Rc::new(agent), db, backend: idb, meaning }.into())
        })
    }

    /// Runs one turn of `sessionId` with the person's `input`.
    #[wasm_bindgen(unchecked_return_type = "Promise<RunResult>")]
    pub fn send(
        &self,
        #[wasm_bindgen(js_name = sessionId)] session_id: String,
        input: String,
        opts: Option<RunOptionsJs>,
    ) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move {
            let (options, wiring) = run_options(&opts.map(JsValue::from).unwrap_or(JsValue::UNDEFINED))?;
            let result = agent.send(&session_id, &input, options).await;
            unwire(wiring);
            to_js(&result.map_err(error::agent)?)
        })
    }

    /// Answers the session's pending review and continues the run. With
    /// `grant: "session"`, an approval also covers the tool's later calls in
    /// the session (see `grants`).
    #[wasm_bindgen(unchecked_return_type = "Promise<RunResult>")]
    pub fn resume(
        &self,
        #[wasm_bindgen(js_name = sessionId)] session_id: String,
        #[wasm_bindgen(unchecked_param_type = "{ approved: boolean; reason?: string; grant?: \"session\" }")]
        decision: JsValue,
        opts: Option<RunOptionsJs>,
    ) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move {
            let opts = opts.map(JsValue::from).unwrap_or(JsValue::UNDEFINED);
            let decision = Decision::from_value(&super::convert::value_from_js("decision", decision)?)
                .map_err(|e| error::invalid_argument("decision", e))?;
            let (options, wiring) = run_options(&opts)?;
            let result = agent.resume(&session_id, decision, options).await;
            unwire(wiring);
            to_js(&result.map_err(error::agent)?)
        })
    }

    /// Continues a run that stopped before it finished (closed tab, crash,
    /// abort) at its last completed step; calls whose effects were recorded
    /// are not run again. Rejects with `review_pending` while a review waits
    /// (answer it with `resume`) and `nothing_to_resume` when nothing is unfinished.
    #[wasm_bindgen(js_name = continueRun, unchecked_return_type = "Promise<RunResult>")]
    pub fn continue_run(
        &self,
        #[wasm_bindgen(js_name = sessionId)] session_id: String,
        opts: Option<RunOptionsJs>,
    ) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move {
            let (options, wiring) = run_options(&opts.map(JsValue::from).unwrap_or(JsValue::UNDEFINED))?;
            let result = agent.continue_run(&session_id, options).await;
            unwire(wiring);
            to_js(&result.map_err(error::agent)?)
        })
    }

    /// Adds the person's words to the session's running turn (in any tab):
    /// stored at once and given to the model before its next call. Rejects
    /// with `not_running` when no run works on the session.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn interject(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String, text: String) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move {
            agent.interject(&session_id, &text).await.map_err(error::agent)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Appends what a chapter adds to its project's continuity notes (the
    /// sub model proposes entries; those already there are left out).
    #[wasm_bindgen(js_name = updateContinuity, unchecked_return_type = "Promise<ContinuityUpdate>")]
    pub fn update_continuity(&self, #[wasm_bindgen(js_name = sectionId)] section_id: String) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move { to_js(&agent.update_continuity(&section_id).await.map_err(error::agent)?) })
    }

    /// A project's continuity notes (append-only artifacts), those that exist.
    #[wasm_bindgen(js_name = continuityNotes, unchecked_return_type = "Promise<Artifact[]>")]
    pub fn continuity_notes(&self, #[wasm_bindgen(js_name = projectId)] project_id: String) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move { to_js(&agent.continuity_notes(&project_id).await.map_err(error::agent)?) })
    }

    /// Where the session's run stands (also after a reload).
    #[wasm_bindgen(js_name = runState, unchecked_return_type = "Promise<RunState>")]
    pub fn run_state(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move { to_js(&agent.run_state(&session_id).await.map_err(error::agent)?) })
    }

    /// Calls `listener` whenever another tab (or window) of this app commits
    /// a write to the same database, with the object stores it changed
    /// ("sessionArtifacts", "manuscripts", "checkpoints", ...): refresh what
    /// you show. Returns the function that stops listening.
    #[wasm_bindgen(js_name = onChange, unchecked_return_type = "() => void")]
    pub fn on_change(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(change: { stores: string[] }) => void")] listener: Function,
    ) -> Function {
        self.backend.on_change(&listener)
    }

    /// The review a session waits for (also after a reload), or null.
    #[wasm_bindgen(js_name = pendingReview, unchecked_return_type = "Promise<ReviewPayload | null>")]
    pub fn pending_review(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move { to_js(&agent.pending_review(&session_id).await.map_err(error::agent)?) })
    }

    /// The agent's tools, grouped for the settings (per-tool approval toggles).
    #[wasm_bindgen(unchecked_return_type = "ToolInfo[]")]
    pub fn tools(&self) -> Result<JsValue, JsValue> {
        to_js(&self.agent.env().tools.infos())
    }

    /// The MCP servers the proxy relays: their status (checked again when
    /// the last check is older than 30 s) and tools, with the person's
    /// switches (none when opened with `mcp: false`).
    ///
    /// ```js
    /// for (const server of await agent.mcpServers()) console.log(server.name, server.status, server.tools.length);
    /// ```
    #[wasm_bindgen(js_name = mcpServers, unchecked_return_type = "Promise<McpServerInfo[]>")]
    pub fn mcp_servers(&self) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move { to_js(&agent.mcp_servers().await) })
    }

    /// The current settings.
    #[wasm_bindgen(unchecked_return_type = "AgentSettings")]
    pub fn settings(&self) -> Result<JsValue, JsValue> {
        to_js(&*self.agent.env().settings.borrow())
    }

    /// Changes settings (merged over the current ones) and stores them.
    #[wasm_bindgen(js_name = updateSettings, unchecked_return_type = "Promise<AgentSettings>")]
    pub fn update_settings(&self, #[wasm_bindgen(unchecked_param_type = "SettingsPatch")] patch: JsValue) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move {
            let patch = super::convert::value_from_js("settings", patch)?;
            to_js(&agent.update_settings(&patch).await.map_err(error::agent)?)
        })
    }
}
