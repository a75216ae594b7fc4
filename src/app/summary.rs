//! The model summary: each layer's parameters, their shapes and counts, and the total.

use super::dom::document;

/// Fills the summary table: a row per layer (its parameters' shapes and count), then the total.
pub fn show(rows: &[(String, Vec<String>, usize)], total: usize) {
    let Some(table) = document().get_element_by_id("model-summary") else {
        return;
    };
    table.set_inner_html("");
    add_row(
        &table,
        "th",
        ["layer", "parameters", "count"].map(String::from),
    );
    for (layer, shapes, count) in rows {
        add_row(
            &table,
            "td",
            [layer.clone(), shapes.join(", "), grouped(*count)],
        );
    }
    add_row(
        &table,
        "th",
        ["total".into(), String::new(), grouped(total)],
    );
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
