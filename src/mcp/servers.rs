//! The relayed MCP servers as the agent sees them: which exist (the
//! proxy's `/api/health`), which answer, and their tools. A run's start
//! checks them ([`McpServers::check`]); the check holds for
//! [`CHECK_TTL`] unless a server said its tools changed or something asked
//! for a new one ([`McpServers::stale`]). A server is offered only while
//! it answers: one the proxy cannot reach, or that fails to list its tools
//! within [`super::LIST_TIMEOUT`], has its tools withdrawn until a later
//! check finds it back. Servers the person turned off are not contacted at all.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use async_trait::async_trait;

use super::client::McpClient;
use super::content::{McpTool, RelayedServer};
use super::error::{McpError, Result};
use super::transport::McpTransport;
use crate::cancel::CancelToken;

/// How long a check of the servers holds.
pub const CHECK_TTL: Duration = Duration::from_secs(30);

/// Where the servers are (the proxy, in the browser).
#[async_trait(?Send)]
pub trait McpRelay {
    /// The servers it relays, and whether it reaches them.
    async fn servers(&self, cancel: &CancelToken) -> Result<Vec<RelayedServer>>;
    /// The way to one of them.
    fn transport(&self, server: &str) -> Box<dyn McpTransport>;
}

/// Where a server is, as the last check found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStatus {
    /// It answered: its tools are offered.
    Ready,
    /// The proxy cannot reach it (down, timing out, refusing the token).
    Unreachable,
    /// It answered, but not with its tools (an error, a protocol it does not share).
    Failing,
    /// The person turned it off: not contacted.
    Off,
}

impl ServerStatus {
    /// As `agent.mcpServers()` reports it.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerStatus::Ready => "ready",
            ServerStatus::Unreachable => "unreachable",
            ServerStatus::Failing => "error",
            ServerStatus::Off => "off",
        }
    }
}

/// One server, as last checked.
pub struct McpServer {
    /// Its name on the proxy (`/api/mcp/<name>`).
    pub name: String,
    pub status: ServerStatus,
    /// Why it is not ready, in the proxy's or the server's words.
    pub problem: Option<String>,
    /// Its tools, in name order: when it is not ready, those of its last
    /// answer (not offered, but a call to one is answered with why).
    pub tools: Vec<McpTool>,
    pub client: Rc<McpClient>,
}

/// The relayed servers, checked.
pub struct McpServers {
    relay: Box<dyn McpRelay>,
    known: RefCell<Rc<Vec<McpServer>>>,
    /// When the last check ended (ms since the epoch; -∞: check at the next run).
    checked_at: Cell<f64>,
}

impl McpServers {
    /// The servers of `relay`, not checked yet.
    pub fn new(relay: Box<dyn McpRelay>) -> McpServers {
        McpServers { relay, known: RefCell::default(), checked_at: Cell::new(f64::NEG_INFINITY) }
    }

    /// The servers as last checked (none before the first check).
    pub fn known(&self) -> Rc<Vec<McpServer>> {
        self.known.borrow().clone()
    }

    /// The next [`McpServers::check`] looks again, however recent the last
    /// (the person turned a server on, a call found its server gone).
    pub fn stale(&self) {
        self.checked_at.set(f64::NEG_INFINITY);
    }

    /// The servers, checked again when the last check is older than
    /// [`CHECK_TTL`] or a server said its tools changed. `off` says which
    /// the person turned off. An aborted check keeps what was known.
    pub async fn check(&self, off: &dyn Fn(&str) -> bool, cancel: &CancelToken) -> Rc<Vec<McpServer>> {
        let known = self.known();
        let changed = known.iter().any(|s| s.client.take_tools_changed());
        let now = crate::platform::now_ms();
        if !changed && now - self.checked_at.get() < CHECK_TTL.as_millis() as f64 {
            return known;
        }
        let listed = match self.relay.servers(cancel).await {
            Ok(listed) => listed,
            Err(McpError::Aborted) => return known,
            // No proxy to ask (offline): no server answers.
            Err(_) => Vec::new(),
        };
        let mut servers = Vec::new();
        for server in listed {
            let before = known.iter().find(|k| k.name == server.name);
            let client = match before {
                Some(before) => before.client.clone(),
                None => Rc::new(McpClient::new(self.relay.transport(&server.name))),
            };
            let had = || before.map(|b| b.tools.clone()).unwrap_or_default();
            let (status, problem, tools) = if off(&server.name) {
                (ServerStatus::Off, None, had())
            } else if !server.reachable {
                (ServerStatus::Unreachable, server.error, had())
            } else {
                match client.tools(cancel).await {
                    Ok(tools) => (ServerStatus::Ready, None, tools),
                    Err(McpError::Aborted) => return known,
                    Err(e) if e.server_gone() => (ServerStatus::Unreachable, Some(e.to_string()), had()),
                    Err(e) => (ServerStatus::Failing, Some(e.to_string()), had()),
                }
            };
            servers.push(McpServer { name: server.name, status, problem, tools, client });
        }
        let servers = Rc::new(servers);
        *self.known.borrow_mut() = servers.clone();
        self.checked_at.set(crate::platform::now_ms());
        servers
    }
}
