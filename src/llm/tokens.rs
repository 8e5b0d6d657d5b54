//! A token estimator: how many tokens a request will cost, without a
//! tokenizer in the package (a BPE vocabulary would weigh megabytes). It
//! counts by character class, tuned against cl100k (the OpenAI tokenizer
//! llama.cpp-served models resemble closely enough for a budget): a run of
//! ASCII letters and digits costs one token per 7 characters (a common word
//! is one), ASCII punctuation about 0.8, CJK characters and kana about 1.1,
//! other non-ASCII letters about one per 2 bytes. A native test measures
//! the error against cl100k over English, Japanese, JSON and code (see
//! BENCHMARKS.md); the budget checks that use it keep a margin for it.

use super::types::{ChatRequest, Message};

/// Tokens a chat template adds around each message (role, separators).
const PER_MESSAGE: usize = 4;

/// The estimated token count of `text`.
pub fn estimate_tokens(text: &str) -> usize {
    let mut tenths = 0usize;
    let mut word = 0usize;
    let flush = |word: &mut usize, tenths: &mut usize| {
        if *word > 0 {
            // Common words are one token; long ones about one per 7 characters.
            *tenths += word.div_ceil(7) * 10;
            *word = 0;
        }
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word += 1;
            continue;
        }
        flush(&mut word, &mut tenths);
        tenths += match c {
            ' ' => 0,
            '\n' | '\t' => 5,
            c if c.is_ascii() => 8,
            '\u{3000}'..='\u{30ff}' | '\u{3400}'..='\u{9fff}' | '\u{f900}'..='\u{faff}' | '\u{ff00}'..='\u{ffef}' => 11,
            '\u{ac00}'..='\u{d7af}' => 11,
            c => 5 * c.len_utf8(),
        };
    }
    flush(&mut word, &mut tenths);
    tenths.div_ceil(10)
}

/// The estimated prompt tokens of a request: its messages (with each
/// message's template overhead) and its tool definitions.
pub fn estimate_request(request: &ChatRequest) -> usize {
    let messages: usize = request
        .messages
        .iter()
        .map(|m| {
            let calls: usize = m
                .tool_calls()
                .iter()
                .map(|c| estimate_tokens(&c.function.name) + estimate_tokens(&c.function.arguments))
                .sum();
            PER_MESSAGE + estimate_tokens(m.text()) + calls + usize::from(matches!(m, Message::Tool { .. }))
        })
        .sum();
    let tools = if request.tools.is_empty() {
        0
    } else {
        estimate_tokens(&crate::json::to_text(&request.tools).unwrap_or_default())
    };
    messages + tools
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// Texts of the kinds a writing agent sends, compared with cl100k.
    fn samples() -> Vec<(&'static str, String)> {
        vec![
            ("english prose", "It was a bright cold day in April, and the clocks were striking thirteen. Winston Smith, his chin nuzzled into his breast in an effort to escape the vile wind, slipped quickly through the glass doors of Victory Mansions, though not quickly enough to prevent a swirl of gritty dust from entering along with him. ".repeat(20)),
            ("japanese prose", "\u{3000}吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。吾輩はここで始めて人間というものを見た。\n「名前は？」と彼は訊いた。\n".repeat(20)),
            ("json arguments", r#"{"section_id": "0a1b2c3d-4e5f-6789-abcd-ef0123456789", "edits": [{"search": "The rain fell.", "replace": "The snow fell."}], "instruction": null}"#.repeat(20)),
            ("markdown with links", "## Sources\n\n- [Kyoto autumn leaves](https://example.org/kyoto/autumn?lang=en) — best in late November.\n- **Tip**: go early; the temples open at 8:30.\n\n".repeat(20)),
            ("rust code", "fn main() {\n    let xs: Vec<u32> = (0..10).map(|x| x * 2).collect();\n    println!(\"{:?}\", xs);\n}\n".repeat(20)),
        ]
    }

    #[test]
    fn the_estimate_stays_within_a_fifth_of_cl100k() {
        let bpe = tiktoken_rs::cl100k_base().unwrap();
        let mut worst = 0.0f64;
        for (kind, text) in samples() {
            let actual = bpe.encode_with_special_tokens(&text).len() as f64;
            let estimate = estimate_tokens(&text) as f64;
            let error = (estimate - actual) / actual;
            eprintln!("token estimate, {kind}: {estimate} vs cl100k {actual} ({:+.1}%)", error * 100.0);
            worst = worst.max(error.abs());
        }
        assert!(worst <= 0.20, "worst error {:.1}%", worst * 100.0);
    }

    #[test]
    fn requests_count_messages_calls_and_tools() {
        let call = crate::llm::ToolCall::new("c", "web_search", &serde_json::json!({"query": "京都"}));
        let request = ChatRequest::new(
            "m",
            vec![
                Message::system("You help."),
                Message::user("Hello there"),
                Message::Assistant { content: None, tool_calls: vec![call] },
            ],
        );
        let bare = estimate_request(&request);
        assert!(bare > 3 * PER_MESSAGE);
        let mut with_tools = request.clone();
        with_tools.tools = vec![crate::llm::ToolSpec::function("web_search", "Search the web.", serde_json::json!({}))];
        assert!(estimate_request(&with_tools) > bare);
        assert_eq!(estimate_tokens(""), 0);
    }
}
