//! Web tools, through the proxy: search and open a page. [`WebTools`] is
//! the seam: the browser implementation calls the proxy's endpoints; native
//! tests use [`ScriptedWeb`].

use std::rc::Rc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{About, AnyTool, Fields, Outbound, Subject, Tool, ToolContext, ToolError, ToolOutput, Toolsets, Touch};
use crate::cancel::CancelToken;
use crate::context::untrusted::{cap_for_model, fence};
use crate::store::ArtifactType;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    pub title: String,
    pub url: String,
    pub content: String,
}

/// A fetched page as Markdown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebPage {
    pub url: String,
    pub title: String,
    pub markdown: String,
}

/// Web access (the proxy's `/api/tools/*`).
#[async_trait(?Send)]
pub trait WebTools {
    /// Searches; `cancel` aborts the request.
    async fn search(&self, query: &str, max_results: u32, cancel: &CancelToken)
        -> Result<Vec<SearchResult>, ToolError>;
    /// Fetches a page as Markdown; `cancel` aborts the request.
    async fn open_url(&self, url: &str, cancel: &CancelToken) -> Result<WebPage, ToolError>;
}

/// Canned web answers for native tests; records every query.
#[cfg(any(test, feature = "testing"))]
#[derive(Default)]
pub struct ScriptedWeb {
    pub results: std::cell::RefCell<Vec<SearchResult>>,
    pub pages: std::cell::RefCell<Vec<WebPage>>,
    pub queries: std::cell::RefCell<Vec<String>>,
    /// Every URL asked for, found or not.
    pub opened: std::cell::RefCell<Vec<String>>,
    /// How long each call takes (a slow network; zero by default).
    pub latency: std::cell::Cell<std::time::Duration>,
    /// Calls under way now, and the most there ever were at once.
    pub in_flight: std::cell::Cell<usize>,
    pub max_in_flight: std::cell::Cell<usize>,
}

#[cfg(any(test, feature = "testing"))]
impl ScriptedWeb {
    /// Takes the configured latency, counting the call as under way meanwhile.
    async fn take_time(&self, cancel: &CancelToken) -> Result<(), ToolError> {
        self.in_flight.set(self.in_flight.get() + 1);
        self.max_in_flight.set(self.max_in_flight.get().max(self.in_flight.get()));
        let latency = self.latency.get();
        if !latency.is_zero() {
            crate::platform::sleep(latency).await;
        }
        self.in_flight.set(self.in_flight.get() - 1);
        if cancel.is_cancelled() {
            return Err(ToolError::failed(crate::error::ErrorCode::Aborted, "the run was stopped"));
        }
        Ok(())
    }
}

#[cfg(any(test, feature = "testing"))]
#[async_trait(?Send)]
impl WebTools for ScriptedWeb {
    async fn search(
        &self,
        query: &str,
        max_results: u32,
        cancel: &CancelToken,
    ) -> Result<Vec<SearchResult>, ToolError> {
        self.queries.borrow_mut().push(query.to_owned());
        self.take_time(cancel).await?;
        Ok(self.results.borrow().iter().take(max_results as usize).cloned().collect())
    }

    async fn open_url(&self, url: &str, cancel: &CancelToken) -> Result<WebPage, ToolError> {
        self.opened.borrow_mut().push(url.to_owned());
        self.take_time(cancel).await?;
        self.pages
            .borrow()
            .iter()
            .find(|p| p.url == url)
            .cloned()
            .ok_or_else(|| ToolError::failed(crate::error::ErrorCode::NotFound, format!("cannot open {url}")))
    }
}

pub fn tools() -> Vec<Rc<dyn AnyTool>> {
    vec![Rc::new(WebSearch), Rc::new(OpenUrl)]
}

/// A web read: research only, kept as a `web_search` artifact.
const WEB_READ: About =
    About { heavy: true, persists: Some(ArtifactType::WebSearch), toolsets: Toolsets::RESEARCH, ..About::READ };

pub struct SearchArgs {
    query: String,
    max_results: Option<u32>,
}

pub struct UrlArgs {
    url: String,
}

/// Search results as Markdown for the model (and the artifact).
pub fn format_results(results: &[SearchResult]) -> String {
    if results.is_empty() {
        return "No results.".into();
    }
    results
        .iter()
        .enumerate()
        .map(|(i, r)| format!("[{}] {}\n{}\n{}", i + 1, r.title, r.url, r.content))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Searches the web.
pub struct WebSearch;

#[async_trait(?Send)]
impl Tool for WebSearch {
    type Args = SearchArgs;
    fn name(&self) -> &str {
        "web_search"
    }
    fn spec(&self) -> crate::llm::ToolSpec {
        crate::llm::ToolSpec::function(
            "web_search",
            "Search the web for current or external information. Returns titles, URLs and extracts; cite them.",
            crate::tools::schema(
                r#"{
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "max_results": {"type": "integer", "minimum": 1, "maximum": 10}
                    },
                    "required": ["query"]
                }"#,
            ),
        )
    }
    fn about(&self) -> About {
        WEB_READ
    }
    fn parse(&self, args: &serde_json::Value) -> Result<SearchArgs, ToolError> {
        let f = Fields::of("web_search", args)?;
        let query = f.text(&["query"])?;
        if query.trim().is_empty() {
            return Err(f.invalid("`query` is empty"));
        }
        Ok(SearchArgs { query, max_results: f.number("max_results")?.map(|n| n.clamp(1.0, 10.0) as u32) })
    }
    fn sends(&self, a: &SearchArgs) -> Option<Outbound> {
        Some(Outbound::Query(a.query.trim().to_owned()))
    }
    fn touches(&self, a: &SearchArgs) -> Option<Touch> {
        let normalised = crate::platform::lowercase(&a.query).split_whitespace().collect::<Vec<_>>().join(" ");
        Some(Touch::Reads(Subject::Search(normalised)))
    }
    fn query(&self, a: &SearchArgs) -> Option<String> {
        Some(a.query.clone())
    }
    fn with_query(&self, raw: &serde_json::Value, query: &str) -> Option<serde_json::Value> {
        let mut raw = raw.clone();
        raw["query"] = query.into();
        Some(raw)
    }
    async fn call(&self, a: &SearchArgs, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolError> {
        let query = a.query.trim();
        let results = ctx.web.search(query, a.max_results.unwrap_or(5), &ctx.cancel).await?;
        let fenced = fence("search results", &format!("a web search for {query:?}"), &format_results(&results));
        let mut output = ToolOutput::text(fenced).titled(format!("Search: {query}"));
        output.links = results.into_iter().map(|r| r.url).filter(|u| !u.is_empty()).collect();
        Ok(output)
    }
}

tool! {
    /// Opens a page as Markdown.
    OpenUrl {
        name: "open_url",
        description: "Open a web page and read it as Markdown (pages that need JavaScript to render are not supported).",
        parameters: crate::tools::one_string("url"),
        about: WEB_READ,
        args: UrlArgs,
        parse: |f| Ok(UrlArgs { url: f.text(&["url"])? }),
        touches: |a| Some(Touch::Reads(Subject::Page(a.url.trim().to_owned()))),
        sends: |a| Some(Outbound::Address(a.url.trim().to_owned())),
        call: |a, ctx| {
            let page = ctx.web.open_url(a.url.trim(), &ctx.cancel).await?;
            let title = if page.title.trim().is_empty() { page.url.clone() } else { page.title.clone() };
            let fenced = fence("web page", &page.url, &format!("# {title}\n{}\n\n{}", page.url, page.markdown));
            let capped = cap_to_budget(&fenced, ctx.page_chars, ctx.page_tokens);
            let mut output = ToolOutput::text(fenced).titled(title);
            if capped.len() < output.content.len() {
                output.for_model = Some(capped);
            }
            Ok(output)
        }
    }
}

/// The model's copy of a page: at most `max_chars` characters and about
/// `max_tokens` estimated tokens, whichever is reached first (Japanese text
/// reaches the token budget long before the character cap).
fn cap_to_budget(text: &str, max_chars: usize, max_tokens: usize) -> String {
    let mut chars = max_chars;
    let mut capped = cap_for_model(text, chars);
    for _ in 0..4 {
        let tokens = crate::llm::estimate_tokens(&capped);
        if tokens <= max_tokens {
            break;
        }
        // Shrink in proportion, with a little to spare for the cut marker.
        chars = (chars.min(capped.chars().count()) as u128 * max_tokens as u128 * 9 / (tokens as u128 * 10)) as usize;
        capped = cap_for_model(text, chars.max(100));
    }
    capped
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn a_dense_page_is_cut_by_tokens_before_characters() {
        let japanese = "吾輩は猫である。".repeat(10_000);
        let capped = cap_to_budget(&japanese, 60_000, 5_000);
        assert!(crate::llm::estimate_tokens(&capped) <= 5_000, "{}", crate::llm::estimate_tokens(&capped));
        assert!(capped.contains("more characters are in the artifact"));
        let english = "The rain fell on the quiet town. ".repeat(1_000);
        assert_eq!(cap_to_budget(&english, 60_000, 20_000), english, "a page under both caps is whole");
    }
}
