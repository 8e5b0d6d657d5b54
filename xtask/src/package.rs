//! Builds the npm package as `wasm-pack.toml` describes: one wasm-pack build
//! per `[[build]]` entry, wasm-opt with the configured arguments, and the npm
//! fields of package.json (name, exports, sideEffects, license).

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
    build: Vec<BuildEntry>,
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
        if !entry.features.is_empty() {
            cmd = cmd.args(["--", "--features", &entry.features.join(",")]);
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
            let size = std::fs::metadata(&wasm).map(|m| m.len()).unwrap_or(0);
            eprintln!("{}: {} bytes", wasm.display(), size);
        }
        write_npm_fields(&out, &matrix.package)?;
        std::fs::copy(root.join("docs/npm-README.md"), out.join("README.md"))
            .map_err(|e| format!("cannot write the npm README: {e}"))?;
        outs.push(out);
    }
    Ok(outs)
}

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
    }
    let text = serde_json::to_string_pretty(&pkg).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}
