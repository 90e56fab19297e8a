"""PyTorch's OpInfo and ModuleInfo databases, indexed by the names the kit uses for them.

An op is known by its OpInfo ``full_name`` (``name`` plus ``.variant``), a
module by its ModuleInfo ``name`` (``nn.Linear``). The databases are imported
on first use: importing them takes seconds, and torch_mydev must already be
registered by then (PyTorch's test framework decides at import time which
device types exist).
"""
import functools


@functools.cache
def ops_by_name():
    from torch.testing._internal.common_methods_invocations import op_db

    return {op.full_name: op for op in op_db}


@functools.cache
def modules_by_name():
    from torch.testing._internal.common_modules import module_db

    return {module_info.name: module_info for module_info in module_db}
