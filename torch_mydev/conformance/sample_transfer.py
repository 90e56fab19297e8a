"""Moving a sample's tensors to another device without changing their layout.

``tensor.to(device)`` densifies: a transposed, sliced, overlapping or expanded
input would reach the device contiguous, and a kernel that mishandles strides
would still pass. Instead each tensor's whole storage is copied and the same
view (sizes, strides, storage offset, conjugate and negative bits) is rebuilt
over the copy, so the device sees the memory layout the CPU reference sees.
Tensors that share a storage on the CPU share one on the device too, and a
tensor that appears twice in a call (``loss(x, x)``) is one tensor on the
device too: its gradient sums both uses on both sides.

Sample functions are asked for "cpu" and build everything there, so a "cpu"
device argument (``to("cpu")``, ``zeros(..., device="cpu")``) means "the
device under test" and is rewritten. A few leaves are on the CPU on purpose
(tensor_split's index tensor, CPU scalar tensors mixed with device tensors):
``placement`` (placement.py) names them, and they stay on the CPU, copied.

This module depends on torch only: the CUDA golden recorder (goldens.py) runs
it on machines without torch_mydev.
"""
from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree

HOST = "cpu"


@dataclass
class Call:
    """The three parts of an OpInfo sample: ``op(input, *args, **kwargs)``."""

    input: object
    args: tuple
    kwargs: dict


class DeviceTransfer:
    """Moves the leaves of one call to ``device``; storages and tensors are copied once per transfer."""

    def __init__(self, device):
        self.device = torch.device(device)
        self._storages = {}
        # id() -> (original, moved): holding the original keeps its id from being reused.
        self._tensors = {}
        self._host = self if self.device.type == HOST else DeviceTransfer(HOST)

    def call(self, call, placement=None):
        """``placement``: per leaf of ``call_leaves(call)``, whether it stays on the CPU (see placement.py)."""
        leaves, spec = flatten_call(call)
        stays = placement if placement is not None and len(placement) == len(leaves) else [False] * len(leaves)
        moved = [self._host.leaf(leaf) if stay else self.leaf(leaf) for leaf, stay in zip(leaves, stays)]
        return Call(*pytree.tree_unflatten(moved, spec))

    def tree(self, tree):
        return pytree.tree_map(self.leaf, tree, is_leaf=is_shape)

    def leaf(self, value):
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if is_host_device(value):
            return self.device if isinstance(value, torch.device) else str(self.device)
        return value

    def tensor(self, tensor):
        if id(tensor) not in self._tensors:
            self._tensors[id(tensor)] = (tensor, self._moved(tensor))
        return self._tensors[id(tensor)][1]

    def _moved(self, tensor):
        if type(tensor) not in (torch.Tensor, torch.nn.Parameter) or tensor.layout != torch.strided:
            # Sparse, nested and subclass tensors have no single strided storage to copy.
            moved = tensor.detach().to(self.device, copy=True)
        else:
            base = torch.empty(0, dtype=tensor.dtype, device=self.device).set_(self._storage(tensor))
            moved = base.as_strided(tensor.size(), tensor.stride(), tensor.storage_offset())
            if tensor.is_conj():
                moved = moved.conj()
            if tensor.is_neg():
                moved = torch._neg_view(moved)
        if tensor.requires_grad:
            moved.requires_grad_()
        return moved

    def _storage(self, tensor):
        storage = tensor.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if key not in self._storages:
            as_bytes = torch.empty(0, dtype=torch.uint8).set_(storage)
            # copy=True: a transfer to the CPU must not alias the inputs either.
            self._storages[key] = as_bytes.to(self.device, copy=True).untyped_storage()
        return self._storages[key]


def flatten_call(call):
    """The leaves of ``(input, args, kwargs)``, in the order per-leaf lists such as ``placement`` use, and their
    structure."""
    return pytree.tree_flatten((call.input, call.args, call.kwargs), is_leaf=is_shape)


def call_leaves(call):
    return flatten_call(call)[0]


def result_device_type(call, device):
    """The device type PyTorch puts the results of ``call`` on, once ``call`` has been moved to ``device``.

    An explicit device argument decides (a "cpu" the sample keeps on purpose
    means the CPU); otherwise the results follow the input tensors onto
    ``device``. A call with no tensor on ``device`` and no device argument
    naming it (Python numbers only, or tensors that all stay on the CPU)
    computes on the CPU, for the device as for the reference.
    """
    leaves = call_leaves(call)
    named = next((leaf for leaf in leaves if _names_device(leaf, device)), None)
    if named is not None:
        return torch.device(named).type
    if any(isinstance(leaf, torch.Tensor) and leaf.device.type == device.type for leaf in leaves):
        return device.type
    return HOST


def _names_device(value, device):
    # The only device strings a moved call holds: the host's, kept on purpose, and the rewritten one.
    if isinstance(value, str):
        return value in (HOST, str(device))
    return isinstance(value, torch.device)


def is_shape(value):
    # pytree would rebuild a torch.Size as a plain tuple; shapes stay whole so that ops see what the sample holds.
    return isinstance(value, torch.Size)


def is_host_device(value):
    if isinstance(value, str):
        return value == HOST
    return isinstance(value, torch.device) and value.type == HOST
