//! Tools the host application defines (in JavaScript: `Agent.open({ tools })`),
//! as ordinary registry tools: the declaration says what the tool is
//! (read-only, its approval, whether it sends data to a third party, whether
//! its result is kept), the arguments are checked against its JSON Schema
//! before it runs, and a [`HostRunner`] (the JS binding, or a Rust closure
//! in tests) runs it. Everything else — receipts, approval policy and
//! grants, the outbound rule, parallel reads, artifacts — is the agent's
//! usual treatment of any tool.

use std::rc::Rc;

use async_trait::async_trait;
use serde_json::Value;

use super::{About, Outbound, Tool, ToolContext, ToolError, ToolOutput, Toolsets};
use crate::cancel::{until_cancelled, CancelToken};
use crate::error::ErrorCode;
use crate::llm::ToolSpec;
use crate::store::ArtifactType;

/// Whether a call of a host tool asks the person first (before the
/// settings' per-tool choice and the host's approval policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostApproval {
    Never,
    Always,
    /// The runner decides per call ([`HostRunner::needs_approval`]).
    PerCall,
}

/// A host tool's declaration (the arguments of `Agent.open`'s `tools`).
#[derive(Debug, Clone)]
pub struct HostDeclaration {
    pub name: String,
    pub description: String,
    /// The JSON Schema of the arguments.
    pub parameters: Value,
    pub read_only: bool,
    /// `None`: "never" for a read-only tool, else "always".
    pub approval: Option<HostApproval>,
    /// It sends its arguments to a third party: the outbound rule judges it.
    pub sends_data: bool,
    /// Its results are kept as session artifacts, with this title (`Some("")`:
    /// the tool's name).
    pub keep: Option<String>,
    /// The strategies that offer it (default: every one that uses tools).
    pub toolsets: Toolsets,
}

impl HostDeclaration {
    /// A declaration from its JSON form (what `Agent.open` was given, its
    /// functions aside): `name`, `description`, `parameters`, `readOnly`,
    /// `approval` ("never", "always", "call": per call, or null),
    /// `sendsData`, `keep` (null, or a title: "" for the tool's name) and
    /// `strategies` (null, or of "general_agent" and "writing").
    pub fn read(d: &Value) -> Result<HostDeclaration, String> {
        let text = |key: &str| d.get(key).and_then(Value::as_str);
        let flag = |key: &str| d.get(key).and_then(Value::as_bool).unwrap_or(false);
        let name = text("name").unwrap_or_default().to_owned();
        let approval = match text("approval") {
            Some("never") => Some(HostApproval::Never),
            Some("always") => Some(HostApproval::Always),
            Some(_) => Some(HostApproval::PerCall),
            None => None,
        };
        let mut toolsets = Toolsets::ALL;
        if let Some(list) = d.get("strategies").and_then(Value::as_array) {
            toolsets = Toolsets::NONE;
            for strategy in list {
                toolsets = toolsets.with(match strategy.as_str() {
                    Some("general_agent") => Toolsets::RESEARCH,
                    Some("writing") => Toolsets::WRITING,
                    _ => return Err(format!("the strategies of {name} must be \"general_agent\" or \"writing\"")),
                });
            }
        }
        Ok(HostDeclaration {
            description: text("description").unwrap_or_default().to_owned(),
            parameters: d.get("parameters").cloned().unwrap_or_default(),
            read_only: flag("readOnly"),
            approval,
            sends_data: flag("sendsData"),
            keep: text("keep").map(str::to_owned),
            toolsets,
            name,
        })
    }
}

/// What a host tool's call runs for.
pub struct HostCall<'a> {
    pub session_id: &'a str,
    pub call_id: &'a str,
    /// Cancelled with the run: the runner passes it on (an `AbortSignal`).
    pub cancel: &'a CancelToken,
}

/// Runs a host tool's calls.
#[async_trait(?Send)]
pub trait HostRunner {
    /// Whether this call asks the person first (an approval decided per call).
    fn needs_approval(&self, args: &Value) -> bool;
    /// Runs the call: its result as text (a JSON value as its JSON text), or
    /// the message of what it threw.
    async fn execute(&self, args: &Value, call: HostCall<'_>) -> Result<String, String>;
}

/// A host tool.
pub struct HostTool {
    declaration: HostDeclaration,
    runner: Rc<dyn HostRunner>,
}

impl HostTool {
    /// A host tool, or why its declaration is refused (a schema that is not
    /// an object schema; the registry judges the name, see
    /// [`ToolRegistry::add`](super::ToolRegistry::add)).
    pub fn new(declaration: HostDeclaration, runner: Rc<dyn HostRunner>) -> Result<HostTool, String> {
        let name = &declaration.name;
        let kind = declaration.parameters.get("type");
        if !declaration.parameters.is_object() || kind.is_some_and(|t| t != "object") {
            return Err(format!("the parameters of {name} must be a JSON Schema of type \"object\""));
        }
        Ok(HostTool { declaration, runner })
    }

    fn approval(&self) -> HostApproval {
        let d = &self.declaration;
        d.approval.unwrap_or(if d.read_only { HostApproval::Never } else { HostApproval::Always })
    }
}

#[async_trait(?Send)]
impl Tool for HostTool {
    type Args = Value;

    fn name(&self) -> &str {
        &self.declaration.name
    }

    fn spec(&self) -> ToolSpec {
        let d = &self.declaration;
        ToolSpec::function(&d.name, &d.description, d.parameters.clone())
    }

    fn about(&self) -> About {
        let d = &self.declaration;
        About {
            read_only: d.read_only,
            approval: self.approval() != HostApproval::Never,
            persists: d.keep.as_ref().map(|_| ArtifactType::Text),
            toolsets: d.toolsets,
            ..About::READ
        }
    }

    fn parse(&self, args: &Value) -> Result<Value, ToolError> {
        match super::json_schema::violation(&self.declaration.parameters, args) {
            None => Ok(args.clone()),
            Some(message) => Err(ToolError::InvalidArguments { tool: self.declaration.name.clone(), message }),
        }
    }

    fn needs_approval(&self, args: &Value) -> bool {
        match self.approval() {
            HostApproval::Never => false,
            HostApproval::Always => true,
            HostApproval::PerCall => self.runner.needs_approval(args),
        }
    }

    fn sends(&self, args: &Value) -> Option<Outbound> {
        let d = &self.declaration;
        d.sends_data.then(|| Outbound::Data { to: d.name.clone(), text: args.to_string() })
    }

    async fn call(&self, args: &Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        let d = &self.declaration;
        let call = HostCall { session_id: &ctx.session_id, call_id: &ctx.call.id, cancel: &ctx.cancel };
        let run = self.runner.execute(args, call);
        let ran = until_cancelled(&ctx.cancel, run).await;
        if ctx.cancel.is_cancelled() {
            // However it ended (an `AbortError` thrown, or done just then),
            // the run stopped during it: its outcome is unknown.
            return Err(ToolError::failed(ErrorCode::Aborted, format!("{} was stopped with the run", d.name)));
        }
        let text = match ran {
            None => return Err(ToolError::failed(ErrorCode::Aborted, format!("{} was stopped with the run", d.name))),
            Some(Err(message)) => {
                return Err(ToolError::failed(ErrorCode::ToolFailed, format!("{} failed: {message}", d.name)))
            }
            Some(Ok(text)) if text.is_empty() => "(no result)".to_owned(),
            Some(Ok(text)) => text,
        };
        let output = ToolOutput::text(text);
        Ok(match d.keep.as_deref() {
            Some("") | None => output,
            Some(title) => output.titled(title),
        })
    }
}
