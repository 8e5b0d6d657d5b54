//! Builds the npm package as `wasm-pack.toml` describes: one wasm-pack build
//! per `[[build]]` entry, wasm-opt and esbuild (the JS) with the configured
//! arguments, and the npm fields of package.json (name, exports, sideEffects,
//! license).

use std::path::Path;

use serde::Deserialize;

use crate::cmd::{run, Cmd};
use crate::Result;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Matrix {
    package: PackageConfig,
    #[serde(rename = "wasm-opt")]
    wasm_opt: WasmOpt,
    js: Option<JsMinify>,
    std: Option<StdBuild>,
    build: Vec<BuildEntry>,
}

/// How release builds compile the standard library with the package.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct StdBuild {
    build_std: Vec<String>,
    build_std_features: Vec<String>,
    rustflags: Vec<String>,
}

/// The environment variable that asks for the plain build (the prebuilt
/// standard library) when the build-std one cannot be made.
pub const PLAIN_STD: &str = "ATELIER_PLAIN_STD";

impl StdBuild {
    /// Whether release builds compile `std` with the package: yes, unless
    /// the person asked for the plain build (`ATELIER_PLAIN_STD=1`). A
    /// compiler that cannot (no rustup `rust-src`, or it refuses the
    /// unstable flags, as a compiler older or newer than the one they were
    /// measured on may) fails the build: falling back would ship a package
    /// about 22 KB gzip larger without anyone deciding so.
    fn wanted(&self) -> Result<bool> {
        if std::env::var(PLAIN_STD).is_ok_and(|v| v == "1") {
            eprintln!(
                "note: {PLAIN_STD}=1: building with the prebuilt standard library (about 22 KB gzip more, panics keep \
                 their messages)"
            );
            return Ok(false);
        }
        let unusable = |why: String| {
            format!(
                "the release build compiles the standard library with the package (wasm-pack.toml [std]) and {why}. \
                 Fix that, or build the larger plain package on purpose with {PLAIN_STD}=1"
            )
        };
        crate::tools::ensure_rust_src().map_err(|e| unusable(e.to_string()))?;
        let probe = Cmd::new("rustc")
            .args(&self.rustflags)
            .args(["--print", "cfg", "--target", "wasm32-unknown-unknown"])
            .env("RUSTC_BOOTSTRAP", "1");
        if crate::cmd::output(probe).is_none() {
            return Err(unusable(format!("rustc does not take {}", self.rustflags.join(" "))));
        }
        Ok(true)
    }

    /// Adds the cargo arguments and environment to a `wasm-pack build`.
    fn apply(&self, cmd: Cmd) -> Cmd {
        let mut flags = std::env::var("RUSTFLAGS").unwrap_or_default();
        for f in &self.rustflags {
            if !flags.is_empty() {
                flags.push(' ');
            }
            flags.push_str(f);
        }
        cmd.arg(format!("-Zbuild-std={}", self.build_std.join(",")))
            .arg(format!("-Zbuild-std-features={}", self.build_std_features.join(",")))
            .env("RUSTC_BOOTSTRAP", "1")
            .env("RUSTFLAGS", flags)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct PackageConfig {
    npm_name: String,
    out_name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WasmOpt {
    args: Vec<String>,
}

/// esbuild's arguments for the package's JS files on release builds.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsMinify {
    esbuild: Vec<String>,
}

impl JsMinify {
    /// Rewrites every `.js` file under `dir` (the glue and the snippets; the
    /// `.d.ts` files keep the documentation) in place.
    fn apply(&self, root: &Path, dir: &Path) -> Result {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                self.apply(root, &path)?;
            } else if path.extension().is_some_and(|e| e == "js") {
                run(Cmd::new(root.join("www/node_modules/.bin/esbuild"))
                    .arg(&path)
                    .args(&self.esbuild)
                    .arg(format!("--outfile={}", path.display()))
                    .arg("--allow-overwrite"))?;
            }
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct BuildEntry {
    target: String,
    out_dir: String,
    release: bool,
    #[serde(default)]
    features: Vec<String>,
    what: What,
}

/// Which command builds an entry.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum What {
    Package,
    Bench,
}

fn read_matrix(root: &Path) -> Result<Matrix> {
    let text =
        std::fs::read_to_string(root.join("wasm-pack.toml")).map_err(|e| format!("cannot read wasm-pack.toml: {e}"))?;
    toml::from_str(&text).map_err(|e| format!("wasm-pack.toml: {e}"))
}

/// Builds the entries of `wasm-pack.toml` meant for `what`; returns their out dirs.
pub fn build_matrix(root: &Path, what: What) -> Result<Vec<std::path::PathBuf>> {
    let matrix = read_matrix(root)?;
    let mut outs = Vec::new();
    for entry in matrix.build.iter().filter(|e| e.what == what) {
        // wasm-pack leaves files an earlier build wrote (a JS snippet that
        // is gone, for one): start from an empty directory so none ships.
        let _ = std::fs::remove_dir_all(root.join(&entry.out_dir));
        let mut cmd = Cmd::new("wasm-pack").args(["build", "--no-opt", "--target", &entry.target]);
        cmd = cmd.args(["--out-dir", &entry.out_dir, "--out-name", &matrix.package.out_name]);
        cmd = cmd.arg(if entry.release { "--release" } else { "--dev" });
        // What follows `--` goes to cargo build.
        let std = match &matrix.std {
            Some(std) if entry.release && std.wanted()? => Some(std),
            _ => None,
        };
        if !entry.features.is_empty() || std.is_some() {
            // The crate's path first: wasm-pack would take the first word
            // after `--` that does not start with `-` for it.
            cmd = cmd.args([".", "--"]);
        }
        if !entry.features.is_empty() {
            cmd = cmd.args(["--features", &entry.features.join(",")]);
        }
        if let Some(std) = std {
            cmd = std.apply(cmd);
        }
        run(cmd.dir(root))?;
        let out = root.join(&entry.out_dir);
        if entry.release {
            let wasm = out.join(format!("{}_bg.wasm", matrix.package.out_name));
            run(Cmd::new(root.join("www/node_modules/.bin/wasm-opt"))
                .args(&matrix.wasm_opt.args)
                .arg(&wasm)
                .arg("-o")
                .arg(&wasm))?;
            let name = &matrix.package.out_name;
            let (js, dts) = (out.join(format!("{name}.js")), out.join(format!("{name}.d.ts")));
            let shortened = crate::glue_names::shorten(&wasm, &format!("./{name}_bg.js"), &js, &dts)?;
            let size = std::fs::metadata(&wasm).map(|m| m.len()).unwrap_or(0);
            eprintln!("{}: {} bytes ({shortened} bindings shortened)", wasm.display(), size);
            if let Some(js) = &matrix.js {
                js.apply(root, &out)?;
            }
        }
        write_npm_fields(&out, &matrix.package)?;
        // wasm-pack copies them (Cargo.toml names the licenses); the package must ship them.
        for license in LICENSES {
            if !out.join(license).is_file() {
                return Err(format!("{} lacks {license}", out.display()));
            }
        }
        std::fs::copy(root.join("docs/npm-README.md"), out.join("README.md"))
            .map_err(|e| format!("cannot write the npm README: {e}"))?;
        outs.push(out);
    }
    Ok(outs)
}

/// The license files of "MIT OR Apache-2.0", shipped in every package.
const LICENSES: [&str; 2] = ["LICENSE-APACHE", "LICENSE-MIT"];

fn write_npm_fields(out: &Path, config: &PackageConfig) -> Result {
    let path = out.join("package.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut pkg: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let base = &config.out_name;
    let fields = serde_json::json!({
        "name": config.npm_name,
        "type": "module",
        "exports": {
            ".": { "types": format!("./{base}.d.ts"), "default": format!("./{base}.js") },
            format!("./{base}_bg.wasm"): format!("./{base}_bg.wasm"),
            "./package.json": "./package.json"
        },
        "sideEffects": ["./snippets/*"],
        "license": "MIT OR Apache-2.0"
    });
    if let (Some(pkg), Some(fields)) = (pkg.as_object_mut(), fields.as_object()) {
        for (k, v) in fields {
            pkg.insert(k.clone(), v.clone());
        }
        // npm packs only the listed files: the licenses among them.
        if let Some(files) = pkg.get_mut("files").and_then(|f| f.as_array_mut()) {
            for license in LICENSES {
                if !files.iter().any(|f| f == license) {
                    files.push(license.into());
                }
            }
        }
    }
    let text = serde_json::to_string_pretty(&pkg).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}
