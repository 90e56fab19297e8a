"""Runs one ModuleInfo for one dtype on the device and on the CPU: forward, buffers and backward.

Mirrors upstream's ``TestModule.test_cpu_gpu_parity``: the module is built on
the CPU, an identical copy is moved to the device, both run the same inputs;
outputs, buffers updated by the forward pass (running statistics) and the
gradients of inputs and parameters are compared. Modules whose train and eval
modes differ run in both.
"""
import copy

import torch

from .compare import Tolerance, compare
from .execution import CPU, execute, judge_exceptions
from .gradients import compare_gradients, labelled_tensors
from .outcome import MISMATCH, PASS, SKIPPED, PairTally, SampleOutcome, exception_text
from .sample_labels import call_label
from .sample_transfer import DeviceTransfer
from .upstream_decorators import upstream_verdict

# Module input functions draw random tensors without seeding themselves (OpInfo samples reseed per sample).
INPUTS_SEED = 0


def run_module(module_info, dtype, *, device, max_samples, backward):
    with_grads = backward and (dtype.is_floating_point or dtype.is_complex)
    modes = (True, False) if module_info.train_and_eval_differ else (True,)
    tally = PairTally()
    excuse = None
    for training in modes:
        mode = "train" if training else "eval"
        verdict = upstream_verdict_for(module_info, device, dtype, training)
        if not verdict.runs_with_cpu_kernels:
            tally.add(mode, SampleOutcome(SKIPPED, message=f"upstream skips it in {mode} mode: {verdict.skip_reason}"))
            continue
        excuse = excuse or verdict.mismatch_excuse
        torch.manual_seed(INPUTS_SEED)
        module_inputs = module_info.module_inputs_func(
            module_info, device="cpu", dtype=dtype, requires_grad=with_grads, training=training
        )
        runnable = [module_input for module_input in module_inputs if module_input.forward_input is not None]
        for index, module_input in enumerate(runnable[:max_samples]):
            forward = module_input.forward_input
            label = call_label(index, forward.args, forward.kwargs, prefix=f"{mode} {module_input.desc}".strip())
            outcome = run_module_sample(
                module_info,
                module_input,
                dtype=dtype,
                training=training,
                device=device,
                tolerance=Tolerance(verdict.atol, verdict.rtol),
                with_grads=with_grads,
                seed=index,
            )
            tally.add(label, outcome)
    return {**tally.result(excuse), "backward": with_grads}


def upstream_verdict_for(module_info, device, dtype, training):
    # Read per mode: a DecorateInfo may depend on the `training` parameter.
    parameters = {"training": training}
    return upstream_verdict(module_info, "TestModule", "test_cpu_gpu_parity", device.type, dtype, parameters)


def run_module_sample(module_info, module_input, *, dtype, training, device, tolerance, with_grads, seed):
    constructor, forward = module_input.constructor_input, module_input.forward_input
    torch.manual_seed(seed)
    try:
        cpu_module = module_info.module_cls(*constructor.args, **constructor.kwargs).to(dtype)
        cpu_module.train(training)
        if module_info.is_lazy:
            # Lazy modules create their parameters on the first input; do that on the CPU so both sides share them.
            with torch.no_grad():
                cpu_module(*forward.args, **forward.kwargs)
    except Exception as exception:
        return SampleOutcome(SKIPPED, "building the module on the CPU", exception_text(exception))
    try:
        device_module = copy.deepcopy(cpu_module).to(device)
        device_args, device_kwargs = DeviceTransfer(device).tree((forward.args, forward.kwargs))
    except Exception as exception:
        return SampleOutcome.from_device_exception(exception, "moving the module and its inputs to the device")

    reference = execute(lambda: cpu_module(*forward.args, **forward.kwargs), seed=seed, device=CPU)
    candidate = execute(lambda: device_module(*device_args, **device_kwargs), seed=seed, device=device)
    judged = judge_exceptions(reference, candidate, "forward", device.type)
    if judged is not None:
        return judged
    mismatch = compare(candidate.value, reference.value, tolerance, device.type, "output") or compare(
        dict(device_module.named_buffers()), dict(cpu_module.named_buffers()), tolerance, device.type, "buffer"
    )
    if mismatch is not None:
        return SampleOutcome(MISMATCH, "forward", mismatch=mismatch)
    if not with_grads:
        return SampleOutcome(PASS)
    backward = compare_gradients(
        reference.value,
        candidate.value,
        labelled_tensors({"args": forward.args, "kwargs": forward.kwargs})
        + [(f"parameter {name}", p) for name, p in cpu_module.named_parameters()],
        labelled_tensors({"args": device_args, "kwargs": device_kwargs})
        + [(f"parameter {name}", p) for name, p in device_module.named_parameters()],
        tolerance=tolerance,
        device=device,
        seed=seed,
    )
    return backward or SampleOutcome(PASS)
