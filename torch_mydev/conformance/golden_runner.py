"""Runs the stored inputs of one goldens entry (op, dtype) on the device and compares with the stored outputs.

The tolerance is the cross-device one of upstream's ``test_compare_cpu``
(atol = rtol = 1e-3), raised by the op's upstream overrides and by each output
dtype's defaults. The op's ``output_process_fn_grad`` (which canonicalises
ambiguous outputs such as singular vector signs) cannot be stored, so the
sample set is rebuilt from the same seeds and each stored sample is matched to
the rebuilt one with identical inputs; a stored sample without a match (the
op's samples changed since the recording) is skipped.
"""
import torch

from .catalog import ops_by_name
from .compare import Tolerance, compare
from .execution import Execution, execute, judge_exceptions
from .goldens import golden_samples
from .outcome import MISMATCH, PASS, SKIPPED, PairTally, SampleOutcome, skipped_pair
from .sample_labels import call_label
from .sample_transfer import Call, DeviceTransfer, flatten_call, result_device_type
from .upstream_decorators import upstream_verdict

CROSS_DEVICE_TOLERANCE = 1e-3


def run_golden(entry, metadata, *, device):
    op = ops_by_name().get(entry["op"])
    if op is None:
        return skipped_pair(f"this PyTorch ({torch.__version__}) has no OpInfo {entry['op']!r}")
    if entry["skipped"] is not None:
        return skipped_pair(entry["skipped"])
    dtype = getattr(torch, entry["dtype"])
    verdict = upstream_verdict(op, "TestCommon", "test_compare_cpu", device.type, dtype)
    tolerance = Tolerance(max(CROSS_DEVICE_TOLERANCE, verdict.atol), max(CROSS_DEVICE_TOLERANCE, verdict.rtol))
    regenerated = list(golden_samples(op, dtype))
    changed = (
        "no sample rebuilt from the same seeds has these inputs (the op's samples changed since the recording, "
        f"made with torch {metadata['torch_version']}, or depend on the process)"
    )
    tally = PairTally()
    for stored in entry["samples"]:
        index = stored["index"]
        if "unrecordable" in stored:
            tally.add(f"#{index}", SampleOutcome(SKIPPED, message=f"not recorded: {stored['unrecordable']}"))
            continue
        call = Call(stored["input"], stored["args"], stored["kwargs"])
        label = call_label(index, (call.input, *call.args), call.kwargs)
        sample = _matching_sample(regenerated, index, call)
        if sample is None:
            tally.add(label, SampleOutcome(SKIPPED, message=changed))
            continue
        tally.add(label, _run_stored_sample(op, sample, call, stored, device=device, tolerance=tolerance))
    return tally.result(verdict.mismatch_excuse)


def _run_stored_sample(op, sample, call, stored, *, device, tolerance):
    index = stored["index"]
    try:
        moved = DeviceTransfer(device).call(call, stored["placement"])
    except Exception as exception:
        return SampleOutcome.from_device_exception(exception, "moving inputs to the device")
    candidate = execute(lambda: op(moved.input, *moved.args, **moved.kwargs), seed=index, device=device)
    if stored["exception"] is not None:
        exception = stored["exception"]
        reference = Execution(exception_type=exception["type"], exception_message=exception["message"])
    else:
        reference = Execution(value=stored["output"])
    judged = judge_exceptions(reference, candidate, "forward", device.type)
    if judged is not None:
        return judged
    actual = execute(lambda: sample.output_process_fn_grad(candidate.value), seed=index, device=device)
    if actual.failed:
        return SampleOutcome.from_device_exception(actual.exception, "output_process_fn_grad")
    mismatch = compare(actual.value, stored["output"], tolerance, result_device_type(moved, device), "output")
    if mismatch is not None:
        return SampleOutcome(MISMATCH, "forward", mismatch=mismatch)
    return SampleOutcome(PASS)


def _matching_sample(regenerated, index, call):
    """The rebuilt sample with the stored inputs: the one at the same index, else any (some sample functions
    iterate over sets, whose order changes from process to process)."""
    candidates = regenerated[index : index + 1] + regenerated
    return next((s for s in candidates if _same_call(Call(s.input, s.args, s.kwargs), call)), None)


def _same_call(regenerated, stored):
    regenerated_leaves, regenerated_spec = flatten_call(regenerated)
    stored_leaves, stored_spec = flatten_call(stored)
    return regenerated_spec == stored_spec and all(map(_same_leaf, regenerated_leaves, stored_leaves))


def _same_leaf(regenerated, stored):
    if not isinstance(regenerated, torch.Tensor):
        return _same_object(regenerated, stored)
    if not isinstance(stored, torch.Tensor):
        return False
    if (regenerated.dtype, regenerated.shape, regenerated.layout) != (stored.dtype, stored.shape, stored.layout):
        return False
    if regenerated.layout != torch.strided:
        regenerated, stored = regenerated.to_dense(), stored.to_dense()
    elif regenerated.stride() != stored.stride():
        return False
    return bool(((regenerated == stored) | (regenerated.isnan() & stored.isnan())).all())


def _same_object(regenerated, stored):
    if type(regenerated) is not type(stored):
        return False
    if type(regenerated).__eq__ is object.__eq__ and hasattr(regenerated, "__dict__"):
        # Objects without an equality of their own (a loss's distance module) compare by their state.
        return vars(regenerated) == vars(stored)
    both_nan = regenerated != regenerated and stored != stored
    return regenerated == stored or both_nan
