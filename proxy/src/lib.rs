//! atelier-proxy: the one server users deploy. It holds the API keys, forwards
//! OpenAI-compatible chat (streaming byte for byte), web search and page
//! fetches for the in-browser agent, and serves the built demo app.
//!
//! Every setting is a CLI flag and an `ATELIER_*` environment variable; see
//! [`settings::Settings`]. The binary (`main.rs`) only parses the settings and
//! serves [`app::router`]; the library exists so the fuzz targets and
//! benchmarks reach the same code.

pub mod app;
mod chat;
mod discovery;
mod embeddings;
mod error;
mod facts;
mod gate;
mod limit;
mod log;
mod mcp;
mod models;
pub mod ollama;
pub mod page;
pub mod settings;
mod ssrf;
pub mod state;
mod text_tools;
mod upstream;
mod usage;
mod web;
