//! Processes the browser tests talk to: the scripted fake upstream
//! (tests/fakes/upstream.mjs), the MCP servers (tests/mcp) and the real
//! atelier-proxy binary, all on 127.0.0.1, ended when dropped.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Result;

/// A child process that is killed when dropped.
pub struct Service {
    child: Child,
    pub port: u16,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// Starts the fake upstream; it reports its port on its first line.
pub fn fake_upstream(root: &Path) -> Result<Service> {
    node(&root.join("tests/fakes/upstream.mjs"), &["0"])
}

/// Starts the MCP servers of the browser tests (tests/mcp): the reference
/// server (server-everything) and the recorder, each on a port it picks.
pub fn mcp_servers(root: &Path) -> Result<(Service, Service)> {
    let dir = root.join("tests/mcp");
    Ok((node(&dir.join("everything.mjs"), &[])?, node(&dir.join("recorder.mjs"), &[])?))
}

/// Starts `node script args`, which prints `{"port": N}` on a line of its
/// own once it listens (lines before it are skipped). The rest of its
/// output is read and dropped: a full pipe would stop a server that logs
/// every request.
fn node(script: &Path, args: &[&str]) -> Result<Service> {
    let mut child = Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(script.parent().unwrap_or(script))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", script.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout);
    let mut service = Service { child, port: 0 };
    let mut line = String::new();
    while service.port == 0 {
        line.clear();
        if lines.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err(format!("{} exited before reporting its port", script.display()));
        }
        if line.starts_with("{\"port\"") {
            service.port = serde_json::from_str::<serde_json::Value>(&line)
                .ok()
                .and_then(|v| v["port"].as_u64())
                .ok_or_else(|| format!("{} reported no port: {line:?}", script.display()))?
                as u16;
        }
    }
    std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
    Ok(service)
}

/// Starts the proxy binary (built beforehand) against `upstream_port`.
pub fn proxy(root: &Path, upstream_port: u16, env: &[(&str, String)]) -> Result<Service> {
    let port = free_port()?;
    let binary = root.join("target/debug/atelier-proxy");
    let mut cmd = Command::new(&binary);
    cmd.env("ATELIER_BIND", format!("127.0.0.1:{port}"))
        .env("ATELIER_UPSTREAM_URL", format!("http://127.0.0.1:{upstream_port}/v1"))
        .env("ATELIER_SEARCH_URL", format!("http://127.0.0.1:{upstream_port}/search"))
        .env("ATELIER_AUTODETECT", "false")
        .env("ATELIER_RATE_LIMIT", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let service = Service { child, port };
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("the proxy did not start listening".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(service)
}

/// Keeps the browser-test runner's HTTP server answering while the tests
/// load. That server (tiny_http, inside wasm-bindgen-test-runner) can leave
/// a request of the page queued with no thread to take it until another
/// connection arrives; the page then never finishes loading and chromedriver
/// gives up after 300 s. Observed on a quiet 2-core machine with either
/// version of the storage tests; a connection every second ends the stall.
/// The pokes ask for a path that does not exist (404, nothing runs).
pub struct RunnerPoke {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunnerPoke {
    pub fn start(port: u16) -> RunnerPoke {
        use std::io::Write;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
                    let _ = stream.write_all(b"GET /__xtask_poke HTTP/1.0\r\n\r\n");
                }
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
        });
        RunnerPoke { stop, thread: Some(thread) }
    }
}

impl Drop for RunnerPoke {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
