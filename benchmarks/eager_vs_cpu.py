"""Eager mydev against the CPU, measured in the same process.

For each case: the median time per operation on the CPU and on mydev, their
ratio mydev/CPU (1.0 = as fast as the CPU, lower is better), the target ratio
and whether it is met. mydev runs ATen's CPU kernels on a stream worker thread,
so the ratio is the cost of the device machinery: dispatch, asynchronous
launch, memory management. See benchmarks/README.md for the cases and targets.

Run: .venv/bin/python benchmarks/eager_vs_cpu.py [--repeat N] [--filter TEXT] [--json FILE]
"""
import argparse
import json
import platform

import torch

import large_ops
import report
import tiny_ops
import training_step
from timing import measure, relative_spread

CASES = tiny_ops.CASES + large_ops.CASES + training_step.CASES


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="timed samples per case and device (default 11)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs per case and device first (default 2)")
    parser.add_argument("--filter", default="", help="run only cases whose group or name contains this text")
    parser.add_argument("--json", metavar="FILE", help="also write the results, with every sample, to FILE")
    return parser.parse_args()


def environment():
    return {
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "mydev_device": torch.mydev.get_device_name(0),
    }


def main():
    args = parse_arguments()
    wanted = args.filter.lower()
    cases = [case for case in CASES if wanted in case.name.lower() or wanted in case.group.lower()]
    setting = environment()
    print(
        f"torch {setting['torch']}, {setting['cpu_threads']} CPU threads (torch's default, which mydev's stream "
        f"worker also uses), mydev:0 = {setting['mydev_device']}"
    )
    print(
        f"median of {args.repeat} samples after {args.warmup} warm-up runs; times are per operation; spread: the "
        "larger interquartile range over median of the two devices\n"
    )
    print(report.COLUMNS)
    results = []
    for case in cases:
        medians, samples = measure(case, args.repeat, args.warmup)
        ratio = medians["mydev"] / medians["cpu"]
        result = {
            "group": case.group,
            "case": case.name,
            "cpu_seconds": medians["cpu"],
            "mydev_seconds": medians["mydev"],
            "ratio": ratio,
            "target": case.target,
            "meets_target": ratio <= case.target,
            "spread": max(relative_spread(values) for values in samples.values()),
            "samples": samples,
        }
        results.append(result)
        print(report.row(result), flush=True)
    met = sum(result["meets_target"] for result in results)
    print(f"\n{met} of {len(results)} cases meet their target")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"environment": setting, "repeat": args.repeat, "warmup": args.warmup, "results": results}, file, indent=2)


if __name__ == "__main__":
    main()
