//! The page's Rust names its elements by id (`dom::by_id("train")`, `on("reset", …)`, the
//! settings' CONTROLS): every id it passes as a literal to those calls, and every control of
//! CONTROLS, must be one index.html declares, so that moving or renaming an element in the
//! page fails here rather than silently in a browser. (Ids built at run time, or kept in lists
//! of their own, are not seen.)

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// The calls whose first argument is an element's id (`by_id::<T>(` is found apart, whatever
/// its T).
const ID_CALLS: [&str; 16] = [
    "by_id(",
    "get_element_by_id(",
    "set_text(",
    "set_hidden(",
    "value(",
    "set_value(",
    "checked(",
    "note_beside(",
    "mark(",
    "sharp(",
    "hidpi(",
    "on(",
    "on_file(",
    "Ratio::of(",
    "CanvasBackend::new(",
    "draw_digits(",
];

/// The ids index.html declares.
fn declared() -> BTreeSet<String> {
    let html = fs::read_to_string("index.html").expect("index.html");
    html.split(" id=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_string)
        .collect()
}

/// The string literal right after each of the calls in `source` (a literal: ids built at run
/// time are not checked here).
fn named_ids(source: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for call in ID_CALLS {
        for (at, _) in source.match_indices(call) {
            // `value(` must be a call of its own, not the end of `set_value(` or `.value(`
            // (a Form's); the document's `.get_element_by_id(` is always a method.
            let before = source[..at].chars().next_back().unwrap_or(' ');
            let method = call == "get_element_by_id(";
            if before.is_alphanumeric() || before == '_' || (before == '.' && !method) {
                continue;
            }
            let rest = &source[at + call.len()..];
            if let Some(literal) = rest.strip_prefix('"') {
                if let Some(end) = literal.find('"') {
                    ids.push(literal[..end].to_string());
                }
            }
        }
    }
    // by_id::<AnyType>("id")
    for (at, _) in source.match_indices("by_id::<") {
        let rest = &source[at..];
        if let Some(literal) = rest.find(">(\"").map(|open| &rest[open + 3..]) {
            if let Some(end) = literal.find('"') {
                ids.push(literal[..end].to_string());
            }
        }
    }
    ids
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/app") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_id_the_page_code_names_is_in_index_html() {
    let declared = declared();
    let mut files = Vec::new();
    rust_files(Path::new("src/app"), &mut files);
    let mut missing = Vec::new();
    let mut seen = 0;
    for file in &files {
        // The worker names the page's controls in its marks too (same ids).
        let source = fs::read_to_string(file).expect("a source file");
        for id in named_ids(&source) {
            seen += 1;
            if !declared.contains(&id) {
                missing.push(format!("{}: \"{id}\"", file.display()));
            }
        }
    }
    assert!(seen > 50, "only {seen} ids found: the scan is broken");
    assert!(missing.is_empty(), "ids not in index.html: {missing:#?}");
}

#[test]
fn the_settings_controls_are_in_index_html() {
    let declared = declared();
    let source = fs::read_to_string("src/app/schema.rs").expect("schema.rs");
    let list = source
        .split("pub const CONTROLS")
        .nth(1)
        .and_then(|s| s.split("];").next())
        .expect("the CONTROLS list");
    let controls: Vec<&str> = list.split('"').skip(1).step_by(2).collect();
    assert!(controls.len() >= 20, "CONTROLS not read: {controls:?}");
    for id in controls {
        assert!(
            declared.contains(id),
            "the setting {id} is not in index.html"
        );
    }
}

#[test]
fn the_scan_finds_an_id_that_is_not_declared() {
    let ids = named_ids(
        r#"dom::set_text("no-such-element", "x"); let v = form.value("a"); document().get_element_by_id("in-doc"); by_id::<web_sys::HtmlInputElement>("typed-one");"#,
    );
    let want = ["in-doc", "no-such-element", "typed-one"];
    assert_eq!(ids, want.map(String::from).to_vec());
    assert!(!declared().contains("no-such-element"));
}
