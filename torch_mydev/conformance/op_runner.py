"""Runs one OpInfo for one dtype on the device and on the CPU, sample by sample, forward and backward.

The samples are the op's ``reference_inputs`` (its ``sample_inputs`` plus any
extra reference cases), as in upstream's ``TestCommon.test_compare_cpu``.
"""
from itertools import islice

from .compare import Tolerance, compare
from .execution import CPU, execute, judge_exceptions
from .gradients import compare_gradients, labelled_tensors
from .outcome import MISMATCH, PASS, SKIPPED, PairTally, SampleOutcome, skipped_pair
from .placement import sample_placements
from .sample_labels import call_label
from .sample_transfer import Call, DeviceTransfer
from .skips import skip_reason
from .upstream_decorators import upstream_verdict


def run_op(op, dtype, *, device, max_samples, backward):
    reason = skip_reason(op.full_name, str(dtype).removeprefix("torch."))
    if reason is not None:
        return skipped_pair(f"mydev skip list: {reason}")
    verdict = upstream_verdict(op, "TestCommon", "test_compare_cpu", device.type, dtype)
    if not verdict.runs:
        return {**skipped_pair(f"upstream skips it: {verdict.skip_reason}"), "upstream": verdict.to_json()}
    tolerance = Tolerance(verdict.atol, verdict.rtol)
    with_grads = backward and dtype in op.supported_backward_dtypes("cpu")
    tally = PairTally()
    samples = op.reference_inputs("cpu", dtype, requires_grad=with_grads)
    placements = sample_placements(device, lambda probe: op.reference_inputs(probe, dtype, requires_grad=with_grads))
    for index, (sample, placement) in enumerate(islice(zip(samples, placements), max_samples)):
        call = Call(sample.input, sample.args, sample.kwargs)
        label = call_label(index, (sample.input, *sample.args), sample.kwargs)
        outcome = run_sample(
            op, sample, call, placement, device=device, tolerance=tolerance, with_grads=with_grads, seed=index
        )
        tally.add(label, outcome)
    result = tally.result(verdict.mismatch_excuse)
    return {**result, "backward": with_grads, "upstream": verdict.to_json()}


def run_sample(op, sample, call, placement, *, device, tolerance, with_grads, seed):
    # The copies are made first: in-place variants mutate the CPU inputs.
    try:
        moved = DeviceTransfer(device).call(call, placement)
    except Exception as exception:
        return SampleOutcome.from_device_exception(exception, "moving inputs to the device")
    spare = DeviceTransfer(CPU).call(call)
    reference = execute(lambda: op(call.input, *call.args, **call.kwargs), seed=seed, device=CPU)
    candidate = execute(lambda: op(moved.input, *moved.args, **moved.kwargs), seed=seed, device=device)
    judged = judge_exceptions(reference, candidate, "forward", device.type)
    if judged is not None:
        return judged

    expected = execute(lambda: sample.output_process_fn_grad(reference.value), seed=seed, device=CPU)
    actual = execute(lambda: sample.output_process_fn_grad(candidate.value), seed=seed, device=device)
    judged = judge_exceptions(expected, actual, "output_process_fn_grad", device.type)
    if judged is not None:
        return judged
    mismatch = compare(actual.value, expected.value, tolerance, device.type, "output")
    if mismatch is not None and not _reference_repeats(op, sample, spare, expected.value, tolerance, seed):
        message = f"the CPU reference gives another result when run again ({mismatch.describe()})"
        return SampleOutcome(SKIPPED, "forward", message)
    if mismatch is not None:
        return SampleOutcome(MISMATCH, "forward", mismatch=mismatch)
    if not with_grads:
        return SampleOutcome(PASS)
    inputs = {"input": call.input, "args": call.args, "kwargs": call.kwargs}
    moved_inputs = {"input": moved.input, "args": moved.args, "kwargs": moved.kwargs}
    backward = compare_gradients(
        expected.value,
        actual.value,
        labelled_tensors(inputs),
        labelled_tensors(moved_inputs),
        tolerance=tolerance,
        device=device,
        seed=seed,
    )
    return backward or SampleOutcome(PASS)


def _reference_repeats(op, sample, spare, expected, tolerance, seed):
    """Whether the CPU reference reproduces its result from pristine inputs: a device is not to blame for a
    reference that varies from run to run (uninitialised memory, a non-deterministic CPU kernel)."""
    again = execute(
        lambda: sample.output_process_fn_grad(op(spare.input, *spare.args, **spare.kwargs)), seed=seed, device=CPU
    )
    return again.failed or compare(again.value, expected, tolerance, CPU.type, "output") is None
