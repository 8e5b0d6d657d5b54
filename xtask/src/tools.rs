//! Installs what the test layers need, idempotently: the wasm32 target,
//! wasm-bindgen-cli at exactly the crate's wasm-bindgen version, wasm-pack,
//! Debian's chromium and chromium-driver (when root), and npm packages
//! (`npm ci`, which also brings wasm-opt: see wasm-pack.toml). Whatever is already there is left alone.

use std::path::{Path, PathBuf};

use crate::cmd::{output, run, Cmd};
use crate::{root, section, Result};

/// Paths of the browser tools the tests drive.
pub struct Tools {
    pub chromedriver: PathBuf,
}

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

pub fn ensure_all() -> Result<Tools> {
    section("checking tools (installing only what is missing)");
    ensure_wasm_target()?;
    ensure_apt_packages()?;
    let wanted = wasm_bindgen_version()?;
    ensure_cargo_tool("wasm-bindgen", "wasm-bindgen-cli", Some(&wanted))?;
    ensure_cargo_tool("wasm-pack", "wasm-pack", None)?;
    Ok(Tools { chromedriver: PathBuf::from(CHROMEDRIVER) })
}

fn ensure_wasm_target() -> Result {
    let installed = output(Cmd::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if installed.lines().any(|l| l.trim() == "wasm32-unknown-unknown") {
        return Ok(());
    }
    run(Cmd::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))
}

fn is_root() -> bool {
    output(Cmd::new("id").arg("-u")).as_deref() == Some("0")
}

fn have(program: &str) -> bool {
    output(Cmd::new("sh").args(["-c", &format!("command -v {program}")])).is_some_and(|p| !p.is_empty())
}

/// The standard library's sources, which release builds of the package
/// compile (`[std]` in wasm-pack.toml): rustup's `rust-src` component.
pub fn ensure_rust_src() -> Result {
    let sysroot = output(Cmd::new("rustc").args(["--print", "sysroot"])).ok_or("rustc cannot print its sysroot")?;
    if Path::new(sysroot.trim()).join("lib/rustlib/src/rust/library/std").is_dir() {
        return Ok(());
    }
    run(Cmd::new("rustup").args(["component", "add", "rust-src"]))
        .map_err(|e| format!("the standard library's sources are missing and could not be added ({e})"))
}

/// Debian packages: (package, file it provides). ICU gives the native tests
/// the word segmentation the browser's `Intl.Segmenter` gives the package.
const APT: &[(&str, &str)] = &[
    ("chromium", CHROMIUM),
    ("chromium-driver", CHROMEDRIVER),
    ("nodejs", "node"),
    ("npm", "npm"),
    ("libicu-dev", "/usr/include/unicode/ubrk.h"),
];

fn ensure_apt_packages() -> Result {
    let missing: Vec<&str> = APT
        .iter()
        .filter(|(_, file)| if file.starts_with('/') { !Path::new(file).exists() } else { !have(file) })
        .map(|(package, _)| *package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() || !have("apt-get") {
        return Err(format!(
            "missing tools: {}. Install them (Debian: `sudo apt-get install {}`) and run again.",
            missing.join(", "),
            missing.join(" ")
        ));
    }
    run(Cmd::new("apt-get").args(["update", "-q"]).env("DEBIAN_FRONTEND", "noninteractive"))?;
    run(Cmd::new("apt-get")
        .args(["install", "-y", "-q", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// The exact wasm-bindgen version in Cargo.lock (wasm-bindgen-cli must match it).
pub fn wasm_bindgen_version() -> Result<String> {
    let lock =
        std::fs::read_to_string(root().join("Cargo.lock")).map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let lock: toml::Value = lock.parse().map_err(|e| format!("cannot parse Cargo.lock: {e}"))?;
    lock.get("package")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
        .find(|p| p.get("name").and_then(|n| n.as_str()) == Some("wasm-bindgen"))
        .and_then(|p| p.get("version")?.as_str().map(str::to_owned))
        .ok_or_else(|| "Cargo.lock has no wasm-bindgen package".into())
}

/// Installs `krate` with `cargo install` unless `binary --version` already
/// reports `version` (or any version, when `None`).
fn ensure_cargo_tool(binary: &str, krate: &str, version: Option<&str>) -> Result {
    let current = output(Cmd::new(binary).arg("--version")).unwrap_or_default();
    let ok = match version {
        Some(v) => current.split_whitespace().any(|w| w == v),
        None => !current.is_empty(),
    };
    if ok {
        return Ok(());
    }
    eprintln!(
        "installing {krate}{} (builds from source, a few minutes)",
        version.map(|v| format!(" {v}")).unwrap_or_default()
    );
    let install = |locked: bool| {
        let mut c = Cmd::new("cargo").args(["install", "--force", krate]);
        if let Some(v) = version {
            c = c.args(["--version", v]);
        }
        if locked {
            c = c.arg("--locked");
        }
        run(c)
    };
    // A crate's lock file can name a version the registry has since yanked:
    // then fall back to fresh resolution.
    install(true).or_else(|_| install(false))
}

pub fn ensure_cargo_fuzz() -> Result {
    ensure_cargo_tool("cargo-fuzz", "cargo-fuzz", None)
}

/// `npm ci` in `dir`, skipped when node_modules already matches the lock file.
pub fn npm_ci(dir: &Path) -> Result {
    let lock = dir.join("package-lock.json");
    let installed = dir.join("node_modules/.package-lock.json");
    let fresh = match (std::fs::metadata(&lock), std::fs::metadata(&installed)) {
        (Ok(l), Ok(i)) => matches!((l.modified(), i.modified()), (Ok(l), Ok(i)) if i >= l),
        _ => false,
    };
    if fresh {
        return Ok(());
    }
    run(Cmd::new("npm").args(["ci", "--no-audit", "--no-fund"]).dir(dir))
}

/// A Python virtualenv in `target/pyenv` with tests/python/requirements.txt
/// installed (skipped when its packages already import). Returns its python.
pub fn python_env(root: &Path) -> Result<PathBuf> {
    let env = root.join("target/pyenv");
    let python = env.join("bin/python");
    if !python.exists() {
        run(Cmd::new("python3").args(["-m", "venv"]).arg(&env))?;
    }
    let ready = output(Cmd::new(&python).args(["-c", "import openai, pytest"])).is_some();
    if !ready {
        run(Cmd::new(&python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check", "-r"])
            .arg(root.join("tests/python/requirements.txt")))?;
    }
    Ok(python)
}
