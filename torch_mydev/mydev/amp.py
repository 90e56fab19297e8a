"""Automatic mixed precision on mydev: what ``torch.autocast("mydev")`` asks of the device module.

The casting itself happens in C++ (csrc/amp/Autocast.cpp, the AutocastPrivateUse1
dispatch key, with CUDA's operator policy). ``torch.amp.GradScaler("mydev")``
needs nothing device-specific: its ``_amp_foreach_non_finite_check_and_unscale_``
and ``_amp_update_scale_`` run the CPU's kernels over device memory through the
generic fallback.
"""
import torch


def get_amp_supported_dtype():
    """The dtypes ``torch.autocast("mydev", dtype=...)`` accepts: both have kernels for every autocast operator."""
    return [torch.float16, torch.bfloat16]
