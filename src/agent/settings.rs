//! The person's settings for the agent, and how a partial change merges
//! into them (the same rule for `Agent.open`'s settings and `updateSettings`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The person's settings for the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentSettings {
    /// Model (or proxy alias) for answers and edits.
    pub main_model: String,
    /// Model (or proxy alias) for routing, search optimisation and memory.
    pub sub_model: String,
    /// Per-tool approval overrides (tool name → ask first?).
    pub approvals: BTreeMap<String, bool>,
    /// Artifacts shorter than this many characters are injected whole.
    pub full_threshold: usize,
    /// Judge and store durable facts after answers.
    pub long_term_memory: bool,
    /// Most graph steps in one run.
    pub recursion_limit: usize,
    /// Characters of one web page the model is given (the artifact keeps the
    /// whole page, with a marker where the model's copy was cut).
    pub page_chars: usize,
    /// Read-only calls of one step run at once, at most this many (1: one
    /// after another, for a search API that limits concurrent requests).
    pub parallel_reads: usize,
    /// The main model's context window in tokens: a request estimated above
    /// it is not sent (code `context_overflow`).
    pub context_window: usize,
    /// When the conversation is summarised to fit the window (seed 001).
    pub compression: CompressionSettings,
    /// The model a `delegate` child runs on: "sub" (default) or "main".
    pub delegation_model: String,
    /// Update a project's continuity notes after a run with an approved
    /// chapter edit.
    pub continuity_memory: bool,
    /// The relayed MCP servers the person turned off, and their tools
    /// (server name → its switches; a server not listed is on, with every
    /// tool).
    pub mcp: BTreeMap<String, McpServerSettings>,
}

/// The person's switches for one relayed MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpServerSettings {
    /// Off: the server is not contacted and its tools are not offered.
    pub enabled: bool,
    /// Tools turned off (the server's tool name → offered?); a tool not
    /// listed is on.
    pub tools: BTreeMap<String, bool>,
}

impl Default for McpServerSettings {
    fn default() -> McpServerSettings {
        McpServerSettings { enabled: true, tools: BTreeMap::new() }
    }
}

/// When and how much of the conversation the compression sub-agent
/// summarises. Ratios are of `contextWindow`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompressionSettings {
    pub enabled: bool,
    /// Compress when a request would take more than this share of the window.
    pub token_ratio: f64,
    /// ... or this share, when the last message is a heavy tool result.
    pub heavy_tool_ratio: f64,
    /// ... or after this many main-model calls since the last compression.
    pub turn_limit: u32,
    /// The most recent steps (a person's message, or a model call with its
    /// tool results) kept word for word.
    pub keep_turns: usize,
}

impl Default for CompressionSettings {
    fn default() -> CompressionSettings {
        CompressionSettings { enabled: true, token_ratio: 0.6, heavy_tool_ratio: 0.4, turn_limit: 30, keep_turns: 5 }
    }
}

impl Default for AgentSettings {
    fn default() -> AgentSettings {
        AgentSettings {
            main_model: "main".into(),
            sub_model: "sub".into(),
            approvals: BTreeMap::new(),
            full_threshold: 1000,
            long_term_memory: false,
            recursion_limit: 40,
            page_chars: 60_000,
            parallel_reads: 4,
            context_window: 32_768,
            compression: CompressionSettings::default(),
            delegation_model: "sub".into(),
            continuity_memory: true,
            mcp: BTreeMap::new(),
        }
    }
}

impl AgentSettings {
    /// These settings with the fields `patch` names replaced (a whole field
    /// at a time: `approvals` given is the new map), except that a partial
    /// `compression` object changes only the fields it names. A patch that is not an
    /// object, or a field of the wrong type, is an error naming it.
    pub fn merged(&self, patch: &Value) -> Result<AgentSettings, String> {
        let Some(fields) = patch.as_object() else {
            return Err("settings must be an object".into());
        };
        let mut merged = serde_json::to_value(self).map_err(|e| e.to_string())?;
        if let Some(base) = merged.as_object_mut() {
            for (k, v) in fields {
                match (k.as_str(), base.get_mut(k), v) {
                    ("compression", Some(Value::Object(old)), Value::Object(new)) => {
                        old.extend(new.iter().map(|(k, v)| (k.clone(), v.clone())));
                    }
                    _ => {
                        base.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        crate::json::from_value(merged).map_err(|e| e.to_string())
    }

    /// Whether the person turned relayed MCP server `server` off.
    pub fn mcp_server_off(&self, server: &str) -> bool {
        self.mcp.get(server).is_some_and(|s| !s.enabled)
    }

    /// Whether the person turned tool `tool` of MCP server `server` off.
    pub fn mcp_tool_off(&self, server: &str, tool: &str) -> bool {
        self.mcp.get(server).and_then(|s| s.tools.get(tool)) == Some(&false)
    }

    /// Stored settings, read leniently: a stored record from another version
    /// keeps what still reads and takes the defaults for the rest.
    pub fn from_stored(stored: Option<Value>) -> AgentSettings {
        let defaults = AgentSettings::default();
        match stored {
            Some(value) => defaults.merged(&value).unwrap_or(defaults),
            None => defaults,
        }
    }
}
