//! (test only) The other direction of the error codes: the TypeScript unions
//! are written from `ErrorCode` (`src/error.rs`), so every code a Rust error
//! carries is in them by construction; here every code of the list is one
//! some error can carry, so the unions name no code that cannot occur.
//!
//! Each error enum is listed variant by variant below; the `exhaustive_*`
//! functions match without a wildcard, so adding a variant fails to compile
//! here until it is listed.

use crate::adit::AditError;
use crate::agent::delegate::DelegateError;
use crate::error::ErrorCode;
use crate::graph::{CheckpointError, GraphError};
use crate::llm::LlmError;
use crate::mcp::McpError;
use crate::store::StoreError;

fn every_store_error() -> Vec<StoreError> {
    let s = String::new;
    vec![
        StoreError::QuotaExceeded(s()),
        StoreError::NotFound { store: s(), id: s() },
        StoreError::Ambiguous { reference: s(), candidates: vec![] },
        StoreError::Lifecycle { id: s(), lifecycle: "static", detail: s() },
        StoreError::Edit(s()),
        StoreError::Codec { store: s(), detail: s() },
        StoreError::Invalid { field: s(), message: s() },
        StoreError::Conflict { id: s(), detail: s(), current: None },
        StoreError::ReloadRequired,
        StoreError::Blocked,
        StoreError::Backend(s()),
    ]
}

#[allow(dead_code)]
fn exhaustive_store(e: StoreError) {
    match e {
        StoreError::QuotaExceeded(_)
        | StoreError::NotFound { .. }
        | StoreError::Ambiguous { .. }
        | StoreError::Lifecycle { .. }
        | StoreError::Edit(_)
        | StoreError::Codec { .. }
        | StoreError::Invalid { .. }
        | StoreError::Conflict { .. }
        | StoreError::ReloadRequired
        | StoreError::Blocked
        | StoreError::Backend(_) => {}
    }
}

fn every_llm_error() -> Vec<LlmError> {
    let s = String::new;
    vec![
        LlmError::StructuredOutputRefused(s()),
        LlmError::ContextTooLong(s()),
        LlmError::Auth { status: 401, message: s() },
        LlmError::RateLimited { retry_after: None, message: s() },
        LlmError::NotConfigured(s()),
        LlmError::UpstreamUnavailable { status: None, message: s() },
        LlmError::BadRequest { status: 400, message: s() },
        LlmError::MalformedResponse(s()),
    ]
}

#[allow(dead_code)]
fn exhaustive_llm(e: LlmError) {
    match e {
        LlmError::StructuredOutputRefused(_)
        | LlmError::ContextTooLong(_)
        | LlmError::Auth { .. }
        | LlmError::RateLimited { .. }
        | LlmError::NotConfigured(_)
        | LlmError::UpstreamUnavailable { .. }
        | LlmError::BadRequest { .. }
        | LlmError::MalformedResponse(_) => {}
        // A cancelled run ends with status "aborted", never as an error.
        LlmError::Aborted => {}
    }
}

fn every_graph_error() -> Vec<GraphError> {
    let s = String::new;
    vec![
        GraphError::UnknownNode { from: s(), to: s() },
        GraphError::UnknownRoute { node: s(), route: s() },
        GraphError::RecursionLimit { limit: 1, cycle: vec![] },
        GraphError::Checkpoint(CheckpointError::Storage { code: ErrorCode::Storage, message: s() }),
        GraphError::Checkpoint(CheckpointError::Codec(s())),
        GraphError::NothingToResume(s()),
        GraphError::NoSuchCheckpoint { thread: s(), id: s() },
    ]
}

#[allow(dead_code)]
fn exhaustive_graph(e: GraphError) {
    match e {
        GraphError::UnknownNode { .. }
        | GraphError::DuplicateNode(_)
        | GraphError::NoEntry
        | GraphError::NoWayOut(_)
        | GraphError::SeveralWaysOut(_)
        | GraphError::Unreachable(_)
        | GraphError::UnknownRoute { .. }
        | GraphError::RecursionLimit { .. }
        | GraphError::Checkpoint(_)
        | GraphError::NothingToResume(_)
        | GraphError::NoSuchCheckpoint { .. } => {}
        // A node's failure carries the node's own code (listed below).
        GraphError::Node { .. } => {}
    }
}

#[allow(dead_code)]
fn exhaustive_delegate(e: DelegateError) {
    match e {
        DelegateError::Aborted
        | DelegateError::InvalidArgument(_)
        | DelegateError::Budget { .. }
        | DelegateError::Busy(_)
        | DelegateError::Model(_) => {}
    }
}

fn every_delegate_error() -> Vec<DelegateError> {
    vec![
        DelegateError::Aborted,
        DelegateError::InvalidArgument(String::new()),
        DelegateError::Budget { needed: 2, budget: 1 },
        DelegateError::Busy(String::new()),
        DelegateError::Model(LlmError::Aborted),
    ]
}

fn every_mcp_error() -> Vec<McpError> {
    let s = String::new;
    let relay = |kind: &str| McpError::Relay { status: 502, kind: kind.into(), message: s() };
    vec![
        relay("mcp_server_not_found"),
        relay("mcp_unreachable"),
        relay("mcp_timeout"),
        relay("mcp_auth"),
        relay("mcp_redirect"),
        McpError::Http { status: 500, message: s() },
        McpError::SessionExpired,
        McpError::Rpc { code: -32602, message: s() },
        McpError::Malformed(s()),
        McpError::Network(s()),
        McpError::Unavailable(s()),
        McpError::Aborted,
    ]
}

#[allow(dead_code)]
fn exhaustive_mcp(e: McpError) {
    match e {
        McpError::Relay { .. }
        | McpError::Http { .. }
        | McpError::SessionExpired
        | McpError::Rpc { .. }
        | McpError::Malformed(_)
        | McpError::Network(_)
        | McpError::Unavailable(_)
        | McpError::Aborted => {}
    }
}

/// Codes the agent's own calls and nodes fail with (`busy`: the session
/// runs elsewhere; `review_pending`: a new turn while a review waits;
/// `tool_loop`: the loop guard ended the run; `not_running`: an
/// interjection with no run to take it; `context_overflow`: a request over
/// the window; `incomplete`: the completion rules; `invalid_state`: a review
/// node with nothing to review), and `tool_failed` (a host tool that threw;
/// a failure recorded before typed records), and `mcp_tool_error` (an MCP
/// tool's result that says it failed, `isError`).
const AGENT_CODES: &[ErrorCode] = &[
    ErrorCode::Busy,
    ErrorCode::ReviewPending,
    ErrorCode::ToolLoop,
    ErrorCode::NotRunning,
    ErrorCode::ContextOverflow,
    ErrorCode::Incomplete,
    ErrorCode::InvalidState,
    ErrorCode::ToolFailed,
    ErrorCode::McpToolError,
];

#[test]
fn every_code_of_the_list_is_one_an_error_can_carry() {
    let mut produced: Vec<ErrorCode> = vec![ErrorCode::InvalidArgument];
    produced.extend(every_store_error().iter().map(StoreError::code));
    produced.extend(every_llm_error().iter().map(LlmError::code));
    produced.extend(every_graph_error().iter().map(GraphError::code));
    produced.extend(every_delegate_error().iter().map(DelegateError::code));
    produced.extend(every_mcp_error().iter().map(McpError::code));
    produced.extend(AGENT_CODES);
    let adit_errors = [
        crate::adit::apply_edits("a", &[crate::adit::Edit { search: "zz".into(), replace: String::new() }]),
        crate::adit::apply_edits("a\na\n", &[crate::adit::Edit { search: "a".into(), replace: String::new() }]),
    ];
    produced.extend(adit_errors.iter().filter_map(|r| r.as_ref().err()).map(AditError::code));
    produced.push(crate::adit::parse_search_replace("<<<<<<< SEARCH\nx\n").unwrap_err().code());
    let unused: Vec<&ErrorCode> = ErrorCode::ALL.iter().filter(|c| !produced.contains(c)).collect();
    assert!(unused.is_empty(), "codes the list (and so the TypeScript unions) names that nothing produces: {unused:?}");
    // The package's declarations take the unions from the list.
    assert!(include_str!("wasm/mod.rs").contains("crate::error::TS_ERROR_CODES"));
}
