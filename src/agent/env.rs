//! What the assistant's nodes share ([`AgentEnv`]): the database, the
//! model, the web, the tool registry and the settings; and the two
//! questions every call is asked against them: the context it runs in, and
//! whether it asks the person first.

use std::cell::RefCell;
use std::rc::Rc;

use super::consent::ApprovalPolicy;
use super::events::Ctx;
use super::settings::AgentSettings;
use crate::cancel::CancelToken;
use crate::llm::ChatModel;
use crate::mcp::{McpServer, McpServers};
use crate::store::Db;
use crate::tools::{Bound, CallInfo, ToolContext, ToolEvent, ToolRegistry, WebTools};

/// What the nodes share.
pub struct AgentEnv {
    /// What scopes the run locks (the database name): agents on one
    /// database, in any tab, run one turn per session at a time.
    pub scope: String,
    pub db: Db,
    pub model: Rc<dyn ChatModel>,
    pub web: Rc<dyn WebTools>,
    pub tools: ToolRegistry,
    pub settings: RefCell<AgentSettings>,
    /// The host's approval policy (`AgentConfig.approve`), asked before
    /// every call (see `consent`).
    pub policy: Option<Rc<dyn ApprovalPolicy>>,
    /// The MCP servers the proxy relays (`None`: `AgentConfig.mcp` is
    /// false, and no server is contacted).
    pub mcp: Option<Rc<McpServers>>,
}

impl AgentEnv {
    /// Whether this call asks the person first: whenever the tool it writes
    /// through would (`Tool::approval_as`), else the settings' per-tool
    /// choice, else the tool's default for these arguments.
    pub fn needs_approval(&self, call: &Bound) -> bool {
        if call.approval_as().is_some_and(|other| self.tool_asks(other)) {
            return true;
        }
        match self.settings.borrow().approvals.get(call.tool().name()) {
            Some(choice) => *choice,
            None => call.needs_approval(),
        }
    }

    /// Whether `tool` asks the person first (settings override the default).
    pub fn tool_asks(&self, tool: &str) -> bool {
        self.settings
            .borrow()
            .approvals
            .get(tool)
            .copied()
            .unwrap_or_else(|| self.tools.get(tool).is_some_and(|t| t.about().approval))
    }

    /// Checks the relayed MCP servers (at most every [`crate::mcp::CHECK_TTL`],
    /// or when one said its tools changed) and offers their tools through
    /// the registry, as the settings switch them; the servers as checked.
    /// Asked before a request that offers tools and before calls run: a
    /// greeting contacts no server.
    pub async fn offer_mcp_tools(&self, cancel: &CancelToken) -> Rc<Vec<McpServer>> {
        let Some(servers) = &self.mcp else { return Rc::default() };
        let checked = servers.check(&|name| self.settings.borrow().mcp_server_off(name), cancel).await;
        let settings = self.settings.borrow();
        self.tools.offer(crate::tools::mcp_tools(servers, &checked, &|s, t| settings.mcp_tool_off(s, t)));
        checked
    }

    /// The context a call of the running node's session runs in.
    pub fn tool_context<'a>(&self, ctx: &Ctx<'_>, call: CallInfo, emit: &'a dyn Fn(ToolEvent)) -> ToolContext<'a> {
        let settings = self.settings.borrow();
        ToolContext {
            db: self.db.clone(),
            session_id: ctx.thread_id.to_owned(),
            web: self.web.clone(),
            model: self.model.clone(),
            main_model: settings.main_model.clone(),
            helper_model: match settings.delegation_model.as_str() {
                "main" => settings.main_model.clone(),
                _ => settings.sub_model.clone(),
            },
            page_chars: settings.page_chars.max(1000),
            // Two fifths of the window: one page never crowds out the rest of the request.
            page_tokens: (settings.context_window * 2 / 5).max(500),
            context_window: settings.context_window,
            scope: self.scope.clone(),
            cancel: ctx.cancel.clone(),
            call,
            emit,
        }
    }
}
