//! The stable `code`s of the JS `Error`s this package throws, checked against
//! the `AtelierErrorCode` union its TypeScript types declare
//! (`src/wasm/mod.rs`, `src/wasm/adit.rs`): every code a Rust error can carry
//! to JS must be in the union, and the union names no code that cannot occur.
//!
//! Each error enum is listed variant by variant below; the `exhaustive_*`
//! functions match without a wildcard, so adding a variant fails to compile
//! here until its code is listed (and then this test checks the union).

use crate::adit::AditError;
use crate::graph::GraphError;
use crate::llm::LlmError;
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
        GraphError::Checkpoint(s()),
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

/// Codes the agent's nodes fail with besides the model's (`nodes.rs`), and
/// the agent's own (`busy`: the session runs elsewhere; `review_pending`: a
/// new turn while a review waits; `tool_loop`: the loop guard ended the run;
/// `not_running`: an interjection with no run to take it; `incomplete`: the
/// model kept finishing before its strategy's completion rule was met).
const NODE_CODES: &[&str] =
    &["invalid_state", "busy", "review_pending", "tool_loop", "not_running", "context_overflow", "incomplete"];

/// The codes in a TypeScript union of string literals inside `source`,
/// from `export type NAME =` to its `;`.
fn union(source: &str, name: &str) -> Vec<String> {
    let start = source.find(&format!("export type {name} =")).unwrap_or_else(|| panic!("{name} is declared"));
    let body = &source[start..];
    let body = &body[..body.find(';').expect("the union ends")];
    body.split('"').skip(1).step_by(2).map(str::to_owned).collect()
}

#[test]
fn every_code_that_reaches_js_is_in_the_typescript_union_and_no_other() {
    let atelier = union(include_str!("wasm/mod.rs"), "AtelierErrorCode");
    let adit = union(include_str!("wasm/adit.rs"), "AditErrorCode");
    let declared: Vec<&str> = atelier.iter().chain(adit.iter()).map(String::as_str).collect();

    let mut produced: Vec<&str> = vec!["invalid_argument"];
    produced.extend(every_store_error().iter().map(StoreError::code));
    produced.extend(every_llm_error().iter().map(LlmError::code));
    produced.extend(every_graph_error().iter().map(GraphError::code));
    produced.extend(NODE_CODES);
    let adit_errors = [
        crate::adit::apply_edits("a", &[crate::adit::Edit { search: "zz".into(), replace: String::new() }]),
        crate::adit::apply_edits("a\na\n", &[crate::adit::Edit { search: "a".into(), replace: String::new() }]),
    ];
    produced.extend(adit_errors.iter().filter_map(|r| r.as_ref().err()).map(AditError::code));
    produced.push(crate::adit::parse_search_replace("<<<<<<< SEARCH\nx\n").unwrap_err().code());

    let missing: Vec<&&str> = produced.iter().filter(|c| !declared.contains(c)).collect();
    assert!(missing.is_empty(), "codes that reach JS but are not in the TypeScript union: {missing:?}");
    let unused: Vec<&&str> = declared.iter().filter(|c| !produced.contains(c)).collect();
    assert!(unused.is_empty(), "codes the TypeScript union declares that nothing produces: {unused:?}");
}
