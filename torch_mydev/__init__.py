"""torch_mydev: the ``mydev`` accelerator for PyTorch.

mydev is a simulated device: its memory and compute engine live in host RAM,
but it is integrated into PyTorch exactly like a real out-of-tree accelerator
(PrivateUse1 dispatch key renamed to ``mydev``). ``import torch`` loads it
through the ``torch.backends`` entry point; importing this package directly
works too.
"""
import os
import sys


def _import_torch_without_autoload():
    # Importing torch runs the `torch.backends` entry points, which import this
    # package; when a user imports torch_mydev first, that would re-enter this
    # half-initialised module. Like torch_npu, import torch with autoload off.
    if "torch" in sys.modules:
        return
    previous = os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD")
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    try:
        import torch  # noqa: F401
    finally:
        if previous is None:
            del os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"]
        else:
            os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = previous


_import_torch_without_autoload()

from torch_mydev import _C  # noqa: E402  (loading it registers the C++ kernels, allocator, guard and hooks)
from torch_mydev._registration import register_backend  # noqa: E402

register_backend()

from torch_mydev import ops  # noqa: E402  (registers the autograd formula of the mydev:: custom operator)
from torch_mydev import _autograd_exit  # noqa: E402,F401  (see its docstring)
from torch_mydev import distributed  # noqa: E402
from torch_mydev import inductor  # noqa: E402
from torch_mydev.patches import patch_dlpack_for_mydev, patch_profiler_exit_for_mydev, run_after_import  # noqa: E402

patch_dlpack_for_mydev()
patch_profiler_exit_for_mydev()

# torch.compile support registers once torch imports the pieces it extends (torch_mydev/inductor/__init__.py).
run_after_import("torch._dynamo.device_interface", inductor.register_device_interface)
run_after_import("torch._inductor.compile_fx", inductor.register_inductor_backend)
# The c10d backend registers once torch.distributed is imported, which torch does not do on its own.
run_after_import("torch.distributed.distributed_c10d", distributed.register_backend)


def _autoload():
    """Entry point of the ``torch.backends`` group; importing the package registered the backend."""
    register_backend()


__all__ = ["ops", "register_backend"]
