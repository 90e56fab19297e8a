"""What torch.profiler costs on mydev: the GPT training step of training_step.py, timed without a profiler and inside
an active CPU-only and CPU + device profile (target: at most 1.3x the step without one), and the time PyTorch then
takes to turn one recorded step into events (prof.events(), key_averages(), exports), reported apart since a
schedule pays it once per cycle. With --picture it also draws one profiled step's timeline (host ops above, the
device's streams below, with the flows from launches to kernels) as an SVG, the picture in
docs/extension-points/profiler.md.

    .venv/bin/python benchmarks/profiler_overhead.py [--repeat N] [--picture docs/images/profiler-gpt-step.svg]
"""
import argparse
import json
import os
import statistics
import tempfile
import time
from html import escape

import torch
from torch.profiler import profile, ProfilerActivity

from training_step import gpt_training_step

TARGET = 1.3
ROW_HEIGHT = 18
WIDTH = 1400
LEFT = 150


def measure(repeat):
    """Median step time without a profiler and inside an active profile of each kind (steps timed to a device
    synchronize, so that the device's work counts), and what turning one recorded step into events costs."""
    step = gpt_training_step("mydev")
    for _ in range(2):
        step()

    def one_step():
        start = time.perf_counter()
        step()
        torch.mydev.synchronize()
        return time.perf_counter() - start

    times = {"no profiler": statistics.median(one_step() for _ in range(repeat))}
    for name, activities in (("inside a CPU profile", [ProfilerActivity.CPU]),
                             ("inside a CPU + device profile", [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])):
        with profile(activities=activities):
            times[name] = statistics.median(one_step() for _ in range(repeat))
    processing = []
    for _ in range(max(3, repeat // 2)):
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
            step()
            torch.mydev.synchronize()
            start = time.perf_counter()
        prof.events()
        processing.append(time.perf_counter() - start)
    return times, statistics.median(processing)


def trace_of_one_step():
    step = gpt_training_step("mydev")
    step()
    torch.mydev.synchronize()  # else the recorded kernels queue behind the warm-up step's
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        step()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as file:
            return json.load(file)["traceEvents"]


def draw(events, path):
    """Top-level ATen ops of the host thread, and every device row (pid = device, tid = stream)."""
    complete = [e for e in events if e.get("ph") == "X" and "dur" in e]
    host_ops = [e for e in complete if e.get("cat") == "cpu_op"]
    device = [e for e in complete if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    start = min(e["ts"] for e in host_ops + device)
    end = max(e["ts"] + e["dur"] for e in host_ops + device)
    scale = (WIDTH - LEFT - 10) / (end - start)

    def x(ts):
        return LEFT + (ts - start) * scale

    # Host ops nest: each is drawn at its depth under the op that encloses it.
    rows = []
    depth_ends = []
    for op in sorted(host_ops, key=lambda e: (e["ts"], -e["dur"])):
        while depth_ends and depth_ends[-1] <= op["ts"]:
            depth_ends.pop()
        rows.append((len(depth_ends), op))
        depth_ends.append(op["ts"] + op["dur"])
    host_depth = min(max(depth for depth, _ in rows) + 1, 6)
    streams = sorted({(e["pid"], e["tid"]) for e in device})
    device_top = (host_depth + 2) * ROW_HEIGHT
    height = device_top + (len(streams) + 1) * ROW_HEIGHT + 30
    colours = {"kernel": "#4e79a7", "gpu_memcpy": "#e15759", "gpu_memset": "#59a14f"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" '
             f'font-size="11"><rect width="100%" height="100%" fill="white"/>',
             f'<text x="4" y="{ROW_HEIGHT}">host thread (ATen ops)</text>']
    for depth, op in rows:
        if depth < host_depth:
            y = ROW_HEIGHT * (depth + 1)
            parts.append(f'<rect x="{x(op["ts"]):.1f}" y="{y}" width="{max(op["dur"] * scale, 0.5):.1f}" '
                         f'height="{ROW_HEIGHT - 3}" fill="#f28e2b" opacity="{0.9 - 0.1 * depth:.1f}">'
                         f'<title>{escape(op["name"])}</title></rect>')
    for row, (pid, tid) in enumerate(streams):
        y = device_top + row * ROW_HEIGHT
        parts.append(f'<text x="4" y="{y + ROW_HEIGHT - 6}">mydev:{pid} stream {tid}</text>')
        for e in device:
            if (e["pid"], e["tid"]) == (pid, tid):
                parts.append(f'<rect x="{x(e["ts"]):.1f}" y="{y}" width="{max(e["dur"] * scale, 0.5):.1f}" '
                             f'height="{ROW_HEIGHT - 3}" fill="{colours[e["cat"]]}"><title>{escape(e["name"])}'
                             f'</title></rect>')
    starts = {e["id"]: e for e in events if e.get("cat") == "ac2g" and e.get("ph") == "s"}
    for finish in (e for e in events if e.get("cat") == "ac2g" and e.get("ph") == "f"):
        begin = starts.get(finish["id"])
        row = streams.index((finish["pid"], finish["tid"])) if (finish["pid"], finish["tid"]) in streams else None
        if begin is not None and row is not None:
            parts.append(f'<line x1="{x(begin["ts"]):.1f}" y1="{ROW_HEIGHT * (host_depth + 1)}" '
                         f'x2="{x(finish["ts"]):.1f}" y2="{device_top + row * ROW_HEIGHT}" stroke="#999" '
                         f'stroke-width="0.3"/>')
    legend_y = height - 10
    parts.append(f'<text x="4" y="{legend_y}">{(end - start) / 1000:.1f} ms. Orange: ATen ops on the host thread; '
                 f'blue: kernels; red: copies; green: memsets; grey: flows from launch to kernel.</text>')
    parts.append("</svg>")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as file:
        file.write("\n".join(parts))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--picture", help="write one profiled step's timeline as an SVG here")
    args = parser.parse_args()
    times, processing = measure(args.repeat)
    base = times["no profiler"]
    for name, seconds in times.items():
        ratio = seconds / base
        verdict = ""
        if name == "inside a CPU + device profile":
            verdict = f"  target <= {TARGET}x: {'met' if ratio <= TARGET else 'MISSED'}"
        print(f"{name:<30} {seconds * 1000:8.1f} ms  {ratio:5.2f}x{verdict}")
    print(f"{'stopping, turning into events':<30} {processing * 1000:8.1f} ms  {processing / base:5.2f}x a step "
          "(once per recorded cycle, in PyTorch's Python)")
    if args.picture:
        draw(trace_of_one_step(), args.picture)
        print("wrote", args.picture)


if __name__ == "__main__":
    main()
