"""Debugging the device: sync-debug mode, as on ``torch.cuda``, and faults injected on purpose.

``set_sync_debug_mode("warn")`` makes every operation that makes the host wait
for the device warn, naming it (``.item()``, a blocking copy, an operator whose
output shape depends on the data, ``Stream.synchronize()``); ``"error"``
raises instead. As on CUDA, the device's and an event's synchronization
(``torch.mydev.synchronize()``, ``Event.synchronize()``) never do.

``inject_fault(...)`` makes the device misbehave inside a ``with`` block, so
that code can be tested against a failing kernel, a kernel that never
finishes, or a device out of memory. ``MYDEV_INJECT_FAULT`` does the same for a
whole process (see docs/debugging.md).
"""
import contextlib

from torch_mydev import _C

_SYNC_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}

# mydevFaultKind in csrc/runtime/include/mydev/runtime.h
_FAULT_KINDS = {"failure": 1, "hang": 2, "oom": 3}


def set_sync_debug_mode(debug_mode):
    """Sets the debug mode for synchronizing operations.

    ``debug_mode``: ``"default"`` or 0 (do nothing), ``"warn"`` or 1 (warn),
    ``"error"`` or 2 (raise a RuntimeError) when an operation makes the host
    wait for the device.
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _SYNC_DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        debug_mode = _SYNC_DEBUG_MODES[debug_mode]
    if not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be a str or an int, got {type(debug_mode).__name__}")
    _C._set_sync_debug_mode(debug_mode)


def get_sync_debug_mode():
    """The sync-debug mode: 0 (default), 1 (warn) or 2 (error)."""
    return _C._get_sync_debug_mode()


@contextlib.contextmanager
def inject_fault(kernel=None, *, nth=1, kind="failure"):
    """Injects a device fault for the duration of the ``with`` block.

    ``kind="failure"``: the ``nth`` launch from now of ``kernel`` (an operator
    name such as ``"aten::mm"``, which covers its overloads, or a full kernel
    name such as ``"aten::add.out"``) does not run; the device reports it
    failed, at the next synchronizing call (at the call under
    ``MYDEV_LAUNCH_BLOCKING=1``), naming the kernel.
    ``kind="hang"``: that launch does not start until the block exits, and
    neither does anything queued after it on its stream.
    ``kind="oom"``: from the ``nth`` device allocation on (``kernel`` unused),
    the device refuses memory: an allocation the caching allocator cannot serve
    from its cache raises ``torch.OutOfMemoryError``.
    """
    if kind not in _FAULT_KINDS:
        raise ValueError(f"kind must be one of {sorted(_FAULT_KINDS)}, got {kind!r}")
    if kind != "oom" and (not isinstance(kernel, str) or not kernel):
        raise ValueError(f"a {kind!r} fault needs the kernel's name, got {kernel!r}")
    if not isinstance(nth, int) or isinstance(nth, bool) or nth < 1:
        raise ValueError(f"nth must be a positive int, got {nth!r}")
    fault = _C._inject_fault(_FAULT_KINDS[kind], kernel or "", nth)
    try:
        yield
    finally:
        _C._remove_fault(fault)
