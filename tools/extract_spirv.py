"""Takes the first compute module of 16 x 16 threads from a Chrome log of Dawn's dump_shaders
(--enable-dawn-features=dump_shaders): its SPIR-V disassembly and the WGSL dumped before it, for
examples/spirv_probe.rs. Prints the spirv-as target environment of its SPIR-V version.
Usage: extract_spirv.py CHROME_LOG OUT.spvasm OUT.wgsl"""
import sys
lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().split("\n")
wgsl, i = None, 0
while i < len(lines):
    l = lines[i]
    if "Dumped WGSL:" in l or "Dumped SPIRV disassembly" in l:
        j = i + 1
        while j < len(lines) and not lines[j].startswith('", source:'):
            j += 1
        body = lines[i + 1:j]
        if "Dumped WGSL:" in l:
            wgsl = body
        elif any("GLCompute" in b for b in body) and any("LocalSize 16 16 1" in b for b in body):
            open(sys.argv[2], "w").write("\n".join(body) + "\n")
            open(sys.argv[3], "w").write("\n".join(wgsl or []) + "\n")
            version = next(b for b in body if b.startswith("; Version:")).split()[-1]
            print({"1.3": "vulkan1.1", "1.4": "vulkan1.1spv1.4", "1.5": "vulkan1.2", "1.6": "vulkan1.3"}[version])
            sys.exit(0)
        i = j
    i += 1
sys.exit("no 16 x 16 compute module in the log")
