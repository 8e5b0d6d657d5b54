//! The one list of error codes, end to end: every module keeps its own
//! `thiserror` enum (`StoreError`, `LlmError`, `GraphError`, `ToolError`,
//! `AgentError`, `AditError`), and each says its stable code as an
//! [`ErrorCode`]. A failed tool call keeps its code in the call's record; a
//! JS `Error` carries it as `err.code` (`src/wasm/error.rs`).
//!
//! The TypeScript unions `AditErrorCode` and `AtelierErrorCode` are written
//! from this list ([`TS_ERROR_CODES`], in the package's `.d.ts`), so they
//! cannot drift; a test (`src/error_codes.rs`) checks the other direction:
//! every code here is one some error can carry.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares [`ErrorCode`], its text forms and the TypeScript unions.
macro_rules! error_codes {
    (
        adit { $( $(#[$am:meta])* $av:ident = $ac:literal, )* }
        atelier { $( $(#[$m:meta])* $v:ident = $c:literal, )* }
    ) => {
        /// A stable machine-readable error code (`err.code` in JS).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( $(#[$am])* $av, )*
            $( $(#[$m])* $v, )*
        }

        impl ErrorCode {
            /// Every code, Adit's first.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$av,)* $(ErrorCode::$v,)*];

            /// The code as JS sees it (`"quota_exceeded"`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( ErrorCode::$av => $ac, )*
                    $( ErrorCode::$v => $c, )*
                }
            }
        }

        /// The TypeScript unions of the codes, for the package's `.d.ts`.
        pub const TS_ERROR_CODES: &str = concat!(
            "/** Codes of the `Error`s the Adit functions throw (`err.code`). */\n",
            "export type AditErrorCode =",
            $( "\n  | \"", $ac, "\"", )*
            ";\n/**\n * Stable codes of the `Error`s this package throws (`err.code`), and of the\n",
            " * failures of tool calls. Written from the Rust `ErrorCode` list (`src/error.rs`).\n */\n",
            "export type AtelierErrorCode =\n  | AditErrorCode",
            $( "\n  | \"", $c, "\"", )*
            ";\n"
        );
    };
}

error_codes! {
    adit {
        /// No region of the text matches an edit's search.
        NoMatch = "no_match",
        /// A search matches several places (also: a loose artifact reference
        /// matching several artifacts).
        Ambiguous = "ambiguous",
        /// SEARCH/REPLACE blocks or a JSON document could not be read.
        Parse = "parse",
    }
    atelier {
        /// An argument does not have the documented shape (JS arguments, a
        /// tool call's arguments, a setting).
        InvalidArgument = "invalid_argument",
        /// The browser's storage quota is exhausted; nothing was written.
        QuotaExceeded = "quota_exceeded",
        /// The record does not exist.
        NotFound = "not_found",
        /// An artifact's lifecycle forbids the change.
        Lifecycle = "lifecycle",
        /// A stored edit did not apply.
        EditFailed = "edit_failed",
        /// A record could not be read or written as JSON.
        Codec = "codec",
        /// Any other failure of the database.
        Storage = "storage",
        /// The proxy has no LLM configured.
        NotConfigured = "not_configured",
        /// The LLM service (or the network to it) failed.
        UpstreamUnavailable = "upstream_unavailable",
        /// Too many requests.
        RateLimited = "rate_limited",
        /// The proxy or the upstream refused the credentials.
        Auth = "auth",
        /// The upstream says the conversation is too long for the model.
        ContextTooLong = "context_too_long",
        /// The upstream refused the request as invalid.
        BadRequest = "bad_request",
        /// An answer could not be read.
        MalformedResponse = "malformed_response",
        /// The upstream does not take structured output.
        StructuredOutputRefused = "structured_output_refused",
        /// A run took more steps than `recursionLimit`.
        RecursionLimit = "recursion_limit",
        /// A graph does not compile (edges, names, entry).
        InvalidGraph = "invalid_graph",
        /// `continueRun` or `resume` with nothing to continue.
        NothingToResume = "nothing_to_resume",
        /// A graph's router chose a route it did not declare.
        UnknownRoute = "unknown_route",
        /// A checkpoint id does not exist in the thread.
        NoSuchCheckpoint = "no_such_checkpoint",
        /// Something the code relies on does not hold (a review node with no
        /// review pending); a bug, reported instead of a panic.
        InvalidState = "invalid_state",
        /// The session runs in another tab or call.
        Busy = "busy",
        /// A new turn while the session waits for a review.
        ReviewPending = "review_pending",
        /// The record changed since the version a write or an undo was based on.
        Conflict = "conflict",
        /// Another tab opened a newer version of the database: reload.
        ReloadRequired = "reload_required",
        /// A schema upgrade is blocked by another tab's connection.
        Blocked = "blocked",
        /// The loop guard ended a run that kept repeating itself.
        ToolLoop = "tool_loop",
        /// `interject` with no run working on the session.
        NotRunning = "not_running",
        /// The next request would not fit `contextWindow`.
        ContextOverflow = "context_overflow",
        /// The model kept finishing before its strategy's completion rule was met.
        Incomplete = "incomplete",
        /// The run was stopped (a tool call cut off by the abort; a run itself
        /// ends with status "aborted", never with this error).
        Aborted = "aborted",
        /// A `delegate`'s read set does not fit its budget even degraded.
        Budget = "budget",
        /// A tool failed without a more specific code (a host tool that threw;
        /// a failure recorded before calls had typed records).
        ToolFailed = "tool_failed",
        /// The proxy relays no MCP server of that name (`ATELIER_MCP_SERVERS`).
        McpServerNotFound = "mcp_server_not_found",
        /// The proxy cannot reach the MCP server (down, refusing connections).
        McpUnreachable = "mcp_unreachable",
        /// The MCP server did not answer in time.
        McpTimeout = "mcp_timeout",
        /// The MCP server refused the proxy's credentials (`ATELIER_MCP_TOKEN_<NAME>`).
        McpAuth = "mcp_auth",
        /// The MCP server answered a redirect (the relay never follows one).
        McpRedirect = "mcp_redirect",
        /// The MCP server answered with an HTTP error.
        McpHttp = "mcp_http",
        /// The MCP server refused a request (a JSON-RPC error: unknown tool, invalid arguments).
        McpRpc = "mcp_rpc",
        /// The MCP server ended the session twice in a row.
        McpSessionExpired = "mcp_session_expired",
        /// The MCP tool ran and reported a failure (`isError`).
        McpToolError = "mcp_tool_error",
        /// The MCP tool is not offered now: its server does not answer, or the
        /// person turned the server or the tool off.
        McpUnavailable = "mcp_unavailable",
    }
}

impl ErrorCode {
    /// The code named `text`, if it is one.
    pub fn from_name(text: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == text)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tests and callers may compare a code with its text.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<str> for ErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

// By hand: a derived impl would compile one match arm per variant and name.
impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ErrorCode, D::Error> {
        let text = String::deserialize(deserializer)?;
        ErrorCode::from_name(&text).ok_or_else(|| serde::de::Error::custom(format!("unknown error code {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typescript_unions_list_every_code_once() {
        for code in ErrorCode::ALL {
            assert_eq!(TS_ERROR_CODES.matches(&format!("\"{}\"", code.as_str())).count(), 1, "{code}");
            assert_eq!(ErrorCode::from_name(code.as_str()), Some(*code));
        }
        assert!(TS_ERROR_CODES.contains("export type AtelierErrorCode =\n  | AditErrorCode\n  | \"invalid_argument\""));
        assert_eq!(crate::json::to_text(&ErrorCode::QuotaExceeded).unwrap(), "\"quota_exceeded\"");
    }
}
