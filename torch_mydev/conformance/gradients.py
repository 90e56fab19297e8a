"""Comparing gradients: both sides back-propagate the same seeded grad_outputs, then input gradients are compared."""
import torch
from torch.utils import _pytree as pytree

from .compare import Mismatch, compare_leaf
from .execution import CPU, execute, judge_exceptions
from .outcome import MISMATCH, PASS, SampleOutcome


def labelled_tensors(named_trees):
    """``[("args[0]", tensor), ...]`` for the tensors in ``{"args": (...), "kwargs": {...}}``."""
    labelled = []
    for root, tree in named_trees.items():
        for path, leaf in pytree.tree_flatten_with_path(tree)[0]:
            if isinstance(leaf, torch.Tensor):
                labelled.append((root + pytree.keystr(path), leaf))
    return labelled


def compare_gradients(
    reference_outputs, candidate_outputs, reference_inputs, candidate_inputs, *, tolerance, device, seed
):
    """The backward outcome, or None when no output is differentiable with respect to any input.

    ``reference_inputs`` and ``candidate_inputs`` are aligned ``(label, tensor)`` lists.
    """
    reference_leaves = pytree.tree_flatten_with_path(reference_outputs)[0]
    candidate_leaves = pytree.tree_leaves(candidate_outputs)
    differentiable = [i for i, (_, leaf) in enumerate(reference_leaves) if _requires_grad(leaf)]
    pairs = zip(reference_inputs, candidate_inputs)
    wrt = [(label, ref, cand) for (label, ref), (_, cand) in pairs if ref.requires_grad]
    if not differentiable or not wrt:
        return None
    for i in differentiable:
        if not _requires_grad(candidate_leaves[i]):
            where = "output" + pytree.keystr(reference_leaves[i][0])
            mismatch = Mismatch(where, f"does not require grad on {device.type}")
            return SampleOutcome(MISMATCH, "backward", mismatch=mismatch)

    torch.manual_seed(seed)
    grad_outputs = [torch.randn_like(reference_leaves[i][1]) for i in differentiable]
    device_grad_outputs = [grad.to(device) for grad in grad_outputs]
    reference_grads = [reference_leaves[i][1] for i in differentiable], [ref for _, ref, _ in wrt], grad_outputs
    candidate_grads = [candidate_leaves[i] for i in differentiable], [cand for _, _, cand in wrt], device_grad_outputs
    reference = execute(lambda: torch.autograd.grad(*reference_grads, allow_unused=True), seed=seed, device=CPU)
    candidate = execute(lambda: torch.autograd.grad(*candidate_grads, allow_unused=True), seed=seed, device=device)
    judged = judge_exceptions(reference, candidate, "backward", device.type)
    if judged is not None:
        return judged
    for (label, _, _), expected, actual in zip(wrt, reference.value, candidate.value):
        if expected is None and actual is None:
            continue
        where = f"grad of {label}"
        if expected is None or actual is None:
            missing = "the reference" if expected is None else device.type
            return SampleOutcome(MISMATCH, "backward", mismatch=Mismatch(where, f"no gradient on {missing}"))
        mismatch = compare_leaf(actual, expected, tolerance, device.type, where)
        if mismatch is not None:
            return SampleOutcome(MISMATCH, "backward", mismatch=mismatch)
    return SampleOutcome(PASS)


def _requires_grad(value):
    return isinstance(value, torch.Tensor) and value.requires_grad
