//! `AgentConfig.tools` and `AgentConfig.approve`: the host's tools and
//! approval policy, read by `js/host.js` and run through it. Converts only:
//! a tool is a `tools::host::HostTool` of the core, the policy an
//! `agent::ApprovalPolicy`.

use std::rc::Rc;

use async_trait::async_trait;
use js_sys::{Function, Promise};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::convert::to_js;
use super::error;
use crate::agent::{ApprovalPolicy, PolicyCall, Verdict};
use crate::tools::host::{HostCall, HostDeclaration, HostRunner, HostTool};
use crate::tools::AnyTool;

#[wasm_bindgen(typescript_custom_section)]
const TS_HOST: &'static str = r#"
/** What a host tool's `execute` is given besides the arguments. */
export interface HostToolContext {
  sessionId: string;
  callId: string;
  /** Aborted when the run is (the person pressed Stop, `RunOptions.signal`). */
  signal: AbortSignal;
}
/**
 * A tool the page gives the agent (`AgentConfig.tools`). Its arguments are
 * checked against `parameters` before `execute` runs; what it returns (a
 * string, or any JSON value) or throws goes back to the model.
 */
export interface HostTool<Args = Record<string, unknown>> {
  /** `[A-Za-z0-9_-]{1,64}`, not a built-in tool's name. */
  name: string;
  description: string;
  /** The JSON Schema of the arguments (`type: "object"`). */
  parameters: object;
  execute(args: Args, ctx: HostToolContext): unknown;
  /** No effects: runs with the other reads of a step, and asks no approval by default. */
  readOnly?: boolean;
  /** Whether a call asks the person first (default: "never" if readOnly, else "always"). */
  approval?: "never" | "always" | ((args: Args) => boolean);
  /** It sends its arguments to a third party: once web material is in the run, every call is reviewed. */
  sendsData?: boolean;
  /** Keep each result as a session artifact (titled `title`, or the tool's name). */
  keepResult?: boolean | { title?: string };
  /** The strategies that offer it (default: both that use tools). */
  strategies?: ("general_agent" | "writing")[];
}
/** A tool call as the approval policy sees it. */
export interface ToolCallInfo {
  sessionId: string;
  tool: string;
  arguments: unknown;
}
/** The approval policy's answer; nothing leaves the call to the settings and the tool's own `approval`. */
export type ApprovalAnswer = "approve" | "ask" | "deny" | { decision: "approve" | "ask" | "deny"; reason?: string } | undefined;
/** A tool the person approved for the rest of a session. */
export interface Grant {
  tool: string;
  createdAt: number;
}
"#;

#[wasm_bindgen(module = "/src/wasm/js/host.js")]
extern "C" {
    #[wasm_bindgen(js_name = readTools)]
    fn read_tools(tools: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = asksFirst)]
    fn asks_first(approval: &Function, args: &JsValue) -> bool;
    #[wasm_bindgen(js_name = runTool)]
    fn run_tool(execute: &Function, args: &JsValue, session_id: &str, call_id: &str, signal: &JsValue) -> Promise;
    #[wasm_bindgen(js_name = askPolicy)]
    fn ask_policy(policy: &Function, session_id: &str, tool: &str, args: &JsValue) -> Promise;
}

/// What a rejected promise of `host.js` said.
async fn text_of(promise: Promise) -> Result<String, String> {
    let text = |v: JsValue| v.as_string().unwrap_or_default();
    JsFuture::from(promise).await.map(text).map_err(text)
}

struct JsRunner {
    execute: Function,
    approval: Option<Function>,
}

#[async_trait(?Send)]
impl HostRunner for JsRunner {
    fn needs_approval(&self, args: &Value) -> bool {
        match (&self.approval, to_js(args)) {
            (Some(approval), Ok(args)) => asks_first(approval, &args),
            _ => true,
        }
    }

    async fn execute(&self, args: &Value, call: HostCall<'_>) -> Result<String, String> {
        let args = to_js(args).map_err(|_| "the arguments did not convert".to_owned())?;
        let controller = web_sys::AbortController::new().map_err(|_| "no AbortController".to_owned())?;
        let signal = controller.signal();
        call.cancel.on_cancel(move || controller.abort());
        text_of(run_tool(&self.execute, &args, call.session_id, call.call_id, &signal)).await
    }
}

/// `AgentConfig.tools` as registry tools (`invalid_argument` when one is not
/// a tool).
pub(super) fn tools(config: &JsValue) -> Result<Vec<Rc<dyn AnyTool>>, JsValue> {
    let given = js_sys::Reflect::get(config, &"tools".into()).unwrap_or(JsValue::UNDEFINED);
    let read = read_tools(&given);
    if let Some(problem) = read.as_string() {
        return Err(error::invalid_argument("AgentConfig.tools", problem));
    }
    let mut tools: Vec<Rc<dyn AnyTool>> = Vec::new();
    for entry in js_sys::Array::from(&read).iter() {
        let entry = js_sys::Array::from(&entry);
        let declared: Value = serde_json::from_str(&entry.get(0).as_string().unwrap_or_default()).unwrap_or_default();
        let runner = JsRunner { execute: entry.get(1).unchecked_into(), approval: entry.get(2).dyn_into().ok() };
        let tool = HostDeclaration::read(&declared).and_then(|d| HostTool::new(d, Rc::new(runner)));
        tools.push(Rc::new(tool.map_err(|e| error::invalid_argument("AgentConfig.tools", e))?));
    }
    Ok(tools)
}

struct JsPolicy(Function);

#[async_trait(?Send)]
impl ApprovalPolicy for JsPolicy {
    async fn decide(&self, call: PolicyCall<'_>) -> Result<Verdict, String> {
        let args = to_js(call.arguments).map_err(|_| "the arguments did not convert".to_owned())?;
        let answer = text_of(ask_policy(&self.0, call.session_id, call.tool, &args)).await?;
        Ok(match answer.as_str() {
            "approve" => Verdict::Approve,
            "ask" => Verdict::Ask,
            "" => Verdict::Default,
            denied => Verdict::Deny(denied.strip_prefix("deny:").filter(|r| !r.is_empty()).map(str::to_owned)),
        })
    }
}

/// `AgentConfig.approve`, if given (`invalid_argument` when not a function).
pub(super) fn policy(config: &JsValue) -> Result<Option<Rc<dyn ApprovalPolicy>>, JsValue> {
    let given = js_sys::Reflect::get(config, &"approve".into()).unwrap_or(JsValue::UNDEFINED);
    if given.is_undefined() || given.is_null() {
        return Ok(None);
    }
    let policy = given
        .dyn_into::<Function>()
        .map_err(|_| error::invalid_argument("AgentConfig.approve", "must be a function"))?;
    Ok(Some(Rc::new(JsPolicy(policy))))
}
