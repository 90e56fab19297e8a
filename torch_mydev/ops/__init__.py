"""How ATen operators run on mydev, and what to do when one has no native kernel.

Every ATen operator runs on mydev in one of three ways (see ``coverage``):
a native kernel registered by torch_mydev for the PrivateUse1 key; a
composite kernel of PyTorch that calls other operators; or the generic
fallback, which runs ATen's CPU kernel over device memory on the stream.

The fallback is counted per operator (``fallback_counts``) and governed by a
policy, initially read from ``MYDEV_FALLBACK``: ``allow`` (silent),
``warn`` (one warning per operator) or ``error`` (NotImplementedError, for CI
that must prove a workload runs on native kernels only).

``python -m torch_mydev.ops --coverage`` prints the coverage table.

``fused_bias_gelu`` (``torch.ops.mydev.fused_bias_gelu``) is the example of a
vendor operator: C++ kernels for mydev, CPU and Meta, autograd from Python.
"""
import contextlib

from torch_mydev import _C

from torch_mydev.ops.coverage import coverage, CoverageEntry, HOW_IT_RUNS
from torch_mydev.ops.fused_bias_gelu import fused_bias_gelu


def fallback_counts():
    """How many times each operator (``"aten::name.overload"``) went through the
    fallback since the process started or ``reset_fallback_counts()``."""
    return dict(sorted(_C._fallback_counts().items()))


def reset_fallback_counts():
    _C._reset_fallback_counts()


def get_fallback_policy():
    """``"allow"``, ``"warn"`` or ``"error"``."""
    return _C._get_fallback_policy()


def set_fallback_policy(policy):
    """Sets the fallback policy for the whole process (overrides MYDEV_FALLBACK)."""
    _C._set_fallback_policy(policy)


@contextlib.contextmanager
def fallback_policy(policy):
    """Applies a fallback policy within a ``with`` block, then restores the previous one."""
    previous = get_fallback_policy()
    set_fallback_policy(policy)
    try:
        yield
    finally:
        set_fallback_policy(previous)


__all__ = [
    "CoverageEntry",
    "HOW_IT_RUNS",
    "coverage",
    "fallback_counts",
    "fallback_policy",
    "fused_bias_gelu",
    "get_fallback_policy",
    "reset_fallback_counts",
    "set_fallback_policy",
]
