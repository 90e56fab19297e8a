"""CUDA goldens: record ops' outputs on a real GPU once, compare mydev with them anywhere.

Recording needs a machine with CUDA and plain PyTorch; torch_mydev need not be
installed, and is not loaded even where it is::

    python torch_mydev/conformance/goldens.py record --out goldens.pt [--ops add,linalg.*] [--max-samples 3]

For a fixed, seeded sample set (each selected op's first N sample inputs,
for each requested dtype, float32 by default) the file stores the CPU-side
inputs and the outputs the recording device produced (moved to the CPU), plus
metadata: torch version, device name, date, command line. Ops that upstream
skips for ``TestCommon.test_compare_cpu`` on the recording device are stored as
skipped: random ops in particular, since CUDA's random streams differ from the
CPU's. ``python -m torch_mydev.conformance --goldens goldens.pt`` runs the same
inputs on mydev and compares (golden_runner.py). ``--device cpu`` records on
the CPU, to try the workflow without a GPU.

The file is a ``torch.save`` pickle; load only files from a source you trust.
"""
import argparse
import datetime
import io
import os
import pickle
import platform
import sys
from itertools import islice

if __name__ == "__main__" and not __package__:
    # Run as a script: import this directory as a stand-alone package named
    # "conformance" (PEP 366) so its modules resolve without torch_mydev, and
    # keep an installed torch_mydev from being autoloaded by `import torch`.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "conformance"
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

import torch
from torch.utils import _pytree as pytree

from .execution import execute
from .outcome import exception_text
from .placement import sample_placements
from .sample_transfer import Call, DeviceTransfer, is_shape
from .selection import dtype_name, op_names, op_pairs, parse_dtypes, parse_patterns, unmatched_patterns
from .upstream_decorators import upstream_verdict

FORMAT = "torch_mydev.conformance.goldens"
VERSION = 1
DEFAULT_MAX_SAMPLES = 3
# torch.memory_format objects do not pickle; the file stores them as strings
# with this prefix (a NUL cannot start a real string argument).
MEMORY_FORMAT_PREFIX = "\0torch.memory_format:"


def load_goldens(path):
    try:
        goldens = torch.load(path, map_location="cpu", weights_only=False)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as error:
        raise ValueError(f"{path} is not a goldens file: {error}") from None
    if not isinstance(goldens, dict) or goldens.get("format") != FORMAT:
        raise ValueError(f"{path} is not a goldens file written by goldens.py record")
    if goldens.get("version") != VERSION:
        raise ValueError(f"{path} has goldens format version {goldens.get('version')}, this kit reads {VERSION}")
    for entry in goldens["entries"]:
        entry["samples"] = [_restored(sample) for sample in entry["samples"]]
    return goldens


def _storable(tree):
    def encode(leaf):
        if isinstance(leaf, torch.memory_format):
            return MEMORY_FORMAT_PREFIX + str(leaf).removeprefix("torch.")
        return leaf

    return pytree.tree_map(encode, tree, is_leaf=is_shape)


def _restored(tree):
    def decode(leaf):
        if isinstance(leaf, str) and leaf.startswith(MEMORY_FORMAT_PREFIX):
            return getattr(torch, leaf.removeprefix(MEMORY_FORMAT_PREFIX))
        return leaf

    return pytree.tree_map(decode, tree, is_leaf=is_shape)


def golden_samples(op, dtype, device="cpu"):
    # sample_inputs, not the larger reference_inputs of the op sweep: those
    # start with tensors of a million elements, which would bloat the file.
    return op.sample_inputs(str(device), dtype)


def record(pairs, device, max_samples):
    return [_record_entry(op, dtype, device, max_samples) for op, dtype in pairs]


def _record_entry(op, dtype, device, max_samples):
    entry = {"op": op.full_name, "dtype": dtype_name(dtype), "skipped": None, "samples": []}
    verdict = upstream_verdict(op, "TestCommon", "test_compare_cpu", device.type, dtype)
    if verdict.skip_reason is not None:
        entry["skipped"] = f"upstream skips it on {device.type}: {verdict.skip_reason}"
        return entry
    placements = sample_placements(device, lambda probe: golden_samples(op, dtype, probe))
    for index, sample in enumerate(islice(golden_samples(op, dtype), max_samples)):
        entry["samples"].append(_record_sample(op, index, sample, next(placements), device))
    return entry


def _record_sample(op, index, sample, placement, device):
    call = Call(sample.input, sample.args, sample.kwargs)
    try:
        torch.save(_storable((call.input, call.args, call.kwargs)), io.BytesIO())
    except Exception as exception:
        return {"index": index, "unrecordable": exception_text(exception)}
    stored = {"index": index, "input": call.input, "args": call.args, "kwargs": call.kwargs, "placement": placement}
    moved = execute(lambda: DeviceTransfer(device).call(call, placement), seed=index, device=device)
    result = moved if moved.failed else execute(
        lambda: op(moved.value.input, *moved.value.args, **moved.value.kwargs), seed=index, device=device
    )
    if not result.failed:
        result = execute(lambda: sample.output_process_fn_grad(result.value), seed=index, device=device)
    if result.failed:
        exception = {"type": result.exception_type, "message": result.exception_message}
        return _storable({**stored, "output": None, "exception": exception})
    output = pytree.tree_map(
        lambda leaf: leaf.detach().cpu() if isinstance(leaf, torch.Tensor) else leaf, result.value, is_leaf=is_shape
    )
    return _storable({**stored, "output": output, "exception": None})


def _device_name(device):
    if device.type == "cpu":
        return platform.processor() or platform.machine() or "cpu"
    return torch.get_device_module(device).get_device_name(device)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="goldens.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    recorder = commands.add_parser("record", help="run ops on a device and store their inputs and outputs")
    recorder.add_argument("--out", required=True, help="goldens file to write")
    recorder.add_argument("--ops", default="all", help="comma-separated OpInfo names or globs (default: all)")
    recorder.add_argument("--dtypes", default="float32", help="comma-separated dtypes, or all (default: float32)")
    recorder.add_argument("--max-samples", type=int, default=DEFAULT_MAX_SAMPLES, help="samples per op and dtype")
    recorder.add_argument("--device", default="cuda", help="device to record on (default: cuda; cpu to try it out)")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    if device.type != "cpu" and not torch.get_device_module(device).is_available():
        parser.error(f"{device.type} is not available here")
    from torch.testing._internal.common_methods_invocations import op_db

    patterns = parse_patterns(args.ops)
    unmatched = unmatched_patterns([op_names(op) for op in op_db], patterns)
    if unmatched:
        parser.error(f"--ops: no OpInfo matches {', '.join(unmatched)}")
    pairs = op_pairs(op_db, patterns, parse_dtypes(args.dtypes), device_types=("cpu", device.type))
    entries = record(pairs, device, args.max_samples)
    goldens = {
        "format": FORMAT,
        "version": VERSION,
        "metadata": {
            "torch_version": torch.__version__,
            "device": str(device),
            "device_name": _device_name(device),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv),
            "max_samples": args.max_samples,
        },
        "entries": entries,
    }
    torch.save(goldens, args.out)
    samples = sum(len(entry["samples"]) for entry in entries)
    skipped = sum(entry["skipped"] is not None for entry in entries)
    print(f"recorded {samples} samples of {len(entries)} (op, dtype) pairs ({skipped} skipped) to {args.out}")


if __name__ == "__main__":
    main()
