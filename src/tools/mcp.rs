//! The tools of the relayed MCP servers, as agent tools: one adapter,
//! [`McpAgentTool`], per server and tool, offered through the registry
//! ([`super::ToolRegistry::offer`]) so a call takes the path every call
//! takes (resolved once, the approval and the outbound rule, receipts,
//! parallel reads, its record).
//!
//! * The name is `mcp_<server>_<tool>` ([`crate::mcp::agent_tool_name`]),
//!   the schema the server's own.
//! * The annotations decide what the tool is: `readOnlyHint` → a read (it
//!   runs with the other reads of its step, and asks no one); otherwise a
//!   write, which asks the person first unless `destructiveHint: false`.
//! * What a call sends: its arguments go to the MCP server. With
//!   `openWorldHint` (the spec's default) the tool reaches beyond its
//!   server, and once quoted material is in the run the call always asks
//!   ([`Outbound::Data`]); with `openWorldHint: false` it asks when the
//!   arguments carry the person's project text ([`Outbound::Configured`]).
//! * The result comes from a server nobody vetted: it reaches the model
//!   fenced like a web page (which also exposes the run to the outbound
//!   rule); `isError` results are fenced too, and recorded as failed
//!   (`mcp_tool_error`). A failure of the exchange is a coded tool error; a
//!   server found gone is checked again at the next run's start.
//! * The server's progress notifications for a call become the run's
//!   `progress` events (the call's id, how far, the server's message).
//! * A tool whose server does not answer now, or that the person turned
//!   off, stays known but is not offered ([`Toolsets::NONE`]): a call the
//!   model still makes to it is answered with why (`mcp_unavailable`).

use std::rc::Rc;

use async_trait::async_trait;
use serde_json::Value;

use super::{About, Outbound, Outcome, Tool, ToolContext, ToolError, ToolOutput, Toolsets};
use crate::context::untrusted::fence;
use crate::error::ErrorCode;
use crate::llm::ToolSpec;
use crate::mcp::{agent_tool_name, McpClient, McpServer, McpServers, McpTool, ServerStatus};

/// One tool of one relayed MCP server.
pub struct McpAgentTool {
    /// The name the model calls it by.
    name: String,
    server: String,
    tool: McpTool,
    client: Rc<McpClient>,
    /// Why it is not offered now (`None`: it is).
    withdrawn: Option<String>,
    /// Told when a call finds the server gone (the next check looks again).
    servers: Rc<McpServers>,
}

/// The agent tools of the servers `checked` found (those of `servers`):
/// offered when the server is ready (a server turned off is not) and the
/// person did not turn the tool off (`tool_off(server, tool)`); known but
/// withdrawn otherwise.
pub fn mcp_tools(
    servers: &Rc<McpServers>,
    checked: &[McpServer],
    tool_off: &dyn Fn(&str, &str) -> bool,
) -> Vec<Rc<dyn super::AnyTool>> {
    let mut tools: Vec<Rc<dyn super::AnyTool>> = Vec::new();
    for server in checked {
        let name = &server.name;
        let why = match server.status {
            ServerStatus::Ready => None,
            ServerStatus::Off => Some(format!("the MCP server {name} is turned off in the settings")),
            _ => Some(format!(
                "the MCP server {name} does not answer now ({}); its tools are offered again once it does",
                server.problem.as_deref().unwrap_or("no reason given")
            )),
        };
        for tool in &server.tools {
            let off = tool_off(name, &tool.name).then(|| format!("the person turned {} of {name} off", tool.name));
            tools.push(Rc::new(McpAgentTool {
                name: agent_tool_name(name, &tool.name),
                server: name.clone(),
                tool: tool.clone(),
                client: server.client.clone(),
                withdrawn: why.clone().or(off),
                servers: servers.clone(),
            }));
        }
    }
    tools
}

#[async_trait(?Send)]
impl Tool for McpAgentTool {
    type Args = Value;

    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::function(&self.name, &self.tool.description, self.tool.input_schema.clone())
    }

    fn about(&self) -> About {
        let tool = &self.tool;
        About {
            read_only: tool.read_only,
            // A withdrawn tool runs nothing: its call is answered at once.
            approval: !tool.read_only && tool.destructive && self.withdrawn.is_none(),
            // Its results may be long: one as the last message lowers the
            // compression threshold, as a page does.
            heavy: true,
            toolsets: if self.withdrawn.is_some() { Toolsets::NONE } else { Toolsets::ALL },
            ..About::READ
        }
    }

    /// A JSON object that fits the server's input schema as far as
    /// `json_schema` checks it (what it does not check, the server does):
    /// a call that breaks it is told where before anything is sent.
    fn parse(&self, args: &Value) -> Result<Value, ToolError> {
        let args = match args {
            Value::Null => Value::Object(Default::default()),
            Value::Object(_) => args.clone(),
            _ => {
                return Err(ToolError::InvalidArguments {
                    tool: self.name.clone(),
                    message: "give a JSON object".into(),
                })
            }
        };
        match super::json_schema::violation(&self.tool.input_schema, &args) {
            Some(message) => Err(ToolError::InvalidArguments { tool: self.name.clone(), message }),
            None => Ok(args),
        }
    }

    fn sends(&self, args: &Value) -> Option<Outbound> {
        // A withdrawn tool's call sends nothing (it is answered at once).
        if self.withdrawn.is_some() {
            return None;
        }
        let (server, text) = (&self.server, args.to_string());
        Some(if self.tool.open_world {
            Outbound::Data {
                to: format!("the MCP server {server} (its tool {} reaches beyond it)", self.tool.name),
                text,
            }
        } else {
            Outbound::Configured { to: format!("the MCP server {server}"), text }
        })
    }

    async fn call(&self, args: &Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        if let Some(why) = &self.withdrawn {
            return Err(ToolError::failed(ErrorCode::McpUnavailable, why.clone()));
        }
        let (server, tool) = (&self.server, &self.tool.name);
        let mut progress = |p: crate::mcp::Progress| {
            (ctx.emit)(super::ToolEvent::Progress { progress: p.progress, total: p.total, message: p.message })
        };
        let result = match self.client.call(tool, args, &mut progress, &ctx.cancel).await {
            Ok(result) => result,
            Err(e) => {
                if e.server_gone() {
                    self.servers.stale();
                }
                return Err(ToolError::failed(e.code(), format!("{tool} of the MCP server {server}: {e}")));
            }
        };
        let kind = if result.is_error { "error reported by the MCP tool " } else { "result of the MCP tool " };
        let mut body = if result.text.trim().is_empty() { "(no content)".to_owned() } else { result.text };
        // Capped as a page is, before the fence (nothing keeps the rest).
        if let Some((at, _)) = body.char_indices().nth(ctx.page_chars) {
            let rest = body[at..].chars().count();
            body = [&body[..at], "\n[… cut here: ", &rest.to_string(), " more characters were not kept]"].concat();
        }
        let fenced = fence(&[kind, tool].concat(), &["the MCP server ", server].concat(), &body);
        let mut output = ToolOutput::text(fenced);
        if result.is_error {
            output.outcome = Outcome::Failed { code: ErrorCode::McpToolError };
        }
        Ok(output)
    }
}
