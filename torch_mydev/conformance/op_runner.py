"""Runs one OpInfo for one dtype on the device and on the CPU, sample by sample, forward and backward.

The samples are the op's ``reference_inputs`` (its ``sample_inputs`` plus any
extra reference cases) built without requires_grad, as in upstream's
``TestCommon.test_compare_cpu``. The backward comparison runs the op again on
fresh copies whose differentiable tensors require grad (gradients.py says
which).
"""
from itertools import islice

from .compare import Tolerance, compare
from .execution import CPU, deterministic_mode, draws_random_numbers, execute, judge_exceptions
from .gradients import Differentiability, compare_gradients, labelled_tensors
from .outcome import (
    BOTH_RAISE,
    MISMATCH,
    PASS,
    PASS_RANDOM,
    SKIPPED,
    PASS_DETERMINISTIC,
    PairTally,
    SampleOutcome,
    not_applicable_pair,
    skipped_pair,
)
from .placement import sample_placements
from .sample_labels import call_label
from .sample_transfer import Call, DeviceTransfer, call_leaves, result_device_type
from .skips import skip_reason
from .upstream_decorators import upstream_verdict


def run_op(op, dtype, *, device, max_samples, backward):
    reason = skip_reason(op.full_name, str(dtype).removeprefix("torch."))
    if reason is not None:
        return skipped_pair(f"mydev skip list: {reason}")
    verdict = upstream_verdict(op, "TestCommon", "test_compare_cpu", device.type, dtype)
    if verdict.confined_to not in (None, "cpu"):
        reason = f"upstream runs it on {verdict.confined_to} only, so there is no CPU reference ({verdict.skip_reason})"
        return {**not_applicable_pair(reason), "upstream": verdict.to_json()}
    if not verdict.runs_with_cpu_kernels:
        return {**skipped_pair(f"upstream skips it: {verdict.skip_reason}"), "upstream": verdict.to_json()}
    tolerance = Tolerance(verdict.atol, verdict.rtol)
    with_grads = backward and dtype in op.supported_backward_dtypes("cpu")
    tally = PairTally()
    samples = op.reference_inputs("cpu", dtype)
    placements = sample_placements(device, lambda probe: op.reference_inputs(probe, dtype))
    differentiability = (
        Differentiability(lambda: op.reference_inputs("cpu", dtype, requires_grad=True)) if with_grads else None
    )
    for index, (sample, placement) in enumerate(islice(zip(samples, placements), max_samples)):
        call = Call(sample.input, sample.args, sample.kwargs)
        label = call_label(index, (sample.input, *sample.args), sample.kwargs)
        differentiable = differentiability.of(call) if differentiability is not None else None

        def attempt(sample_call):
            return run_sample(
                op, sample, sample_call, placement, differentiable, device=device, tolerance=tolerance, seed=index
            )

        pristine = DeviceTransfer(CPU).call(call) if verdict.mismatch_excuse is not None else None
        outcome = attempt(call)
        if pristine is not None and outcome.status in (MISMATCH, SKIPPED):
            outcome = _rerun_deterministically(outcome, verdict.mismatch_excuse, lambda: attempt(pristine))
        tally.add(label, outcome)
    result = tally.result(verdict.mismatch_excuse)
    return {**result, "backward": with_grads, "upstream": verdict.to_json()}


def run_sample(op, sample, call, placement, differentiable, *, device, tolerance, seed):
    """``differentiable``: per leaf of the call, whether backward differentiates it; None for no backward."""
    # Every copy is made first: in-place variants mutate the CPU inputs.
    try:
        moved = DeviceTransfer(device).call(call, placement)
        graded = _graded_copies(call, placement, differentiable, device)
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
    mismatch = compare(actual.value, expected.value, tolerance, result_device_type(moved, device), "output")
    if mismatch is not None and _draws_random_numbers(op, spare, placement, device=device, seed=seed):
        return _judge_random_sample(op, sample, spare, placement, expected, actual, device=device, seed=seed)
    if mismatch is not None and not _reference_repeats(op, sample, spare, expected.value, tolerance, seed):
        message = f"the CPU reference gives another result when run again ({mismatch.describe()})"
        return SampleOutcome(SKIPPED, "forward", message)
    if mismatch is not None:
        return SampleOutcome(MISMATCH, "forward", mismatch=mismatch)
    if graded is None:
        return SampleOutcome(PASS)
    backward = _compare_backward(op, sample, *graded, device=device, tolerance=tolerance, seed=seed)
    return backward or SampleOutcome(PASS)


def _draws_random_numbers(op, spare, placement, *, device, seed):
    moved = DeviceTransfer(device).call(spare, placement)
    return draws_random_numbers(lambda: op(moved.input, *moved.args, **moved.kwargs), seed=seed, device=device)


def _judge_random_sample(op, sample, spare, placement, expected, actual, *, device, seed):
    """A sample whose values differ because it drew random numbers on the device: it must have the reference's
    structure, dtypes and shapes, and give the same values when the device runs it again from the same seed
    (PASS_RANDOM in outcome.py)."""
    moved = DeviceTransfer(device).call(spare, placement)
    mismatch = compare(actual.value, expected.value, Tolerance(), device.type, "output", values=False)
    if mismatch is not None:
        return SampleOutcome(MISMATCH, "forward", mismatch=mismatch)
    again = execute(
        lambda: sample.output_process_fn_grad(op(moved.input, *moved.args, **moved.kwargs)), seed=seed, device=device
    )
    if again.failed:
        return SampleOutcome.from_device_exception(again.exception, "forward, run again from the same seed")
    mismatch = compare(again.value, actual.value, Tolerance(), device.type, "output from the same seed")
    if mismatch is not None:
        return SampleOutcome(MISMATCH, "forward", mismatch=mismatch)
    return SampleOutcome(PASS_RANDOM, "forward")


def _rerun_deterministically(outcome, excuse, run_again):
    """Runs a sample whose differences upstream excuses once more with both sides in deterministic mode.

    torch.use_deterministic_algorithms(True) fills the memory that empty
    factories hand out (NaN, or the largest integer) and sends kernels down
    their deterministic paths, on the CPU and on mydev alike, so results that
    were free to differ must then match. Only a full match changes the
    outcome: a sample that raises in deterministic mode keeps its first one.
    """
    with deterministic_mode():
        again = run_again()
    if again.status != PASS:
        return outcome
    return SampleOutcome(PASS_DETERMINISTIC, "forward", excuse)


def _graded_copies(call, placement, differentiable, device):
    """Fresh CPU and device copies of the call whose differentiable tensors require grad, or None if none is.

    Both sides get copies, set up alike: a sample function builds its tensors
    in no-grad mode, and its views of tensors that require grad pass no
    gradient to themselves.
    """
    if differentiable is None or not any(differentiable):
        return None
    copies = DeviceTransfer(CPU).call(call), DeviceTransfer(device).call(call, placement)
    for copy in copies:
        for leaf, wanted in zip(call_leaves(copy), differentiable):
            if wanted:
                leaf.requires_grad_()
    return copies


def _compare_backward(op, sample, reference_call, candidate_call, *, device, tolerance, seed):
    def forward(call):
        return lambda: sample.output_process_fn_grad(op(call.input, *call.args, **call.kwargs))

    reference = execute(forward(reference_call), seed=seed, device=CPU)
    candidate = execute(forward(candidate_call), seed=seed, device=device)
    judged = judge_exceptions(reference, candidate, "backward", device.type)
    if judged is not None:
        # Both sides refusing inputs that require grad leaves no gradient to compare; the forward pass matched.
        return None if judged.status == BOTH_RAISE else judged
    return compare_gradients(
        reference.value,
        candidate.value,
        labelled_tensors(_named_parts(reference_call)),
        labelled_tensors(_named_parts(candidate_call)),
        tolerance=tolerance,
        device=device,
        seed=seed,
    )


def _named_parts(call):
    return {"input": call.input, "args": call.args, "kwargs": call.kwargs}


def _reference_repeats(op, sample, spare, expected, tolerance, seed):
    """Whether the CPU reference reproduces its result from pristine inputs: a device is not to blame for a
    reference that varies from run to run (uninitialised memory, a non-deterministic CPU kernel)."""
    again = execute(
        lambda: sample.output_process_fn_grad(op(spare.input, *spare.args, **spare.kwargs)), seed=seed, device=CPU
    )
    return again.failed or compare(again.value, expected, tolerance, CPU.type, "output") is None
