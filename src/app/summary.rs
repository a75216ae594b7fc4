//! The model summary: each layer's parameters, their shapes and counts, and the total.

use super::dom::document;
use crate::train::Session;

/// Fills the summary table from the session's parameters, grouped by layer.
pub fn show(session: &Session) {
    let Some(table) = document().get_element_by_id("model-summary") else {
        return;
    };
    table.set_inner_html("");
    let mut rows: Vec<(String, Vec<String>, usize)> = Vec::new();
    for (name, p) in session.parameters() {
        let (layer, kind) = name.rsplit_once('.').unwrap_or((name.as_str(), ""));
        let shape = format!("{kind} {}", dims(p.shape()));
        match rows.last_mut().filter(|r| r.0 == layer) {
            Some(row) => {
                row.1.push(shape);
                row.2 += p.numel();
            }
            None => rows.push((layer.to_string(), vec![shape], p.numel())),
        }
    }
    add_row(
        &table,
        "th",
        ["layer", "parameters", "count"].map(String::from),
    );
    for (layer, shapes, count) in rows {
        add_row(&table, "td", [layer, shapes.join(", "), grouped(count)]);
    }
    let total = grouped(session.parameter_count());
    add_row(&table, "th", ["total".into(), String::new(), total]);
}

fn add_row(table: &web_sys::Element, cell: &str, texts: [String; 3]) {
    let doc = document();
    let Ok(tr) = doc.create_element("tr") else {
        return;
    };
    for (i, text) in texts.iter().enumerate() {
        if let Ok(c) = doc.create_element(cell) {
            c.set_text_content(Some(text));
            if i == 2 {
                c.set_class_name("n");
            }
            let _ = tr.append_child(&c);
        }
    }
    let _ = table.append_child(&tr);
}

/// [32, 2] as "32 × 2".
fn dims(shape: &[usize]) -> String {
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(" × ")
}

/// 1234567 as "1,234,567".
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
