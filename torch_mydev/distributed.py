"""mydev in torch.distributed: the "mccl" process-group backend (csrc/distributed/ProcessGroupMydev.h).

It is registered for the mydev device once torch.distributed is imported, the way torch_npu registers "hccl":
``init_process_group("mccl")`` serves mydev tensors, ``"cpu:gloo,mydev:mccl"`` both kinds, and (with the patch in
patches.py) ``init_process_group()`` with no backend picks mccl for mydev and gloo for the CPU, as torch does for
CUDA. Its transport is a private gloo process group on the same store, which mccl runs as kernels on its comm
stream over the device memory itself, with NCCL's stream semantics."""
import datetime
import os

import torch

from torch_mydev import _C

BACKEND_NAME = "mccl"


def _create_backend(backend_options, pg_options):
    """The creator torch.distributed calls for the world and every new group (``extended_api=True``)."""
    import torch.distributed as dist

    _C._bind_distributed_backend()
    timeout = backend_options.timeout
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    gloo = dist.ProcessGroupGloo(backend_options.store, backend_options.group_rank, backend_options.group_size, timeout)
    # Splitting maps a part's ranks to global ranks through this list. torch passes none for the world group, and
    # gloo then assumes 0..size-1 only for the first gloo group of a process (torch's own): for this one it would
    # read past an empty list.
    gloo.options.global_ranks_in_group = (list(backend_options.global_ranks_in_group)
                                          or list(range(backend_options.group_size)))
    gloo.options.group_name = backend_options.group_id
    return _C.ProcessGroupMydev(gloo, backend_options.group_rank, backend_options.group_size, timeout,
                                checks_collectives(backend_options.store, backend_options.group_rank,
                                                   backend_options.group_size))


def checks_collectives(store, group_rank, group_size):
    """Whether mccl compares each collective across ranks before it runs (csrc/distributed/CollectiveCheck.cpp):
    ``MCCL_CHECK_COLLECTIVES=1`` or ``0`` says; unset, it does at torch's DETAIL debug level
    (``TORCH_DISTRIBUTED_DEBUG=DETAIL``), adding the reduction and the root to what torch's wrapper compares there.
    A rank that checks would pair its exchange of records with another rank's collective, so the ranks of a group
    agree on it through the group's store, and refuse to start if they differ."""
    import torch.distributed as dist

    setting = os.environ.get("MCCL_CHECK_COLLECTIVES")
    if setting is None:
        mine = dist.get_debug_level() == dist.DebugLevel.DETAIL
    else:
        mine = setting.strip().lower() not in ("", "0", "false", "off", "no")
    # Numbered by creation: a group made again on the same store (a second init_process_group) reuses its name.
    creation = store.add(f"mccl_check_collectives/{group_rank}/creations", 1)
    store.set(f"mccl_check_collectives/{creation}/{group_rank}", "1" if mine else "0")
    settings = [store.get(f"mccl_check_collectives/{creation}/{rank}").decode() for rank in range(group_size)]
    if len(set(settings)) > 1:
        checking = [rank for rank, setting in enumerate(settings) if setting == "1"]
        raise ValueError(f"mccl: ranks {checking} of this group check collectives and the others do not: set "
                         f"MCCL_CHECK_COLLECTIVES (or TORCH_DISTRIBUTED_DEBUG) alike on every rank")
    return mine


def register_backend():
    """Registers mccl with torch.distributed for the mydev device (idempotent)."""
    # Called while torch.distributed is still being imported: its names are not all bound yet.
    from torch.distributed.distributed_c10d import Backend

    from torch_mydev.patches import patch_default_process_group_backends

    patch_default_process_group_backends()
    if BACKEND_NAME in Backend.backend_list:
        return
    Backend.register_backend(BACKEND_NAME, _create_backend, extended_api=True,
                             devices=[torch._C._get_privateuse1_backend_name()])
