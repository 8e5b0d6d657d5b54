//! The token counts of a chat answer, read from its bytes as they pass
//! through (the stream is never held back): the last SSE `data:` line that
//! carries `usage` (OpenAI, with `prompt_tokens_details.cached_tokens`),
//! `timings` (llama.cpp: `cache_n`, `prompt_n`, `predicted_n`) or
//! `tokens_cached`, or the JSON body of an answer that was not streamed.
//! The chat handler logs them as one line when the answer ends.

use serde_json::{json, Value};

/// Longest SSE line (or non-streamed body) looked at; longer ones are skipped.
const MAX_LINE: usize = 1 << 20;

/// Prompt, completion and cached prompt tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
}

/// Watches the bytes of one answer.
#[derive(Debug)]
pub struct UsageTap {
    stream: bool,
    line: Vec<u8>,
    overflow: bool,
    found: Option<Counts>,
}

impl UsageTap {
    pub fn new(stream: bool) -> UsageTap {
        UsageTap { stream, line: Vec::new(), overflow: false, found: None }
    }

    /// The next bytes of the answer.
    pub fn feed(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if self.stream && b == b'\n' {
                self.take_line();
            } else if self.line.len() < MAX_LINE {
                self.line.push(b);
            } else {
                self.overflow = true;
            }
        }
    }

    fn take_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.overflow) {
            return;
        }
        let data = if self.stream {
            match line.strip_prefix(b"data:") {
                Some(data) => data,
                None => return,
            }
        } else {
            &line[..]
        };
        let mentions = |word: &[u8]| data.windows(word.len()).any(|w| w == word);
        if !(mentions(b"usage") || mentions(b"timings") || mentions(b"tokens_cached")) {
            return;
        }
        if let Ok(value) = serde_json::from_slice::<Value>(data.trim_ascii()) {
            if let Some(counts) = read(&value, self.found) {
                self.found = Some(counts);
            }
        }
    }

    /// The counts the answer reported, once it ended.
    pub fn finish(mut self) -> Option<Counts> {
        self.take_line();
        self.found
    }

    /// The log line for `model` (when the answer reported counts).
    pub fn log_line(self, model: &str) -> Option<Value> {
        self.finish().map(|c| {
            json!({ "event": "usage", "model": model, "prompt_tokens": c.prompt,
                    "completion_tokens": c.completion, "cached_tokens": c.cached })
        })
    }
}

fn read(reply: &Value, known: Option<Counts>) -> Option<Counts> {
    let number = |v: Option<&Value>| v.and_then(Value::as_u64);
    let mut counts = known.unwrap_or_default();
    let mut seen = false;
    if let Some(u) = reply.get("usage").filter(|u| u.is_object()) {
        counts.prompt = number(u.get("prompt_tokens")).unwrap_or(counts.prompt);
        counts.completion = number(u.get("completion_tokens")).unwrap_or(counts.completion);
        counts.cached = number(u.pointer("/prompt_tokens_details/cached_tokens")).unwrap_or(counts.cached);
        seen = true;
    }
    if let Some(t) = reply.get("timings").filter(|t| t.is_object()) {
        let cached = number(t.get("cache_n")).unwrap_or(0);
        counts.cached = counts.cached.max(cached);
        if counts.prompt == 0 {
            counts.prompt = number(t.get("prompt_n")).unwrap_or(0) + cached;
            counts.completion = number(t.get("predicted_n")).unwrap_or(counts.completion);
        }
        seen = true;
    }
    if let Some(cached) = number(reply.get("tokens_cached")) {
        counts.cached = counts.cached.max(cached);
        seen = true;
    }
    seen.then_some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_a_stream_split_anywhere() {
        let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n\
                   data: {\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":9,\
                   \"prompt_tokens_details\":{\"cached_tokens\":96}}}\n\ndata: [DONE]\n\n";
        for split in [1, 7, 50, sse.len()] {
            let mut tap = UsageTap::new(true);
            for piece in sse.as_bytes().chunks(split) {
                tap.feed(piece);
            }
            assert_eq!(tap.finish(), Some(Counts { prompt: 120, completion: 9, cached: 96 }), "split {split}");
        }
    }

    #[test]
    fn llama_cpp_timings_and_plain_bodies() {
        let mut tap = UsageTap::new(true);
        tap.feed(b"data: {\"choices\":[],\"timings\":{\"cache_n\":80,\"prompt_n\":20,\"predicted_n\":5}}\n");
        assert_eq!(tap.finish(), Some(Counts { prompt: 100, completion: 5, cached: 80 }));
        let mut tap = UsageTap::new(false);
        tap.feed(br#"{"choices":[{"message":{"content":"usage is a word"}}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#);
        assert_eq!(tap.log_line("m").unwrap()["prompt_tokens"], 3);
        let mut tap = UsageTap::new(true);
        tap.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"no counts\"}}]}\n");
        assert_eq!(tap.finish(), None);
    }
}
