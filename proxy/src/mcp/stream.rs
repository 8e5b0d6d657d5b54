//! The bodies the relay sends back: the server's secrets cut out as the bytes
//! pass (never held back beyond a possible start of a secret), and the timing
//! rules of each kind of answer.
//!
//! * A JSON (or other) body: each chunk must come within the answer timeout
//!   (`ATELIER_UPSTREAM_TIMEOUT`, as for chat); past it the body is aborted,
//!   since a cut JSON document is no answer.
//! * An event stream (`text/event-stream`): after [`KEEPALIVE`] without a
//!   byte, the relay writes an SSE comment line (`: keepalive`), which every
//!   SSE parser ignores, so load balancers and browsers do not close a quiet
//!   stream. It is written only at the start of a line, where a comment
//!   cannot change an event. When the MCP server itself has sent nothing for
//!   the stream's idle limit, the relay ends the stream cleanly; a client
//!   resumes by opening it again (with `Last-Event-ID` where the server
//!   supports that), as Streamable HTTP lets a server close a stream at any
//!   time.

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

/// Most time an event stream stays silent toward the browser.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// What replaces a secret.
const REDACTED: &[u8] = b"[redacted]";

/// Cuts secrets out of a stream of chunks. A chunk that ends with the start
/// of a secret keeps that start back until the next chunk says whether the
/// secret follows; nothing else is ever held.
#[derive(Clone)]
pub struct Redactor {
    secrets: Arc<[Box<[u8]>]>,
    carry: Vec<u8>,
}

impl Redactor {
    /// A redactor for `secrets` (longest first, as [`super::config::ServerConfig::secrets`] gives them).
    pub fn new(secrets: &[String]) -> Redactor {
        Redactor { secrets: secrets.iter().map(|s| s.as_bytes().into()).collect(), carry: Vec::new() }
    }

    /// The next chunk, with every whole secret replaced.
    pub fn feed(&mut self, chunk: Bytes) -> Bytes {
        if self.secrets.is_empty() || (self.carry.is_empty() && !self.touches(&chunk)) {
            return chunk;
        }
        let mut data = std::mem::take(&mut self.carry);
        data.extend_from_slice(&chunk);
        for secret in self.secrets.iter() {
            data = replace_all(data, secret);
        }
        let hold = self.partial_suffix(&data);
        self.carry = data.split_off(data.len() - hold);
        Bytes::from(data)
    }

    /// What was kept back when the body ends (not a whole secret).
    pub fn finish(&mut self) -> Bytes {
        Bytes::from(std::mem::take(&mut self.carry))
    }

    /// What went wrong with a request, causes included, without its URL
    /// and with every secret replaced.
    pub fn error(&self, e: reqwest::Error) -> String {
        let e = e.without_url();
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        self.text(&text)
    }

    /// `text` with every secret replaced (error messages).
    pub fn text(&self, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        for secret in self.secrets.iter() {
            bytes = replace_all(bytes, secret);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn touches(&self, chunk: &[u8]) -> bool {
        self.secrets.iter().any(|s| find(chunk, s, 0).is_some()) || self.partial_suffix(chunk) > 0
    }

    /// The length of the longest end of `data` that begins a secret.
    fn partial_suffix(&self, data: &[u8]) -> usize {
        self.secrets.iter().filter_map(|s| (1..s.len()).rev().find(|&k| data.ends_with(&s[..k]))).max().unwrap_or(0)
    }
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|at| at + from)
}

fn replace_all(data: Vec<u8>, secret: &[u8]) -> Vec<u8> {
    let Some(first) = find(&data, secret, 0) else {
        return data;
    };
    let mut out = Vec::with_capacity(data.len());
    let (mut from, mut at) = (0, Some(first));
    while let Some(i) = at {
        out.extend_from_slice(&data[from..i]);
        out.extend_from_slice(REDACTED);
        from = i + secret.len();
        at = find(&data, secret, from);
    }
    out.extend_from_slice(&data[from..]);
    out
}

/// How a relayed body is timed.
#[derive(Debug, Clone, Copy)]
pub enum Pace {
    /// A JSON (or other) body: aborted after this long without a chunk.
    Body(Duration),
    /// An event stream: keepalive comments, ended after this long without a byte from the server.
    Events(Duration),
}

struct Relayed<S> {
    upstream: Option<Pin<Box<S>>>,
    redactor: Redactor,
    pace: Pace,
    /// When the server last sent a byte.
    heard: Instant,
    /// When the browser last got a byte.
    sent: Instant,
    at_line_start: bool,
}

/// The body for the browser: `upstream` redacted and paced.
pub fn relayed<S>(upstream: S, redactor: Redactor, pace: Pace) -> impl Stream<Item = Result<Bytes, std::io::Error>>
where
    S: Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
{
    let now = Instant::now();
    let state =
        Relayed { upstream: Some(Box::pin(upstream)), redactor, pace, heard: now, sent: now, at_line_start: true };
    futures_util::stream::unfold(state, |mut state| async move {
        loop {
            let upstream = state.upstream.as_mut()?;
            let (idle, keepalive) = match state.pace {
                Pace::Body(idle) => (idle, None),
                Pace::Events(idle) => (idle, Some(KEEPALIVE.min(idle / 3))),
            };
            let silent_until = state.heard + idle;
            let wake = keepalive.map_or(silent_until, |k| silent_until.min(state.sent + k));
            match tokio::time::timeout_at(wake.into(), upstream.next()).await {
                Ok(Some(Ok(chunk))) => {
                    state.heard = Instant::now();
                    let out = state.redactor.feed(chunk);
                    if out.is_empty() {
                        continue;
                    }
                    state.sent = state.heard;
                    state.at_line_start = out.ends_with(b"\n");
                    return Some((Ok(out), state));
                }
                Ok(Some(Err(e))) => {
                    state.upstream = None;
                    let message = state.redactor.error(e);
                    return Some((
                        Err(std::io::Error::other(format!("the MCP server's answer broke off: {message}"))),
                        state,
                    ));
                }
                Ok(None) => return finished(state),
                Err(_) if Instant::now() >= silent_until => {
                    if keepalive.is_some() {
                        return finished(state);
                    }
                    state.upstream = None;
                    let message = format!("the MCP server sent nothing for {} s", idle.as_secs());
                    return Some((Err(std::io::Error::other(message)), state));
                }
                Err(_) => {
                    state.sent = Instant::now();
                    if state.at_line_start {
                        return Some((Ok(Bytes::from_static(b": keepalive\n")), state));
                    }
                    // Mid-line a comment would change the event: wait one more interval.
                }
            }
        }
    })
}

/// Ends the body, with whatever the redactor kept back.
fn finished<S>(mut state: Relayed<S>) -> Option<(Result<Bytes, std::io::Error>, Relayed<S>)> {
    state.upstream = None;
    let rest = state.redactor.finish();
    (!rest.is_empty()).then_some((Ok(rest), state))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(secrets: &[&str], chunks: &[&str]) -> (String, Vec<String>) {
        let secrets: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
        let mut redactor = Redactor::new(&secrets);
        let mut pieces: Vec<String> = chunks
            .iter()
            .map(|c| String::from_utf8(redactor.feed(Bytes::from(c.to_string())).to_vec()).unwrap())
            .collect();
        pieces.push(String::from_utf8(redactor.finish().to_vec()).unwrap());
        (pieces.concat(), pieces)
    }

    #[test]
    fn secrets_are_cut_wherever_the_chunks_split() {
        let text = "data: {\"auth\":\"Bearer sk-SECRET-42\"}\n\ndata: sk-SECRET-42sk-SECRET-42\n\n";
        for size in 1..text.len() {
            let chunks: Vec<String> =
                text.as_bytes().chunks(size).map(|c| String::from_utf8(c.to_vec()).unwrap()).collect();
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let (out, _) = through(&["sk-SECRET-42"], &chunks);
            assert_eq!(
                out, "data: {\"auth\":\"Bearer [redacted]\"}\n\ndata: [redacted][redacted]\n\n",
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn only_a_possible_start_of_a_secret_is_held_back() {
        let cases: &[(&[&str], &str, &str)] = &[
            // (chunks, what the first feed gives, what the whole gives)
            (&["data: a\n\n", "data: b\n\n"], "data: a\n\n", "data: a\n\ndata: b\n\n"),
            (&["data: sk-SE", "X\n\n"], "data: ", "data: sk-SEX\n\n"),
            (&["x s", "k-SECRET-42 y"], "x ", "x [redacted] y"),
            (&["ends with s"], "ends with ", "ends with s"),
        ];
        for (chunks, first, whole) in cases {
            let (out, pieces) = through(&["sk-SECRET-42"], chunks);
            assert_eq!((pieces[0].as_str(), out.as_str()), (*first, *whole), "{chunks:?}");
        }
        let (out, pieces) = through(&[], &["anything sk-SECRET-42"]);
        assert_eq!((pieces[0].as_str(), out.as_str()), ("anything sk-SECRET-42", "anything sk-SECRET-42"));
    }

    #[test]
    fn a_longer_secret_that_contains_a_shorter_one_is_cut_whole() {
        let (out, _) = through(&["abcd-efgh", "abcd"], &["x abcd-efgh y abcd z"]);
        assert_eq!(out, "x [redacted] y [redacted] z");
    }
}
