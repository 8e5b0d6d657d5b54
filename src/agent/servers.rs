//! What `agent.mcpServers()` reports: the relayed MCP servers as the last
//! check found them (checked again when that is older than
//! [`crate::mcp::CHECK_TTL`]), with their tools and the person's switches.

use serde::Serialize;

use super::Agent;
use crate::cancel::CancelToken;

/// One relayed MCP server.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    /// Its name on the proxy (`/api/mcp/<name>`, the key of the `mcp` setting).
    pub name: String,
    /// "ready", "unreachable", "error" (it answered, not with its tools) or
    /// "off" (turned off in the settings: not contacted).
    pub status: &'static str,
    /// Why it is not ready, when it is not (the proxy's or the server's words).
    pub problem: Option<String>,
    /// Its tools, in name order (when it is not ready, those it had).
    pub tools: Vec<McpToolInfo>,
}

/// One tool of a relayed MCP server.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    /// The server's name for it (the key of `mcp[server].tools`).
    pub name: String,
    pub description: String,
    /// `readOnlyHint`: it runs with the other reads of a step, asking no one.
    pub read_only: bool,
    /// The person's switch for it (default true; offered when the server is ready too).
    pub enabled: bool,
    /// The name the model calls it by (`mcp_<server>_<tool>`, the key of `approvals`).
    pub agent_name: String,
}

impl Agent {
    /// The relayed MCP servers, their status and tools (none when the agent
    /// was opened with `mcp: false`).
    pub async fn mcp_servers(&self) -> Vec<McpServerInfo> {
        let checked = self.env.offer_mcp_tools(&CancelToken::new()).await;
        let settings = self.env.settings.borrow();
        let info = |server: &crate::mcp::McpServer| McpServerInfo {
            name: server.name.clone(),
            status: server.status.as_str(),
            problem: server.problem.clone(),
            tools: server
                .tools
                .iter()
                .map(|tool| McpToolInfo {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    read_only: tool.read_only,
                    enabled: !settings.mcp_tool_off(&server.name, &tool.name),
                    agent_name: crate::mcp::agent_tool_name(&server.name, &tool.name),
                })
                .collect(),
        };
        checked.iter().map(info).collect()
    }
}
