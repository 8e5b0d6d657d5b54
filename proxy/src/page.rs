//! Web pages to Markdown, bounded in depth, size and time.
//!
//! A page is hostile input. HTML→Markdown converters walk the DOM
//! recursively, and html5ever's tree builder scans its stack of open
//! elements for every tag, so one page of 20,000 nested `<div>`s overflowed
//! the worker's stack and 600,000 of them took quadratic time. Three bounds
//! keep every page cheap and every thread alive:
//!
//! 1. [`prune`] re-tokenises the page (html5ever's tokenizer is a flat
//!    state machine) into HTML whose nesting never passes [`MAX_DEPTH`]:
//!    deeper start tags are dropped and their text kept, so the content is
//!    flattened, never recursed into. Scripts, styles and comments go here too.
//! 2. The tree built from that is checked again ([`flatten_deep`]): any element
//!    the tree builder still nests deeper (misnested formatting elements can be
//!    re-opened) has its subtree replaced by its text, walked with a heap stack.
//! 3. [`convert`] runs on a thread of its own with a known stack, at most
//!    [`CONVERSIONS`] at once, within a time budget; the Markdown is cut at
//!    [`MAX_MARKDOWN`] characters with a marker.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer};
use markup5ever_rcdom::{Node, NodeData};
use tokio::sync::Semaphore;

/// Deepest element nesting kept from a page (the rest is flattened to text).
pub const MAX_DEPTH: usize = 128;
/// Deepest nesting the converter walks (a second bound, after the tree builder).
const TREE_DEPTH: usize = MAX_DEPTH + 64;
/// Longest Markdown returned for one page, in characters.
pub const MAX_MARKDOWN: usize = 1_000_000;
/// Conversions running at once (each on its own thread).
const CONVERSIONS: usize = 2;
/// Stack of a conversion thread: far more than [`TREE_DEPTH`] levels need.
const STACK_BYTES: usize = 16 * 1024 * 1024;

/// Tags whose content never becomes Markdown.
const DROPPED: &[&str] =
    &["script", "style", "noscript", "template", "iframe", "svg", "math", "nav", "form", "object", "select"];
/// Tags that have no end tag.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source", "track",
    "wbr", "frame",
];

/// A page as Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub title: String,
    pub markdown: String,
    /// Markup deeper than [`MAX_DEPTH`] was flattened to its text.
    pub flattened: bool,
    /// The Markdown was cut at [`MAX_MARKDOWN`] characters.
    pub truncated: bool,
}

/// Why a page could not be converted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConvertError {
    #[error("the page took longer than {0:?} to convert; it is too complex to read")]
    TooSlow(Duration),
    #[error("the proxy is busy converting other pages; try again shortly")]
    Busy,
    #[error("the page could not be converted: {0}")]
    Failed(String),
}

impl ConvertError {
    pub fn code(&self) -> &'static str {
        match self {
            ConvertError::TooSlow(_) => "page_too_complex",
            ConvertError::Busy => "busy",
            ConvertError::Failed(_) => "conversion_failed",
        }
    }
}

/// Converts `html` off the async workers, within `budget`.
///
/// A conversion that runs over its budget is abandoned (its thread finishes
/// on its own, bounded by the page size limit, and keeps its slot until then,
/// so slow pages cannot pile up threads). Waiting for a slot has a budget of
/// its own, so a queue of pages is `busy`, not "too complex".
pub async fn convert(html: String, budget: Duration) -> Result<Page, ConvertError> {
    static SLOTS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    let slots = SLOTS.get_or_init(|| Arc::new(Semaphore::new(CONVERSIONS))).clone();
    let slot = tokio::time::timeout(budget, slots.acquire_owned())
        .await
        .map_err(|_| ConvertError::Busy)?
        .map_err(|e| ConvertError::Failed(e.to_string()))?;
    let work = async move {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("html-to-markdown".into())
            .stack_size(STACK_BYTES)
            .spawn(move || {
                let page = html_to_markdown(&html);
                drop(slot);
                let _ = tx.send(page);
            })
            .map_err(|e| ConvertError::Failed(format!("no conversion thread: {e}")))?;
        rx.await.map_err(|_| ConvertError::Failed("the conversion stopped".into()))
    };
    tokio::time::timeout(budget, work).await.map_err(|_| ConvertError::TooSlow(budget))?
}

/// The page's title and Markdown, bounded (see the module docs). Runs on the
/// calling thread: use [`convert`] from async code.
pub fn html_to_markdown(html: &str) -> Page {
    let pruned = prune(html);
    let mut skipped = DROPPED.to_vec();
    skipped.push("head");
    let converter = htmd::HtmlToMarkdown::builder().skip_tags(skipped).build();
    let (markdown, flattened) = match converter.html_to_tree(&pruned.html) {
        Ok(tree) => {
            let deep = flatten_deep(&tree, TREE_DEPTH);
            (converter.tree_to_markdown(&tree), deep || pruned.flattened)
        }
        Err(_) => (pruned.text, true),
    };
    let (markdown, truncated) = cut(markdown.trim(), MAX_MARKDOWN);
    Page { title: pruned.title, markdown, flattened, truncated }
}

/// `text` cut at `max` characters (on a char boundary), with a marker.
pub fn cut(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        None => (text.to_owned(), false),
        Some((at, _)) => {
            let omitted = text[at..].chars().count();
            (format!("{}\n\n[… page cut here: {omitted} more characters not shown]", &text[..at]), true)
        }
    }
}

/// What [`prune`] made of a page.
pub struct Pruned {
    /// The page re-serialised with nesting of at most [`MAX_DEPTH`].
    pub html: String,
    /// Its text alone (a fallback).
    pub text: String,
    pub title: String,
    pub flattened: bool,
}

/// Re-tokenises `html` into markup no deeper than [`MAX_DEPTH`], without
/// scripts, styles, comments or other dropped elements.
pub fn prune(html: &str) -> Pruned {
    let sink = Pruner::default();
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    let tokenizer = Tokenizer::new(sink, Default::default());
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    let state = tokenizer.sink.state.into_inner();
    let title = state.title.split_whitespace().collect::<Vec<_>>().join(" ");
    Pruned { html: state.out, text: state.text, title, flattened: state.flattened }
}

#[derive(Default)]
struct Pruner {
    state: RefCell<PruneState>,
}

#[derive(Default)]
struct PruneState {
    out: String,
    text: String,
    title: String,
    /// Open elements that were kept, innermost last.
    open: Vec<String>,
    /// Inside a dropped element: its name and the nesting of that name in it.
    dropping: Option<(String, usize)>,
    in_title: bool,
    flattened: bool,
}

/// Elements an opening `tag` closes implicitly, when one is the innermost.
fn implied_end(tag: &str, open: &str) -> bool {
    match tag {
        "li" => open == "li",
        "dt" | "dd" => matches!(open, "dt" | "dd"),
        "tr" => matches!(open, "tr" | "td" | "th"),
        "td" | "th" => matches!(open, "td" | "th"),
        "option" => open == "option",
        "p" | "div" | "ul" | "ol" | "dl" | "table" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "pre" | "blockquote"
        | "section" | "article" | "header" | "footer" | "aside" | "main" | "figure" | "hr" => open == "p",
        _ => false,
    }
}

fn escape_into(out: &mut String, text: &str, attribute: bool) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\0' => {}
            c => out.push(c),
        }
    }
}

impl PruneState {
    fn start(&mut self, tag: &Tag) -> TokenSinkResult<()> {
        let name: &str = &tag.name;
        if let Some((dropped, nesting)) = &mut self.dropping {
            if dropped == name && !tag.self_closing {
                *nesting += 1;
            }
            return TokenSinkResult::Continue;
        }
        if name == "title" {
            self.in_title = true;
            return TokenSinkResult::RawData(RawKind::Rcdata);
        }
        let raw = match name {
            "script" => Some(RawKind::ScriptData),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => Some(RawKind::Rawtext),
            "title" | "textarea" => Some(RawKind::Rcdata),
            _ => None,
        };
        if DROPPED.contains(&name) {
            if !tag.self_closing && !VOID.contains(&name) {
                self.dropping = Some((name.to_owned(), 1));
            }
            return raw.map_or(TokenSinkResult::Continue, TokenSinkResult::RawData);
        }
        while self.open.last().is_some_and(|open| implied_end(name, open)) {
            self.open.pop();
        }
        let void = VOID.contains(&name) || tag.self_closing;
        if !void && self.open.len() >= MAX_DEPTH {
            // Too deep: keep the text, drop the element.
            self.flattened = true;
            self.out.push(' ');
            return raw.map_or(TokenSinkResult::Continue, TokenSinkResult::RawData);
        }
        self.out.push('<');
        self.out.push_str(name);
        for attr in &tag.attrs {
            let key: &str = &attr.name.local;
            if key.starts_with("on") || key == "style" {
                continue;
            }
            self.out.push(' ');
            self.out.push_str(key);
            self.out.push_str("=\"");
            escape_into(&mut self.out, &attr.value, true);
            self.out.push('"');
        }
        self.out.push('>');
        if !void {
            self.open.push(name.to_owned());
        }
        if matches!(name, "br" | "p" | "div" | "li" | "tr") {
            self.text.push('\n');
        }
        raw.map_or(TokenSinkResult::Continue, TokenSinkResult::RawData)
    }

    fn end(&mut self, tag: &Tag) {
        let name: &str = &tag.name;
        if let Some((dropped, nesting)) = &mut self.dropping {
            if dropped == name {
                *nesting -= 1;
                if *nesting == 0 {
                    self.dropping = None;
                }
            }
            return;
        }
        if name == "title" {
            self.in_title = false;
            return;
        }
        // Close up to the matching element, looking only near the top: a
        // stray end tag must not cost a walk of the whole stack.
        let window = self.open.len().saturating_sub(16);
        if let Some(at) = self.open[window..].iter().rposition(|open| open == name) {
            for open in self.open.drain(window + at..).rev() {
                self.out.push_str("</");
                self.out.push_str(&open);
                self.out.push('>');
            }
        }
    }

    fn characters(&mut self, text: &str) {
        if self.dropping.is_some() {
            return;
        }
        if self.in_title {
            if self.title.len() < 1000 {
                self.title.push_str(text);
            }
            return;
        }
        escape_into(&mut self.out, text, false);
        self.text.push_str(text);
    }
}

impl TokenSink for Pruner {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut state = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag => return state.start(&tag),
                TagKind::EndTag => state.end(&tag),
            },
            Token::CharacterTokens(text) => state.characters(&text),
            Token::DoctypeToken(_)
            | Token::CommentToken(_)
            | Token::NullCharacterToken
            | Token::EOFToken
            | Token::ParseError(_) => {}
        }
        TokenSinkResult::Continue
    }
}

/// Replaces the subtree of every element deeper than `max` by its text, with
/// an explicit stack (no recursion). Returns whether anything was flattened.
pub fn flatten_deep(root: &Rc<Node>, max: usize) -> bool {
    let mut flattened = false;
    let mut stack: Vec<(Rc<Node>, usize)> = vec![(root.clone(), 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth >= max && !node.children.borrow().is_empty() {
            let text = text_of(&node);
            let leaf = Node::new(NodeData::Text { contents: RefCell::new(StrTendril::from_slice(&text)) });
            leaf.parent.set(Some(Rc::downgrade(&node)));
            // The old subtree drops iteratively (markup5ever_rcdom's Drop).
            *node.children.borrow_mut() = vec![leaf];
            flattened = true;
            continue;
        }
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), depth + 1));
        }
    }
    flattened
}

/// The text of `node`'s subtree in document order, blocks on their own lines.
fn text_of(node: &Rc<Node>) -> String {
    let mut text = String::new();
    let mut stack: Vec<Rc<Node>> = node.children.borrow().iter().rev().cloned().collect();
    while let Some(next) = stack.pop() {
        match &next.data {
            NodeData::Text { contents } => text.push_str(&contents.borrow()),
            NodeData::Element { name, .. } => {
                let tag: &str = &name.local;
                if DROPPED.contains(&tag) {
                    continue;
                }
                if !text.ends_with(char::is_whitespace) && !text.is_empty() {
                    text.push(' ');
                }
                stack.extend(next.children.borrow().iter().rev().cloned());
            }
            _ => {}
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize, open: &str, close: &str, inner: &str) -> String {
        let mut html = String::with_capacity(depth * (open.len() + close.len()) + inner.len());
        for _ in 0..depth {
            html.push_str(open);
        }
        html.push_str(inner);
        for _ in 0..depth {
            html.push_str(close);
        }
        html
    }

    #[test]
    fn markdown_drops_scripts_styles_and_navigation() {
        let html = "<html><head><title>A &amp; B</title><style>p{}</style></head><body>\
                    <nav><a href='/'>Home</a></nav><h1>Heading</h1><p>Text <b>bold</b>.</p>\
                    <script>if (a<b) { document.write('<p>alert(1)</p>') }</script><!-- hidden --></body></html>";
        let page = html_to_markdown(html);
        assert_eq!(page.title, "A & B");
        let md = &page.markdown;
        assert!(md.contains("# Heading"), "{md}");
        assert!(md.contains("**bold**"), "{md}");
        assert!(!md.contains("alert") && !md.contains("Home") && !md.contains("p{}") && !md.contains("hidden"), "{md}");
        assert!(!page.flattened && !page.truncated);
    }

    #[test]
    fn ordinary_structure_survives_pruning() {
        let html = "<ul><li>one<li>two<li>three</ul><p>a<p>b<table><tr><td>x<td>y<tr><td>z</table>\
                    <p><a href=\"https://example.com/?a=1&amp;b=2\">link</a></p>";
        let page = html_to_markdown(html);
        assert!(page.markdown.contains("one") && page.markdown.contains("three"), "{}", page.markdown);
        assert!(page.markdown.contains("[link](https://example.com/?a=1&b=2)"), "{}", page.markdown);
        assert!(!page.flattened);
        // Unclosed paragraphs do not pile up as depth.
        let many = "<p>para".repeat(5 * MAX_DEPTH);
        assert!(!prune(&many).flattened);
    }

    #[test]
    fn deep_nesting_is_flattened_with_its_text_kept() {
        for depth in [20_000, 100_000] {
            let page = html_to_markdown(&nested(depth, "<div>", "</div>", "deep text"));
            assert!(page.flattened, "{depth}");
            assert!(page.markdown.contains("deep text"), "{depth}");
        }
        // Every kind of element, and unclosed ones.
        let page = html_to_markdown(&"<span><b><i><a href=x>".repeat(30_000));
        assert!(page.flattened);
        let page = html_to_markdown(&format!("{}tail", "<blockquote><ul><li>".repeat(20_000)));
        assert!(page.markdown.contains("tail"));
    }

    #[test]
    fn the_tree_is_checked_again_after_the_tree_builder() {
        // Misnested formatting elements are re-opened by the tree builder;
        // whatever the depth it builds, the walk stays bounded.
        let html = "<b><i><u><s><em>x</p>".repeat(5_000);
        let page = html_to_markdown(&html);
        assert!(page.markdown.contains('x'));
        let converter = htmd::HtmlToMarkdown::new();
        let tree = converter.html_to_tree(&nested(500, "<div>", "</div>", "t")).unwrap();
        assert!(flatten_deep(&tree, 50));
        assert!(converter.tree_to_markdown(&tree).contains('t'));
    }

    #[test]
    fn huge_text_binary_and_malformed_markup_convert() {
        let page = html_to_markdown(&"word ".repeat(600_000));
        assert!(page.truncated);
        assert!(page.markdown.chars().count() < MAX_MARKDOWN + 100);
        assert!(page.markdown.ends_with("more characters not shown]"));
        let binary: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let _ = html_to_markdown(&String::from_utf8_lossy(&binary));
        for bad in ["<", "</", "<a href='", "<<<>>>", "<!--", "<![CDATA[", "<table><td><tr></table></td>", "\0<p>\0"] {
            let _ = html_to_markdown(bad);
        }
    }

    #[test]
    fn cut_marks_what_it_cut() {
        assert_eq!(cut("abc", 3), ("abc".to_owned(), false));
        let (text, cut_off) = cut("雨雨雨雨", 2);
        assert!(cut_off && text.starts_with("雨雨\n") && text.contains("2 more characters"));
    }

    #[tokio::test]
    async fn conversion_runs_off_thread_within_a_budget() {
        let page = convert(nested(20_000, "<div>", "</div>", "ok"), Duration::from_secs(60)).await.unwrap();
        assert!(page.markdown.contains("ok"));
        let err = convert("<p>x</p>".repeat(200_000), Duration::from_nanos(1)).await.unwrap_err();
        assert_eq!(err.code(), "page_too_complex");
    }
}
