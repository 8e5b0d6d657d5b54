//! atelier-proxy: the one server users deploy. It serves the built demo app
//! and answers the module's `/api` calls, holding the API keys server-side.
//!
//! This first cut serves static files and `/api/health`, and answers chat
//! with a clear 503 (upstream forwarding lands with the proxy issue).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

mod app;

/// Settings: every flag also reads its `ATELIER_*` environment variable.
#[derive(Debug, Clone, Parser)]
#[command(name = "atelier-proxy", version, about)]
pub struct Settings {
    /// Address to listen on.
    #[arg(long, env = "ATELIER_BIND", default_value = "127.0.0.1:8787")]
    pub bind: SocketAddr,
    /// Directory of the built demo app served at `/`.
    #[arg(long, env = "ATELIER_STATIC_DIR", default_value = "www/dist")]
    pub static_dir: PathBuf,
}

#[tokio::main]
async fn main() {
    let settings = Settings::parse();
    let listener = match tokio::net::TcpListener::bind(settings.bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("atelier-proxy: cannot listen on {}: {e}", settings.bind);
            std::process::exit(1);
        }
    };
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    eprintln!(
        "atelier-proxy: serving {} on http://{addr}",
        settings.static_dir.display()
    );
    eprintln!("atelier-proxy: no LLM upstream in this build yet; chat answers 503");
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    if let Err(e) = axum::serve(listener, app::router(settings))
        .with_graceful_shutdown(shutdown)
        .await
    {
        eprintln!("atelier-proxy: {e}");
        std::process::exit(1);
    }
}
