//! The one place where Rust errors become JavaScript `Error` objects with a
//! stable `code` (and, for Adit, the failing edit's `index` and details).

use js_sys::{Error, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::adit::AditError;
use crate::error::ErrorCode;

fn set(target: &JsValue, key: &str, value: &JsValue) {
    // Setting a property on a fresh Error object cannot fail.
    let _ = Reflect::set(target, &JsValue::from_str(key), value);
}

/// A JS `Error` with `name` "AtelierError" and the given `code`.
pub(crate) fn coded(code: ErrorCode, message: &str) -> Error {
    let err = Error::new(message);
    err.set_name("AtelierError");
    set(&err, "code", &JsValue::from_str(code.as_str()));
    err
}

/// A JS argument that does not have the documented shape.
pub(crate) fn invalid_argument(what: &str, detail: impl std::fmt::Display) -> JsValue {
    coded(ErrorCode::InvalidArgument, &format!("{what}: {detail}")).into()
}

/// An Adit failure: `code`, `index`, and the details of its kind
/// (`line` for parse errors, `lines` and `level` for ambiguity, `closest`
/// for no match).
pub(crate) fn adit(e: AditError) -> JsValue {
    let err = coded(e.code(), &e.to_string());
    set(&err, "index", &JsValue::from(e.index() as u32));
    match &e {
        AditError::Parse { line, .. } => set(&err, "line", &JsValue::from(*line as u32)),
        AditError::Ambiguous { lines, level, .. } => {
            let list: js_sys::Array = lines.iter().map(|l| JsValue::from(*l as u32)).collect();
            set(&err, "lines", &list);
            set(&err, "level", &super::convert::to_js(level).unwrap_or(JsValue::NULL));
        }
        AditError::NoMatch { closest, .. } => {
            set(&err, "closest", &closest.as_ref().and_then(|c| super::convert::to_js(c).ok()).unwrap_or(JsValue::NULL))
        }
    }
    err.unchecked_into()
}

/// A storage failure (`code`: quota_exceeded, not_found, lifecycle, ...).
/// A conflict also carries the record as it is now (`current`).
pub(crate) fn store(e: crate::store::StoreError) -> JsValue {
    let err = coded(e.code(), &e.to_string());
    if let crate::store::StoreError::Conflict { current: Some(current), .. } = &e {
        set(&err, "current", &super::convert::to_js(current).unwrap_or(JsValue::NULL));
    }
    err.into()
}

/// A failed run (`code`: the model's or the graph's, e.g. not_configured,
/// upstream_unavailable, recursion_limit).
pub(crate) fn agent(e: crate::agent::AgentError) -> JsValue {
    coded(e.code, &e.message).into()
}
