"""python -m torch_mydev.ops --coverage: how every ATen operator runs on mydev."""
import argparse
import collections
import csv
import fnmatch
import json
import os
import sys

import torch  # noqa: F401  (autoloads torch_mydev)

from torch_mydev.ops import coverage, HOW_IT_RUNS


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m torch_mydev.ops", description=__doc__)
    parser.add_argument("--coverage", action="store_true", help="print the operator coverage table")
    parser.add_argument("--format", choices=("text", "markdown", "csv", "json"), default="text")
    parser.add_argument("--how", help="only these kinds, comma-separated: " + ", ".join(HOW_IT_RUNS))
    parser.add_argument("--ops", help="only operators matching these glob patterns, comma-separated (aten::add*)")
    parser.add_argument("--namespace", default="aten")
    args = parser.parse_args(argv)
    if not args.coverage:
        parser.error("nothing to do: pass --coverage")
    if args.how:
        unknown = set(args.how.split(",")) - set(HOW_IT_RUNS)
        if unknown:
            parser.error(f"unknown --how value(s): {', '.join(sorted(unknown))}")
    return args


def selected(entries, args):
    kinds = set(args.how.split(",")) if args.how else set(HOW_IT_RUNS)
    patterns = args.ops.split(",") if args.ops else ["*"]
    return [e for e in entries if e.how in kinds and any(fnmatch.fnmatch(e.op, p) for p in patterns)]


def summary_lines(entries):
    counts = collections.Counter(entry.how for entry in entries)
    lines = [f"{len(entries)} operator overloads"]
    for how, meaning in HOW_IT_RUNS.items():
        lines.append(f"  {how:<12}{counts[how]:>6}  {meaning}")
    return lines


def print_table(entries, all_entries, fmt, out):
    if fmt == "json":
        json.dump({"operators": [e._asdict() for e in entries],
                   "summary": dict(collections.Counter(e.how for e in all_entries))}, out, indent=1)
        out.write("\n")
    elif fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(["op", "how", "registered_at"])
        writer.writerows(entries)
    elif fmt == "markdown":
        out.write("| operator | how it runs on mydev |\n|---|---|\n")
        for entry in entries:
            out.write(f"| `{entry.op}` | {entry.how} |\n")
        out.write("\n" + "\n".join("    " + line for line in summary_lines(all_entries)) + "\n")
    else:
        width = max((len(e.op) for e in entries), default=10)
        for entry in entries:
            out.write(f"{entry.op:<{width}}  {entry.how}\n")
        out.write("\n" + "\n".join(summary_lines(all_entries)) + "\n")


def main(argv=None):
    args = parse_args(argv)
    all_entries = coverage(args.namespace)
    try:
        print_table(selected(all_entries, args), all_entries, args.format, sys.stdout)
    except BrokenPipeError:
        # The reader (`| head`) stopped early; that is not an error of ours.
        sys.stdout = open(os.devnull, "w")


if __name__ == "__main__":
    main()
