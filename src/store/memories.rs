//! Long-term memories: dated, tagged facts the agent keeps across sessions.

use super::backend::Write;
use super::db::{from_value, to_value, Db};
use super::error::Result;
use super::model::stores::*;
use super::model::*;
use crate::platform;

impl Db {
    /// Dates that have memories, ascending.
    pub async fn memory_dates(&self) -> Result<Vec<String>> {
        let mut dates: Vec<String> = self
            .backend
            .all(MEMORIES)
            .await?
            .iter()
            .filter_map(|v| v.get("date")?.as_str().map(str::to_owned))
            .collect();
        super::order::sort_by(&mut dates, |a, b| a.cmp(b));
        dates.dedup();
        Ok(dates)
    }

    /// Memories from `start` to `end` (inclusive, `YYYY-MM-DD`).
    pub async fn memories_between(&self, start: &str, end: &str) -> Result<Vec<Memory>> {
        let mut list: Vec<Memory> = self
            .backend
            .all(MEMORIES)
            .await?
            .into_iter()
            .map(|v| from_value::<Memory>(MEMORIES, v))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .filter(|m| m.date.as_str() >= start && m.date.as_str() <= end)
            .collect();
        super::order::sort_by(&mut list, |a, b| a.date.cmp(&b.date).then(a.created_at.total_cmp(&b.created_at)));
        Ok(list)
    }

    /// Stores a memory.
    pub async fn add_memory(&self, date: &str, summary: &str, tags: Vec<String>) -> Result<Memory> {
        let memory = Memory {
            id: platform::random_id(),
            date: date.to_owned(),
            summary: summary.to_owned(),
            tags,
            created_at: platform::now_ms(),
        };
        self.backend.write(vec![Write::Put { store: MEMORIES, value: to_value(MEMORIES, &memory)? }]).await?;
        Ok(memory)
    }
}
