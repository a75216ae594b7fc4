"""Prints one table from the files scripts/gpu_browser_run.sh writes: per workload and site, the
native and page figures (step waited for, pipelined step, CPU µs per dispatch, dispatches,
bind groups created per step) and PyTorch's step. Usage: python3 tools/bench_summary.py DIR"""
import json, pathlib, re, sys

out = pathlib.Path(sys.argv[1])


def lines(text):
    rows = {}
    for m in re.finditer(r'(\w+) (\{[^{}]*\})', text):
        try:
            rows[m.group(1)] = json.loads(m.group(2).replace('\\"', '"'))
        except json.JSONDecodeError:
            pass
    return rows


torch = lines((out / "torch.txt").read_text()) if (out / "torch.txt").exists() else {}
print(f"{'workload':<18}{'where':<22}{'ms':>9}{'pipe ms':>9}{'us/disp':>9}{'disp':>6}{'bg':>5}{'torch ms':>10}")
for native in sorted(out.glob("native-*.txt")):
    site = native.stem.removeprefix("native-")
    page = lines((out / f"browser-{site}.txt").read_text()) if (out / f"browser-{site}.txt").exists() else {}
    for where, rows in (("native " + site, lines(native.read_text())), ("page " + site, page)):
        for name, r in rows.items():
            t = torch.get(name, {}).get("ms", float("nan"))
            print(f"{name:<18}{where:<22}{r.get('ms', 0):>9.3f}{r.get('pipelined_ms', 0):>9.3f}"
                  f"{r.get('record_us_per_dispatch', 0):>9.2f}{r.get('dispatches_per_step', 0):>6}"
                  f"{r.get('bind_groups_created_per_step', 0):>5}{t:>10.3f}")
