"""Registration of mydev with PyTorch's Python side, in a fixed order.

The C++ half (kernels, allocator, device guard, hooks) registered itself when
``torch_mydev._C`` was loaded; this module gives the backend its name, its
``torch.mydev`` module and the generated ``Tensor.mydev()`` family.
"""
import torch

BACKEND_NAME = "mydev"

# Quantized tensors live behind other dispatch keys that mydev does not implement.
_UNSUPPORTED_DTYPES = [torch.quint8, torch.quint4x2, torch.quint2x4, torch.qint32, torch.qint8]


def register_backend():
    """Registers mydev with PyTorch; calling it again is a no-op."""
    current = torch._C._get_privateuse1_backend_name()
    if current == BACKEND_NAME and hasattr(torch, BACKEND_NAME):
        return
    if current != "privateuseone":
        raise RuntimeError(
            f"torch_mydev cannot be loaded: the PrivateUse1 backend is already registered as '{current}'. "
            "Only one out-of-tree PrivateUse1 backend can be loaded in a process."
        )
    from torch_mydev import mydev

    torch.utils.rename_privateuse1_backend(BACKEND_NAME)
    torch._register_device_module(BACKEND_NAME, mydev)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True, unsupported_dtype=_UNSUPPORTED_DTYPES
    )
