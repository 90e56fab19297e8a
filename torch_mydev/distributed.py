"""mydev in torch.distributed: the "mccl" process-group backend (csrc/distributed/ProcessGroupMydev.cpp).

It is registered for the mydev device once torch.distributed is imported, the way torch_npu registers "hccl":
``init_process_group("mccl")`` serves mydev tensors, ``"cpu:gloo,mydev:mccl"`` both kinds, and (with the patch in
patches.py) ``init_process_group()`` with no backend picks mccl for mydev and gloo for the CPU, as torch does for
CUDA. Its transport is a private gloo process group on the same store, which mccl runs as kernels on its comm
stream over the device memory itself, with NCCL's stream semantics."""
import datetime

import torch

from torch_mydev import _C

BACKEND_NAME = "mccl"


def _create_backend(store, group_rank, group_size, timeout):
    import torch.distributed as dist

    _C._bind_distributed_backend()
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    gloo = dist.ProcessGroupGloo(store, group_rank, group_size, timeout)
    return _C.ProcessGroupMydev(gloo, group_rank, group_size, timeout)


def register_backend():
    """Registers mccl with torch.distributed for the mydev device (idempotent)."""
    # Called while torch.distributed is still being imported: its names are not all bound yet.
    from torch.distributed.distributed_c10d import Backend

    from torch_mydev.patches import patch_default_process_group_backends

    patch_default_process_group_backends()
    if BACKEND_NAME in Backend.backend_list:
        return
    Backend.register_backend(BACKEND_NAME, _create_backend, devices=[torch._C._get_privateuse1_backend_name()])
