"""Writes one kernel's WGSL as the library hands it to the GPU (src/gpu/pipelines.rs,
`Kernel::expanded`): the prelude, the includes, the slots and the `//#repeat` blocks. For
probes that run a kernel outside the library (tools/browser/product_probe.html).
Usage: expand_wgsl.py SHADER [SLOT=VALUE ...] > OUT.wgsl
  e.g. expand_wgsl.py matmul BIAS=matmul_no_bias RESIDUAL=matmul_no_residual \
       STORE=matmul_store_vec4 RES=3 OUT=3"""
import pathlib
import re
import sys

SHADERS = pathlib.Path(__file__).resolve().parent.parent / "shaders"
PARAMS_RS = SHADERS.parent / "src" / "gpu" / "params.rs"


def prelude():
    """The constants `params::prelude` writes, read from params.rs so that they cannot drift."""
    text = PARAMS_RS.read_text()
    lines = []
    for name in ("ELEMENTWISE_WORKGROUP", "ROW_WORKGROUP"):
        value = re.search(rf"const {name}: u32 = (\d+);", text)
        if not value:
            sys.exit(f"{name} not found in {PARAMS_RS}")
        lines.append(f"const {name}: u32 = {value.group(1)}u;")
    return "\n".join(lines) + "\n"


def includes():
    """The include names of pipelines.rs's INCLUDES and their text."""
    text = (SHADERS.parent / "src" / "gpu" / "pipelines.rs").read_text()
    names = re.findall(r'\(\s*"(\w+)",\s*include_str!\("../../shaders/(\w+)\.wgsl"\)', text)
    return {name: (SHADERS / f"{file}.wgsl").read_text() for name, file in names}


def repeat_blocks(text):
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = re.fullmatch(r"\s*//#repeat (\d+)\s*", lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "//#end")
        for n in range(int(m.group(1))):
            out += [l.replace("#", str(n)) for l in lines[i + 1:end]]
        i = end + 1
    return "\n".join(out)


def main():
    shader, slots = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
    text = prelude() + (SHADERS / f"{shader}.wgsl").read_text()
    bodies = includes()
    for _ in range(2):
        for name, body in bodies.items():
            text = text.replace(f"//#include {name}", body)
        for name, value in slots.items():
            text = text.replace("{{" + name + "}}", value)
    text = repeat_blocks(text)
    left = [l for l in text.split("\n") if "{{" in l or l.strip().startswith("//#")]
    if left:
        sys.exit(f"template text left unexpanded: {left[0].strip()}")
    sys.stdout.write(text)


main()
