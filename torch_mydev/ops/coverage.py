"""The coverage table: for every ATen operator, how it runs on mydev.

Read from the dispatcher itself (the kernel it would pick for the
PrivateUse1 key, or, for an operator that only sparse tensors reach, for the
sparse mydev keys), so the table is whatever is registered in this process,
not a list kept by hand.
"""
import collections
import re

import torch

HOW_IT_RUNS = {
    "native": "a torch_mydev kernel: checks and output geometry on the host, any computation queued on the stream",
    "composite": "a PyTorch composite kernel that calls other operators (each runs its own way)",
    "fallback": "the generic fallback: ATen's CPU kernel over device memory, on the stream",
    "unsupported": "no kernel: the operator has neither a CPU kernel nor a composite one (CUDA-only, nested, ...)",
}

CoverageEntry = collections.namedtuple("CoverageEntry", ["op", "how", "registered_at"])

# torch_mydev registrations made in these files hand the operator to the
# generic fallback, so what runs is the fallback: Fallback.cpp by name,
# GridSampler.cpp for every input but the 2-byte ones ATen's CPU kernel
# mishandles.
_ROUTING_FILES = {"Fallback.cpp", "GridSampler.cpp"}

_ROW = re.compile(r"^(?P<key>\w+): registered at (?P<where>\S+) \[(?P<kind>[^\]]+)\]")

# mydev's dispatch keys, each with the CPU key whose kernels its fallback runs.
_KEYS = {"PrivateUse1": "CPU", "SparsePrivateUse1": "SparseCPU", "SparseCsrPrivateUse1": "SparseCsrCPU"}


def _rows(op_name):
    rows = {}
    for line in torch._C._dispatch_dump_table(op_name).splitlines():
        match = _ROW.match(line)
        if match and match["key"] in _KEYS:
            rows[match["key"]] = (match["where"], match["kind"])
    return rows


def _classify_row(op_name, key, where, kind):
    if kind == "kernel":
        file_name = where.rsplit("/", 1)[-1].split(":")[0]
        return ("fallback" if file_name in _ROUTING_FILES else "native"), where
    if kind == "backend fallback":
        has_cpu_kernel = torch._C._dispatch_has_kernel_for_dispatch_key(op_name, _KEYS[key])
        return ("fallback" if has_cpu_kernel else "unsupported"), where
    return "composite", where


def _classify(op_name):
    """The dense key decides; an operator it leaves unsupported may still run
    on sparse mydev tensors (a sparse-only operator such as `_coalesce`)."""
    rows = _rows(op_name)
    how, where = "unsupported", ""
    for key in _KEYS:
        if key in rows:
            how, where = _classify_row(op_name, key, *rows[key])
            if how != "unsupported":
                break
    return how, where


def coverage(namespace="aten"):
    """One CoverageEntry per operator overload of `namespace`, sorted by name."""
    prefix = namespace + "::"
    names = sorted(name for name in torch._C._dispatch_get_all_op_names() if name.startswith(prefix))
    return [CoverageEntry(name, *_classify(name)) for name in names]
