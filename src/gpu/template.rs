//! The template stage every shader goes through before it is compiled, in one place: the
//! prelude of constants shared with Rust, `//#include NAME` (a shared piece pasted), `{{NAME}}`
//! slots (text the kernel gives, each shader declaring on a line `//#slots …` the ones it takes)
//! and `//#repeat N [NAME]` … `//#end` blocks (a loop unrolled, `#NAME` its index). Both the
//! pipeline cache and `webgrad wgsl` (which prints a kernel as compiled) expand through it.

use super::params;

/// Shared pieces of shaders, pasted where a shader says `//#include NAME`. `rowwise` is
/// special: its version follows the kernel's ROWWISE slot.
/// Listed in the order they are pasted: an include may include those after it. They are pasted
/// by text, so no name may begin another (`includes_are_named_apart`).
const INCLUDES: [(&str, &str); 46] = [
    // What the causal attention kernels on the matrix units share, and their backward's dO.
    (
        "attention_coop_common",
        include_str!("../../shaders/attention_coop_common.wgsl"),
    ),
    (
        "attention_coop_grads",
        include_str!("../../shaders/attention_coop_grads.wgsl"),
    ),
    // Their tiles and matrices in each dialect (the UNITS slot), and Chrome's matrix types.
    (
        "attention_units_coop",
        include_str!("../../shaders/attention_units_coop.wgsl"),
    ),
    (
        "attention_units_chrome",
        include_str!("../../shaders/attention_units_chrome.wgsl"),
    ),
    // Where their results go (the RESULTS slot): f32 in the dialect's stores, or f16.
    (
        "attention_results_coop",
        include_str!("../../shaders/attention_results_coop.wgsl"),
    ),
    (
        "attention_results_chrome",
        include_str!("../../shaders/attention_results_chrome.wgsl"),
    ),
    // Included by the f32 two above, so listed after them (includes are pasted in this order).
    (
        "attention_results_f32",
        include_str!("../../shaders/attention_results_f32.wgsl"),
    ),
    (
        "attention_results_f16",
        include_str!("../../shaders/attention_results_f16.wgsl"),
    ),
    // How they read q, k, v and dO (the INPUTS slot).
    (
        "attention_inputs_f32",
        include_str!("../../shaders/attention_inputs_f32.wgsl"),
    ),
    (
        "attention_inputs_f16",
        include_str!("../../shaders/attention_inputs_f16.wgsl"),
    ),
    (
        "subgroup_matrix_types",
        include_str!("../../shaders/subgroup_matrix_types.wgsl"),
    ),
    (
        "matmul_f16_tiles",
        include_str!("../../shaders/matmul_f16_tiles.wgsl"),
    ),
    (
        "matmul_f16_c_vec4s",
        include_str!("../../shaders/matmul_f16_c_vec4s.wgsl"),
    ),
    // The matrix units' slices, by the device's workgroup memory (the SLICES slot).
    (
        "matmul_f16_deep",
        include_str!("../../shaders/matmul_f16_deep.wgsl"),
    ),
    (
        "matmul_f16_shallow",
        include_str!("../../shaders/matmul_f16_shallow.wgsl"),
    ),
    // How the f16 copies read their source (the SOURCE slot).
    (
        "matmul_operand_values",
        include_str!("../../shaders/matmul_operand_values.wgsl"),
    ),
    (
        "matmul_operand_vec4s",
        include_str!("../../shaders/matmul_operand_vec4s.wgsl"),
    ),
    ("matmul_io", include_str!("../../shaders/matmul_io.wgsl")),
    (
        "matmul_vec4_io",
        include_str!("../../shaders/matmul_vec4_io.wgsl"),
    ),
    // B's binding and loads, by how B is stored (the kernel's B_TYPE slot).
    (
        "matmul_b_f32",
        include_str!("../../shaders/matmul_b_f32.wgsl"),
    ),
    (
        "matmul_b_f16",
        include_str!("../../shaders/matmul_b_f16.wgsl"),
    ),
    (
        "matmul_b4_f32",
        include_str!("../../shaders/matmul_b4_f32.wgsl"),
    ),
    (
        "matmul_b4_f16",
        include_str!("../../shaders/matmul_b4_f16.wgsl"),
    ),
    ("matmul_out", include_str!("../../shaders/matmul_out.wgsl")),
    (
        "matmul_bias",
        include_str!("../../shaders/matmul_bias.wgsl"),
    ),
    (
        "matmul_no_bias",
        include_str!("../../shaders/matmul_no_bias.wgsl"),
    ),
    (
        "matmul_row_bias",
        include_str!("../../shaders/matmul_row_bias.wgsl"),
    ),
    (
        "matmul_residual",
        include_str!("../../shaders/matmul_residual.wgsl"),
    ),
    (
        "matmul_no_residual",
        include_str!("../../shaders/matmul_no_residual.wgsl"),
    ),
    (
        "matmul_gelu_grad",
        include_str!("../../shaders/matmul_gelu_grad.wgsl"),
    ),
    (
        "matmul_relu",
        include_str!("../../shaders/matmul_relu.wgsl"),
    ),
    (
        "matmul_mask_relu",
        include_str!("../../shaders/matmul_mask_relu.wgsl"),
    ),
    (
        "matmul_store_f32",
        include_str!("../../shaders/matmul_store_f32.wgsl"),
    ),
    (
        "matmul_store_vec4",
        include_str!("../../shaders/matmul_store_vec4.wgsl"),
    ),
    (
        "matmul_store_f16",
        include_str!("../../shaders/matmul_store_f16.wgsl"),
    ),
    (
        "attention_tiled_common",
        include_str!("../../shaders/attention_tiled_common.wgsl"),
    ),
    (
        "attention_tiled_keys",
        include_str!("../../shaders/attention_tiled_keys.wgsl"),
    ),
    ("math", include_str!("../../shaders/math.wgsl")),
    // The embedding's table, by how it is stored (its TABLE slot).
    (
        "embedding_table_f32",
        include_str!("../../shaders/embedding_table_f32.wgsl"),
    ),
    (
        "embedding_table_f16",
        include_str!("../../shaders/embedding_table_f16.wgsl"),
    ),
    (
        "cross_entropy_block",
        include_str!("../../shaders/cross_entropy_block.wgsl"),
    ),
    (
        "layernorm_x4",
        include_str!("../../shaders/layernorm_x4.wgsl"),
    ),
    (
        "layernorm_y_f32",
        include_str!("../../shaders/layernorm_y_f32.wgsl"),
    ),
    (
        "layernorm_y_f16",
        include_str!("../../shaders/layernorm_y_f16.wgsl"),
    ),
    (
        "dropout_mask",
        include_str!("../../shaders/dropout_mask.wgsl"),
    ),
    // Included by the product's f16 store, LayerNorm's f16 output and the attention kernels
    // above.
    (
        "half_packing",
        include_str!("../../shaders/half_packing.wgsl"),
    ),
];
const ROWWISE: &str = include_str!("../../shaders/rowwise.wgsl");
const ROWWISE_SERIAL: &str = include_str!("../../shaders/rowwise_serial.wgsl");

/// `source` as the GPU gets it: the prelude, then the includes pasted and `slots` filled in (a
/// slot may name an include), then the repeats written out, and the `enable` directives of all
/// of it moved first. An error when a slot given is not one the shader or its includes declare,
/// or when template text is left (a slot not given, a misspelt include).
pub fn expand(source: &str, slots: &[(&str, String)]) -> Result<String, String> {
    let serial = slots.iter().any(|(k, v)| *k == "ROWWISE" && v == "serial");
    let rowwise = if serial { ROWWISE_SERIAL } else { ROWWISE };
    let mut text = params::prelude() + &source.replace("//#include rowwise", rowwise);
    // Twice: a slot may name an include (`//#include {{BIAS}}`), and includes hold slots.
    for _ in 0..2 {
        for (name, body) in INCLUDES {
            text = text.replace(&format!("//#include {name}"), body);
        }
        for (name, value) in slots {
            text = text.replace(&format!("{{{{{name}}}}}"), value);
        }
    }
    let text = enables_first(&repeat_blocks(&text));
    let declared: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("//#slots "))
        .flat_map(str::split_whitespace)
        .collect();
    if let Some((name, _)) = slots.iter().find(|(n, _)| !declared.contains(n)) {
        return Err(format!(
            "the slot {name} is not one the shader takes ({declared:?})"
        ));
    }
    let leftover = text.lines().find(|l| {
        let l = l.trim_start();
        l.contains("{{") || l.starts_with("//#include") || l.starts_with("//#repeat")
    });
    match leftover {
        Some(line) => Err(format!("template text left unexpanded: `{}`", line.trim())),
        None => Ok(text),
    }
}

/// `text` with its `enable` directives first, each once: WGSL wants them before any
/// declaration (the prelude's too), and a shader's dialect include names those it needs
/// (attention_units_coop.wgsl) beside the shader's own.
fn enables_first(text: &str) -> String {
    let (enables, body): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|l| l.starts_with("enable "));
    let mut first: Vec<&str> = Vec::new();
    for enable in enables {
        if !first.contains(&enable) {
            first.push(enable);
        }
    }
    let mut out: String = first.iter().map(|l| format!("{l}\n")).collect();
    out += &body.join("\n");
    out.push('\n');
    out
}

/// `source` with each block between a line `//#repeat N` and its line `//#end` written N times,
/// `#` in the block replaced by 0, 1, .. N - 1 (with `//#repeat N NAME`, `#NAME`): a loop
/// unrolled so that its index is a constant in each copy (and no loop is left for the compiler
/// to count). Blocks nest, each inner one naming its index. A line `//#repeat` without a count
/// is left as it is, for the check of leftover template text to name.
fn repeat_blocks(source: &str) -> String {
    let mut out = String::with_capacity(source.len() * 4);
    let lines: Vec<&str> = source.lines().collect();
    write_repeated(&lines, &mut out);
    out
}

/// `lines` into `out` with their `//#repeat` blocks written out (`repeat_blocks`).
fn write_repeated(lines: &[&str], out: &mut String) {
    let mut at = 0;
    while at < lines.len() {
        let Some((count, marker)) = repeat_header(lines[at]) else {
            *out += lines[at];
            out.push('\n');
            at += 1;
            continue;
        };
        let end = block_end(lines, at + 1);
        for i in 0..count {
            let copy: Vec<String> = lines[at + 1..end]
                .iter()
                .map(|l| l.replace(&marker, &i.to_string()))
                .collect();
            write_repeated(&copy.iter().map(String::as_str).collect::<Vec<_>>(), out);
        }
        at = end + 1;
    }
}

/// The count and index marker of a line `//#repeat N [NAME]`.
fn repeat_header(line: &str) -> Option<(usize, String)> {
    let mut words = line.trim().strip_prefix("//#repeat ")?.split_whitespace();
    let count = words.next()?.parse().ok()?;
    Some((count, format!("#{}", words.next().unwrap_or(""))))
}

/// The index of the `//#end` that closes a block whose first line is `from` (or the end).
fn block_end(lines: &[&str], from: usize) -> usize {
    let mut depth = 1;
    for (i, line) in lines.iter().enumerate().skip(from) {
        if repeat_header(line).is_some() {
            depth += 1;
        } else if line.trim() == "//#end" {
            depth -= 1;
            if depth == 0 {
                return i;
            }
        }
    }
    lines.len()
}

#[cfg(test)]
mod tests {
    use super::{expand, repeat_blocks, INCLUDES};

    #[test]
    fn repeated_blocks_take_their_index_and_a_block_without_a_count_stays() {
        let text = "a\n  //#repeat 3\nx[#u] += 1.0;\n  //#end\nb\n//#repeat\ny\n//#end\n";
        assert_eq!(
            repeat_blocks(text),
            "a\nx[0u] += 1.0;\nx[1u] += 1.0;\nx[2u] += 1.0;\nb\n//#repeat\ny\n//#end\n"
        );
    }

    #[test]
    fn nested_blocks_take_their_named_indices() {
        let text = "//#repeat 2 i\nr#i;\n//#repeat 3 j\nacc#i_#j = #j;\n//#end\n//#end\nz\n";
        assert_eq!(
            repeat_blocks(text),
            "r0;\nacc0_0 = 0;\nacc0_1 = 1;\nacc0_2 = 2;\n\
             r1;\nacc1_0 = 0;\nacc1_1 = 1;\nacc1_2 = 2;\nz\n"
        );
    }

    #[test]
    fn enables_go_first_each_once() {
        let text = "const A = 1;\nenable f16;\nfn f() {}\nenable f16;\nenable subgroups;\n";
        let out = super::enables_first(text);
        assert_eq!(
            out,
            "enable f16;\nenable subgroups;\nconst A = 1;\nfn f() {}\n"
        );
    }

    #[test]
    fn includes_are_named_apart() {
        for (a, _) in INCLUDES {
            for (b, _) in INCLUDES {
                assert!(a == b || !b.starts_with(a), "{b} begins with {a}");
            }
        }
    }

    #[test]
    fn a_slot_must_be_declared_and_every_slot_used_given() {
        let source = "//#slots N\nconst N: u32 = {{N}}u;\n";
        let n = |v: &str| vec![("N", v.to_string())];
        let text = expand(source, &n("4")).unwrap();
        assert!(text.ends_with("//#slots N\nconst N: u32 = 4u;\n"), "{text}");
        let err = expand(source, &[("M", "4".into())]).unwrap_err();
        assert!(
            err.contains("the slot M is not one the shader takes"),
            "{err}"
        );
        let err = expand(source, &[]).unwrap_err();
        assert!(
            err.contains("left unexpanded: `const N: u32 = {{N}}u;`"),
            "{err}"
        );
    }
}
