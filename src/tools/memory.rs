//! Memory tools: find the dates with long-term memories, then read them.

use std::rc::Rc;

use serde_json::json;

use super::{About, AnyTool, NoArgs, ToolOutput};
use crate::store::ArtifactType;

/// A read of long-term memories, kept as a `text` artifact.
const MEMORY_READ: About = About { persists: Some(ArtifactType::Text), ..About::READ };

pub fn tools() -> Vec<Rc<dyn AnyTool>> {
    vec![Rc::new(ListMemoryDates), Rc::new(ReadMemoriesByDate)]
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

tool! {
    /// Dates that have memories.
    ListMemoryDates {
        name: "list_memory_dates",
        description: "List the dates (YYYY-MM-DD) on which long-term memories were stored. Use it before read_memories_by_date when the person refers to an earlier conversation.",
        parameters: crate::tools::no_arguments(),
        about: MEMORY_READ,
        args: NoArgs,
        parse: |_f| Ok(NoArgs),
        call: |_args, ctx| {
            let dates = ctx.db.memory_dates().await?;
            Ok(ToolOutput::json(&dates).titled("Memory dates"))
        }
    }
}

pub struct RangeArgs {
    start_date: String,
    end_date: Option<String>,
}

impl RangeArgs {
    fn end(&self) -> &str {
        self.end_date.as_deref().unwrap_or(&self.start_date)
    }
}

tool! {
    /// Memories of a date or a range of dates.
    ReadMemoriesByDate {
        name: "read_memories_by_date",
        description: "Read the long-term memories of one date, or of a range when end_date is given (inclusive).",
        parameters: crate::tools::schema(
            r#"{
                "type": "object",
                "properties": {
                    "start_date": {"type": "string", "description": "YYYY-MM-DD"},
                    "end_date": {"type": "string", "description": "YYYY-MM-DD, optional"}
                },
                "required": ["start_date"]
            }"#,
        ),
        about: MEMORY_READ,
        args: RangeArgs,
        parse: |f| {
            let a = RangeArgs { start_date: f.text(&["start_date", "date"])?, end_date: f.opt_text(&["end_date"])? };
            if !is_date(&a.start_date) || !is_date(a.end()) {
                Err(f.invalid("dates must be YYYY-MM-DD"))
            } else if a.end() < a.start_date.as_str() {
                Err(f.invalid("end_date is before start_date"))
            } else {
                Ok(a)
            }
        },
        call: |a, ctx| {
            let end = a.end();
            let memories = ctx.db.memories_between(&a.start_date, end).await?;
            let list: Vec<_> = memories.iter().map(|m| json!({ "date": m.date, "summary": m.summary, "tags": m.tags })).collect();
            let title = if end == a.start_date { format!("Memories: {}", a.start_date) } else { format!("Memories: {} to {end}", a.start_date) };
            Ok(ToolOutput::json(&list).titled(title))
        }
    }
}
