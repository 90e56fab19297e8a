"""Running one call the same way on the reference and on the device, and judging how each ended.

Both sides start from the same seed (``torch.manual_seed`` seeds the CPU and
every accelerator generator), and the device is synchronized inside the call so
that an asynchronous kernel error is charged to the call that caused it.
"""
from dataclasses import dataclass

import torch
from torch.testing._internal.common_utils import DeterministicGuard
from torch.utils._python_dispatch import TorchDispatchMode

from .outcome import BOTH_RAISE, ERROR, SampleOutcome, exception_text

CPU = torch.device("cpu")


@dataclass(frozen=True)
class Execution:
    """How one call ended: with a value, or with an exception (its type name and text)."""

    value: object = None
    exception: BaseException | None = None
    exception_type: str | None = None
    exception_message: str | None = None

    @classmethod
    def raised(cls, exception):
        return cls(
            exception=exception, exception_type=type(exception).__name__, exception_message=exception_text(exception)
        )

    @property
    def failed(self):
        return self.exception_type is not None


def execute(function, *, seed, device):
    torch.manual_seed(seed)
    try:
        value = function()
        synchronize(device)
    except Exception as exception:
        return Execution.raised(exception)
    return Execution(value=value)


class _SeededOperatorRecorder(TorchDispatchMode):
    """Notes whether any ATen operator that draws random numbers (tagged ``nondeterministic_seeded``) ran."""

    def __init__(self):
        super().__init__()
        self.seeded = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seeded = self.seeded or torch.Tag.nondeterministic_seeded in func.tags
        return func(*args, **(kwargs or {}))


def draws_random_numbers(function, *, seed, device):
    """Whether ``function`` runs an ATen operator that draws random numbers (run once more to see)."""
    recorder = _SeededOperatorRecorder()
    with recorder:
        execute(function, seed=seed, device=device)
    return recorder.seeded


def deterministic_mode():
    """torch.use_deterministic_algorithms(True) with uninitialised memory filled; restores both settings."""
    return DeterministicGuard(True, fill_uninitialized_memory=True)


def synchronize(device):
    if device.type != "cpu":
        torch.get_device_module(device).synchronize()


def judge_exceptions(reference, candidate, stage, device_type):
    """The sample's outcome when either side raised, or None when both returned a value."""
    if reference.failed and candidate.failed:
        if reference.exception_type == candidate.exception_type:
            return SampleOutcome(BOTH_RAISE, stage)
        return SampleOutcome(
            ERROR,
            stage,
            f"the reference raised {reference.exception_message}, {device_type} raised {candidate.exception_message}",
        )
    if reference.failed:
        message = f"the reference raised {reference.exception_message}, {device_type} did not raise"
        return SampleOutcome(ERROR, stage, message)
    if candidate.failed:
        return SampleOutcome.from_device_exception(candidate.exception, stage)
    return None
