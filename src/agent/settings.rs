//! The person's settings for the agent, and how a partial change merges
//! into them (the same rule for `Agent.open`'s settings and `updateSettings`).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::json::Fields;

/// The person's settings for the agent (read by hand: [`AgentSettings::merged`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
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
    /// it is not sent (code `context_overflow`). Set as a number by the
    /// person, or `"auto"`: the window the proxy reports for the main model
    /// (what its server really processes), else 32,768.
    pub context_window: usize,
    /// Where `context_window` comes from.
    pub context_window_source: WindowSource,
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
    /// `agent.search` also ranks by meaning when the proxy has an embedding
    /// model: the records' text goes to that model in the background.
    pub search_by_meaning: bool,
}

/// The person's switches for one relayed MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
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

/// Where the context window comes from: the proxy's facts about the model
/// (`"auto"`, the default) or the person's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WindowSource {
    #[default]
    Auto,
    Person,
}

/// The window assumed while the proxy has not said (or cannot).
pub const DEFAULT_WINDOW: usize = 32_768;

/// When and how much of the conversation the compression sub-agent
/// summarises. Ratios are of `contextWindow`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
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
            context_window: DEFAULT_WINDOW,
            context_window_source: WindowSource::Auto,
            compression: CompressionSettings::default(),
            delegation_model: "sub".into(),
            continuity_memory: true,
            mcp: BTreeMap::new(),
            search_by_meaning: true,
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
            // `contextWindow: "auto"` follows the proxy (the number stays the
            // one last learned until the next turn asks); a number is the
            // person's, unless the patch says otherwise.
            let source = match fields.get("contextWindow") {
                Some(Value::String(auto)) if auto == "auto" => Some("auto"),
                Some(_) => Some("person"),
                None => None,
            };
            if let Some(source) = source {
                base.insert("contextWindowSource".into(), source.into());
                if source == "auto" && self.context_window_source == WindowSource::Person {
                    base.insert("contextWindow".into(), DEFAULT_WINDOW.into());
                }
            }
            for (k, v) in fields {
                match (k.as_str(), base.get_mut(k), v) {
                    ("contextWindow", _, Value::String(auto)) if auto == "auto" => {}
                    ("compression", Some(Value::Object(old)), Value::Object(new)) => {
                        old.extend(new.iter().map(|(k, v)| (k.clone(), v.clone())));
                    }
                    _ => {
                        base.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        AgentSettings::read(&merged)
    }

    /// The settings a JSON object gives (a field absent: its default), or
    /// which field is wrong. Written by hand: the derived decoder of this
    /// tree compiled to 9.5 KB of `.wasm` (BENCHMARKS.md, "Package size").
    fn read(value: &Value) -> Result<AgentSettings, String> {
        let f = Fields(value);
        let mut s = AgentSettings::default();
        s.main_model = f.opt_text("mainModel")?.unwrap_or(s.main_model);
        s.sub_model = f.opt_text("subModel")?.unwrap_or(s.sub_model);
        s.approvals = switches(&f, "approvals")?;
        s.full_threshold = size(&f, "fullThreshold", s.full_threshold)?;
        s.long_term_memory = flag(&f, "longTermMemory", s.long_term_memory)?;
        s.recursion_limit = size(&f, "recursionLimit", s.recursion_limit)?;
        s.page_chars = size(&f, "pageChars", s.page_chars)?;
        s.parallel_reads = size(&f, "parallelReads", s.parallel_reads)?;
        s.context_window = size(&f, "contextWindow", s.context_window)?;
        s.context_window_source = match f.opt_text("contextWindowSource")?.as_deref() {
            None | Some("auto") => WindowSource::Auto,
            Some("person") => WindowSource::Person,
            Some(_) => return Err("`contextWindowSource` must be \"auto\" or \"person\"".into()),
        };
        if let Some(given) = f.get("compression", false)? {
            let c = Fields(given);
            let d = CompressionSettings::default();
            let ratio = |key: &str, default: f64| match c.get(key, false)? {
                None => Ok(default),
                Some(v) => v.as_f64().ok_or_else(|| format!("`compression.{key}` must be a number")),
            };
            s.compression = CompressionSettings {
                enabled: flag(&c, "enabled", d.enabled)?,
                token_ratio: ratio("tokenRatio", d.token_ratio)?,
                heavy_tool_ratio: ratio("heavyToolRatio", d.heavy_tool_ratio)?,
                turn_limit: size(&c, "turnLimit", d.turn_limit as usize)? as u32,
                keep_turns: size(&c, "keepTurns", d.keep_turns)?,
            };
        }
        s.delegation_model = f.opt_text("delegationModel")?.unwrap_or(s.delegation_model);
        s.continuity_memory = flag(&f, "continuityMemory", s.continuity_memory)?;
        s.search_by_meaning = flag(&f, "searchByMeaning", s.search_by_meaning)?;
        let servers = match f.get("mcp", false)? {
            None => None,
            Some(Value::Object(servers)) => Some(servers),
            Some(_) => return Err("`mcp` must be an object (server name → { enabled, tools })".into()),
        };
        for (server, given) in servers.into_iter().flatten() {
            let m = Fields(given);
            let enabled = flag(&m, "enabled", true)?;
            s.mcp.insert(server.clone(), McpServerSettings { enabled, tools: switches(&m, "tools")? });
        }
        Ok(s)
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
            Some(mut value) => {
                // Stored before the window could be "auto": the old default
                // was never the person's choice.
                if let Some(fields) = value.as_object_mut().filter(|f| !f.contains_key("contextWindowSource")) {
                    let person = fields.get("contextWindow").is_some_and(|w| *w != DEFAULT_WINDOW);
                    fields.insert("contextWindowSource".into(), if person { "person" } else { "auto" }.into());
                }
                defaults.merged(&value).unwrap_or(defaults)
            }
            None => defaults,
        }
    }
}

/// A whole number field (`default` when absent).
fn size(f: &Fields, key: &str, default: usize) -> Result<usize, String> {
    match f.get(key, false)? {
        None => Ok(default),
        Some(_) => f.count(key, true).map(|n| n as usize),
    }
}

/// A boolean field (`default` when absent).
fn flag(f: &Fields, key: &str, default: bool) -> Result<bool, String> {
    Ok(f.get(key, false)?.is_none() && default || f.flag(key)?)
}

/// An object of booleans (name → on?; empty when absent).
fn switches(f: &Fields, key: &str) -> Result<BTreeMap<String, bool>, String> {
    let mut out = BTreeMap::new();
    match f.get(key, false)? {
        None => {}
        Some(Value::Object(map)) => {
            for (name, on) in map {
                out.insert(name.clone(), on.as_bool().ok_or_else(|| format!("`{key}.{name}` must be a boolean"))?);
            }
        }
        Some(_) => return Err(format!("`{key}` must be an object of booleans")),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_context_window_is_auto_until_the_person_gives_a_number() {
        let defaults = AgentSettings::default();
        assert_eq!((defaults.context_window, defaults.context_window_source), (DEFAULT_WINDOW, WindowSource::Auto));
        let shown = serde_json::to_value(&defaults).unwrap();
        assert_eq!(
            (shown["contextWindow"].clone(), shown["contextWindowSource"].clone()),
            (json!(32768), json!("auto"))
        );
        let person = defaults.merged(&json!({"contextWindow": 8192})).unwrap();
        assert_eq!((person.context_window, person.context_window_source), (8192, WindowSource::Person));
        let back = person.merged(&json!({"contextWindow": "auto"})).unwrap();
        assert_eq!((back.context_window, back.context_window_source), (DEFAULT_WINDOW, WindowSource::Auto));
        let mut learned = back.clone();
        learned.context_window = 4096;
        let again = learned.merged(&json!({"contextWindow": "auto"})).unwrap();
        assert_eq!(again.context_window, 4096, "auto again keeps what the proxy said");
        assert!(defaults.merged(&json!({"contextWindow": "big"})).is_err());
        // Stored settings: a new record reads back as it was; an old one
        // (no source) is auto at the old default, the person's otherwise.
        let stored = serde_json::to_value(&learned).unwrap();
        assert_eq!(AgentSettings::from_stored(Some(stored)), learned);
        let old = AgentSettings::from_stored(Some(json!({"contextWindow": 32768})));
        assert_eq!(old.context_window_source, WindowSource::Auto);
        let old = AgentSettings::from_stored(Some(json!({"contextWindow": 16384})));
        assert_eq!((old.context_window, old.context_window_source), (16384, WindowSource::Person));
    }

    #[test]
    fn every_setting_reads_back_and_a_wrong_type_is_named() {
        let mut s = AgentSettings::default();
        s.main_model = "m".into();
        s.approvals.insert("edit_manuscript".into(), false);
        (s.full_threshold, s.long_term_memory, s.recursion_limit, s.page_chars) = (5, true, 7, 9);
        (s.parallel_reads, s.context_window, s.context_window_source) = (1, 4096, WindowSource::Person);
        s.compression = CompressionSettings { enabled: false, token_ratio: 0.5, turn_limit: 3, ..s.compression };
        (s.delegation_model, s.continuity_memory, s.search_by_meaning) = ("main".into(), false, false);
        s.mcp.insert("notes".into(), McpServerSettings { enabled: false, tools: [("a".into(), false)].into() });
        assert_eq!(AgentSettings::from_stored(Some(serde_json::to_value(&s).unwrap())), s);
        let partial = AgentSettings::default().merged(&json!({"compression": {"keepTurns": 2}})).unwrap();
        assert_eq!(partial.compression, CompressionSettings { keep_turns: 2, ..CompressionSettings::default() });
        let server = AgentSettings::default().merged(&json!({"mcp": {"notes": {"tools": {"x": false}}}})).unwrap();
        assert!(server.mcp["notes"].enabled && !server.mcp["notes"].tools["x"]);
        for (patch, named) in [
            (json!({"pageChars": "x"}), "pageChars"),
            (json!({"recursionLimit": -3}), "recursionLimit"),
            (json!({"approvals": {"x": 1}}), "approvals.x"),
            (json!({"compression": {"tokenRatio": "a"}}), "compression.tokenRatio"),
            (json!({"mcp": {"s": {"enabled": 1}}}), "enabled"),
            (json!({"mcp": 3}), "mcp"),
            (json!({"longTermMemory": "yes"}), "longTermMemory"),
            (json!({"mainModel": 4}), "mainModel"),
        ] {
            let err = AgentSettings::default().merged(&patch).unwrap_err();
            assert!(err.contains(named), "{patch}: {err}");
        }
    }
}
