"""Random number generation state of mydev devices, in the shape of torch.cuda's RNG API.

Each device has a default torch.Generator (device mydev:N); random operators
on a device draw from it unless given their own generator."""
import torch

from torch_mydev import _C
from torch_mydev.mydev.device import _get_device_index, device_count
from torch_mydev.mydev.lazy_init import _lazy_call, _lazy_init


def _default_generator(index):
    _lazy_init()
    return _C._default_generator(index)


def _index_when_run(device):
    """The index a queued call acts on: None for the current device, which the call resolves when it runs (as
    torch.cuda does), so that queuing it neither starts the device nor fails in a forked child."""
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device) and device.type == "mydev" and device.index is None:
        return None
    return _get_device_index(device, optional=True)


def _generator_when_run(index):
    return _default_generator(_C._current_device() if index is None else index)


def get_rng_state(device="mydev"):
    """The RNG state of a device as a ByteTensor (on the CPU)."""
    return _default_generator(_get_device_index(device, optional=True)).get_state()


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state, device="mydev"):
    index = _index_when_run(device)
    state = new_state.clone(memory_format=torch.contiguous_format)
    _lazy_call(lambda: _generator_when_run(index).set_state(state))


def set_rng_state_all(new_states):
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


def _get_rng_state_offset(device="mydev"):
    """The Philox offset of a device's generator: how many numbers per thread its launches reserved so far."""
    return _default_generator(_get_device_index(device, optional=True)).get_offset()


def _set_rng_state_offset(offset, device="mydev"):
    index = _index_when_run(device)
    offset = int(offset)
    _lazy_call(lambda: _generator_when_run(index).set_offset(offset))


def manual_seed(seed):
    """Seeds the current device's generator."""
    seed = int(seed)

    def seed_current():
        _generator_when_run(None).manual_seed(seed)

    _lazy_call(seed_current, seed=True)


def manual_seed_all(seed):
    """Seeds the generators of all devices."""
    seed = int(seed)

    def seed_all():
        for index in range(device_count()):
            _default_generator(index).manual_seed(seed)

    _lazy_call(seed_all, seed_all=True)


def seed():
    """Seeds the current device's generator with a non-deterministic random number."""
    _lazy_call(lambda: _generator_when_run(None).seed(), seed=True)


def seed_all():
    """Seeds every device's generator with one non-deterministic random number."""

    def reseed():
        random_seed = _default_generator(0).seed()
        for index in range(1, device_count()):
            _default_generator(index).manual_seed(random_seed)

    _lazy_call(reseed, seed_all=True)


def initial_seed():
    """The seed of the current device's generator."""
    return _default_generator(_C._current_device()).initial_seed()
