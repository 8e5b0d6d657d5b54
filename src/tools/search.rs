//! Local search tools: the store's index (`Db::search`, the core of
//! `agent.search`) as the agent's reads. The model finds a passage, a name
//! or an earlier conversation by its words and then reads what it found
//! (`get_manuscript`, `read_memories_by_date`), instead of reading chapter
//! after chapter.
//!
//! A search is a read of local data ([`Subject::Find`]): a repeated one is
//! run again and, when its hits did not change, answered "already known".

use std::rc::Rc;

use serde_json::{json, Map, Value};

use super::{About, AnyTool, Subject, ToolError, ToolOutput, Touch};
use crate::search::SearchOptions;

pub fn tools() -> Vec<Rc<dyn AnyTool>> {
    vec![Rc::new(PROJECT), Rc::new(MEMORIES)]
}

/// A search tool: one type for both, so the package holds one copy of a
/// tool's code for the two.
pub struct Find {
    name: &'static str,
    description: &'static str,
    schema: &'static str,
    /// The scopes searched (`agent.search`'s names).
    scope: &'static [&'static str],
    /// Whether it takes a `project_id`, and its hits say their project
    /// (else: memories, whose hits say their date).
    project: bool,
}

/// The person's chapters and plot, by their words.
const PROJECT: Find = Find {
    name: "search_project",
    description: "Search the person's chapters, sections and plot items by words (Japanese or English): returns \
ids, titles and a snippet around each hit, best first. Use it to find a passage, a name or a scene instead of \
reading chapter after chapter, then read what you need with get_manuscript.",
    schema: r#"{"type":"object","properties":{"query":{"type":"string","description":"the words to find"},"project_id":{"type":"string","description":"only this project (optional: all projects)"},"limit":{"type":"integer","minimum":1,"maximum":20,"description":"at most this many hits (default 8)"}},"required":["query"]}"#,
    scope: &["manuscripts", "plot"],
    project: true,
};

/// Long-term memories, by their words.
const MEMORIES: Find = Find {
    name: "search_memories",
    description: "Search the long-term memories of earlier conversations by words: returns each matching \
memory's date, tags and a snippet, best first. Use it when the person describes an earlier conversation without \
its date, then read that day with read_memories_by_date.",
    schema: r#"{"type":"object","properties":{"query":{"type":"string","description":"the words to find"},"limit":{"type":"integer","minimum":1,"maximum":20,"description":"at most this many hits (default 8)"}},"required":["query"]}"#,
    scope: &["memories"],
    project: false,
};

/// Hits a search gives the model when it asks for no number; the most.
const DEFAULT_HITS: usize = 8;
const MAX_HITS: usize = 20;

pub struct FindArgs {
    query: String,
    project_id: Option<String>,
    limit: usize,
}

impl FindArgs {
    fn read(f: &super::Fields<'_>, project: bool) -> Result<FindArgs, ToolError> {
        let query = f.text(&["query", "q"])?;
        if query.trim().is_empty() {
            return Err(f.invalid("`query` is empty: give the words to look for"));
        }
        let project_id = if project { f.opt_text(&["project_id"])?.filter(|p| !p.trim().is_empty()) } else { None };
        let limit =
            f.number("limit")?.filter(|n| n.is_finite()).map_or(DEFAULT_HITS, |n| (n as usize).clamp(1, MAX_HITS));
        Ok(FindArgs { query, project_id, limit })
    }

    /// The fact this search is: its tool, place, number and words
    /// (lowercase, single spaces).
    fn subject(&self, tool: &str) -> Subject {
        let words = crate::platform::lowercase(&self.query).split_whitespace().collect::<Vec<_>>().join(" ");
        let place = self.project_id.as_deref().unwrap_or("*");
        Subject::Find([tool, "/", place, "/", &self.limit.to_string(), "/", &words].concat())
    }
}

/// The hits of `args.query` in `scope`, as the model reads them: each
/// hit's kind, id, title and snippet (and its project, or a memory's
/// date), and a note while the index is still being built.
async fn find(
    ctx: &super::ToolContext<'_>,
    args: &FindArgs,
    scope: &[&str],
    project: bool,
) -> Result<ToolOutput, ToolError> {
    let options = SearchOptions {
        scope: scope.iter().map(|s| (*s).to_owned()).collect(),
        project_id: args.project_id.clone(),
        session_id: None,
        limit: Some(args.limit as f64),
        // The model's searches go by words (a meaning ranking would cost
        // an embedding request per call).
        meaning: None,
    };
    let answer = ctx.db.search(&args.query, &options).await?;
    let hits: Vec<Value> = answer
        .hits
        .iter()
        .map(|hit| {
            let mut item = Map::new();
            item.insert("kind".into(), hit.kind.name().into());
            item.insert("id".into(), hit.id.as_str().into());
            item.insert("title".into(), hit.title.as_str().into());
            item.insert("snippet".into(), hit.snippet.as_str().into());
            match (&hit.project_id, project) {
                (Some(id), true) => {
                    item.insert("projectId".into(), id.as_str().into());
                }
                // A memory's title is its date, then its tags.
                (_, false) => {
                    item.insert("date".into(), hit.title.split(" · ").next().unwrap_or_default().into());
                }
                _ => {}
            }
            Value::Object(item)
        })
        .collect();
    // The words as the model gave them, cut short (a query reads its first
    // 1,000 characters; the model needs only to tell its searches apart).
    let asked: String = args.query.chars().take(100).collect();
    let mut out = json!({ "query": asked, "hits": hits });
    if hits_missing(&answer.status) {
        out["note"] = format!(
            "the search index is still being built ({} records wait): hits may be missing; search again shortly",
            answer.status.pending
        )
        .into();
    }
    Ok(ToolOutput::json(&out).titled(["Search: ", &asked].concat()))
}

fn hits_missing(status: &crate::store::SearchStatus) -> bool {
    !status.complete || status.pending > 0
}

#[async_trait::async_trait(?Send)]
impl super::Tool for Find {
    type Args = FindArgs;

    fn name(&self) -> &str {
        self.name
    }

    fn spec(&self) -> crate::llm::ToolSpec {
        crate::llm::ToolSpec::function(self.name, self.description, crate::tools::schema(self.schema))
    }

    fn about(&self) -> About {
        About::READ
    }

    fn parse(&self, args: &Value) -> Result<FindArgs, ToolError> {
        FindArgs::read(&super::Fields::of(self.name, args)?, self.project)
    }

    fn touches(&self, args: &FindArgs) -> Option<Touch> {
        Some(Touch::Reads(args.subject(self.name)))
    }

    async fn call(&self, args: &FindArgs, ctx: &super::ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        find(ctx, args, self.scope, self.project).await
    }
}
