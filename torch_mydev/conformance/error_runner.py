"""Runs one OpInfo's error inputs on the device, judged against the CPU: what upstream's ``TestCommon.test_errors``
runs, with the device's asynchrony in view.

An error input is a call that must raise a given exception type with a message matching a regex. Upstream builds the
list per device (``op.error_inputs(device)``), so the CPU's list and the device's may differ: some inputs are built
only for the CPU (an index out of bounds: "bounds checking does not occur on CUDA devices", where a kernel checks it
and the error comes later, as a device-side assertion), some only for other devices (tensors on two devices). Each
device input is paired with the CPU input that expects the same exception type and message, in order.

- A paired input runs on the CPU first: one the CPU does not reject as expected says nothing about the device
  (``cpu_does_not_raise``). Then the device's input is judged by when and how it fails:

  - ``at_call``: the call raised the expected type with a matching message (the device's name may stand where the
    message names a device), as on the CPU;
  - ``late``: the call returned and the error came at the next synchronization, from a kernel that ran later on the
    stream (whatever the error); also an error a mydev kernel raised at the call only because the launch was the
    first of its dtypes and shapes, which waits for its kernel: after a valid call of that signature it comes late;
  - ``wrong``: the call raised, but another exception type, or a message that does not match;
  - ``silent``: nothing raised, not even at the synchronization.

- A device input without a CPU twin is judged the same way, on the device alone, as upstream judges it.
- A CPU input without a device twin that the CPU rejects is moved to the device and judged too, apart
  (``cpu_only``): upstream does not ask a device for these, and a device that checks them in its kernels, as CUDA
  does, reports them ``late``. Only ``wrong`` or ``silent`` fails the op there: a call that raises nothing returned
  garbage.
- Dtype errors (``dtype``): for each of the 12 common dtypes the OpInfo does not list for the CPU, its first sample
  in that dtype, built on the CPU, where the call raises (most often "not implemented for"), becomes one more input:
  moved to the device, it must raise at the call, the same exception type with the CPU's very message. A CPU kernel
  dispatches on the dtype as it runs, so on an asynchronous device this error comes late unless the device checks
  for it at the call.

An op passes when every device input that the CPU rejects (or that only the device has) raises at the call, every
dtype error does, and no CPU-only input is wrong or silent.
"""
import copy
import re

import torch
from torch.testing._internal.common_dtype import all_types_and_complex_and
from torch.testing._internal.opinfo.core import ErrorInput
from torch.utils import _pytree as pytree

from .. import _C
from .execution import CPU, synchronize
from .outcome import ERROR, MISMATCH, PASS, SKIPPED, exception_text, pair_without_samples
from .sample_transfer import Call, DeviceTransfer
from .selection import dtype_name

AT_CALL = "at_call"
LATE = "late"
WRONG = "wrong"
SILENT = "silent"
CPU_DOES_NOT_RAISE = "cpu_does_not_raise"
OUTCOMES = (AT_CALL, LATE, WRONG, SILENT, CPU_DOES_NOT_RAISE)
FAILING = (LATE, WRONG, SILENT)
# Outcomes of the inputs only the CPU has, counted as "cpu_only_<outcome>"; of those, these fail the op.
CPU_ONLY_OUTCOMES = (AT_CALL, LATE, WRONG, SILENT)
CPU_ONLY_FAILING = (WRONG, SILENT)
# Outcomes of the dtype errors, counted as "dtype_<outcome>"; all but AT_CALL fail the op.
DTYPE_OUTCOMES = (AT_CALL, LATE, WRONG, SILENT)


COMMON_DTYPES = all_types_and_complex_and(torch.bool, torch.float16, torch.bfloat16)


def cpu_only(outcome):
    return f"cpu_only_{outcome}"


def dtype_error(outcome):
    return f"dtype_{outcome}"


def run_error_inputs(op, *, device):
    try:
        cpu_inputs = list(op.error_inputs(CPU.type)) if op.error_inputs_func is not None else []
        device_inputs = list(op.error_inputs(device.type)) if op.error_inputs_func is not None else []
    except Exception as exception:
        return pair_without_samples(ERROR, f"building the error inputs failed: {exception_text(exception)}")
    twins, cpu_alone = pair_inputs(cpu_inputs, device_inputs)
    counts = {outcome: 0 for outcome in OUTCOMES}
    counts.update({cpu_only(outcome): 0 for outcome in CPU_ONLY_OUTCOMES})
    counts.update({dtype_error(outcome): 0 for outcome in DTYPE_OUTCOMES})
    failures = []
    for index, (device_input, cpu_input) in enumerate(zip(device_inputs, twins)):
        if cpu_input is not None and _call(op, cpu_input, CPU)[0] != AT_CALL:
            counts[CPU_DOES_NOT_RAISE] += 1
            continue
        outcome, raised = _call(op, device_input, device)
        counts[outcome] += 1
        if outcome != AT_CALL:
            failures.append(_failure(f"#{index}", outcome, device_input, raised))
    for index in cpu_alone:
        cpu_input = cpu_inputs[index]
        if _call(op, cpu_input, CPU)[0] != AT_CALL:
            continue
        outcome, raised = _call(op, _moved(cpu_input, device), device)
        counts[cpu_only(outcome)] += 1
        if outcome in CPU_ONLY_FAILING:
            failures.append(_failure(f"CPU-only #{index}", outcome, cpu_input, raised))
    for dtype, cpu_input in dtype_error_inputs(op):
        # A signature whose dtypes have no kernel is never proven by a valid call: its first-launch error repeats.
        outcome, raised = _call(op, _moved(cpu_input, device), device, first_launch_is_late=False)
        counts[dtype_error(outcome)] += 1
        if outcome != AT_CALL:
            failures.append(_failure(f"{dtype_name(dtype)} sample", outcome, cpu_input, raised))
    judged = sum(counts[outcome] + counts[dtype_error(outcome)] for outcome in (AT_CALL, *FAILING))
    samples = {"run": judged, **counts}
    if failures:
        first = failures[0]
        tallies = [tally for tally in (_tally(counts, FAILING, str, judged),
                                       _tally(counts, FAILING, dtype_error, "the dtype errors"),
                                       _tally(counts, CPU_ONLY_FAILING, cpu_only, "the CPU-only inputs")) if tally]
        reason = f"{'; '.join(tallies)}; first: input {first['input']} {first['outcome']}: expected {first['expected']}"
        reason += f", got {first['raised']}" if first["raised"] else ", nothing raised"
        return {"status": MISMATCH, "reason": reason, "samples": samples, "failure": first, "inputs": failures}
    if judged == 0:
        return {"status": SKIPPED, "reason": "no error input or dtype raises on the CPU", "samples": samples,
                "failure": None}
    return {"status": PASS, "reason": None, "samples": samples, "failure": None}


def _tally(counts, outcomes, counted_as, whole):
    """The outcomes counted (under ``counted_as(outcome)``) as '1 late, 2 wrong of <whole>', or None."""
    found = [f"{counts[counted_as(outcome)]} {outcome}" for outcome in outcomes if counts[counted_as(outcome)]]
    return f"{', '.join(found)} of {whole}" if found else None


def dtype_error_inputs(op):
    """(dtype, CPU error input) for each common dtype the OpInfo does not list for the CPU whose first sample the
    CPU refuses: the input expects the CPU's exception type and its very message."""
    inputs = []
    supported = set(op.supported_dtypes(CPU.type))
    for dtype in COMMON_DTYPES:
        if dtype in supported:
            continue
        try:
            sample = next(iter(op.sample_inputs(CPU.type, dtype)), None)
        except Exception:
            continue  # the OpInfo cannot build a sample in this dtype: nothing to call
        if sample is None:
            continue
        # On a copy: an in-place op may write before it raises, and the device must get the sample as built.
        # Sparse compressed tensors cannot be copied so; they are called as built.
        try:
            attempt = copy.deepcopy(sample)
        except Exception:
            attempt = sample
        try:
            op(attempt.input, *attempt.args, **attempt.kwargs)
        except Exception as exception:
            inputs.append((dtype, ErrorInput(sample, error_type=type(exception), error_regex=re.escape(str(exception)))))
    return inputs


def pair_inputs(cpu_inputs, device_inputs):
    """Per device input, its CPU twin (None: the device's own), and the indices of the CPU inputs left unpaired.
    Twins expect the same error; failing that, they make the same call (upstream expects another message of some
    devices for the same bad call, as narrow_copy's IndexError where the CPU's kernel raises a RuntimeError)."""
    unpaired = list(range(len(cpu_inputs)))
    twins = [None] * len(device_inputs)
    for key in (_expects, _call_key):
        for position, device_input in enumerate(device_inputs):
            if twins[position] is not None:
                continue
            twin = next((index for index in unpaired if key(cpu_inputs[index]) == key(device_input)), None)
            if twin is not None:
                unpaired.remove(twin)
                twins[position] = cpu_inputs[twin]
    return twins, unpaired


def _expects(error_input):
    return error_input.error_type, error_input.error_regex


def _call_key(error_input):
    """What a call passes, whatever the device: tensors by dtype, shape, strides and, for small integer ones (indices),
    values; floating ones are random, drawn apart for each device."""
    sample = error_input.sample_input

    def leaf(value):
        if isinstance(value, torch.Tensor):
            indices = not (value.is_floating_point() or value.is_complex()) and value.numel() <= 64
            values = tuple(value.detach().cpu().flatten().tolist()) if indices else None
            return ("tensor", value.dtype, tuple(value.shape), value.stride(), values)
        if isinstance(value, torch.device) or (isinstance(value, str) and value.split(":")[0] in ("cpu", "mydev")):
            return "device"
        return repr(value)

    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    return str(spec), tuple(leaf(value) for value in leaves)


def _failure(label, outcome, error_input, raised):
    return {
        "input": label,
        "outcome": outcome,
        "expected": f"{error_input.error_type.__name__} matching {error_input.error_regex!r}",
        "raised": raised,
    }


def _moved(error_input, device):
    """A CPU error input with its tensors moved to ``device``, views and shared storages kept."""
    sample = error_input.sample_input
    moved = DeviceTransfer(device).call(Call(sample.input, sample.args, sample.kwargs))
    return type(error_input)(type(sample)(moved.input, args=moved.args, kwargs=moved.kwargs),
                             error_type=error_input.error_type, error_regex=error_input.error_regex)


def _call(op, error_input, device, first_launch_is_late=True):
    """(outcome, what was raised) of one error input on ``device``. An error that a mydev kernel raised at the call
    only because its launch was the first of its dtypes and shapes (which waits for the kernel) is late: once a valid
    call of the same signature ran, as in a real program, it surfaces at the next synchronization."""
    sample = error_input.sample_input
    first_launch_errors = _errors_raised_by_first_launches(device)
    try:
        op(sample.input, *sample.args, **sample.kwargs)
    except Exception as exception:
        if first_launch_is_late and _errors_raised_by_first_launches(device) != first_launch_errors:
            return LATE, f"{exception_text(exception)} (at the call only as the first launch of its signature)"
        expected = isinstance(exception, error_input.error_type) and _matches(error_input.error_regex, exception, device)
        return (AT_CALL if expected else WRONG), exception_text(exception)
    try:
        synchronize(device)
    except Exception as exception:
        return LATE, exception_text(exception)
    return SILENT, None


def _errors_raised_by_first_launches(device):
    return _C._errors_raised_by_first_launches() if device.type == "mydev" else 0


def _matches(regex, exception, device):
    message = str(exception)
    return any(re.search(regex, text) is not None for text in (message, _as_on_the_cpu(message, device)))


def _as_on_the_cpu(message, device):
    """The message with the CPU's names where the device's stand: a device name, and a tensor's type, which ATen
    writes as torch.ByteTensor for a CPU tensor and as mydevByteType for one of a PrivateUse1 device."""
    message = re.sub(rf"\b{re.escape(device.type)}(\w+)Type\b", r"torch.\1Tensor", message)
    return message.replace(device.type, "cpu")
