"""Which leaves of a sample the op's sample function deliberately leaves on the CPU.

Asked for a device, sample functions put their tensors there, except where the
op's contract wants a host value: tensor_split's index tensor, index_put with
CPU indices, CPU scalar tensors mixed with device tensors, an explicit
``to("cpu")``. The kit builds its samples on the CPU and moves them, so it
also asks the sample function for the device's sample set (same seeds, the
databases reseed before every sample) and keeps on the CPU whatever that set
has there. If building the device's set fails, everything moves.
"""
import torch
from torch.utils import _pytree as pytree

from .sample_transfer import is_host_device, is_shape


def sample_placements(device, make_samples):
    """Yields, per sample, a list saying for each leaf whether it stays on the CPU; then Nones forever.

    ``make_samples(device_name)`` builds the op's sample set for a device. On
    the CPU every leaf is on the CPU, deliberately or not, so the meta device
    stands in for it there.
    """
    probe = "meta" if device.type == "cpu" else str(device)
    try:
        for sample in make_samples(probe):
            leaves = pytree.tree_leaves((sample.input, sample.args, sample.kwargs), is_leaf=is_shape)
            yield [_stays_on_host(leaf) for leaf in leaves]
    except Exception:
        pass
    while True:
        yield None


def _stays_on_host(leaf):
    if isinstance(leaf, torch.Tensor):
        return leaf.device.type == "cpu"
    return is_host_device(leaf)
