//! The `Agent` JS class: opens the browser database and the proxy client,
//! runs turns, answers reviews, and manages session artifacts.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use js_sys::{Function, Promise};
use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::convert::{from_js, to_js};
use super::error;
use crate::agent::{Agent, AgentEnv, AgentEvent, AgentSettings, SendOptions};
use crate::cancel::CancelToken;
use crate::graph::PrunePolicy;
use crate::llm::{ProxyConfig, ProxyModel, RetryPolicy};
use crate::store::{schema, Db, IdbBackend, StoreCheckpointer};
use crate::tools::{ProxyWeb, ToolRegistry};

/// `wasm_bindgen_futures::future_to_promise` through one boxed future type:
/// called with each method's own future type, it compiles a copy per method
/// (about 2.6 KB of WASM each).
fn future_to_promise(future: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
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
  settings?: Partial<AgentSettings>;
}
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
  | { type: "artifact"; data: { id: string; action: string; title?: string } }
  | { type: "warning"; message: string }
  | { type: "info"; name: string; data: unknown };
/** What a paused run asks the person to review. */
export interface ReviewPayload {
  toolCallId: string;
  tool: string;
  /** The call's arguments in full (pretty JSON): what will run if approved. */
  arguments: string;
  /** Why a network call was held for approval (web content in the run), or null. */
  reason: string | null;
  target: { kind: "section" | "artifact"; id: string; title: string } | null;
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
export type ArtifactType = "web_search" | "project_data" | "text";
export type Lifecycle = "overwritable" | "append_only" | "static";
export interface Artifact {
  id: string;
  sessionId: string;
  type: ArtifactType;
  title: string;
  content: string;
  isActive: boolean;
  createdAt: number;
  updatedAt: number;
  lifecycle: Lifecycle;
}
/** An artifact to import: a row from `listArtifacts` or from a Dexie app's `sessionArtifacts` table. */
export type ArtifactInput = Omit<Artifact, "lifecycle"> & { lifecycle?: Lifecycle };
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
/** A chat session (its artifacts, checkpoints and transcript share its id). */
export interface SessionInfo {
  id: string;
  /** The first line of its first message, until renamed. */
  title: string;
  createdAt: number;
  updatedAt: number;
}
/** One message as the conversation showed it. */
export interface TranscriptEntry {
  id: string;
  sessionId: string;
  role: "person" | "agent";
  /** The person's input, or the agent's Markdown stream for the turn. */
  text: string;
  /** For the agent: "completed", or "interrupted" while a review waits. */
  status?: "completed" | "interrupted";
  createdAt: number;
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
}

/// The in-browser agent.
///
/// ```js
/// const agent = await Agent.open({ proxyUrl: "/api" });
/// const result = await agent.send("session-1", "Hello!", { agentMode: true, onEvent: console.log });
/// ```
#[wasm_bindgen(js_name = Agent)]
pub struct JsAgent {
    agent: Rc<Agent>,
    db: Db,
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
            let config: Config = from_js("AgentConfig must be { proxyUrl: string, ... }", config)?;
            let name = config.db_name.clone().unwrap_or_else(|| schema::DB_NAME.to_owned());
            let backend = Rc::new(IdbBackend::open(&name).await.map_err(error::store)?);
            let db = Db::new(backend.clone());
            let mut settings = match db.setting("agent").await.map_err(error::store)? {
                Some(stored) => serde_json::from_value(stored).unwrap_or_default(),
                None => AgentSettings::default(),
            };
            if let Some(overrides) = config.settings {
                let mut merged = serde_json::to_value(&settings).unwrap_or_default();
                if let (Some(base), Some(extra)) = (merged.as_object_mut(), overrides.as_object()) {
                    for (k, v) in extra {
                        base.insert(k.clone(), v.clone());
                    }
                }
                settings = from_js("settings", to_js(&merged)?)?;
            }
            let model = ProxyModel::new(ProxyConfig {
                base_url: config.proxy_url.clone(),
                client_token: config.client_token.clone(),
                retry: RetryPolicy::default(),
            });
            let web = ProxyWeb { base_url: config.proxy_url, client_token: config.client_token };
            let env = AgentEnv {
                scope: name.clone(),
                db: db.clone(),
                model: Rc::new(model),
                web: Rc::new(web),
                tools: ToolRegistry::standard(),
                settings: RefCell::new(settings),
            };
            let checkpointer = Rc::new(StoreCheckpointer::new(backend, PrunePolicy::default()));
            Ok(JsAgent { agent: Rc::new(Agent::new(env, checkpointer)), db }.into())
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

    /// Answers the session's pending review and continues the run.
    #[wasm_bindgen(unchecked_return_type = "Promise<RunResult>")]
    pub fn resume(
        &self,
        #[wasm_bindgen(js_name = sessionId)] session_id: String,
        #[wasm_bindgen(unchecked_param_type = "{ approved: boolean; reason?: string }")] decision: JsValue,
        opts: Option<RunOptionsJs>,
    ) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move {
            let opts = opts.map(JsValue::from).unwrap_or(JsValue::UNDEFINED);
            let decision: serde_json::Value =
                from_js("decision must be { approved: boolean, reason?: string }", decision)?;
            if !decision.get("approved").is_some_and(serde_json::Value::is_boolean) {
                return Err(error::invalid_argument("decision", "`approved` must be a boolean"));
            }
            let (options, wiring) = run_options(&opts)?;
            let result = agent.resume(&session_id, decision, options).await;
            unwire(wiring);
            to_js(&result.map_err(error::agent)?)
        })
    }

    /// The review a session waits for (also after a reload), or null.
    #[wasm_bindgen(js_name = pendingReview, unchecked_return_type = "Promise<ReviewPayload | null>")]
    pub fn pending_review(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let agent = self.agent.clone();
        future_to_promise(async move { to_js(&agent.pending_review(&session_id).await.map_err(error::agent)?) })
    }

    /// The session's artifacts, newest first.
    #[wasm_bindgen(js_name = listArtifacts, unchecked_return_type = "Promise<Artifact[]>")]
    pub fn list_artifacts(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.artifacts(&session_id).await.map_err(error::store)?) })
    }

    /// The agent's tools, grouped for the settings (per-tool approval toggles).
    #[wasm_bindgen(unchecked_return_type = "ToolInfo[]")]
    pub fn tools(&self) -> Result<JsValue, JsValue> {
        to_js(&self.agent.env().tools.infos())
    }

    /// Every session, most recently used first (a session appears with its
    /// first message).
    #[wasm_bindgen(unchecked_return_type = "Promise<SessionInfo[]>")]
    pub fn sessions(&self) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.sessions().await.map_err(error::store)?) })
    }

    /// A session's messages as the conversation showed them, oldest first.
    #[wasm_bindgen(unchecked_return_type = "Promise<TranscriptEntry[]>")]
    pub fn transcript(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.transcript(&session_id).await.map_err(error::store)?) })
    }

    /// Renames a session.
    #[wasm_bindgen(js_name = renameSession, unchecked_return_type = "Promise<void>")]
    pub fn rename_session(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String, title: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.rename_session(&session_id, &title).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes a session with its transcript, artifacts and checkpoints.
    #[wasm_bindgen(js_name = deleteSession, unchecked_return_type = "Promise<void>")]
    pub fn delete_session(&self, #[wasm_bindgen(js_name = sessionId)] session_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_session(&session_id).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Stores artifacts (a backup from `listArtifacts`, a Dexie app's rows),
    /// replacing any with the same id, in one transaction; a record that is
    /// not an artifact refuses the whole import (code `invalid_argument`,
    /// naming it). Resolves to the number stored.
    #[wasm_bindgen(js_name = importArtifacts, unchecked_return_type = "Promise<number>")]
    pub fn import_artifacts(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ArtifactInput[]")] artifacts: JsValue,
    ) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let records: Vec<serde_json::Value> = from_js("an array of artifacts", artifacts)?;
            Ok(JsValue::from(db.import_artifacts(&records).await.map_err(error::store)? as u32))
        })
    }

    /// Turns an artifact's context injection on or off.
    #[wasm_bindgen(js_name = setArtifactActive, unchecked_return_type = "Promise<void>")]
    pub fn set_artifact_active(&self, id: String, active: bool) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.set_artifact_active(&id, active).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_DATA: &'static str = r#"
export interface Project { id: string; title: string; description: string; createdAt: number; updatedAt: number }
export interface ManuscriptSection {
  id: string; projectId: string; parentId: string | null; title: string; order: number; content: string;
  createdAt: number; updatedAt: number;
}
/** What `undo` restored. */
export interface UndoneChange { store: string; recordId: string; reason: string; createdAt: number }
"#;

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// The person's projects, most recently changed first.
    #[wasm_bindgen(unchecked_return_type = "Promise<Project[]>")]
    pub fn projects(&self) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.projects().await.map_err(error::store)?) })
    }

    /// Creates a project.
    #[wasm_bindgen(js_name = createProject, unchecked_return_type = "Promise<Project>")]
    pub fn create_project(&self, title: String, description: Option<String>) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            to_js(&db.create_project(&title, description.as_deref().unwrap_or("")).await.map_err(error::store)?)
        })
    }

    /// A project's chapters and sections, in order.
    #[wasm_bindgen(unchecked_return_type = "Promise<ManuscriptSection[]>")]
    pub fn sections(&self, #[wasm_bindgen(js_name = projectId)] project_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.sections(&project_id).await.map_err(error::store)?) })
    }

    /// Adds a chapter (or a section under `parentId`) at the end.
    #[wasm_bindgen(js_name = addSection, unchecked_return_type = "Promise<ManuscriptSection>")]
    pub fn add_section(
        &self,
        #[wasm_bindgen(js_name = projectId)] project_id: String,
        title: String,
        content: Option<String>,
        #[wasm_bindgen(js_name = parentId)] parent_id: Option<String>,
    ) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let section = db
                .add_section(&project_id, parent_id.as_deref(), &title, content.as_deref().unwrap_or(""))
                .await
                .map_err(error::store)?;
            to_js(&section)
        })
    }

    /// Saves a section the person edited (title and text); undoable.
    #[wasm_bindgen(js_name = saveSection, unchecked_return_type = "Promise<void>")]
    pub fn save_section(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ManuscriptSection")] section: JsValue,
    ) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let mut section: crate::store::ManuscriptSection = from_js("a ManuscriptSection", section)?;
            section.updated_at = crate::platform::now_ms();
            db.save_section(&section, Some(crate::store::Origin::User), "edit").await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes a section and the sections under it.
    #[wasm_bindgen(js_name = deleteSection, unchecked_return_type = "Promise<void>")]
    pub fn delete_section(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_section(&id, Some(crate::store::Origin::User)).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes an artifact (the person may delete static ones too).
    #[wasm_bindgen(js_name = deleteArtifact, unchecked_return_type = "Promise<void>")]
    pub fn delete_artifact(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_artifact(&id, crate::store::Origin::User).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Undoes the agent's last change (manuscript, plot or artifact), byte for
    /// byte; resolves to what was undone, or null when there is nothing.
    #[wasm_bindgen(unchecked_return_type = "Promise<UndoneChange | null>")]
    pub fn undo(&self) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let undone = db.undo_last(crate::store::Origin::Agent).await.map_err(error::store)?;
            to_js(&undone.map(|r| {
                serde_json::json!({ "store": r.store, "recordId": r.record_id, "reason": r.reason, "createdAt": r.created_at })
            }))
        })
    }

    /// The current settings.
    #[wasm_bindgen(unchecked_return_type = "AgentSettings")]
    pub fn settings(&self) -> Result<JsValue, JsValue> {
        to_js(&*self.agent.env().settings.borrow())
    }

    /// Changes settings (merged over the current ones) and stores them.
    #[wasm_bindgen(js_name = updateSettings, unchecked_return_type = "Promise<AgentSettings>")]
    pub fn update_settings(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Partial<AgentSettings>")] patch: JsValue,
    ) -> Promise {
        let agent = self.agent.clone();
        let db = self.db.clone();
        future_to_promise(async move {
            let patch: serde_json::Value = from_js("settings", patch)?;
            let mut merged = serde_json::to_value(&*agent.env().settings.borrow()).unwrap_or_default();
            if let (Some(base), Some(extra)) = (merged.as_object_mut(), patch.as_object()) {
                for (k, v) in extra {
                    base.insert(k.clone(), v.clone());
                }
            }
            let settings: AgentSettings =
                serde_json::from_value(merged.clone()).map_err(|e| error::invalid_argument("settings", e))?;
            db.set_setting("agent", merged).await.map_err(error::store)?;
            *agent.env().settings.borrow_mut() = settings.clone();
            to_js(&settings)
        })
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_MORE: &'static str = r#"
export interface PlotItem {
  id: string; projectId: string; parentId: string | null; title: string; summary: string; order: number;
  createdAt: number; updatedAt: number;
}
export interface Memory { id: string; date: string; summary: string; tags: string[]; createdAt: number }
/** A whole project as one JSON document (`exportProject` / `importProject`). */
export interface ProjectExport {
  format: "atelier-agent/project"; version: 1; project: Project; manuscripts: ManuscriptSection[]; plots: PlotItem[];
}
"#;

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// Replaces an artifact's content as the person edited it (refused for
    /// static artifacts; append-only ones may only grow at the end).
    #[wasm_bindgen(js_name = editArtifact, unchecked_return_type = "Promise<Artifact>")]
    pub fn edit_artifact(&self, id: String, content: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let mut artifact = db.artifact(&id).await.map_err(error::store)?;
            crate::store::check_lifecycle(&artifact, &content).map_err(error::store)?;
            artifact.content = content;
            artifact.updated_at = crate::platform::now_ms();
            db.save_artifact(&artifact, Some(crate::store::Origin::User), "edit").await.map_err(error::store)?;
            to_js(&artifact)
        })
    }

    /// A project's plot items, in order.
    #[wasm_bindgen(unchecked_return_type = "Promise<PlotItem[]>")]
    pub fn plot(&self, #[wasm_bindgen(js_name = projectId)] project_id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.plot(&project_id).await.map_err(error::store)?) })
    }

    /// Creates or updates a plot item (give a new `id` to create one).
    #[wasm_bindgen(js_name = savePlotItem, unchecked_return_type = "Promise<void>")]
    pub fn save_plot_item(&self, #[wasm_bindgen(unchecked_param_type = "PlotItem")] item: JsValue) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let mut item: crate::store::PlotItem = from_js("a PlotItem", item)?;
            db.project(&item.project_id).await.map_err(error::store)?;
            item.updated_at = crate::platform::now_ms();
            db.save_plot_item(&item, Some(crate::store::Origin::User), "edit").await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes a plot item and everything under it.
    #[wasm_bindgen(js_name = deletePlotItem, unchecked_return_type = "Promise<void>")]
    pub fn delete_plot_item(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_plot_item(&id, Some(crate::store::Origin::User)).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes a project with its manuscript and plot.
    #[wasm_bindgen(js_name = deleteProject, unchecked_return_type = "Promise<void>")]
    pub fn delete_project(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            db.delete_project(&id).await.map_err(error::store)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// A whole project as one JSON document (backup, moving browsers).
    #[wasm_bindgen(js_name = exportProject, unchecked_return_type = "Promise<ProjectExport>")]
    pub fn export_project(&self, id: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.export_project(&id).await.map_err(error::store)?) })
    }

    /// Restores an exported project (replacing one with the same id).
    #[wasm_bindgen(js_name = importProject, unchecked_return_type = "Promise<Project>")]
    pub fn import_project(&self, #[wasm_bindgen(unchecked_param_type = "ProjectExport")] document: JsValue) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move {
            let document: serde_json::Value = from_js("a ProjectExport", document)?;
            to_js(&db.import_project(&document).await.map_err(error::store)?)
        })
    }

    /// Dates (YYYY-MM-DD) that have long-term memories.
    #[wasm_bindgen(js_name = memoryDates, unchecked_return_type = "Promise<string[]>")]
    pub fn memory_dates(&self) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.memory_dates().await.map_err(error::store)?) })
    }

    /// Memories from `start` to `end` (inclusive, YYYY-MM-DD).
    #[wasm_bindgen(unchecked_return_type = "Promise<Memory[]>")]
    pub fn memories(&self, start: String, end: String) -> Promise {
        let db = self.db.clone();
        future_to_promise(async move { to_js(&db.memories_between(&start, &end).await.map_err(error::store)?) })
    }
}
