//! Browser tests of the Adit JS API: the exported functions called as JS
//! would, errors checked for their `code`, `index` and details.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

use atelier_agent::wasm::adit::{
    apply_edits, apply_edits_with_report, apply_search_replace, edits_response_format, parse_edits_json,
    parse_search_replace,
};
use js_sys::{Array, Reflect, JSON};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn js(json: &str) -> JsValue {
    JSON::parse(json).unwrap()
}

fn prop(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &JsValue::from_str(key)).unwrap()
}

fn assert_error(err: JsValue, code: &str, index: u32) -> JsValue {
    assert!(err.is_instance_of::<js_sys::Error>(), "a real Error is thrown");
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some(code));
    assert_eq!(prop(&err, "index").as_f64(), Some(index as f64));
    assert_eq!(prop(&err, "name").as_string().as_deref(), Some("AtelierError"));
    err
}

#[wasm_bindgen_test]
fn apply_edits_from_js_objects() {
    let out = apply_edits("Hello world\n", js(r#"[{"search":"world","replace":"there"}]"#)).unwrap();
    assert_eq!(out, "Hello there\n");
}

#[wasm_bindgen_test]
fn japanese_manuscript_keeps_ideographic_indent() {
    let doc = "\u{3000}吾輩は猫である。\n\u{3000}名前はまだ無い。\n";
    let out = apply_edits(doc, js(r#"[{"search":"名前はまだ無い。\n","replace":"名前はもうある。\n"}]"#)).unwrap();
    assert_eq!(out, "\u{3000}吾輩は猫である。\n\u{3000}名前はもうある。\n");
}

#[wasm_bindgen_test]
fn reports_levels_as_strings() {
    let applied =
        apply_edits_with_report("  a\nb\n", js(r#"[{"search":"a\n","replace":"A\n"},{"search":"b","replace":"B"}]"#))
            .unwrap();
    assert_eq!(prop(&applied, "text").as_string().unwrap(), "  A\nB\n");
    let reports: Array = prop(&applied, "reports").unchecked_into();
    assert_eq!(prop(&reports.get(0), "level").as_string().unwrap(), "trimmed");
    assert_eq!(prop(&reports.get(1), "level").as_string().unwrap(), "exact");
    assert_eq!(prop(&reports.get(1), "line").as_f64(), Some(2.0));
}

#[wasm_bindgen_test]
fn ambiguous_second_edit_throws_with_index_and_lines() {
    let err = apply_edits("a b\n", js(r#"[{"search":"a","replace":"b"},{"search":"b","replace":"c"}]"#)).unwrap_err();
    let err = assert_error(err, "ambiguous", 1);
    let lines: Array = prop(&err, "lines").unchecked_into();
    assert_eq!(lines.length(), 2);
    assert_eq!(prop(&err, "level").as_string().as_deref(), Some("exact"));
}

#[wasm_bindgen_test]
fn no_match_throws_with_closest_region() {
    let err = apply_edits("one\ntwo words here\nthree\n", js(r#"[{"search":"two words there\n","replace":"x"}]"#))
        .unwrap_err();
    let err = assert_error(err, "no_match", 0);
    let closest = prop(&err, "closest");
    assert_eq!(prop(&closest, "startLine").as_f64(), Some(2.0));
    assert_eq!(prop(&closest, "text").as_string().as_deref(), Some("two words here"));
}

#[wasm_bindgen_test]
fn search_replace_round_trip_and_parse_errors() {
    let reply = "Change:\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n";
    assert_eq!(apply_search_replace("x\nold\n", reply).unwrap(), "x\nnew\n");
    let edits: Array = parse_search_replace(reply).unwrap().unchecked_into();
    assert_eq!(prop(&edits.get(0), "search").as_string().as_deref(), Some("old\n"));
    let err = parse_search_replace("<<<<<<< SEARCH\nold\n=======\n").unwrap_err();
    let err = assert_error(err, "parse", 0);
    assert_eq!(prop(&err, "line").as_f64(), Some(1.0));
}

#[wasm_bindgen_test]
fn structured_edits_and_schema() {
    let edits: Array = parse_edits_json(r#"{"edits":[{"search":"a","replace":"b"}]}"#).unwrap().unchecked_into();
    assert_eq!(edits.length(), 1);
    assert_error(parse_edits_json("[{\"search\":1}]").unwrap_err(), "parse", 0);
    let format = edits_response_format().unwrap();
    assert_eq!(prop(&format, "type").as_string().as_deref(), Some("json_schema"));
}

#[wasm_bindgen_test]
fn wrong_argument_shape_is_a_clear_error() {
    let err = apply_edits("a", js(r#"{"search":"a"}"#)).unwrap_err();
    assert_eq!(prop(&err, "code").as_string().as_deref(), Some("invalid_argument"));
}
