"""Where the bench page's steps spend the page's CPU, from Chrome's trace
(tools/browser/chrome_trace.sh): V8's samples taken once the last pipeline was built (the steps
after warm-up), whose stack holds the bench's step, counted by the function running (self) and
by the function under the step's `under` frames (what the step called).
Usage: python3 tools/chrome_trace_summary.py TRACE.json[.gz] [FRAME]   (FRAME: Workload::step)"""
import collections, gzip, json, sys

path = sys.argv[1]
frame = sys.argv[2] if len(sys.argv) > 2 else "Workload::step"
with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
    events = json.load(f)["traceEvents"]

# Node ids are numbered per profile (one per process and thread): key them by (pid, profile, id).
nodes, samples = {}, []
for e in events:
    if e.get("name") == "ProfileChunk":
        key = (e.get("pid"), e.get("id"))
        profile = e["args"]["data"].get("cpuProfile", {})
        for n in profile.get("nodes", []):
            nodes[(key, n["id"])] = dict(n, parent=(key, n["parent"]) if "parent" in n else None)
        samples += [(key, s) for s in profile.get("samples", [])]
parent = {i: n.get("parent") for i, n in nodes.items()}


def name(i):
    return (nodes[i]["callFrame"].get("functionName") or "(anonymous)").split("::h")[0]


def stack(i):
    out = []
    while i is not None:
        out.append(name(i))
        i = parent.get(i)
    return out


stacks = [stack(s) for s in samples]
building = ("createComputePipeline", "createShaderModule")
built = [k for k, s in enumerate(stacks) if any(b in f for f in s for b in building)]
steady = [s for s in stacks[(built[-1] + 1 if built else 0):] if any(frame in f for f in s)]
print(f"{len(steady)} samples in {frame} after the last pipeline was built")
by_self = collections.Counter(s[0] for s in steady)
by_call = collections.Counter()
for s in steady:
    at = max(j for j, f in enumerate(s) if frame in f)
    by_call[s[at - 1] if at > 0 else "(itself)"] += 1
for title, counts in (("running", by_self), ("called by the step", by_call)):
    print(f"-- {title}")
    for f, n in counts.most_common(25):
        print(f"{100 * n / max(len(steady), 1):6.1f} %  {f[:110]}")
