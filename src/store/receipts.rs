//! Tool-call receipts: the durable record that a tool call's effect took
//! place, with the result the model was given.
//!
//! The graph checkpoints after every step, but a step's effect (an approved
//! manuscript edit, a saved search result) lands before the checkpoint that
//! records it. A receipt closes that window: an effect is written in the
//! same atomic batch as its receipt, and a step re-run after a crash or
//! reload reads the receipt instead of running the call again. Calls whose
//! effect cannot share a batch get a `started` receipt first: a re-run finds
//! it and reports the outcome as unknown rather than repeating the effect.
//! Receipts matter only until the run's checkpoints are durable; the agent
//! clears a session's receipts when a run ends.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::backend::Write;
use super::db::{to_value, Db};
use super::error::Result;
use super::model::stores::RECEIPTS;
use crate::platform;

/// What happened to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptOutcome {
    /// The call began; whether its effect landed is unknown.
    Started,
    /// The call ran (or failed without an effect); `content` is its result.
    Done,
    /// The person rejected the call; it never ran.
    Rejected,
}

/// The receipt of one tool call of a session (read by hand, as the
/// checkpointed state is: see `json::Fields`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// `<sessionId>/<callKey>`.
    pub id: String,
    pub session_id: String,
    /// The call's key in the session (`<message index>:<call id>`: the ids
    /// models give recur across turns).
    pub call_key: String,
    pub outcome: ReceiptOutcome,
    /// The tool result the model was given.
    pub content: String,
    pub created_at: f64,
}

crate::decode_by_hand!(Receipt, |f| Ok(Receipt {
    id: f.text("id", true)?,
    session_id: f.text("sessionId", true)?,
    call_key: f.text("callKey", true)?,
    outcome: match f.text("outcome", true)?.as_str() {
        "started" => ReceiptOutcome::Started,
        "done" => ReceiptOutcome::Done,
        "rejected" => ReceiptOutcome::Rejected,
        other => return Err(format!("unknown receipt outcome {other:?}")),
    },
    content: f.text("content", true)?,
    created_at: f.float("createdAt")?,
}));

impl Receipt {
    pub fn new(session_id: &str, call_key: &str, outcome: ReceiptOutcome, content: impl Into<String>) -> Receipt {
        Receipt {
            id: format!("{session_id}/{call_key}"),
            session_id: session_id.to_owned(),
            call_key: call_key.to_owned(),
            outcome,
            content: content.into(),
            created_at: platform::now_ms(),
        }
    }

    /// The write that stores this receipt (to join an effect's batch).
    pub fn write(&self) -> Result<Write> {
        Ok(Write::Put { store: RECEIPTS, value: to_value(RECEIPTS, self)? })
    }
}

impl Db {
    /// The session's receipts by call key.
    pub async fn receipts(&self, session_id: &str) -> Result<HashMap<String, Receipt>> {
        let list: Vec<Receipt> = self.list(RECEIPTS, "sessionId", session_id).await?;
        Ok(list.into_iter().map(|r| (r.call_key.clone(), r)).collect())
    }

    /// The receipt of one call, if it has one.
    pub async fn receipt(&self, session_id: &str, call_key: &str) -> Result<Option<Receipt>> {
        self.get(RECEIPTS, &format!("{session_id}/{call_key}")).await
    }

    /// Stores a receipt on its own (a call whose effect is not a store write).
    pub async fn record_receipt(&self, receipt: &Receipt) -> Result<()> {
        self.backend.write(vec![receipt.write()?]).await
    }

    /// Forgets the session's receipts (once its checkpoints are durable).
    pub async fn clear_receipts(&self, session_id: &str) -> Result<()> {
        let keys: Vec<Write> = self
            .backend
            .by_index(RECEIPTS, "sessionId", session_id)
            .await?
            .iter()
            .filter_map(|v| v.get("id").and_then(|id| id.as_str()))
            .map(|key| Write::Delete { store: RECEIPTS, key: key.to_owned() })
            .collect();
        if keys.is_empty() {
            return Ok(());
        }
        self.backend.write(keys).await
    }
}
