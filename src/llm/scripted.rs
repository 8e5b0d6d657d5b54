//! A scripted `ChatModel` for native tests of whole agent runs: it answers
//! from a queue of steps, streams the answer as deltas like a real model,
//! records every request, and honours cancellation.

use std::cell::RefCell;
use std::collections::VecDeque;

use async_trait::async_trait;

use super::error::{LlmError, Result};
use super::model::ChatModel;
use super::template::TemplateFamily;
use super::types::{ChatOutcome, ChatRequest, Delta};
use crate::cancel::CancelToken;

/// One scripted answer.
pub enum Step {
    /// Answer with this outcome (streamed as deltas first).
    Reply(ChatOutcome),
    /// Fail with this error.
    Fail(LlmError),
    /// Stream `partial` text, then wait until cancelled (a long answer the
    /// person stops).
    Stall { partial: String },
    /// Decide from the request (e.g. to echo what the model was sent).
    Respond(Box<dyn Fn(&ChatRequest) -> Step>),
    /// Answer with this outcome after yielding to the executor once (a test
    /// polling the run by hand can act while the model "thinks").
    Yield(ChatOutcome),
}

/// Pending on its first poll (waking itself), ready on the next.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// Answers some requests outside the script (e.g. every compression
/// request of a long session), or `None` to play the next step.
pub type Helper = Box<dyn Fn(&ChatRequest) -> Option<ChatOutcome>>;

/// A model that plays a script.
pub struct ScriptedModel {
    steps: RefCell<VecDeque<Step>>,
    requests: RefCell<Vec<ChatRequest>>,
    helper: RefCell<Option<Helper>>,
    /// The chat template every request must pass (the strict one by default).
    template: std::cell::Cell<TemplateFamily>,
    /// The window its "server" reports ([`ChatModel::context_window`]).
    window: std::cell::Cell<Option<usize>>,
}

impl Default for ScriptedModel {
    fn default() -> ScriptedModel {
        ScriptedModel::new([])
    }
}

impl ScriptedModel {
    /// A model that will answer with `steps`, in order.
    pub fn new(steps: impl IntoIterator<Item = Step>) -> ScriptedModel {
        ScriptedModel {
            steps: RefCell::new(steps.into_iter().collect()),
            requests: RefCell::default(),
            helper: RefCell::default(),
            template: std::cell::Cell::new(TemplateFamily::named("strict").expect("the strict family")),
            window: std::cell::Cell::default(),
        }
    }

    /// Holds every request to `family`'s template rules instead of the
    /// strict default (see [`super::TEMPLATE_FAMILIES`]).
    pub fn set_template(&self, family: TemplateFamily) {
        self.template.set(family);
    }

    /// The context window it reports, as a proxy reports its server's.
    pub fn set_context_window(&self, window: Option<usize>) {
        self.window.set(window);
    }

    /// Lets `helper` answer the requests it recognises before the script.
    pub fn set_helper(&self, helper: Helper) {
        *self.helper.borrow_mut() = Some(helper);
    }

    /// Appends a step.
    pub fn push(&self, step: Step) {
        self.steps.borrow_mut().push_back(step);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.borrow().clone()
    }

    /// Steps not played yet.
    pub fn remaining(&self) -> usize {
        self.steps.borrow().len()
    }
}

/// Streams an outcome as a real model would: its reasoning, text in a few
/// pieces, then each tool call's name and its arguments in two halves.
fn stream(outcome: &ChatOutcome, on_delta: &mut dyn FnMut(Delta)) {
    if let Some(reasoning) = outcome.reasoning.clone() {
        on_delta(Delta::Reasoning { text: reasoning });
    }
    let text = outcome.message.text();
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(chars.len().div_ceil(3).max(1)) {
        if !piece.is_empty() {
            on_delta(Delta::Text { text: piece.iter().collect() });
        }
    }
    for (index, call) in outcome.message.tool_calls().iter().enumerate() {
        let args = &call.function.arguments;
        let mut half = args.len() / 2;
        while !args.is_char_boundary(half) {
            half -= 1;
        }
        on_delta(Delta::ToolCall {
            index,
            id: Some(call.id.clone()),
            name: Some(call.function.name.clone()),
            arguments: args[..half].to_owned(),
        });
        on_delta(Delta::ToolCall { index, id: None, name: None, arguments: args[half..].to_owned() });
    }
}

#[async_trait(?Send)]
impl ChatModel for ScriptedModel {
    async fn chat(
        &self,
        request: ChatRequest,
        on_delta: &mut dyn FnMut(Delta),
        cancel: &CancelToken,
    ) -> Result<ChatOutcome> {
        if cancel.is_cancelled() {
            return Err(LlmError::Aborted);
        }
        // A chat template (by default llama.cpp's strict one): every request
        // the agent sends must pass it.
        let template = self.template.get();
        if let Some(violation) = template.violation(&request.messages) {
            panic!(
                "the request would be refused by the {} chat template: {violation}: {:#?}",
                template.name, request.messages
            );
        }
        let helped = self.helper.borrow().as_ref().and_then(|help| help(&request));
        let mut step = match helped {
            Some(outcome) => Step::Reply(outcome),
            None => self
                .steps
                .borrow_mut()
                .pop_front()
                .ok_or_else(|| LlmError::MalformedResponse("the script has no more replies".into()))?,
        };
        while let Step::Respond(decide) = step {
            step = decide(&request);
        }
        self.requests.borrow_mut().push(request);
        match step {
            Step::Reply(outcome) => {
                stream(&outcome, on_delta);
                Ok(outcome)
            }
            Step::Fail(error) => Err(error),
            Step::Stall { partial } => {
                on_delta(Delta::Text { text: partial });
                cancel.cancelled().await;
                Err(LlmError::Aborted)
            }
            Step::Yield(outcome) => {
                YieldOnce(false).await;
                stream(&outcome, on_delta);
                Ok(outcome)
            }
            Step::Respond(_) => unreachable!("resolved above"),
        }
    }

    async fn context_window(&self, _model: &str) -> Option<usize> {
        self.window.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::{Message, ToolCall};
    use serde_json::json;

    #[test]
    fn plays_the_script_and_streams_deltas() {
        let model = ScriptedModel::new([
            Step::Reply(ChatOutcome::text("Hello there")),
            Step::Reply(ChatOutcome::tool_calls(vec![ToolCall::new("c1", "web_search", &json!({"query": "日本"}))])),
        ]);
        let cancel = CancelToken::new();
        let mut deltas = Vec::new();
        let first = futures_executor::block_on(model.chat(
            ChatRequest::new("main", vec![Message::user("hi")]),
            &mut |d| deltas.push(d),
            &cancel,
        ))
        .unwrap();
        assert_eq!(first.message.text(), "Hello there");
        let text: String = deltas
            .iter()
            .map(|d| match d {
                Delta::Text { text } => text.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(text, "Hello there");
        let second =
            futures_executor::block_on(model.chat(ChatRequest::new("main", vec![]), &mut |_| {}, &cancel)).unwrap();
        assert_eq!(second.message.tool_calls()[0].function.name, "web_search");
        assert_eq!(model.requests().len(), 2);
        let empty = futures_executor::block_on(model.chat(ChatRequest::default(), &mut |_| {}, &cancel));
        assert_eq!(empty.unwrap_err().code(), "malformed_response");
    }

    #[test]
    fn reasoning_streams_first_and_a_chosen_template_is_enforced() {
        let mut thought = ChatOutcome::text("Paris.");
        thought.reasoning = Some("The capital.".into());
        let model = ScriptedModel::new([Step::Reply(thought)]);
        let mut deltas = Vec::new();
        let request = ChatRequest::new("main", vec![Message::system("s"), Message::user("capital?")]);
        futures_executor::block_on(model.chat(request.clone(), &mut |d| deltas.push(d), &CancelToken::new())).unwrap();
        assert_eq!(deltas[0], Delta::Reasoning { text: "The capital.".into() });
        model.set_template(crate::llm::TemplateFamily::named("gemma2").unwrap());
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            futures_executor::block_on(model.chat(request, &mut |_| {}, &CancelToken::new()))
        }));
        assert!(refused.is_err(), "gemma2 has no system role");
    }
}
