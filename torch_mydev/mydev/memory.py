"""Device memory statistics and control, in the shape of torch.cuda's memory API.

The numbers come from mydev's caching allocator through PyTorch's generic
torch.accelerator memory API (mydev registers a c10::DeviceAllocator)."""
import torch

from torch_mydev.mydev.device import _get_device_index
from torch_mydev.mydev.lazy_init import _lazy_init, is_initialized


def _index(device):
    _lazy_init()
    return _get_device_index(device, optional=True)


def memory_stats(device=None):
    """Flat dictionary of allocator statistics (same keys as torch.cuda.memory_stats)."""
    if not is_initialized():
        return {}
    return dict(torch.accelerator.memory_stats(_index(device)))


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


def reset_accumulated_memory_stats(device=None):
    torch.accelerator.reset_accumulated_memory_stats(_index(device))


def empty_cache():
    """Returns the cached, unused device memory of every device to the runtime."""
    if is_initialized():
        torch.accelerator.empty_cache()


def mem_get_info(device=None):
    """(free, total) bytes of the device's memory, as the runtime sees it."""
    return torch.accelerator.get_memory_info(_index(device))


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
