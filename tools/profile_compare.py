"""Puts the page's and the native per-kernel profiles of one workload side by side (the files
scripts/gpu_browser_run.sh writes with PROFILE=...): per kernel, ms per step in each and their
ratio (the bench reports a step's time and calls). Usage: python3 tools/profile_compare.py
BROWSER_FILE NATIVE_FILE"""
import json, re, sys

ROW = re.compile(r"^\s*([0-9.]+) ms +([0-9.]+) × (.+)$")


def lines(path):
    text = open(path).read()
    if "webgrad bench: " in text:
        blob = text.split("webgrad bench: ", 1)[1].splitlines()[0]
        return [row for line in json.loads(blob)["lines"] for row in line.splitlines()]
    return text.splitlines()


def read(path):
    rows = {}
    for line in lines(path):
        m = ROW.match(line)
        if m:
            rows[m.group(3).strip()] = (float(m.group(1)), float(m.group(2)))
    return rows


page, native = read(sys.argv[1]), read(sys.argv[2])
print(f"{'page ms/step':>13}{'native ms/step':>15}{'ratio':>7}  kernel (calls per step)")
totals = [0.0, 0.0]
for name, (ms, n) in sorted(page.items(), key=lambda kv: -kv[1][0]):
    nms = native.get(name, (0.0, 0))[0]
    totals[0] += ms
    totals[1] += nms
    ratio = f"{ms / nms:7.2f}" if nms else "      -"
    print(f"{ms:>13.3f}{nms:>15.3f}{ratio}  {name[:100]} ({n:g})")
print(f"{totals[0]:>13.3f}{totals[1]:>15.3f}{totals[0] / max(totals[1], 1e-9):7.2f}  all kernels")
