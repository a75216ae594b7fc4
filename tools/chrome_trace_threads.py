"""How busy Chrome's GPU process and the page's main thread were while the bench page ran its
steps back to back, from Chrome's trace (tools/browser/chrome_trace.sh): for each stretch of
back-to-back steps (the GPU process's long command batches, more than LONG_US apart by at most
GAP_US), the share of its time the GPU process spent decoding the page's commands, of it in
`Queue::Submit`, and the page's longest task in it (the steps' recording, which runs as one
task: the wait after it nudges the GPU process in many short ones).
The bench's last runs back to back are the timed ones: the last LAST stretches are printed.
Usage: python3 tools/chrome_trace_threads.py TRACE.json[.gz] [LAST]"""
import gzip, json, sys

LONG_US = 100  # a decode this long carries a submit of steps, not a nudge
GAP_US = 1000  # decodes closer than this belong to one stretch

path = sys.argv[1]
last = int(sys.argv[2]) if len(sys.argv) > 2 else 8
with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
    events = json.load(f)["traceEvents"]
names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
         if e.get("ph") == "M" and e.get("name") == "thread_name"}
counts = {}
for e in events:
    if e.get("ph") == "X":
        key = (e.get("pid"), e.get("tid"))
        counts[key] = counts.get(key, 0) + 1


def busiest(thread_name):
    """The thread of that name with the most events: the page's renderer, not an idle one."""
    return max((k for k, n in names.items() if n == thread_name), key=lambda k: counts.get(k, 0))


gpu = busiest("CrGpuMain")
page = busiest("CrRendererMain")


def spans(thread, name):
    return sorted((e["ts"], e["dur"]) for e in events
                  if (e.get("pid"), e.get("tid")) == thread and e.get("ph") == "X"
                  and e.get("name") == name and "dur" in e)


decodes = spans(gpu, "WebGPUDecoderImpl::HandleDawnCommands")
submits = spans(gpu, "Queue::Submit")
tasks = spans(page, "RunTask")
stretches, current = [], []
for ts, dur in (d for d in decodes if d[1] > LONG_US):
    if current and ts - (current[-1][0] + current[-1][1]) > GAP_US:
        stretches.append(current)
        current = []
    current.append((ts, dur))
stretches.append(current)


def busy(spans_, start, end):
    """The share of [start, end) covered by the spans, nested ones counted once."""
    covered, reach = 0, start
    for t, d in spans_:
        lo, hi = max(t, reach), min(t + d, end)
        if hi > lo:
            covered += hi - lo
            reach = hi
    return covered / (end - start)


for s in [s for s in stretches if len(s) >= 5][-last:]:
    start, end = s[0][0], s[-1][0] + s[-1][1]
    longest = max((d for t, d in tasks if start - GAP_US <= t < end), default=0)
    print(f"{(end - start) / 1e3:6.2f} ms, {len(s)} submits: GPU process decoding "
          f"{busy(decodes, start, end):.2f}, of it Queue::Submit {busy(submits, start, end):.2f}; "
          f"the page's longest task {longest / 1e3:.2f} ms")
