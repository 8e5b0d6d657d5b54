//! The assistant graph's state.

use serde::{Deserialize, Serialize};

use crate::llm::Message;

/// What the agent is doing, for the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    #[default]
    Idle,
    Planning,
    Researching,
    Answering,
    Memorizing,
}

/// The route the router chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Conversation without tools.
    ChatOnly,
    /// Research and general tasks with web and artifact tools.
    GeneralAgent,
    /// Project work with the editorial tools.
    Writing,
}

impl Strategy {
    pub fn parse(s: &str) -> Option<Strategy> {
        match s.trim() {
            "chat_only" | "chat" => Some(Strategy::ChatOnly),
            "general_agent" | "research" => Some(Strategy::GeneralAgent),
            "writing" => Some(Strategy::Writing),
            _ => None,
        }
    }
}

crate::graph_state! {
    /// Everything the assistant graph threads through its nodes.
    pub struct AgentState, update AgentUpdate, events super::AgentEvent {
        append messages: Vec<Message>,
        set current_phase: Phase,
        set active_tool: Option<String>,
        set routing_decision: Option<String>,
        set strategy: Option<Strategy>,
        set latest_node_name: Option<String>,
        set loop_count: u32,
        set agent_mode: bool,
        /// Index in `messages` of this turn's user message.
        set turn_start: usize,
        /// The turn's visible output: one Markdown stream with ```thought,
        /// ```plan and ```tool blocks.
        set output: String,
        /// A tool call prepared for review (plan and payload), between
        /// `prepare_review` and `review`.
        set pending_review: Option<super::PendingReview>,
        /// The memory judge found something worth keeping.
        set memory_worthy: bool,
        /// URLs search results offered in this session (opening one is
        /// ordinary research; see `agent::outbound`).
        append result_links: Vec<String>,
        /// A network call the outbound rule holds for the person's approval.
        set outbound_hold: Option<super::outbound::OutboundHold>,
        /// Transcript ids of the interjections already given to the model.
        append interjections: Vec<String>,
        /// The summary of the older messages, once a compression ran.
        set compaction: Option<super::compress::Compaction>,
        /// Main-model calls since the last compression (the session's).
        set calls_since_compaction: u32,
    }
}

impl AgentState {
    /// The current turn's messages.
    pub fn turn(&self) -> &[Message] {
        &self.messages[self.turn_start.min(self.messages.len())..]
    }

    /// Whether a tool ran in this turn.
    pub fn used_tools(&self) -> bool {
        self.turn().iter().any(|m| matches!(m, Message::Tool { .. }))
    }

    /// Index in `messages` of the last message with tool calls (this turn's).
    fn calls_at(&self) -> Option<usize> {
        let start = self.turn_start.min(self.messages.len());
        self.turn().iter().rposition(|m| !m.tool_calls().is_empty()).map(|at| start + at)
    }

    /// The receipt key of a call of the last assistant message: unique in
    /// the session, which the ids models give are not (`call_0` recurs).
    pub fn call_key(&self, call: &crate::llm::ToolCall) -> String {
        format!("{}:{}", self.calls_at().unwrap_or(0), call.id)
    }

    /// The tool calls of the last assistant message that have no result yet.
    pub fn pending_calls(&self) -> Vec<crate::llm::ToolCall> {
        let turn = self.turn();
        let Some(at) = turn.iter().rposition(|m| !m.tool_calls().is_empty()) else {
            return Vec::new();
        };
        let answered: Vec<&str> = turn[at + 1..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        turn[at].tool_calls().iter().filter(|c| !answered.contains(&c.id.as_str())).cloned().collect()
    }

    /// Whether the first pending call waits for approval under the outbound rule.
    pub fn held(&self, call: &crate::llm::ToolCall) -> bool {
        self.outbound_hold.as_ref().is_some_and(|h| h.call_id == call.id)
    }

    /// Whether `respond` delivered the answer in this turn (a `respond` the
    /// completion rules turned back does not count).
    pub fn responded(&self, tools: &crate::tools::ToolRegistry) -> bool {
        let turn = self.turn();
        turn.iter().any(|m| {
            m.tool_calls().iter().any(|c| {
                tools.delivers_answer(c)
                    && turn.iter().any(|r| {
                        matches!(r, Message::Tool { tool_call_id, content }
                            if *tool_call_id == c.id && !content.starts_with(super::completion::NUDGE))
                    })
            })
        })
    }

    /// Whether the model must go on: the completion rules answered its
    /// final answer with a nudge and no call waits.
    pub fn nudged(&self) -> bool {
        match self.messages.last() {
            Some(Message::User { content }) | Some(Message::Tool { content, .. }) => {
                content.starts_with(super::completion::NUDGE) && self.pending_calls().is_empty()
            }
            _ => false,
        }
    }
}
