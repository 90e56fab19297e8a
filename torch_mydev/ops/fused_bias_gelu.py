"""The vendor custom-op example, Python side: autograd for mydev::fused_bias_gelu.

The operators and their kernels (mydev, CPU, Meta) are defined in C++
(csrc/kernels/FusedBiasGelu.cpp). Their gradient formulas are registered here
with torch.library.register_autograd, so they hold on every device the
operators have a kernel for and in graphs torch.compile captures (run by the
eager kernels, `backend="aot_eager"`; Inductor has no code generator for mydev).

Both operators are differentiable, the backward one too: its gradient is what
double backward (gradient penalties, Hessian-vector products) needs. A vendor
op whose backward has no autograd formula gives no gradient there, only a
warning, since the backward kernel's own operations are not recorded on a
device that runs them asynchronously.
"""
import math

import torch


def fused_bias_gelu(input, bias, approximate="none"):
    """gelu(input + bias), bias along the last dimension, as one mydev kernel."""
    return torch.ops.mydev.fused_bias_gelu(input, bias, approximate)


def _sum_to_bias(grad, bias):
    return grad.reshape(-1, bias.shape[0]).sum(0)


def _setup_context(ctx, inputs, output):
    input, bias, approximate = inputs
    ctx.save_for_backward(input, bias)
    ctx.approximate = approximate


def _backward(ctx, grad_output):
    input, bias = ctx.saved_tensors
    grad_input = torch.ops.mydev.fused_bias_gelu_backward(grad_output, input, bias, ctx.approximate)
    grad_bias = _sum_to_bias(grad_input, bias) if ctx.needs_input_grad[1] else None
    return (grad_input if ctx.needs_input_grad[0] else None), grad_bias, None


def _gelu_second_derivative(z, approximate):
    if z.dtype in (torch.float16, torch.bfloat16):
        # In float16, z * (ddu - 2 t du^2) overflows for |z| >= 22.5 while 1 - t^2
        # is already 0, and 0 * inf is NaN: compute in float32, as ATen's CPU
        # kernels compute reduced-precision floats.
        return _gelu_second_derivative(z.float(), approximate).to(z.dtype)
    if approximate == "tanh":
        # gelu(z) = z/2 (1 + tanh u), u = k (z + c z^3)
        k, c = math.sqrt(2 / math.pi), 0.044715
        t = torch.tanh(k * (z + c * z**3))
        du = k * (1 + 3 * c * z**2)
        ddu = 6 * k * c * z
        return (1 - t * t) * (du + 0.5 * z * (ddu - 2 * t * du * du))
    # gelu(z) = z Phi(z): gelu'' = phi(z) (2 - z^2)
    phi = torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return phi * (2 - z * z)


def _setup_context_of_backward(ctx, inputs, output):
    grad_output, input, bias, approximate = inputs
    ctx.save_for_backward(grad_output, input, bias)
    ctx.approximate = approximate


def _backward_of_backward(ctx, grad_grad_input):
    # The backward computes grad_output * gelu'(input + bias).
    grad_output, input, bias = ctx.saved_tensors
    grad_grad_output = None
    if ctx.needs_input_grad[0]:
        grad_grad_output = torch.ops.mydev.fused_bias_gelu_backward(grad_grad_input, input, bias, ctx.approximate)
    grad_input = grad_bias = None
    if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
        grad_z = grad_grad_input * grad_output * _gelu_second_derivative(input + bias, ctx.approximate)
        grad_input = grad_z if ctx.needs_input_grad[1] else None
        grad_bias = _sum_to_bias(grad_z, bias) if ctx.needs_input_grad[2] else None
    return grad_grad_output, grad_input, grad_bias, None


torch.library.register_autograd("mydev::fused_bias_gelu", _backward, setup_context=_setup_context)
torch.library.register_autograd(
    "mydev::fused_bias_gelu_backward", _backward_of_backward, setup_context=_setup_context_of_backward
)
