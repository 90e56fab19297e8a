"""``torch.mydev``: the device module of the mydev backend, shaped like ``torch.cuda``."""
from torch import OutOfMemoryError

from torch_mydev.mydev.amp import get_amp_supported_dtype
from torch_mydev.mydev.debug import get_sync_debug_mode, inject_fault, set_sync_debug_mode

from torch_mydev.mydev.device import (
    _DeviceGuard,
    _get_device_index,
    current_device,
    device,
    device_count,
    device_of,
    get_device_capability,
    get_device_name,
    get_device_properties,
    is_available,
    is_bf16_supported,
    set_device,
    synchronize,
)
from torch_mydev.mydev.lazy_init import _is_in_bad_fork, _lazy_call, _lazy_init, init, is_initialized
from torch_mydev.mydev.memory import (
    caching_allocator_alloc,
    caching_allocator_delete,
    device_memory_used,
    empty_cache,
    get_allocator_backend,
    get_per_process_memory_fraction,
    host_memory_stats,
    host_memory_stats_as_nested_dict,
    kernel_workspace_stats,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_host_memory_stats,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_host_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from torch_mydev.mydev.random import (
    _default_generator,
    _get_rng_state_offset,
    _set_rng_state_offset,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from torch_mydev.mydev.streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    is_current_stream_capturing,
    set_stream,
    stream,
)

__all__ = [
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "device_memory_used",
    "device_of",
    "empty_cache",
    "is_current_stream_capturing",
    "Event",
    "get_allocator_backend",
    "get_amp_supported_dtype",
    "get_sync_debug_mode",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_per_process_memory_fraction",
    "get_rng_state",
    "get_rng_state_all",
    "host_memory_stats",
    "host_memory_stats_as_nested_dict",
    "init",
    "initial_seed",
    "inject_fault",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "kernel_workspace_stats",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_summary",
    "OutOfMemoryError",
    "reset_accumulated_host_memory_stats",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_peak_host_memory_stats",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_per_process_memory_fraction",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "set_sync_debug_mode",
    "Stream",
    "stream",
    "StreamContext",
    "synchronize",
]


def __getattr__(name):
    # torch.utils.checkpoint reads the device module's `_initialized` (torch.cuda's
    # lazy-init flag) to decide whether to save and restore the device's RNG state
    # around recomputation; without it, a recomputed dropout drew a new mask.
    if name == "_initialized":
        return is_initialized()
    # torch.cuda.default_generators: each device's default generator, in device order.
    if name == "default_generators":
        return tuple(_default_generator(index) for index in range(device_count()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
