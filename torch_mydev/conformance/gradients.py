"""Comparing gradients: both sides back-propagate the same seeded grad_outputs, then input gradients are compared."""
import torch
from torch.utils import _pytree as pytree

from .compare import Mismatch, compare_leaf
from .execution import CPU, execute, judge_exceptions
from .outcome import MISMATCH, PASS, SampleOutcome
from .placement import calls_per_sample
from .sample_transfer import call_leaves, flatten_call


def labelled_tensors(named_trees):
    """``[("args[0]", tensor), ...]`` for the tensors in ``{"args": (...), "kwargs": {...}}``."""
    labelled = []
    for root, tree in named_trees.items():
        for path, leaf in pytree.tree_flatten_with_path(tree)[0]:
            if isinstance(leaf, torch.Tensor):
                labelled.append((root + pytree.keystr(path), leaf))
    return labelled


class Differentiability:
    """Which tensors of the samples the kit runs (built without requires_grad) the backward comparison differentiates.

    The sample function knows which of its tensors are meant to be
    differentiated (not batch norm's running statistics, not a loss's class
    weights), so the kit builds the same sample set with requires_grad=True
    alongside and takes its choice for each sample it finds there: the next
    sample of that set, when it has the same structure, tensor dtypes and
    shapes, and plain arguments. The sets can part: some sample functions add
    samples only without requires_grad, some raise when asked for integral
    tensors that require grad. A sample not found there has every
    floating-point and complex tensor differentiated.
    """

    def __init__(self, make_samples):
        """``make_samples()`` builds the op's sample set with requires_grad=True."""
        self._templates = calls_per_sample(make_samples)
        self._pending = next(self._templates)

    def of(self, call):
        """Per leaf of ``call`` (``call_leaves`` order), whether backward differentiates it."""
        if self._pending is not None and _same_sample(call, self._pending):
            template, self._pending = self._pending, next(self._templates)
            return [_requires_grad(leaf) for leaf in call_leaves(template)]
        return [_floating(leaf) for leaf in call_leaves(call)]


def _floating(leaf):
    return isinstance(leaf, torch.Tensor) and (leaf.is_floating_point() or leaf.is_complex())


def _same_sample(call, template):
    leaves, spec = flatten_call(call)
    template_leaves, template_spec = flatten_call(template)
    return spec == template_spec and all(map(_same_leaf, leaves, template_leaves))


def _same_leaf(leaf, template):
    if type(leaf) is not type(template):
        return False
    if isinstance(leaf, torch.Tensor):
        return (leaf.dtype, leaf.shape) == (template.dtype, template.shape)
    if isinstance(leaf, (bool, int, float, complex, str)):
        return leaf == template or (leaf != leaf and template != template)
    # Other arguments (modules, functions, dtypes) tell samples apart by their type only: many compare by identity.
    return True


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
