//! The route the router chooses for a turn, and the toolset it offers.

use serde::{Deserialize, Serialize};

use crate::tools::Toolsets;

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

    /// The tools the strategy offers the model (those that declare its set).
    pub fn toolsets(self) -> Toolsets {
        match self {
            Strategy::Writing => Toolsets::WRITING,
            _ => Toolsets::RESEARCH,
        }
    }
}
