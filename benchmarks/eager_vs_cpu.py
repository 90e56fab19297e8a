"""Eager mydev against the CPU, measured in the same process, on two hosts.

For each case: the median time per operation on the CPU and on mydev, and
their ratio mydev/CPU (1.0 = as fast as the CPU, lower is better). mydev runs
ATen's CPU kernels on a stream worker thread, so the ratio is the cost of the
device machinery: dispatch, asynchronous launch, memory management.

Each case is measured twice, in two processes: with glibc's default malloc
("plain"), which hands large freed buffers back to the system so that the CPU
pays page faults for every large output, and with GLIBC_TUNABLES raising
malloc's mmap and trim thresholds ("tuned"), which keeps them, as mydev's
caching allocators do. The tuned host is the CPU at its best, the real limit of
a device simulated on it: the targets hold against it. See benchmarks/README.md.

Run: .venv/bin/python benchmarks/eager_vs_cpu.py [--repeat N] [--filter TEXT] [--json FILE]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import torch

import large_ops
import report
import tiny_ops
import training_step
from timing import measure, relative_spread

CASES = tiny_ops.CASES + large_ops.CASES + training_step.CASES

# The largest mmap threshold glibc accepts on a 64-bit host (32 MiB); a trim
# threshold no heap here reaches.
TUNED_GLIBC = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=17179869184"
HOSTS = {"plain": None, "tuned": TUNED_GLIBC}


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="timed samples per case and device (default 11)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs per case and device first (default 2)")
    parser.add_argument("--filter", default="", help="run only cases whose group or name contains this text")
    parser.add_argument("--json", metavar="FILE", help="also write the results, with every sample, to FILE")
    parser.add_argument("--host", choices=sorted(HOSTS), help=argparse.SUPPRESS)  # one host, in this process
    return parser.parse_args()


def environment():
    return {
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "mydev_device": torch.mydev.get_device_name(0),
        "tuned_glibc": TUNED_GLIBC,
    }


def measure_here(args):
    """Every selected case on this process's host: one result per case."""
    wanted = args.filter.lower()
    results = []
    for case in CASES:
        if wanted not in case.name.lower() and wanted not in case.group.lower():
            continue
        medians, samples, cores = measure(case, args.repeat, args.warmup)
        results.append({
            "group": case.group,
            "case": case.name,
            "target": case.target,
            "cpu_seconds": medians["cpu"],
            "mydev_seconds": medians["mydev"],
            "ratio": medians["mydev"] / medians["cpu"],
            "spread": max(relative_spread(values) for values in samples.values()),
            "cpu_busy_cores": cores["cpu"],
            "mydev_busy_cores": cores["mydev"],
            "samples": samples,
        })
        print(f"  {args.host:<6}{case.name}", file=sys.stderr, flush=True)
    return results


def measure_on(host, args):
    """Runs this script for one host in a fresh process and returns its results."""
    env = {name: value for name, value in os.environ.items() if name != "GLIBC_TUNABLES"}
    if HOSTS[host] is not None:
        env["GLIBC_TUNABLES"] = HOSTS[host]
    with tempfile.TemporaryDirectory() as scratch:
        output = os.path.join(scratch, "results.json")
        command = [sys.executable, __file__, "--host", host, "--json", output, "--repeat", str(args.repeat),
                   "--warmup", str(args.warmup), "--filter", args.filter]
        subprocess.run(command, env=env, check=True)
        with open(output) as file:
            return json.load(file)["results"]


def main():
    args = parse_arguments()
    if args.host is not None:
        with open(args.json, "w") as file:
            json.dump({"results": measure_here(args)}, file)
        return
    setting = environment()
    print(
        f"torch {setting['torch']}, {setting['cpu_threads']} CPU threads (torch's default, which mydev's stream "
        f"worker also uses), mydev:0 = {setting['mydev_device']}\n"
        f"median of {args.repeat} samples after {args.warmup} warm-up runs; times are per operation; each host in "
        f"its own process; tuned: GLIBC_TUNABLES={TUNED_GLIBC}",
        flush=True,
    )
    per_host = {host: measure_on(host, args) for host in HOSTS}
    results = []
    for plain, tuned in zip(per_host["plain"], per_host["tuned"]):
        results.append({
            "group": plain["group"],
            "case": plain["case"],
            "target": plain["target"],
            "meets_target": tuned["ratio"] <= plain["target"],
            "plain": {key: value for key, value in plain.items() if key not in ("group", "case", "target")},
            "tuned": {key: value for key, value in tuned.items() if key not in ("group", "case", "target")},
        })
    print()
    print(report.COLUMNS)
    for result in results:
        print(report.row(result))
    met = sum(result["meets_target"] for result in results)
    print(f"\n{met} of {len(results)} cases meet their target (held against the tuned host)")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"environment": setting, "repeat": args.repeat, "warmup": args.warmup, "results": results}, file,
                      indent=2)


if __name__ == "__main__":
    main()
