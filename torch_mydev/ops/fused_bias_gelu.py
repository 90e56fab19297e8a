"""The vendor custom-op example, Python side: autograd for mydev::fused_bias_gelu.

The operator and its kernels (mydev, CPU, Meta) are defined in C++
(csrc/kernels/FusedBiasGelu.cpp); the gradient formula is registered here with
torch.library.register_autograd, so it works on every device the operator has
a kernel for and under torch.compile.
"""
import torch


def fused_bias_gelu(input, bias, approximate="none"):
    """gelu(input + bias), bias along the last dimension, as one mydev kernel."""
    return torch.ops.mydev.fused_bias_gelu(input, bias, approximate)


def _setup_context(ctx, inputs, output):
    input, bias, approximate = inputs
    ctx.save_for_backward(input, bias)
    ctx.approximate = approximate


def _backward(ctx, grad_output):
    input, bias = ctx.saved_tensors
    grad_input = torch.ops.mydev.fused_bias_gelu_backward(grad_output, input, bias, ctx.approximate)
    grad_bias = grad_input.reshape(-1, grad_input.shape[-1]).sum(0) if ctx.needs_input_grad[1] else None
    return (grad_input if ctx.needs_input_grad[0] else None), grad_bias, None


torch.library.register_autograd("mydev::fused_bias_gelu", _backward, setup_context=_setup_context)
