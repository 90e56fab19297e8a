"""A conformance worker process: answers the kit's requests, one JSON line each way.

The kit (isolation.py) starts it as ``python -m torch_mydev.conformance.worker``
and writes one request per line on its stdin::

    {"kind": "op" | "module" | "errors" | "golden", "name": ..., "dtype": "float32" (or "any" for errors),
     "max_samples": 3 | null, "backward": true, "goldens": path | null, "fault": null}

The worker answers each with one line holding the pair's result. Before the
first request it announces ``{"ready": true}`` once its imports are done. It
writes the protocol on a private copy of stdout and points stdout at stderr,
so whatever an op prints cannot corrupt it; stderr goes to a log file.

``fault`` is for testing the kit itself: ``"crash"`` makes the worker read
through a null pointer (a real segmentation fault, as from a broken kernel),
``"hang"`` makes it block forever.
"""
import ctypes
import functools
import json
import os
import sys
import threading
import time
import traceback
import warnings

import torch

from .catalog import modules_by_name, ops_by_name
from .error_runner import run_error_inputs
from .golden_runner import run_golden
from .goldens import load_goldens
from .module_runner import run_module
from .op_runner import run_op
from .outcome import ERROR, pair_without_samples


def handle(request, device):
    inject_fault(request.get("fault"))
    if request["kind"] == "errors":
        return run_error_inputs(ops_by_name()[request["name"]], device=device)
    dtype = getattr(torch, request["dtype"])
    if request["kind"] == "op":
        op = ops_by_name()[request["name"]]
        return run_op(op, dtype, device=device, max_samples=request["max_samples"], backward=request["backward"])
    if request["kind"] == "module":
        module_info = modules_by_name()[request["name"]]
        return run_module(
            module_info, dtype, device=device, max_samples=request["max_samples"], backward=request["backward"]
        )
    goldens = cached_goldens(request["goldens"])
    entry = next(e for e in goldens["entries"] if e["op"] == request["name"] and e["dtype"] == request["dtype"])
    return run_golden(entry, goldens["metadata"], device=device)


@functools.cache
def cached_goldens(path):
    return load_goldens(path)


def inject_fault(fault):
    if fault == "crash":
        # A real fault, not kill(SIGSEGV): fault handlers (torch_mydev installs
        # one) see a faulting address and fall through to the default action.
        ctypes.string_at(0)
    elif fault == "hang":
        threading.Event().wait()


def main():
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # Ops warn freely (deprecations, "resized" outputs); the report is the output that matters.
    warnings.simplefilter("ignore")
    device = torch.device(torch._C._get_privateuse1_backend_name())
    # Loaded before announcing readiness, so that no pair's timeout pays for it.
    ops_by_name()
    protocol.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        started = time.monotonic()
        try:
            result = handle(request, device)
        except Exception:
            traceback.print_exc()
            lines = traceback.format_exc().strip().splitlines()
            result = pair_without_samples(ERROR, "the conformance kit itself failed: " + " | ".join(lines[-3:]))
        result["seconds"] = round(time.monotonic() - started, 3)
        protocol.write(json.dumps(result, allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
