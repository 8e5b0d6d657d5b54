//! What the client reads out of MCP answers: tool definitions (with the
//! annotation defaults of the spec), tool results as text for the model, and
//! the relayed servers the proxy's `/api/health` lists. Everything here comes
//! from a server nobody vetted: it is read field by field, and a field of
//! the wrong kind counts as absent.

use serde_json::Value;

/// One tool a server offers.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The server's own name for it (what `tools/call` takes).
    pub name: String,
    pub description: String,
    /// The JSON Schema of its arguments (always `type: "object"`).
    pub input_schema: Value,
    /// `readOnlyHint` (default false): it changes nothing.
    pub read_only: bool,
    /// `destructiveHint` (default true; meaningful when not read-only).
    pub destructive: bool,
    /// `openWorldHint` (default true): it reaches beyond the server.
    pub open_world: bool,
}

impl McpTool {
    /// A tool definition of `tools/list`; `None` when it has no name.
    pub fn from_value(tool: &Value) -> Option<McpTool> {
        let name = tool["name"].as_str().filter(|n| !n.is_empty())?.to_owned();
        let hint = |key: &str, default: bool| tool["annotations"][key].as_bool().unwrap_or(default);
        let mut input_schema = tool["inputSchema"].clone();
        if input_schema["type"] != "object" {
            // A model API takes only object schemas; an odd one becomes "any object".
            input_schema = serde_json::from_str(r#"{"type":"object"}"#).unwrap_or_default();
        }
        Some(McpTool {
            name,
            description: tool["description"].as_str().unwrap_or_default().to_owned(),
            input_schema,
            read_only: hint("readOnlyHint", false),
            destructive: hint("destructiveHint", true),
            open_world: hint("openWorldHint", true),
        })
    }
}

/// What a `tools/call` gave back.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// The content as text for the model (images, audio and resources
    /// described, never dropped silently).
    pub text: String,
    /// `structuredContent`, when the server sent it.
    pub structured: Option<Value>,
    /// The tool failed (`isError`): a tool error for the model.
    pub is_error: bool,
}

impl CallResult {
    /// A `tools/call` result.
    pub fn from_value(result: &Value) -> CallResult {
        let structured = Some(result["structuredContent"].clone()).filter(|v| !v.is_null());
        let mut parts: Vec<String> = Vec::new();
        let mut structured_shown = false;
        for item in items(&result["content"]) {
            let resource = &item["resource"];
            parts.push(
                match (item["type"].as_str().unwrap_or_default(), item["text"].as_str(), resource["text"].as_str()) {
                    ("text", Some(text), _) => {
                        // Servers repeat the structured content as JSON text.
                        structured_shown |=
                            structured.is_some() && serde_json::from_str::<Value>(text).ok() == structured;
                        text.to_owned()
                    }
                    ("resource", _, Some(text)) => {
                        format!("[resource {}]\n{text}", resource["uri"].as_str().unwrap_or_default())
                    }
                    // What is not text is described by what the server says of it
                    // (an image, audio, a link, a binary resource): one line, one format.
                    (kind, _, _) => {
                        let facts =
                            [&item["name"], &item["uri"], &resource["uri"], &item["mimeType"], &resource["mimeType"]];
                        let mut about: Vec<&str> = vec![kind];
                        for fact in facts {
                            if let Some(fact) = fact.as_str() {
                                about.push(fact);
                            }
                        }
                        let bytes =
                            item["data"].as_str().or(resource["blob"].as_str()).map(|d| (d.len() / 4 * 3).to_string());
                        if let Some(bytes) = &bytes {
                            about.push(bytes);
                            about.push("bytes, not shown");
                        }
                        format!("[{}]", about.join(" "))
                    }
                },
            );
        }
        if let Some(value) = structured.as_ref().filter(|_| !structured_shown) {
            parts.push(value.to_string());
        }
        CallResult { text: parts.join("\n"), structured, is_error: result["isError"] == true }
    }
}

/// A relayed server as the proxy's `/api/health` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayedServer {
    /// The name of its relay, `/api/mcp/<name>`.
    pub name: String,
    pub reachable: bool,
    /// Why not, when it is not (`unreachable`, `timeout`, `unauthorized`, …).
    pub error: Option<String>,
}

/// The `mcp` list of a `/api/health` answer (empty for a proxy without it).
pub fn relayed_servers(health: &Value) -> Vec<RelayedServer> {
    let mut servers = Vec::new();
    for server in items(&health["mcp"]) {
        if let Some(name) = server["name"].as_str() {
            let error = server["error"].as_str().map(str::to_owned);
            servers.push(RelayedServer { name: name.to_owned(), reachable: server["reachable"] == true, error });
        }
    }
    servers
}

/// The items of a JSON array (none when `value` is not one). Plain loops
/// over a slice: `as_array().into_iter().flatten()` compiles to a flatten
/// adapter per use.
pub(super) fn items(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}
