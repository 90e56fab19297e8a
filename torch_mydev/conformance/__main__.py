"""python -m torch_mydev.conformance: run PyTorch's OpInfo and ModuleInfo databases on mydev against the CPU,
and optionally PyTorch's device-generic test files (--upstream-tests).

Writes results.json and report.html into --output. docs/conformance.md
explains the options, the statuses and how tolerances and skips are chosen.
"""
import argparse
import os
import sys
import time

import torch

from .catalog import modules_by_name, ops_by_name
from .environment import describe_environment
from .goldens import load_goldens
from .isolation import IsolatedRunner
from .plan import SelectionError, module_names, plan_error_inputs, plan_goldens, plan_modules, plan_ops
from .outcome import STATUSES
from .progress import Progress, UpstreamProgress
from .report_html import write_html
from .report_json import build_report, write_json
from .selection import matches, op_names, parse_dtypes, parse_patterns
from .upstream_tests import STATUSES as UPSTREAM_STATUSES, find_test_files, passing_and_counted, run_upstream_tests

EXIT_BELOW_THRESHOLD = 1
EXIT_INTERRUPTED = 130


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m torch_mydev.conformance",
        description="Run PyTorch's OpInfo (and optionally ModuleInfo) databases on mydev and compare every "
        "output and gradient with the CPU; write results.json and report.html.",
        epilog="See docs/conformance.md.",
    )
    parser.add_argument(
        "--ops", default="all", help="comma-separated OpInfo names, name.variant or globs (default: all)"
    )
    parser.add_argument(
        "--dtypes",
        default="float32",
        help="comma-separated dtypes (float32,int64), or all: every dtype each op declares (default: float32)",
    )
    parser.add_argument(
        "--modules", default=None, help="comma-separated ModuleInfo names (nn.Linear) or globs, or all (default: none)"
    )
    parser.add_argument("--max-samples", type=int, default=None, help="samples per pair (default: all)")
    parser.add_argument("--no-backward", dest="backward", action="store_false", help="compare forward results only")
    parser.add_argument(
        "--no-error-inputs",
        dest="error_inputs",
        action="store_false",
        help="skip the ops' error inputs and dtype errors (bad calls that must raise at the call, as on the CPU)",
    )
    parser.add_argument("--output", default="conformance-report", help="report directory (default: conformance-report)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per pair before it counts as a timeout")
    parser.add_argument("--goldens", default=None, help="goldens file from goldens.py record: compare with its outputs")
    parser.add_argument("--goldens-only", action="store_true", help="with --goldens: skip the op and module sweep")
    parser.add_argument(
        "--upstream-tests",
        action="append",
        metavar="PATH",
        help="also run PyTorch's device-generic test files on mydev: a PyTorch checkout's test/ directory (its "
        "device-generic files) or single test files; may be repeated",
    )
    parser.add_argument(
        "--upstream-only", action="store_true", help="with --upstream-tests: skip the op and module sweep"
    )
    parser.add_argument(
        "--upstream-timeout", type=float, default=600.0, help="seconds per upstream test before it counts as a timeout"
    )
    parser.add_argument(
        "--fail-under",
        type=float,
        default=None,
        metavar="PCT",
        help="exit with status 1 if the pass rate of non-skipped pairs, goldens or upstream tests (each part the "
        "run has) is below PCT, or if a part compared nothing",
    )
    parser.add_argument("--inject-crash", metavar="NAME", help="testing the kit: the worker segfaults on NAME")
    parser.add_argument("--inject-hang", metavar="NAME", help="testing the kit: the worker hangs on NAME")
    args = parser.parse_args(argv)
    if args.max_samples is not None and args.max_samples < 1:
        parser.error("--max-samples must be at least 1")
    if args.goldens_only and args.goldens is None:
        parser.error("--goldens-only needs --goldens FILE")
    if args.upstream_only and not args.upstream_tests:
        parser.error("--upstream-only needs --upstream-tests PATH")
    if args.upstream_tests:
        try:
            find_test_files(args.upstream_tests)
        except ValueError as error:
            parser.error(f"--upstream-tests: {error}")
    try:
        args.dtype_list = parse_dtypes(args.dtypes)
    except ValueError as error:
        parser.error(f"--dtypes: {error}")
    return parser, args


def plan(args):
    op_patterns = parse_patterns(args.ops)
    items = []
    if not args.goldens_only and not args.upstream_only:
        items += plan_ops(op_patterns, args.dtype_list)
        if args.error_inputs:
            items += plan_error_inputs(op_patterns)
        if args.modules is not None:
            items += plan_modules(parse_patterns(args.modules), args.dtype_list)
    goldens = None
    if args.goldens is not None:
        goldens = load_goldens(args.goldens)
        items += plan_goldens(goldens, op_patterns)
    return items, goldens


def names_of(item):
    """The names --ops or --modules match an item by, so that --inject-crash NAME selects what they select."""
    if item["kind"] == "module":
        return module_names(modules_by_name()[item["name"]])
    op = ops_by_name().get(item["name"])
    return op_names(op) if op is not None else (item["name"],)


def request_for(item, args):
    fault = None
    if args.inject_crash and matches(names_of(item), [args.inject_crash]):
        fault = "crash"
    elif args.inject_hang and matches(names_of(item), [args.inject_hang]):
        fault = "hang"
    return {
        "kind": item["kind"],
        "name": item["name"],
        "dtype": item["dtype"],
        "max_samples": args.max_samples,
        "backward": args.backward,
        "goldens": os.path.abspath(args.goldens) if args.goldens else None,
        "fault": fault,
    }


def run(items, args):
    runner = IsolatedRunner(os.path.join(args.output, "worker-logs"), args.timeout)
    progress = Progress(len(items))
    records = []
    try:
        for item in items:
            progress.begin(f"{item['kind']} {item['name']} {item['dtype']}")
            records.append({**item, **runner.run(request_for(item, args))})
            progress.finish(records[-1]["status"])
    except KeyboardInterrupt:
        pass
    finally:
        progress.close()
        runner.close()
    return records


def options_of(args):
    return {
        "ops": args.ops,
        "dtypes": args.dtypes,
        "modules": args.modules,
        "max_samples": args.max_samples,
        "backward": args.backward,
        "error_inputs": args.error_inputs,
        "timeout": args.timeout,
        "goldens": args.goldens,
        "goldens_only": args.goldens_only,
        "fail_under": args.fail_under,
        "inject_crash": args.inject_crash,
        "inject_hang": args.inject_hang,
        "upstream_tests": args.upstream_tests,
        "upstream_only": args.upstream_only,
        "upstream_timeout": args.upstream_timeout,
    }


def main(argv=None):
    parser, args = parse_args(argv)
    try:
        items, goldens = plan(args)
    except (SelectionError, ValueError, OSError) as error:
        parser.error(str(error))
    # Error inputs are dtype-free: a selection of no (op, dtype) pair is empty all the same.
    if not any(item["kind"] != "errors" for item in items) and not args.upstream_tests:
        if args.goldens_only:
            parser.error(f"nothing to run: the goldens file has no entry for --ops {args.ops!r}")
        parser.error(f"nothing to run: no op or module of --ops {args.ops!r} in the dtypes of --dtypes {args.dtypes!r}")
    device = torch.device(torch._C._get_privateuse1_backend_name())
    os.makedirs(args.output, exist_ok=True)
    environment = describe_environment(device)
    started = time.monotonic()
    records = run(items, args)
    complete = len(records) == len(items)
    upstream = None
    if args.upstream_tests and complete:
        upstream = run_upstream_tests(
            args.upstream_tests, args.output, timeout=args.upstream_timeout, progress=UpstreamProgress()
        )
        complete = not upstream["interrupted"]

    pair_records = [record for record in records if record["kind"] not in ("golden", "errors")]
    error_records = [record for record in records if record["kind"] == "errors"]
    golden_section = None
    if goldens is not None:
        golden_records = [record for record in records if record["kind"] == "golden"]
        golden_section = {"file": args.goldens, "metadata": goldens["metadata"], "results": golden_records}
    report = build_report(
        environment=environment,
        options=options_of(args),
        results=pair_records,
        error_inputs=error_records if args.error_inputs and sweep_selected(args) else None,
        goldens=golden_section,
        upstream=upstream,
        complete=complete,
        seconds=time.monotonic() - started,
    )
    write_json(report, os.path.join(args.output, "results.json"))
    write_html(report, os.path.join(args.output, "report.html"))
    print_summary(report, args.output)

    if not complete:
        return EXIT_INTERRUPTED
    if args.fail_under is not None:
        below = parts_below(report, args.fail_under)
        if below:
            print(f"below --fail-under {args.fail_under}% (pass rate of the non-skipped): {'; '.join(below)}",
                  file=sys.stderr)
            return EXIT_BELOW_THRESHOLD
    return 0


def sweep_selected(args):
    return not args.goldens_only and not args.upstream_only


def sweep_ran(report):
    options = report["options"]
    return not options["goldens_only"] and not options["upstream_only"]


def pair_sections(report):
    """(title, summary) of the op/module sweep against the CPU and of the goldens comparison, where they ran."""
    sections = [("pairs with a CPU reference", report["summary"])] if sweep_ran(report) else []
    if "goldens" in report:
        sections.append(("goldens from " + report["goldens"]["metadata"]["device_name"], report["goldens"]["summary"]))
    return sections


def parts_below(report, fail_under):
    """The parts of the run --fail-under rejects, described. Compared on counts: a rate rounded to two decimals
    would read 100 % with one failure in 20,001."""
    parts = [(title, summary["pass"], summary["pairs"] - summary["skipped"]) for title, summary in pair_sections(report)]
    if "error_inputs" in report:
        summary = report["error_inputs"]["summary"]
        # Only the CPU's list has the cpu_only inputs: raising late, as CUDA's kernels do, passes; returning garbage
        # does not.
        cpu_only_raised = summary["cpu_only"] - summary["cpu_only_wrong"] - summary["cpu_only_silent"]
        error_parts = [
            ("error inputs raised at the call", summary["at_call"], summary["inputs"]),
            ("error inputs only the CPU checks, raised at the call or late", cpu_only_raised, summary["cpu_only"]),
            ("dtype errors raised at the call", summary["dtype_at_call"], summary["dtype_inputs"]),
        ]
        compared = [part for part in error_parts if part[2] > 0]
        parts += compared or [("error inputs and dtype errors", 0, 0)]
        # An op whose run failed (the kit's own error, a crash, a hang) judged none of its inputs.
        failed = summary["error"] + summary["crash"] + summary["timeout"]
        parts.append(("ops whose error inputs and dtype errors were judged", summary["ops"] - failed, summary["ops"]))
    if "upstream" in report:
        summary = report["upstream"]["summary"]
        parts.append(("upstream tests", *passing_and_counted(summary, summary["tests"])))
    below = []
    for title, passing, counted in parts:
        if counted == 0:
            below.append(f"{title}: nothing was compared")
        elif 100 * passing < fail_under * counted:
            below.append(f"{title}: {passing} of {counted} pass ({100 * passing / counted:.2f}%)")
    return below


def print_summary(report, output):
    for title, summary in pair_sections(report):
        counts = ", ".join(f"{summary[status]} {status}" for status in STATUSES)
        print(
            f"{title}: {summary['pairs']} ({counts}); pass rate {summary['pass_rate']}% of all, "
            f"{summary['pass_rate_non_skipped']}% of not skipped"
        )
    if "error_inputs" in report:
        summary = report["error_inputs"]["summary"]
        print(
            f"error inputs and dtype errors of {summary['ops']} ops: {summary['inputs']} error inputs that the CPU "
            f"rejects: {summary['at_call']} raise "
            f"at the call, {summary['late']} late, {summary['wrong']} wrong, {summary['silent']} silent "
            f"({summary['cpu_does_not_raise']} more that the CPU does not reject); {summary['cpu_only']} more only the "
            f"CPU's list has: {summary['cpu_only_at_call']} at the call, {summary['cpu_only_late']} late (as on CUDA), "
            f"{summary['cpu_only_wrong']} wrong, {summary['cpu_only_silent']} silent; {summary['dtype_inputs']} "
            f"samples in dtypes the CPU refuses: {summary['dtype_at_call']} at the call, {summary['dtype_late']} late, "
            f"{summary['dtype_wrong']} wrong, {summary['dtype_silent']} silent"
        )
    if "upstream" in report:
        summary = report["upstream"]["summary"]
        counts = ", ".join(f"{summary[status]} {status}" for status in UPSTREAM_STATUSES)
        print(
            f"upstream tests: {summary['tests']} in {summary['files']} files ({counts}); pass rate "
            f"{summary['pass_rate_non_skipped']}% of those neither skipped nor failing on the CPU too"
        )
        for file in report["upstream"]["files"]:
            if file["problem"]:
                print(f"upstream {os.path.basename(file['file'])}: {file['problem'].splitlines()[0]}")
    print(f"report: {os.path.join(output, 'report.html')} and {os.path.join(output, 'results.json')}")


if __name__ == "__main__":
    sys.exit(main())
