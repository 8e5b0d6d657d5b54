//! The proxy's HTML→Markdown path on hostile pages: it never panics, never
//! overflows the stack (it runs here on the fuzzer's own thread, with no
//! extra stack), and never returns more than its Markdown limit.
//!
//! The first byte picks the mode: raw bytes as a page, or a structure-aware
//! page where each byte is an instruction (open one of a set of tags, close
//! one, text, an attribute, or a run of hundreds of openings), so deep and
//! wide trees of every kind of element come up at once rather than by luck.
#![no_main]

use atelier_proxy::page::{html_to_markdown, MAX_MARKDOWN};
use libfuzzer_sys::fuzz_target;

const TAGS: &[&str] = &[
    "div", "p", "span", "b", "i", "a href='x'", "ul", "li", "ol", "table", "tr", "td", "th", "pre", "code",
    "blockquote", "h1", "h2", "em", "strong", "script", "style", "title", "textarea", "svg", "math", "template",
    "select", "option", "font", "nobr", "form", "img", "br", "frameset", "plaintext", "xmp", "noscript", "head", "body",
];

fn structured(data: &[u8]) -> String {
    let mut html = String::new();
    let mut bytes = data.iter().copied();
    while let Some(op) = bytes.next() {
        let tag = TAGS[usize::from(op >> 2) % TAGS.len()];
        let name = tag.split(' ').next().unwrap_or(tag);
        match op & 3 {
            0 => {
                html.push('<');
                html.push_str(tag);
                html.push('>');
            }
            1 => {
                html.push_str("</");
                html.push_str(name);
                html.push('>');
            }
            2 => {
                let n = usize::from(bytes.next().unwrap_or(1)) * 64;
                for _ in 0..n {
                    html.push('<');
                    html.push_str(tag);
                    html.push('>');
                }
            }
            _ => html.push_str(["text ", "&amp;", "<!--", "-->", "]]>", "<![CDATA[", "\0", "雨"][usize::from(op >> 5)]),
        }
    }
    html
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let html = if mode & 1 == 0 { String::from_utf8_lossy(rest).into_owned() } else { structured(rest) };
    let page = html_to_markdown(&html);
    // The cut adds a short marker after the limit.
    assert!(page.markdown.chars().count() <= MAX_MARKDOWN + 100);
});
