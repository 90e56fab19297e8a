"""Runs one OpInfo's error inputs on the device, judged against the CPU: what upstream's ``TestCommon.test_errors``
runs, with the device's asynchrony in view.

An error input is a call that must raise a given exception type with a message matching a regex. Its CPU twin
(``op.error_inputs("cpu")``, built alike) runs first: an input the CPU does not reject as expected says nothing about
the device (``cpu_does_not_raise``). The device's input is then judged by when and how it fails:

- ``at_call``: the call raised the expected type with a matching message (the device's name may stand where the
  message names a device), as on the CPU;
- ``late``: the call returned and the error came at the next synchronization, from a kernel that ran later on the
  stream (whatever the error);
- ``wrong``: the call raised, but another exception type, or a message that does not match;
- ``silent``: nothing raised, not even at the synchronization.

An op passes when every error input that the CPU rejects raises at the call on the device.
"""
import re

from .execution import CPU, synchronize
from .outcome import ERROR, MISMATCH, PASS, SKIPPED, exception_text, pair_without_samples

AT_CALL = "at_call"
LATE = "late"
WRONG = "wrong"
SILENT = "silent"
CPU_DOES_NOT_RAISE = "cpu_does_not_raise"
OUTCOMES = (AT_CALL, LATE, WRONG, SILENT, CPU_DOES_NOT_RAISE)
FAILING = (LATE, WRONG, SILENT)


def run_error_inputs(op, *, device):
    try:
        cpu_inputs = list(op.error_inputs(CPU.type))
        device_inputs = list(op.error_inputs(device.type))
    except Exception as exception:
        return pair_without_samples(ERROR, f"building the error inputs failed: {exception_text(exception)}")
    counts = {outcome: 0 for outcome in OUTCOMES}
    failures = []
    for index, (cpu_input, device_input) in enumerate(zip(cpu_inputs, device_inputs)):
        if _call(op, cpu_input, CPU)[0] != AT_CALL:
            counts[CPU_DOES_NOT_RAISE] += 1
            continue
        outcome, raised = _call(op, device_input, device)
        counts[outcome] += 1
        if outcome != AT_CALL:
            failures.append(
                {
                    "input": index,
                    "outcome": outcome,
                    "expected": f"{device_input.error_type.__name__} matching {device_input.error_regex!r}",
                    "raised": raised,
                }
            )
    judged = sum(counts[outcome] for outcome in (AT_CALL, *FAILING))
    samples = {"run": judged, **counts}
    if failures:
        first = failures[0]
        tally = ", ".join(f"{counts[outcome]} {outcome}" for outcome in FAILING if counts[outcome])
        reason = f"{tally} of {judged}; first: input #{first['input']} {first['outcome']}: expected {first['expected']}"
        reason += f", got {first['raised']}" if first["raised"] else ", nothing raised"
        return {"status": MISMATCH, "reason": reason, "samples": samples, "failure": first, "inputs": failures}
    if judged == 0:
        return {"status": SKIPPED, "reason": "no error input raises on the CPU", "samples": samples, "failure": None}
    return {"status": PASS, "reason": None, "samples": samples, "failure": None}


def _call(op, error_input, device):
    """(outcome, what was raised) of one error input on ``device``."""
    sample = error_input.sample_input
    try:
        op(sample.input, *sample.args, **sample.kwargs)
    except Exception as exception:
        expected = isinstance(exception, error_input.error_type) and _matches(error_input.error_regex, exception, device)
        return (AT_CALL if expected else WRONG), exception_text(exception)
    try:
        synchronize(device)
    except Exception as exception:
        return LATE, exception_text(exception)
    return SILENT, None


def _matches(regex, exception, device):
    message = str(exception)
    return re.search(regex, message) is not None or re.search(regex, message.replace(device.type, "cpu")) is not None
