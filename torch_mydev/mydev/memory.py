"""Device memory statistics and control, in the shape of torch.cuda's memory API.

The numbers come from mydev's caching allocator through PyTorch's generic
torch.accelerator memory API (mydev registers a c10::DeviceAllocator)."""
import inspect
import pickle
import sys
import warnings

import torch
from torch._utils import _augment_memory_snapshot_stack_traces

from torch_mydev import _C
from torch_mydev.mydev.device import _get_device_index
from torch_mydev.mydev.device import device as _device_context
from torch_mydev.mydev.lazy_init import _lazy_init, is_initialized
from torch_mydev.mydev.streams import Stream, current_stream
from torch_mydev.mydev.streams import stream as _stream_context


def _index(device):
    _lazy_init()
    return _get_device_index(device, optional=True)


def memory_stats(device=None):
    """Flat dictionary of allocator statistics (same keys as torch.cuda.memory_stats)."""
    if not is_initialized():
        return {}
    return dict(torch.accelerator.memory_stats(_index(device)))


def memory_stats_as_nested_dict(device=None):
    """memory_stats() nested by its dotted keys, as torch.cuda.memory_stats_as_nested_dict."""
    nested = {}
    for key, value in memory_stats(device).items():
        *path, leaf = key.split(".")
        level = nested
        for part in path:
            level = level.setdefault(part, {})
        level[leaf] = value
    return nested


def memory_allocated(device=None):
    """Bytes occupied by tensors on the device."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    """Bytes held by the caching allocator (allocated plus cached)."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device=None):
    torch.accelerator.reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device=None):
    """Deprecated spelling kept for torch.cuda parity: resets every peak statistic."""
    warnings.warn(
        "torch.mydev.reset_max_memory_allocated now calls torch.mydev.reset_peak_memory_stats, "
        "which resets all peak memory stats.",
        FutureWarning,
        stacklevel=2,
    )
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    torch.accelerator.reset_accumulated_memory_stats(_index(device))


def empty_cache():
    """Returns the cached, unused device memory of every device to the runtime, and frees the idle kernel workspace."""
    if is_initialized():
        torch.accelerator.empty_cache()


def kernel_workspace_stats():
    """Host buffers of 128 KiB or more that kernels allocate while they run.

    mydev's kernels are ATen's CPU kernels; their scratch buffers and results
    (oneDNN's reordered tensors, among others) come from a cache, as a GPU
    library's workspace comes from the device's caching allocator. Keys:
    ``enabled`` (False when the process's CPU allocator could not be wrapped),
    ``active_bytes`` (held by kernels' tensors now), ``idle_bytes`` (kept for
    reuse, returned by :func:`empty_cache`), ``requests`` and ``reused`` (how
    many allocations an idle block served) since the process started.

    Where a CPU function allocates its result itself (no ``out=`` form:
    attention, the normalizations' backward, most fallback operators), the
    kernel lends it the device output's memory: ``outputs_lent`` counts the
    allocations that took such a loan (an intermediate of the same size can
    take it first), ``results_in_place`` the results that landed in their
    output, ``results_copied`` those copied into it instead, of which
    ``results_moved`` had taken an output's memory in another layout.
    """
    return _C._kernel_workspace_stats()


def set_per_process_memory_fraction(fraction, device=None):
    """Caps what this process's allocator may reserve on a device at fraction x its capacity.

    Allocations beyond the cap raise torch.OutOfMemoryError, as on CUDA."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _C._set_memory_fraction(fraction, _index(device))


def get_per_process_memory_fraction(device=None):
    """The fraction set by set_per_process_memory_fraction (1.0 when none was set)."""
    return _C._get_memory_fraction(_index(device))


def caching_allocator_alloc(size, device=None, stream=None):
    """Raw device memory from the caching allocator, as an integer address; free with caching_allocator_delete.

    The block belongs to `stream` (default: the device's current stream), like any tensor allocated there. Where
    torch.cuda takes a stream's handle as an int, mydev takes its stream_id on the device (0: the default stream)."""
    index = _index(device)
    if stream is None:
        stream = current_stream(index)
    elif isinstance(stream, int) and not isinstance(stream, bool):
        stream = Stream(stream_id=stream, device_index=index, device_type=current_stream(index).device_type)
    if not isinstance(stream, torch.Stream):
        raise TypeError("Invalid type for stream argument, must be `torch.mydev.Stream` or `int` representing the "
                        "stream_id of an existing stream")
    with _device_context(index), _stream_context(stream):
        return _C._caching_allocator_alloc(size)


def caching_allocator_delete(mem_ptr):
    """Returns memory from caching_allocator_alloc to the allocator."""
    _C._caching_allocator_delete(mem_ptr)


def host_memory_stats_as_nested_dict():
    """Statistics of the pinned host memory allocator, nested as torch.cuda.host_memory_stats_as_nested_dict."""
    if not is_initialized():
        return {}
    return _C._host_memory_stats()


def host_memory_stats():
    """Flat, sorted view of host_memory_stats_as_nested_dict(), as torch.cuda.host_memory_stats."""
    flat = {}

    def add(prefix, value):
        if isinstance(value, dict):
            for key, inner in value.items():
                add(f"{prefix}.{key}" if prefix else key, inner)
        else:
            flat[prefix] = value

    add("", host_memory_stats_as_nested_dict())
    return dict(sorted(flat.items()))


def reset_accumulated_host_memory_stats():
    _C._reset_accumulated_host_memory_stats()


def reset_peak_host_memory_stats():
    _C._reset_peak_host_memory_stats()


def mem_get_info(device=None):
    """(free, total) bytes of the device's memory, as the runtime sees it."""
    return torch.accelerator.get_memory_info(_index(device))


def device_memory_used(device=None):
    """Bytes of the device's memory in use, as the runtime sees it (the caching allocator's reserve included)."""
    free, total = mem_get_info(device)
    return total - free


def get_allocator_backend():
    """The device allocator's backend: "native", mydev's caching allocator (torch.cuda's name for its own)."""
    return "native"


def _format_size(value):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.2f} {unit}" if unit != "B" else f"{value} B"
        value /= 1024
    raise AssertionError("unreachable")


def memory_summary(device=None, abbreviated=False):
    """A human-readable table of the allocator statistics of one device."""
    index = _index(device)
    stats = memory_stats(index)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("Reserved memory", "reserved_bytes", True),
        ("Non-releasable memory", "inactive_split_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocs", "active", False),
        ("Reserved segments", "segment", False),
        ("Non-releasable allocs", "inactive_split", False),
    ]
    pools = ("all",) if abbreviated else ("all", "large_pool", "small_pool")
    width = 75
    lines = ["=" * width, f" mydev memory summary, device ID {index}".ljust(width), "-" * width]
    lines.append(f"{'Metric':<30}{'Cur Usage':>11}{'Peak Usage':>11}{'Tot Alloc':>11}{'Tot Freed':>12}")
    for title, key, is_bytes in rows:
        lines.append("-" * width)
        for pool in pools:
            label = title if pool == "all" else f"  from {pool.replace('_', ' ')}"
            values = [stats.get(f"{key}.{pool}.{field}", 0) for field in ("current", "peak", "allocated", "freed")]
            shown = [_format_size(v) if is_bytes else str(v) for v in values]
            lines.append(f"{label:<30}{shown[0]:>11}{shown[1]:>11}{shown[2]:>11}{shown[3]:>12}")
    lines.append("-" * width)
    lines.append(
        f"{'Device alloc/free calls':<30}{stats.get('num_device_alloc', 0):>11}{stats.get('num_device_free', 0):>11}"
    )
    lines.append(f"{'Alloc retries / OOMs':<30}{stats.get('num_alloc_retries', 0):>11}{stats.get('num_ooms', 0):>11}")
    lines.append("=" * width)
    return "\n".join(lines) + "\n"


def _check_device(device):
    """A device these calls accept but do not need must still be a mydev device that exists."""
    _lazy_init()
    if device is not None:
        _C._get_device_properties(_index(device))


def _record_memory_history(enabled="all", *args, **kwargs):
    """Records what the allocator does, and the stacks behind it, for _snapshot(), as
    torch.cuda.memory._record_memory_history, with its signature: (enabled, context, stacks, max_entries, device,
    clear_history, compile_context, global_record_annotations, skip_actions), or the legacy one when enabled is a
    bool (enabled, record_context, trace_alloc_max_entries, trace_alloc_record_context, device,
    record_context_cpp, clear_history, compile_context, global_record_annotations, skip_actions).

    enabled: "all" records each action (alloc, free_requested, free_completed, segment_alloc,
    segment_free, oom, snapshot) in a per-device trace of the last max_entries, less those in skip_actions;
    "state" only keeps the stack of each live allocation; None stops recording and drops the trace. context: which
    actions get a stack ("state": live blocks only, "alloc": also allocations in the trace, "all": also frees).
    stacks: "python" for Python and TorchScript frames, "all" adds C++ frames. History covers every
    device (device is accepted for torch.cuda's signature). Not finished: compile_context and
    global_record_annotations, which mydev does not record yet, raise NotImplementedError when true."""
    if isinstance(enabled, bool):
        return _record_memory_history_legacy(enabled, *args, **kwargs)
    return _record_memory_history_impl(enabled, *args, **kwargs)


def _record_memory_history_legacy(enabled, record_context=True, trace_alloc_max_entries=1,
                                  trace_alloc_record_context=False, device=None, record_context_cpp=False,
                                  clear_history=False, compile_context=False, global_record_annotations=False,
                                  skip_actions=None):
    """torch.cuda's boolean form: a trace of trace_alloc_max_entries actions (1 by default), with the stacks of
    allocations when trace_alloc_record_context, else of live blocks when record_context."""
    if trace_alloc_record_context:
        context = "alloc"
    else:
        context = "state" if record_context else None
    _record_memory_history_impl("all" if enabled else None, context, "all" if record_context_cpp else "python",
                                trace_alloc_max_entries, device, clear_history, compile_context,
                                global_record_annotations, skip_actions)


def _record_memory_history_impl(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None,
                                clear_history=False, compile_context=False, global_record_annotations=False,
                                skip_actions=None):
    for name, requested in (("compile_context", compile_context),
                            ("global_record_annotations", global_record_annotations)):
        if requested:
            raise NotImplementedError(f"torch.mydev.memory._record_memory_history: {name}=True is not supported "
                                      f"yet (mydev's memory history does not record it)")
    _check_device(device)
    _C._record_memory_history(enabled, context, stacks, max_entries, clear_history, list(skip_actions or ()))


_record_memory_history.__signature__ = inspect.signature(_record_memory_history_impl)


def _snapshot(device=None, augment_with_fx_traces=False):
    """The allocator's state and history: {"segments", "device_traces", "allocator_settings"}, in
    the format torch.cuda.memory._snapshot documents, which torch.cuda._memory_viz and
    pytorch.org/memory_viz read. Covers every device (device is accepted for torch.cuda's signature).
    augment_with_fx_traces adds to frames of torch.compile's generated code the FX node they came from."""
    _check_device(device)
    snapshot = _C._memory_snapshot()
    if augment_with_fx_traces:
        snapshot = _augment_memory_snapshot_stack_traces(snapshot)
    return snapshot


def memory_snapshot(mempool_id=None, include_traces=True):
    """The segments of every device's caching allocator, as torch.cuda.memory_snapshot: _snapshot()["segments"].

    mydev has no memory pools, so mempool_id must be None. include_traces=False leaves out the history (the
    device_traces), as torch.cuda's lightweight snapshot does."""
    if mempool_id is not None:
        raise ValueError("mydev has no memory pools: memory_snapshot takes mempool_id=None")
    return _C._memory_snapshot(include_traces)["segments"]


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    """Pickles _snapshot() to filename, for pytorch.org/memory_viz."""
    with open(filename, "wb") as file:
        pickle.dump(_snapshot(augment_with_fx_traces=augment_with_fx_traces), file)
