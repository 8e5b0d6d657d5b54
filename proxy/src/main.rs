//! The atelier-proxy binary: parses the settings and serves the router (see
//! the library's docs for what the proxy does).

use atelier_proxy::{app, settings, state};
use axum::serve::ListenerExt;
use clap::Parser;

#[tokio::main]
async fn main() {
    let settings = settings::Settings::parse();
    let listener = match tokio::net::TcpListener::bind(settings.bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("atelier-proxy: cannot listen on {}: {e}", settings.bind);
            std::process::exit(1);
        }
    };
    let bound = listener.local_addr().unwrap_or(settings.bind);
    let state = match state::State::new(settings, bound).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("atelier-proxy: {e}");
            std::process::exit(2);
        }
    };
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    state.describe(&addr);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let app = app::router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    // Small writes (an SSE event, then the end of its answer) go out at once:
    // with Nagle's algorithm on, the second waits for the client's delayed
    // ACK, which added ~40 ms to every MCP call answered as a stream.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
        eprintln!("atelier-proxy: {e}");
        std::process::exit(1);
    }
}
