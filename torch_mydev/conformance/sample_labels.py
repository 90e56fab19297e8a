"""Short, readable names for samples in reports: index plus the shapes and arguments of the call."""
import torch
from torch.utils import _pytree as pytree

LABEL_LIMIT = 160


def describe_tensor(tensor):
    layout = "" if tensor.layout == torch.strided else f" {str(tensor.layout).removeprefix('torch.')}"
    contiguity = "" if tensor.layout != torch.strided or tensor.is_contiguous() else " non-contiguous"
    return f"T{list(tensor.shape)}{layout}{contiguity}"


def call_label(index, args, kwargs, prefix=""):
    """``#3 T[5, 5] non-contiguous, 2, dim=1`` for sample 3 called with those arguments."""
    parts = [_describe(value) for value in args] + [f"{key}={_describe(value)}" for key, value in kwargs.items()]
    text = " ".join(part for part in (f"#{index}", prefix, ", ".join(parts)) if part)
    return text if len(text) <= LABEL_LIMIT else text[: LABEL_LIMIT - 3] + "..."


def _describe(value):
    return repr(pytree.tree_map(_shown, value))


def _shown(leaf):
    return _Shown(describe_tensor(leaf)) if isinstance(leaf, torch.Tensor) else leaf


class _Shown(str):
    """A string that prints without quotes, so tensors inside lists read as ``[T[3], T[3]]``."""

    def __repr__(self):
        return str(self)
