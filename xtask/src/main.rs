//! `cargo xtask`: the project's build, test, demo and bench driver
//! (the matklad xtask convention: plain Rust, no extra tools to install first).
//!
//! * `cargo xtask test`  — installs what is missing, then runs every test layer.
//! * `cargo xtask demo`  — builds the package and the demo app and serves them.
//! * `cargo xtask build` — builds the npm package (per wasm-pack.toml) and the demo.
//! * `cargo xtask bench [browser|cold|adit|proxy|mcp]` — runs the benchmarks (or one group).
//! * `cargo xtask setup` — only installs what is missing.
//! * `cargo xtask fuzz [SECONDS]` — runs the cargo-fuzz targets for a while.

mod cmd;
mod glue_names;
mod package;
mod services;
mod tools;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cmd::{run, Cmd};

type Result<T = ()> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("demo") => demo(),
        Some("build") => tools::ensure_all().and_then(|_| build()),
        Some("bench") => bench(args.get(1).map(String::as_str)),
        Some("setup") => tools::ensure_all().map(|_| ()),
        Some("fuzz") => fuzz(args.get(1).map(String::as_str)),
        _ => Err(
            "usage: cargo xtask <test|demo|build|bench [browser|cold|adit|proxy|mcp]|setup|fuzz [SECONDS]>\n  test   install what is missing, then run every test layer\n  demo   build and serve the demo at http://127.0.0.1:8787"
                .into(),
        ),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of `xtask/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn section(title: &str) {
    eprintln!("\n==> {title}");
}

/// The token the layer-2 proxy sends to the recorder MCP server (and to nothing else).
const RECORDER_TOKEN: &str = "recorder-token-of-the-browser-tests";

fn test() -> Result {
    let tools = tools::ensure_all()?;
    let root = root();

    section("layer 1: native tests (cargo test --workspace)");
    run(Cmd::new("cargo").args(["test", "--workspace"]).dir(&root))?;

    section("layer 1b: the official openai Python SDK against the proxy");
    let python = tools::python_env(&root)?;
    run(Cmd::new("cargo").args(["build", "--package", "atelier-proxy"]).dir(&root))?;
    run(Cmd::new(&python).args(["-m", "pytest", "-q", "tests/python"]).dir(&root))?;

    section("layer 1c: the official MCP client and the reference MCP server through the proxy's relay");
    tools::npm_ci(&root.join("tests/mcp"))?;
    run(Cmd::new("node")
        .args(["--test", "tests/mcp/relay.test.mjs"])
        .dir(&root)
        .env("ATELIER_PROXY_BIN", root.join("target/debug/atelier-proxy")))?;

    section("layer 2: browser tests (wasm-pack test, headless Chromium)");
    // The storage tests load Dexie (the npm package) for the interop check.
    tools::npm_ci(&root.join("www"))?;
    let support = root.join("target/test-support");
    std::fs::create_dir_all(&support).map_err(|e| e.to_string())?;
    std::fs::copy(root.join("www/node_modules/dexie/dist/dexie.mjs"), support.join("dexie.js"))
        .map_err(|e| format!("cannot copy dexie for the browser tests: {e}"))?;
    // The proxy-client tests talk to the real proxy and a scripted upstream.
    let fake = services::fake_upstream(&root)?;
    // The MCP client's tests talk to the reference server and the recorder through the relay.
    let (everything, recorder) = services::mcp_servers(&root)?;
    let mcp_servers =
        format!("everything=http://127.0.0.1:{}/mcp,recorder=http://127.0.0.1:{}/mcp", everything.port, recorder.port);
    let proxy = services::proxy(
        &root,
        fake.port,
        &[
            ("ATELIER_ALLOWED_ORIGINS", "*".into()),
            ("ATELIER_MCP_SERVERS", mcp_servers),
            ("ATELIER_MCP_TOKEN_RECORDER", RECORDER_TOKEN.into()),
        ],
    )?;
    let mut wasm_test = Cmd::new("wasm-pack").args(["test", "--headless", "--chrome"]);
    wasm_test = wasm_test.arg("--chromedriver").arg(&tools.chromedriver);
    wasm_test = wasm_test.arg("--").args(["--features", "test-hooks"]).args(browser_test_targets(&root)?);
    let runner_port = services::free_port()?;
    let poke = services::RunnerPoke::start(runner_port);
    run(wasm_test
        .dir(&root)
        .env("WASM_BINDGEN_TEST_ADDRESS", format!("127.0.0.1:{runner_port}"))
        .env("WASM_BINDGEN_TEST_TIMEOUT", "120")
        .env("ATELIER_TEST_PROXY", format!("http://127.0.0.1:{}/api", proxy.port))
        .env("ATELIER_TEST_FAKE", format!("http://127.0.0.1:{}", fake.port))
        .env("ATELIER_TEST_RECORDER", format!("http://127.0.0.1:{}", recorder.port))
        .env("ATELIER_TEST_RECORDER_TOKEN", RECORDER_TOKEN))?;
    drop((poke, proxy, fake, everything, recorder));

    section("layer 3: npm package and TypeScript consumer check (tsc --strict --noEmit)");
    build()?;
    let tsc = root.join("www/node_modules/.bin/tsc");
    // Samples of every value the package sends to JS, serialised by the Rust
    // types (target/ts-samples/samples.ts), checked with the consumer.
    run(Cmd::new("cargo").args(["test", "-p", "atelier-agent", "--lib", "boundary::"]).dir(&root))?;
    run(Cmd::new(&tsc).args(["--project", "tests/ts-consumer/tsconfig.json"]).dir(&root))?;
    run(Cmd::new(&tsc).args(["--project", "www/tsconfig.json"]).dir(&root))?;
    // The package's own JS modules (JSDoc-typed).
    let mut check_js = Cmd::new(&tsc).args(["--noEmit", "--allowJs", "--checkJs", "--strict", "--target", "es2022"]);
    for dir in ["src/wasm/js", "src/store/idb"] {
        for entry in std::fs::read_dir(root.join(dir)).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.extension().is_some_and(|e| e == "js") {
                check_js = check_js.arg(path);
            }
        }
    }
    run(check_js.dir(&root))?;

    section("layer 4: end to end: the demo app, the real proxy and a scripted upstream in Chromium");
    let proxy_bin = root.join("target/debug/atelier-proxy");
    run(Cmd::new("node").args(["tests/e2e/run.mjs"]).dir(&root).env("ATELIER_PROXY_BIN", proxy_bin))?;

    eprintln!("\nxtask: every test layer passed");
    Ok(())
}

/// `--test NAME` for every browser test file (`tests/web_*.rs`).
fn browser_test_targets(root: &Path) -> Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("tests"))
        .map_err(|e| format!("cannot list tests/: {e}"))?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| Some(name.strip_suffix(".rs")?.to_owned()))
        .filter(|name| name.starts_with("web_"))
        .collect();
    names.sort();
    Ok(names.into_iter().flat_map(|n| ["--test".to_owned(), n]).collect())
}

/// Builds every output of the wasm-pack.toml matrix and the demo app.
fn build() -> Result {
    let root = root();
    // www/node_modules also holds the JS tools of the build (wasm-opt, tsc).
    section("npm packages (www/)");
    tools::npm_ci(&root.join("www"))?;
    section("building the npm package (wasm-pack.toml matrix)");
    package::build_matrix(&root, package::What::Package)?;
    section("building the demo app (www/, Vite)");
    run(Cmd::new("npm").args(["run", "build"]).dir(root.join("www")))
}

fn demo() -> Result {
    tools::ensure_all()?;
    build()?;
    let root = root();
    section("serving the demo at http://127.0.0.1:8787 (Ctrl-C stops it)");
    eprintln!(
        "To chat with a real model, set an OpenAI-compatible upstream first, e.g.\n  ATELIER_UPSTREAM_URL=https://api.openai.com/v1 ATELIER_UPSTREAM_KEY=sk-... cargo xtask demo\n  ATELIER_UPSTREAM_URL=http://127.0.0.1:11434/v1 cargo xtask demo   # local Ollama"
    );
    run(Cmd::new("cargo")
        .args(["run", "--release", "--package", "atelier-proxy", "--", "--static-dir"])
        .arg(root.join("www/dist"))
        .dir(&root))
}

fn bench(only: Option<&str>) -> Result {
    if !matches!(only, None | Some("browser" | "cold" | "adit" | "proxy" | "mcp")) {
        return Err("usage: cargo xtask bench [browser|cold|adit|proxy|mcp]".into());
    }
    let wanted = |group: &str| only.is_none() || only == Some(group);
    tools::ensure_all()?;
    let root = root();
    if wanted("browser") {
        browser_bench(&root)?;
    }
    if wanted("cold") {
        cold_start_bench(&root)?;
    }
    if wanted("adit") {
        section("Adit benchmarks (criterion)");
        run(Cmd::new("cargo").args(["bench", "--bench", "adit"]).dir(&root))?;
    }
    if wanted("proxy") {
        section("proxy overhead (loopback)");
        run(Cmd::new("cargo").args(["bench", "-p", "atelier-proxy", "--bench", "passthrough"]).dir(&root))?;
    }
    if wanted("mcp") {
        mcp_relay_bench(&root)?;
    }
    Ok(())
}

/// The shared harness copied to target/shared-bench (shared/ may be
/// read-only), with its npm packages.
fn harness_copy(root: &Path) -> Result<std::path::PathBuf> {
    let shared = root.join("../shared/bench");
    let harness = root.join("target/shared-bench");
    if !harness.join("package.json").exists() {
        copy_dir(&shared, &harness)?;
    }
    tools::npm_ci(&harness)?;
    Ok(harness)
}

/// Cold start of the npm package (`pkg/web`, as `cargo xtask build` makes
/// it) in fresh Chromium pages, beside importing LangGraph.js's bundle.
fn cold_start_bench(root: &Path) -> Result {
    section("cold start: fresh pages to init() and Agent.open(), and LangGraph.js's import");
    tools::npm_ci(&root.join("www"))?;
    let outs = package::build_matrix(root, package::What::Package)?;
    let pkg = outs.first().ok_or("wasm-pack.toml has no package build")?;
    let harness = harness_copy(root)?;
    let mut node = std::process::Command::new("node");
    node.arg(root.join("benches/browser/cold-start.mjs")).arg(pkg).arg(&harness).arg("10").current_dir(root);
    node_to_jsonl(node, &root.join("target/bench-cold.jsonl"), "the cold-start benchmark")
}

/// The MCP relay's added latency per tool call (the official MCP client,
/// direct and through the release proxy, interleaved); results in
/// target/bench-mcp.jsonl.
fn mcp_relay_bench(root: &Path) -> Result {
    section("MCP relay: tool calls direct and through the proxy (loopback)");
    run(Cmd::new("cargo").args(["build", "--release", "--package", "atelier-proxy"]).dir(root))?;
    tools::npm_ci(&root.join("tests/mcp"))?;
    let mut node = std::process::Command::new("node");
    node.arg("tests/mcp/bench.mjs")
        .current_dir(root)
        .env("ATELIER_PROXY_BIN", root.join("target/release/atelier-proxy"));
    node_to_jsonl(node, &root.join("target/bench-mcp.jsonl"), "the MCP relay benchmark")
}

/// Runs a node benchmark script whose stdout is JSON lines into `results`,
/// then shows them.
fn node_to_jsonl(mut node: std::process::Command, results: &Path, what: &str) -> Result {
    let out = std::fs::File::create(results).map_err(|e| e.to_string())?;
    let status = node.stdout(out).status().map_err(|e| e.to_string())?;
    eprintln!("results: {}", results.display());
    eprint!("{}", std::fs::read_to_string(results).unwrap_or_default());
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// The shared browser harness (LangGraph.js, Dexie, raw IndexedDB) with our
/// page module in the same Chromium run; results in target/bench-results.jsonl.
fn browser_bench(root: &Path) -> Result {
    section("browser benchmark: anchors and atelier-agent in one Chromium run");
    tools::npm_ci(&root.join("www"))?;
    let outs = package::build_matrix(root, package::What::Bench)?;
    let pkg = outs.first().ok_or("wasm-pack.toml has no bench build")?;
    let extra = root.join("target/bench-extra");
    let _ = std::fs::remove_dir_all(&extra);
    copy_dir(pkg, &extra)?;
    std::fs::copy(root.join("benches/browser/atelier-bench.mjs"), extra.join("atelier-bench.mjs"))
        .map_err(|e| e.to_string())?;
    let harness = harness_copy(root)?;
    let mut node = std::process::Command::new("node");
    node.arg("run.mjs")
        .arg("--extra")
        .arg(extra.join("atelier-bench.mjs"))
        .args(std::env::var("BENCH_ARGS").unwrap_or_default().split_whitespace())
        .current_dir(&harness);
    node_to_jsonl(node, &root.join("target/bench-results.jsonl"), "the browser benchmark")
}

fn copy_dir(from: &Path, to: &Path) -> Result {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name();
        if name == "node_modules" || name == "dist" {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(&name))?;
        } else {
            std::fs::copy(&path, to.join(&name)).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn fuzz(seconds: Option<&str>) -> Result {
    let seconds: u64 = seconds.unwrap_or("60").parse().map_err(|_| "fuzz takes a number of seconds")?;
    let root = root();
    tools::ensure_cargo_fuzz()?;
    for target in ["adit_parse", "adit_apply", "llm_sse", "llm_json", "proxy_ollama", "html_page"] {
        section(&format!("fuzzing {target} for {seconds} s"));
        run(Cmd::new("cargo")
            .args(["fuzz", "run", target, "--", &format!("-max_total_time={seconds}")])
            .dir(root.join("fuzz"))
            // cargo-fuzz needs nightly flags; the machine has only stable Rust.
            .env("RUSTC_BOOTSTRAP", "1"))?;
    }
    Ok(())
}
