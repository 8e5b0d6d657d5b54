//! Reasoning written into the answer text: a leading `<think>…</think>`
//! block (Qwen3, DeepSeek-R1 distills and other reasoning models served
//! without a reasoning parser), or only its closing tag when the server put
//! the opening one in the prompt. [`ThinkSplit`] separates it from the text
//! as the pieces stream in, holding back only what may be a split tag;
//! [`split_think`] does the same for a whole text.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// A piece of streamed text, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Text(String),
    Reasoning(String),
    /// A bare `</think>` came: all the text released so far, and this, was reasoning.
    WasReasoning(String),
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but white space yet.
    #[default]
    Start,
    /// Before a `</think>`: the text is reasoning, or the answer while a
    /// bare `</think>` may still show it was not.
    Before {
        reasoning: bool,
    },
    /// Just after `</think>`: the white space before the answer is dropped.
    AnswerStart,
    Answer,
}

/// Splits reasoning from streamed answer text.
#[derive(Debug, Default)]
pub(crate) struct ThinkSplit {
    state: State,
    held: String,
    bare_close: bool,
    /// The server writes `<think>` into the prompt: text is reasoning until `</think>`.
    prefilled: bool,
}

impl ThinkSplit {
    /// A splitter for a model whose server writes `<think>` into the prompt:
    /// the text is reasoning until `</think>`.
    pub(crate) fn prefilled() -> ThinkSplit {
        ThinkSplit { prefilled: true, ..ThinkSplit::default() }
    }

    /// Whether a `</think>` came that no `<think>` opened.
    pub(crate) fn saw_bare_close(&self) -> bool {
        self.bare_close
    }

    /// The next piece of text.
    pub(crate) fn push(&mut self, text: &str, out: &mut dyn FnMut(Part)) {
        self.held.push_str(text);
        loop {
            match self.state {
                State::Start => {
                    let start = self.held.trim_start();
                    if let Some(rest) = start.strip_prefix(OPEN) {
                        self.held = rest.to_owned();
                        self.state = State::Before { reasoning: true };
                    } else if OPEN.starts_with(start) {
                        return;
                    } else {
                        self.state = State::Before { reasoning: self.prefilled };
                    }
                }
                State::Before { reasoning } => {
                    let found = self.held.find(CLOSE);
                    let ready = found.unwrap_or_else(|| self.held.len() - partial_tag(&self.held, CLOSE));
                    let rest = self.held.split_off(ready);
                    let before = std::mem::replace(&mut self.held, rest);
                    match (found, reasoning) {
                        (None, _) | (Some(_), true) => {
                            emit(out, if reasoning { Part::Reasoning(before) } else { Part::Text(before) });
                            if found.is_none() {
                                return;
                            }
                        }
                        (Some(_), false) => {
                            self.bare_close = true;
                            out(Part::WasReasoning(before));
                        }
                    }
                    self.held.drain(..CLOSE.len());
                    self.state = State::AnswerStart;
                }
                State::AnswerStart => {
                    let start = self.held.trim_start();
                    if start.is_empty() {
                        self.held.clear();
                        return;
                    }
                    self.held = start.to_owned();
                    self.state = State::Answer;
                }
                State::Answer => {
                    emit(out, Part::Text(std::mem::take(&mut self.held)));
                    return;
                }
            }
        }
    }

    /// Ends the text: what was held back goes where it belongs.
    pub(crate) fn finish(&mut self, out: &mut dyn FnMut(Part)) {
        let held = std::mem::take(&mut self.held);
        match self.state {
            State::Before { reasoning: true } => emit(out, Part::Reasoning(held)),
            State::AnswerStart => {}
            _ => emit(out, Part::Text(held)),
        }
    }
}

fn emit(out: &mut dyn FnMut(Part), part: Part) {
    let (Part::Text(text) | Part::Reasoning(text) | Part::WasReasoning(text)) = &part;
    if !text.is_empty() {
        out(part);
    }
}

/// How many bytes at the end of `text` may be the start of `tag` (ASCII).
pub(crate) fn partial_tag(text: &str, tag: &str) -> usize {
    (1..tag.len()).rev().find(|&n| text.ends_with(&tag[..n])).unwrap_or(0)
}

/// A whole text's reasoning (a leading `<think>` block, or all that comes
/// before a bare `</think>`) and its answer.
pub fn split_think(text: &str) -> (Option<String>, String) {
    let mut split = ThinkSplit::default();
    let (mut reasoning, mut answer) = (String::new(), String::new());
    let mut sort = |part: Part| match part {
        Part::Text(t) => answer.push_str(&t),
        Part::Reasoning(t) => reasoning.push_str(&t),
        Part::WasReasoning(t) => {
            reasoning.push_str(&std::mem::take(&mut answer));
            reasoning.push_str(&t);
        }
    };
    split.push(text, &mut sort);
    split.finish(&mut sort);
    ((!reasoning.trim().is_empty()).then_some(reasoning), answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams `text` in pieces of `size` bytes (on char boundaries).
    fn stream(mut split: ThinkSplit, text: &str, size: usize) -> (String, String, bool) {
        let (mut reasoning, mut answer, mut retracted) = (String::new(), String::new(), false);
        let mut sort = |part: Part| match part {
            Part::Text(t) => answer.push_str(&t),
            Part::Reasoning(t) => reasoning.push_str(&t),
            Part::WasReasoning(t) => {
                retracted = true;
                reasoning.push_str(&std::mem::take(&mut answer));
                reasoning.push_str(&t);
            }
        };
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(size) {
            split.push(&piece.iter().collect::<String>(), &mut sort);
        }
        split.finish(&mut sort);
        (reasoning, answer, retracted)
    }

    #[test]
    fn reasoning_is_split_whatever_the_chunking() {
        // (text, reasoning, answer, a bare close retracted streamed text)
        let cases = [
            ("<think>Let me see.</think>\n\nParis.", "Let me see.", "Paris.", false),
            ("\n <think>\nhmm 日本\n</think>The answer", "\nhmm 日本\n", "The answer", false),
            // The server wrote `<think>` into the prompt: only the close shows.
            ("The user asks a capital.\n</think>\n\nParis.", "The user asks a capital.\n", "Paris.", true),
            ("<think></think>Direct.", "", "Direct.", false),
            (
                "Plain answer with <b>tags</b> and a <thinking> word.",
                "",
                "Plain answer with <b>tags</b> and a <thinking> word.",
                false,
            ),
            ("<think>cut off by the length limit", "cut off by the length limit", "", false),
            ("<thi", "", "<thi", false),
            ("   ", "", "   ", false),
        ];
        for (text, reasoning, answer, retracted) in cases {
            for size in [1, 2, 3, 7, 100] {
                let got = stream(ThinkSplit::default(), text, size);
                assert_eq!(got, (reasoning.to_owned(), answer.to_owned(), retracted), "{text:?} in pieces of {size}");
            }
            let whole = split_think(text);
            assert_eq!(whole.0.unwrap_or_default().trim(), reasoning.trim(), "{text:?}");
            assert_eq!(whole.1, answer, "{text:?}");
        }
    }

    #[test]
    fn a_prefilled_model_streams_reasoning_from_the_first_piece() {
        for size in [1, 4, 50] {
            let got = stream(ThinkSplit::prefilled(), "Thinking it over.\n</think>\nDone.", size);
            assert_eq!(got, ("Thinking it over.\n".into(), "Done.".into(), false));
        }
        let got = stream(ThinkSplit::prefilled(), "<think>Opened anyway.</think>Done.", 3);
        assert_eq!(got, ("Opened anyway.".into(), "Done.".into(), false));
    }
}
