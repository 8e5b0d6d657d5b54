//! Runs the real proxy binary on a free loopback port and talks HTTP to it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Proxy {
    child: Child,
    addr: String,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(static_dir: &std::path::Path) -> Proxy {
    let addr = format!("127.0.0.1:{}", free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_atelier-proxy"))
        .args(["--bind", &addr, "--static-dir"])
        .arg(static_dir)
        .stderr(Stdio::null())
        .spawn()
        .expect("proxy starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "proxy did not listen on {addr}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Proxy { child, addr }
}

fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn serves_health_static_files_and_a_clear_503_for_chat() {
    let dir = std::env::temp_dir().join(format!("atelier-proxy-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html><title>atelier</title>",
    )
    .unwrap();
    let proxy = start(&dir);

    let (status, body) = request(&proxy.addr, "GET", "/api/health", "");
    assert_eq!(status, 200);
    assert!(body.contains("\"status\":\"ok\""), "{body}");

    let (status, body) = request(&proxy.addr, "GET", "/", "");
    assert_eq!(status, 200);
    assert!(body.contains("<title>atelier</title>"));

    // Unknown paths fall back to the app (client-side routes).
    let (status, body) = request(&proxy.addr, "GET", "/projects/1", "");
    assert_eq!(status, 200);
    assert!(body.contains("<title>atelier</title>"));

    for path in ["/api/chat", "/v1/chat/completions"] {
        let (status, body) = request(
            &proxy.addr,
            "POST",
            path,
            r#"{"model":"main","messages":[]}"#,
        );
        assert_eq!(status, 503, "{path}");
        assert!(body.contains("upstream_not_configured"), "{body}");
    }
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}
