//! atelier-proxy: the one server users deploy. It holds the API keys, forwards
//! OpenAI-compatible chat (streaming byte for byte), web search and page
//! fetches for the in-browser agent, and serves the built demo app.
//!
//! Every setting is a CLI flag and an `ATELIER_*` environment variable; see
//! [`settings::Settings`].

mod app;
mod chat;
mod error;
mod limit;
mod log;
mod settings;
mod ssrf;
mod upstream;
mod web;

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
    let state = match app::State::new(settings).await {
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
    if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
        eprintln!("atelier-proxy: {e}");
        std::process::exit(1);
    }
}
