//! Whether an MCP server answers, for `/api/health`, without hammering it.
//!
//! Relayed traffic says it first: every answer or failure the relay sees is
//! recorded. Only when nothing was heard for a while ([`FRESH_ANSWER`] after
//! an answer, [`FRESH_FAILURE`] after a failure) does a health request probe
//! the server, one probe per server at a time (concurrent health requests
//! wait for it and share its outcome): a `GET` of the endpoint without a
//! session, which opens nothing at the server (a stateful server answers
//! 400, one without a standalone stream 405; a stream that opens anyway is
//! closed unread) and takes at most [`PROBE_TIMEOUT`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::StatusCode;

/// How long an answer from a server is trusted.
pub const FRESH_ANSWER: Duration = Duration::from_secs(30);
/// How long a failure is remembered (a server that comes up shows soon).
pub const FRESH_FAILURE: Duration = Duration::from_secs(5);
/// Most time a probe takes (health must answer quickly).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What the proxy knows of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// It answers MCP requests for the proxy.
    Answers,
    /// It does not, and why: `unreachable`, `timeout`, `unauthorized`
    /// (401/403 to the proxy's token), `not_found` (nothing at that URL),
    /// `redirect` (never followed) or `server_error` (5xx).
    Fails(&'static str),
}

impl Reach {
    /// What a transport error says.
    pub fn of_error(e: &reqwest::Error) -> Reach {
        Reach::Fails(if e.is_timeout() { "timeout" } else { "unreachable" })
    }

    /// What an HTTP status says; `None` when it says nothing about the
    /// server (a relayed 404 is an expired session, a 500 one failed call).
    pub fn of_status(status: StatusCode, probing: bool) -> Option<Reach> {
        match status.as_u16() {
            300..=399 => Some(Reach::Fails("redirect")),
            401 | 403 => Some(Reach::Fails("unauthorized")),
            404 if probing => Some(Reach::Fails("not_found")),
            404 => None,
            502..=504 => Some(Reach::Fails("server_error")),
            500..=599 if probing => Some(Reach::Fails("server_error")),
            500..=599 => None,
            _ => Some(Reach::Answers),
        }
    }
}

/// The last word on one server, and the probe lock.
#[derive(Default)]
pub struct Reachability {
    heard: Mutex<Option<(Instant, Reach)>>,
    probing: tokio::sync::Mutex<()>,
}

impl Reachability {
    /// Records what relayed traffic (or a probe) showed.
    pub fn record(&self, reach: Reach) {
        *self.heard.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), reach));
    }

    fn fresh(&self) -> Option<Reach> {
        let heard = *self.heard.lock().unwrap_or_else(|p| p.into_inner());
        heard
            .filter(|(at, reach)| at.elapsed() < if *reach == Reach::Answers { FRESH_ANSWER } else { FRESH_FAILURE })
            .map(|(_, reach)| reach)
    }

    /// What is known, or what `probe` finds when nothing recent is.
    pub async fn current(&self, probe: impl std::future::Future<Output = Reach>) -> Reach {
        if let Some(reach) = self.fresh() {
            return reach;
        }
        let _one_at_a_time = self.probing.lock().await;
        if let Some(reach) = self.fresh() {
            return reach;
        }
        let reach = tokio::time::timeout(PROBE_TIMEOUT, probe).await.unwrap_or(Reach::Fails("timeout"));
        self.record(reach);
        reach
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn statuses() {
        let cases: &[(u16, bool, Option<Reach>)] = &[
            (200, false, Some(Reach::Answers)),
            (202, false, Some(Reach::Answers)),
            (400, true, Some(Reach::Answers)),
            (405, true, Some(Reach::Answers)),
            (404, true, Some(Reach::Fails("not_found"))),
            (404, false, None),
            (307, false, Some(Reach::Fails("redirect"))),
            (401, false, Some(Reach::Fails("unauthorized"))),
            (403, true, Some(Reach::Fails("unauthorized"))),
            (500, false, None),
            (500, true, Some(Reach::Fails("server_error"))),
            (503, false, Some(Reach::Fails("server_error"))),
        ];
        for (status, probing, expected) in cases {
            assert_eq!(Reach::of_status(StatusCode::from_u16(*status).unwrap(), *probing), *expected, "{status}");
        }
    }

    #[tokio::test]
    async fn concurrent_health_requests_share_one_probe() {
        let reach = Arc::new(Reachability::default());
        let probes = Arc::new(AtomicUsize::new(0));
        let ask = || {
            let (reach, probes) = (reach.clone(), probes.clone());
            async move {
                reach
                    .current(async move {
                        probes.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Reach::Answers
                    })
                    .await
            }
        };
        let answers = futures_util::future::join_all((0..8).map(|_| tokio::spawn(ask()))).await;
        assert!(answers.into_iter().all(|a| a.unwrap() == Reach::Answers));
        assert_eq!(probes.load(Ordering::SeqCst), 1);
        reach.record(Reach::Fails("unreachable"));
        assert_eq!(ask().await, Reach::Fails("unreachable"), "relayed traffic answers without a probe");
        assert_eq!(probes.load(Ordering::SeqCst), 1);
    }
}
