//! Short names for what only the package's own glue uses: the `.wasm`'s
//! imports from the glue (`__wbg_get_d7176cfb76d71114`: a name and a hash
//! per binding) and its exports (`agent_send`; the closure invokers, a
//! mangled Rust path of up to 250 characters each) become `$a`, `$b`, … in
//! the `.wasm`, the glue and its `.d.ts` (`InitOutput`) alike. The hashes
//! are text gzip cannot shrink, and each stood in both files: about −5.3 KB
//! gzip of the package. The API's own names (the classes, functions and
//! their methods) are untouched; `memory` keeps its name.
//!
//! The `.wasm` is read section by section (only the import and export
//! sections change); the JS is rewritten token by token (an import's name
//! wherever it stands; an export's only as `wasm.<name>`, since a public
//! function has the same name as its export). A name not found in the
//! glue, or a short name the glue already uses, fails the build; an export
//! the glue does not reach as `wasm.<name>` keeps its name.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::Result;

fn leb(bytes: &[u8], at: &mut usize) -> Result<u32> {
    let (mut value, mut shift) = (0u64, 0);
    loop {
        let byte = *bytes.get(*at).ok_or("the .wasm ends inside a number")?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return u32::try_from(value).map_err(|_| "a number in the .wasm is too large".into());
        }
        shift += 7;
        if shift > 35 {
            return Err("a number in the .wasm is too long".into());
        }
    }
}

fn put_leb(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn name<'a>(bytes: &'a [u8], at: &mut usize) -> Result<&'a str> {
    let len = leb(bytes, at)? as usize;
    let text = bytes.get(*at..*at + len).ok_or("the .wasm ends inside a name")?;
    *at += len;
    std::str::from_utf8(text).map_err(|_| "a name in the .wasm is not UTF-8".into())
}

fn put_name(out: &mut Vec<u8>, text: &str) {
    put_leb(out, text.len() as u32);
    out.extend_from_slice(text.as_bytes());
}

/// Skips an import's description (after its kind byte).
fn skip_import(bytes: &[u8], at: &mut usize, kind: u8) -> Result<()> {
    match kind {
        0 => drop(leb(bytes, at)?),
        1 => {
            *at += 1;
            let flags = leb(bytes, at)?;
            leb(bytes, at)?;
            if flags & 1 != 0 {
                leb(bytes, at)?;
            }
        }
        2 => {
            let flags = leb(bytes, at)?;
            leb(bytes, at)?;
            if flags & 1 != 0 {
                leb(bytes, at)?;
            }
        }
        3 => *at += 2,
        4 => {
            *at += 1;
            leb(bytes, at)?;
        }
        _ => return Err(format!("an import of unknown kind {kind}")),
    }
    Ok(())
}

/// The `n`th short name: `$a` … `$Z`, then `$a0` …
fn short(mut n: usize) -> String {
    const FIRST: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const REST: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut out = String::from("$");
    out.push(FIRST[n % FIRST.len()] as char);
    n /= FIRST.len();
    while n > 0 {
        out.push(REST[n % REST.len()] as char);
        n /= REST.len();
    }
    out
}

/// `text` with every identifier token in `renamed` replaced (with
/// `after`, only a token right after that text: `wasm.`).
fn rename_tokens(text: &str, renamed: &HashMap<String, String>, seen: &mut HashSet<String>) -> String {
    rename_after(text, "", renamed, seen)
}

fn rename_after(text: &str, after: &str, renamed: &HashMap<String, String>, seen: &mut HashSet<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String, seen: &mut HashSet<String>| {
        match renamed.get(token.as_str()).filter(|_| out.ends_with(after)) {
            Some(new) => {
                seen.insert(token.clone());
                out.push_str(new);
            }
            None => out.push_str(token),
        }
        token.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
            token.push(c);
        } else {
            flush(&mut token, &mut out, seen);
            out.push(c);
        }
    }
    flush(&mut token, &mut out, seen);
    out
}

/// Shortens the glue's bindings of `wasm` (imported from the module
/// `glue_module`) in it, in `js` and in `dts`; returns how many.
pub fn shorten(wasm: &Path, glue_module: &str, js: &Path, dts: &Path) -> Result<usize> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let bytes = read(wasm)?;
    let glue = String::from_utf8(read(js)?).map_err(|_| "the glue is not UTF-8")?;
    let types = String::from_utf8(read(dts)?).map_err(|_| "the .d.ts is not UTF-8")?;
    if bytes.get(..8) != Some(b"\0asm\x01\0\0\0".as_slice()) {
        return Err(format!("{} is not a WebAssembly module", wasm.display()));
    }
    // The exports the glue reaches as `wasm.<name>`.
    let mut reached = HashSet::new();
    let every: HashMap<String, String> = exports(&bytes)?.into_iter().map(|e| (e.clone(), e)).collect();
    rename_after(&glue, "wasm.", &every, &mut reached);
    let mut renamed: HashMap<String, String> = HashMap::new();
    let mut exported: HashMap<String, String> = HashMap::new();
    let mut count = 0;
    let mut next = || {
        count += 1;
        short(count - 1)
    };
    let mut out = bytes[..8].to_vec();
    for (id, body) in sections(&bytes)? {
        let new_body = match id {
            2 => {
                let mut p = 0;
                let count = leb(body, &mut p)?;
                let mut nb = Vec::with_capacity(body.len());
                put_leb(&mut nb, count);
                for _ in 0..count {
                    let module = name(body, &mut p)?;
                    let field = name(body, &mut p)?;
                    let start = p;
                    let kind = *body.get(p).ok_or("the .wasm ends inside an import")?;
                    p += 1;
                    skip_import(body, &mut p, kind)?;
                    put_name(&mut nb, module);
                    let field = match module == glue_module {
                        true => renamed.entry(field.to_owned()).or_insert_with(&mut next).clone(),
                        false => field.to_owned(),
                    };
                    put_name(&mut nb, &field);
                    nb.extend_from_slice(&body[start..p]);
                }
                nb
            }
            7 => {
                let mut p = 0;
                let count = leb(body, &mut p)?;
                let mut nb = Vec::with_capacity(body.len());
                put_leb(&mut nb, count);
                for _ in 0..count {
                    let export = name(body, &mut p)?;
                    let start = p;
                    p += 1;
                    leb(body, &mut p)?;
                    let export = match export != "memory" && reached.contains(export) {
                        true => exported.entry(export.to_owned()).or_insert_with(&mut next).clone(),
                        false => export.to_owned(),
                    };
                    put_name(&mut nb, &export);
                    nb.extend_from_slice(&body[start..p]);
                }
                nb
            }
            _ => body.to_vec(),
        };
        out.push(id);
        put_leb(&mut out, new_body.len() as u32);
        out.extend_from_slice(&new_body);
    }
    // A short name the glue already has would now mean two things.
    let mut none = HashSet::new();
    let shorts: HashMap<String, String> =
        renamed.values().chain(exported.values()).map(|s| (s.clone(), s.clone())).collect();
    let mut clashes = HashSet::new();
    rename_tokens(&glue, &shorts, &mut clashes);
    if let Some(clash) = clashes.iter().next() {
        return Err(format!("the glue already uses the name {clash}"));
    }
    let mut seen = HashSet::new();
    let new_glue = rename_after(&rename_tokens(&glue, &renamed, &mut seen), "wasm.", &exported, &mut none);
    if let Some(missing) = renamed.keys().find(|k| !seen.contains(*k)) {
        return Err(format!("the glue never names the binding {missing}: not shortened"));
    }
    let new_types = rename_after(&rename_tokens(&types, &renamed, &mut none), "readonly ", &exported, &mut none);
    let write =
        |p: &Path, data: &[u8]| std::fs::write(p, data).map_err(|e| format!("cannot write {}: {e}", p.display()));
    write(wasm, &out)?;
    write(js, new_glue.as_bytes())?;
    write(dts, new_types.as_bytes())?;
    Ok(renamed.len() + exported.len())
}

/// The module's sections after its header: each id and body.
fn sections(bytes: &[u8]) -> Result<Vec<(u8, &[u8])>> {
    let (mut all, mut at) = (Vec::new(), 8);
    while at < bytes.len() {
        let id = bytes[at];
        at += 1;
        let size = leb(bytes, &mut at)? as usize;
        all.push((id, bytes.get(at..at + size).ok_or("the .wasm ends inside a section")?));
        at += size;
    }
    Ok(all)
}

/// The names of the module's exports.
fn exports(bytes: &[u8]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for (_, body) in sections(bytes)?.into_iter().filter(|(id, _)| *id == 7) {
        let mut p = 0;
        for _ in 0..leb(body, &mut p)? {
            names.push(name(body, &mut p)?.to_owned());
            p += 1;
            leb(body, &mut p)?;
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_distinct_identifiers() {
        let names: HashSet<String> = (0..5000).map(short).collect();
        assert_eq!(names.len(), 5000);
        assert_eq!(short(0), "$a");
        assert!(names.iter().all(|n| n.chars().skip(1).all(|c| c.is_ascii_alphanumeric())));
    }

    #[test]
    fn only_whole_tokens_are_renamed() {
        let renamed = HashMap::from([("__wbg_get_1f".to_owned(), "$a".to_owned())]);
        let mut seen = HashSet::new();
        let text = "{__wbg_get_1f:function(a){},x:__wbg_get_1f_more,\"__wbg_get_1f\"}";
        assert_eq!(rename_tokens(text, &renamed, &mut seen), "{$a:function(a){},x:__wbg_get_1f_more,\"$a\"}");
        assert!(seen.contains("__wbg_get_1f"));
        // An export only where the glue calls it, not the public function of its name.
        let exported = HashMap::from([("applyEdits".to_owned(), "$b".to_owned())]);
        let glue = "function applyEdits(t){return wasm.applyEdits(t)}";
        assert_eq!(rename_after(glue, "wasm.", &exported, &mut seen), "function applyEdits(t){return wasm.$b(t)}");
    }
}
