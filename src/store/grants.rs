//! The person's grants: "approve for this session" in a review lets the
//! later calls of that tool in the session run without one (see
//! `agent::consent`). Stored in `sessionGrants` (schema v10), keyed
//! `<sessionId>/<tool>` and indexed by session, so a grant outlives a
//! reload, shows in every tab, and goes with its session.

use serde::Serialize;
use serde_json::{json, Value};

use super::backend::Write;
use super::db::Db;
use super::error::Result;
use super::model::stores::GRANTS;
use crate::platform;

/// A tool the person granted for a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub tool: String,
    pub created_at: f64,
}

fn key(session_id: &str, tool: &str) -> String {
    format!("{session_id}/{tool}")
}

impl Db {
    /// Grants `tool` for the session (again: a new date).
    pub async fn grant(&self, session_id: &str, tool: &str) -> Result<Grant> {
        let grant = Grant { tool: tool.to_owned(), created_at: platform::now_ms() };
        // Written by hand: a derived decoder of the record would cost more
        // than these lines (BENCHMARKS.md "Package size").
        let record =
            json!({"id": key(session_id, tool), "sessionId": session_id, "tool": tool, "createdAt": grant.created_at});
        self.backend.write(vec![Write::Put { store: GRANTS, value: record }]).await?;
        Ok(grant)
    }

    /// The session's grants, by tool name.
    pub async fn grants(&self, session_id: &str) -> Result<Vec<Grant>> {
        let mut list: Vec<Grant> = Vec::new();
        for record in self.backend.by_index(GRANTS, "sessionId", session_id).await? {
            if let Some(tool) = record.get("tool").and_then(Value::as_str) {
                let created_at = record.get("createdAt").and_then(Value::as_f64).unwrap_or_default();
                list.push(Grant { tool: tool.to_owned(), created_at });
            }
        }
        Ok(list)
    }

    /// Ends the session's grant of `tool` (nothing happens when there is none).
    pub async fn revoke_grant(&self, session_id: &str, tool: &str) -> Result<()> {
        self.backend.write(vec![Write::Delete { store: GRANTS, key: key(session_id, tool) }]).await
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use futures_executor::block_on;

    use super::*;
    use crate::store::MemoryBackend;

    #[test]
    fn grants_are_per_session_and_go_with_it() {
        let db = Db::new(Rc::new(MemoryBackend::new()));
        block_on(db.record_input("s1", "hi")).unwrap();
        block_on(db.grant("s1", "send_mail")).unwrap();
        block_on(db.grant("s1", "edit_manuscript")).unwrap();
        block_on(db.grant("s2", "send_mail")).unwrap();
        let tools = |s: &str| block_on(db.grants(s)).unwrap().into_iter().map(|g| g.tool).collect::<Vec<_>>();
        assert_eq!(tools("s1"), ["edit_manuscript", "send_mail"]);
        block_on(db.revoke_grant("s1", "send_mail")).unwrap();
        block_on(db.revoke_grant("s1", "never_granted")).unwrap();
        assert_eq!(tools("s1"), ["edit_manuscript"]);
        block_on(db.delete_session("s1")).unwrap();
        assert!(tools("s1").is_empty(), "a grant dies with its session");
        assert_eq!(tools("s2"), ["send_mail"]);
    }
}
