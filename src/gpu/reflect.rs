//! What a shader declares, read from its expanded text: the fields of `struct Params`, its
//! storage bindings, its `override` constants and (natively) its workgroup memory. The pipeline
//! cache checks every launch against it once, when it builds the pipeline, so a Rust struct or
//! binding list that drifted from its WGSL, or a kernel too large for the device, is an error
//! naming the kernel instead of garbage or a device error later.

use super::ParamField;

/// Natively, refuses a kernel that declares more workgroup memory than the device allows:
/// wgpu does not check it natively (a browser refuses such a pipeline), so without this a
/// kernel too large for the least capable devices would pass every native test.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn check_workgroup_memory(
    device: &wgpu::Device,
    text: &str,
) -> std::result::Result<(), String> {
    let module = naga::front::wgsl::parse_str(text).map_err(|e| e.emit_to_string(text))?;
    let mut layouter = naga::proc::Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| e.to_string())?;
    let bytes: u64 = module
        .global_variables
        .iter()
        .filter(|(_, v)| v.space == naga::AddressSpace::WorkGroup)
        .map(|(_, v)| layouter[v.ty].size as u64)
        .sum();
    let max = device.limits().max_compute_workgroup_storage_size as u64;
    match bytes > max {
        true => Err(format!(
            "it declares {bytes} bytes of workgroup memory, more than the device's maxComputeWorkgroupStorageSize of {max}"
        )),
        false => Ok(()),
    }
}

/// A field of `struct Params`: name, WGSL type (spaces removed), byte offset.
type Field = (String, String, usize);

/// One storage binding as the shader declares it.
#[derive(Debug, Clone, PartialEq)]
struct StorageDecl {
    index: u32,
    name: String,
    writable: bool,
}

/// A shader's declarations.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Declared {
    params: Vec<Field>,
    /// Bytes of `struct Params` in the uniform address space.
    params_size: usize,
    storage: Vec<StorageDecl>,
    overrides: Vec<String>,
}

impl Declared {
    /// Reads the declarations of an expanded shader; an error when a parameter field has a
    /// type whose layout is not known here.
    pub fn parse(text: &str) -> Result<Declared, String> {
        let text: String = text
            .lines()
            .map(strip_comment)
            .collect::<Vec<_>>()
            .join("\n");
        let (params, params_size) = params_layout(&text)?;
        Ok(Declared {
            params,
            params_size,
            storage: storage_bindings(&text),
            overrides: overrides(&text),
        })
    }

    /// Why `fields` (a Rust parameter struct of `size` bytes), the storage bindings (whether
    /// each is written) and `constants` do not fit what the shader declares, if they do not.
    pub fn mismatch(
        &self,
        (fields, size): (&[ParamField], usize),
        writable: &[bool],
        constants: &[(&str, f64)],
    ) -> Option<String> {
        self.params_mismatch(fields, size)
            .or_else(|| self.bindings_mismatch(writable))
            .or_else(|| self.constants_mismatch(constants))
    }

    fn params_mismatch(&self, fields: &[ParamField], size: usize) -> Option<String> {
        let ours: Vec<Field> = fields
            .iter()
            .map(|f| (f.name.to_string(), f.wgsl.replace(' ', ""), f.offset))
            .collect();
        if ours != self.params {
            return Some(format!(
                "the parameter struct has fields {} but the shader's struct Params has {}",
                list_fields(&ours),
                list_fields(&self.params)
            ));
        }
        (size < self.params_size).then(|| {
            format!(
                "the parameter struct has {size} bytes but the shader's struct Params needs {}",
                self.params_size
            )
        })
    }

    fn bindings_mismatch(&self, bindings: &[bool]) -> Option<String> {
        if self.storage.len() != bindings.len() {
            return Some(format!(
                "the shader declares {} storage bindings ({}) but the launch binds {} buffers",
                self.storage.len(),
                self.storage
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                bindings.len()
            ));
        }
        self.storage
            .iter()
            .zip(bindings)
            .enumerate()
            .find_map(|(i, (decl, b))| {
                if decl.index != i as u32 + 1 {
                    Some(format!(
                        "storage bindings must be numbered 1, 2, ..; `{}` is binding {}",
                        decl.name, decl.index
                    ))
                } else if decl.writable != *b {
                    let access = |w| if w { "read_write" } else { "read" };
                    Some(format!(
                        "binding {} (`{}`) is {} in the shader but bound {}",
                        decl.index,
                        decl.name,
                        access(decl.writable),
                        access(*b)
                    ))
                } else {
                    None
                }
            })
    }

    fn constants_mismatch(&self, constants: &[(&str, f64)]) -> Option<String> {
        let given: Vec<&str> = constants.iter().map(|c| c.0).collect();
        if let Some(name) = given
            .iter()
            .find(|n| !self.overrides.iter().any(|o| o == *n))
        {
            return Some(format!("no `override {name}` in the shader to set"));
        }
        self.overrides
            .iter()
            .find(|o| !given.contains(&o.as_str()))
            .map(|o| format!("the shader's `override {o}` was not given a value"))
    }
}

fn list_fields(fields: &[Field]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|(name, ty, at)| format!("{name}: {ty} @{at}"))
        .collect();
    format!("[{}]", parts.join(", "))
}

fn strip_comment(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// The fields of `struct Params` with their offsets under WGSL's uniform layout rules, and the
/// struct's size; none when the shader has no such struct.
fn params_layout(text: &str) -> Result<(Vec<Field>, usize), String> {
    let Some(start) = text.find("struct Params") else {
        return Ok((Vec::new(), 0));
    };
    let body = &text[start..];
    let (open, close) = match (body.find('{'), body.find('}')) {
        (Some(o), Some(c)) if o < c => (o, c),
        _ => return Err("`struct Params` has no body".into()),
    };
    let mut fields = Vec::new();
    let (mut end, mut struct_align) = (0usize, 4);
    for item in split_top_level(&body[open + 1..close]) {
        let Some((name, ty)) = item.split_once(':') else {
            return Err(format!("cannot read the parameter field `{item}`"));
        };
        let ty: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
        let (align, size) = layout(&ty)?;
        let offset = end.next_multiple_of(align);
        fields.push((name.trim().to_string(), ty, offset));
        end = offset + size;
        struct_align = struct_align.max(align);
    }
    Ok((fields, end.next_multiple_of(struct_align)))
}

/// Items separated by commas outside angle brackets (`array<vec4<u32>, 2>` is one item).
fn split_top_level(body: &str) -> Vec<String> {
    let (mut items, mut current, mut depth) = (Vec::new(), String::new(), 0);
    for c in body.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// (alignment, size) in bytes of a WGSL type in the uniform address space.
fn layout(ty: &str) -> Result<(usize, usize), String> {
    match ty {
        "u32" | "i32" | "f32" => Ok((4, 4)),
        _ if ty.starts_with("vec2<") => Ok((8, 8)),
        _ if ty.starts_with("vec3<") => Ok((16, 12)),
        _ if ty.starts_with("vec4<") => Ok((16, 16)),
        _ if ty.starts_with("array<") && ty.ends_with('>') => {
            let inner = &ty["array<".len()..ty.len() - 1];
            let (element, count) = inner
                .rsplit_once(',')
                .ok_or_else(|| format!("array `{ty}` needs a fixed length in a uniform"))?;
            let count: usize = count
                .parse()
                .map_err(|_| format!("array `{ty}` needs a literal length"))?;
            let (align, size) = layout(element)?;
            // Uniform arrays have 16-byte aligned elements.
            let align = align.max(16);
            Ok((align, count * size.next_multiple_of(align)))
        }
        _ => Err(format!("the parameter type `{ty}` is not supported")),
    }
}

/// `@group(0) @binding(N) var<storage, ACCESS> name` declarations, by binding number.
fn storage_bindings(text: &str) -> Vec<StorageDecl> {
    let mut found: Vec<StorageDecl> = text
        .lines()
        .filter(|l| l.contains("var<storage"))
        .filter_map(|l| {
            let after = l.split("@binding(").nth(1)?;
            let index = after.split(')').next()?.trim().parse().ok()?;
            let decl = l.split("var<storage").nth(1)?;
            let (access, rest) = decl.split_once('>')?;
            let name = rest.split(':').next()?.trim().to_string();
            Some(StorageDecl {
                index,
                name,
                writable: access.contains("read_write"),
            })
        })
        .collect();
    found.sort_by_key(|d| d.index);
    found
}

/// The names of the shader's `override` constants.
fn overrides(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("override "))
        .filter_map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_layout_pads_vec4_arrays_to_16_bytes() {
        let text = "struct Params {\n  n: u32, rank: u32, // two\n  shape: array<vec4<u32>, 2>,\n}";
        let (fields, size) = params_layout(text).unwrap();
        let offsets: Vec<usize> = fields.iter().map(|f| f.2).collect();
        assert_eq!(offsets, [0, 4, 16]);
        assert_eq!(fields[2].1, "array<vec4<u32>,2>");
        assert_eq!(size, 48);
    }

    #[test]
    fn storage_bindings_and_overrides_are_read_from_declarations() {
        let text = "@group(0) @binding(2) var<storage, read_write> out: array<f32>;\n\
                    @group(0) @binding(1) var<storage, read> xs: array<f32>;\n\
                    override TA: bool;\n";
        let d = Declared::parse(text).unwrap();
        let names: Vec<(&str, bool)> = d
            .storage
            .iter()
            .map(|s| (s.name.as_str(), s.writable))
            .collect();
        assert_eq!(names, [("xs", false), ("out", true)]);
        assert_eq!(d.overrides, ["TA"]);
    }
}
