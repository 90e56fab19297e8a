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

from .sample_transfer import Call, call_leaves, is_host_device


def sample_placements(device, make_samples):
    """Yields, per sample, a list saying for each leaf whether it stays on the CPU; then Nones forever.

    ``make_samples(device_name)`` builds the op's sample set for a device. On
    the CPU every leaf is on the CPU, deliberately or not, so the meta device
    stands in for it there.
    """
    probe = "meta" if device.type == "cpu" else str(device)
    for call in calls_per_sample(lambda: make_samples(probe)):
        yield None if call is None else [_stays_on_host(leaf) for leaf in call_leaves(call)]


def calls_per_sample(make_samples):
    """Yields a ``Call`` per sample ``make_samples()`` builds, then Nones forever.

    Such a second sample set only informs how the kit treats the samples it
    runs, so a sample function that fails on it ends the set, not the pair.
    """
    try:
        for sample in make_samples():
            yield Call(sample.input, sample.args, sample.kwargs)
    except Exception:
        pass
    while True:
        yield None


def _stays_on_host(leaf):
    if isinstance(leaf, torch.Tensor):
        return leaf.device.type == "cpu"
    return is_host_device(leaf)
