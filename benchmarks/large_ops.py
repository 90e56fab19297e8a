"""Large operators: each runs for milliseconds, so the device machinery's fixed
cost per call should vanish and mydev should match the CPU kernel it runs.

A sample runs the operator RUNS times between two synchronizations, as
torch.utils.benchmark.Timer times a block of runs on CUDA: the result is the
operator's steady-state cost, and one sample lasts long enough (~10 ms) that
the machine's millisecond-scale jitter averages out. What a single operator
costs on top when the device has been idle (waking the stream worker and the
synchronizing thread) is reported separately in benchmarks/README.md.
"""
import torch
import torch.nn.functional as F

from case import Case

TARGET = 1.00
RUNS = 8


def on_device(device, *shapes):
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(*shape, generator=generator).to(device) for shape in shapes]


def repeated(operator):
    def run():
        for _ in range(RUNS):
            result = operator()
        return result

    return run


def matmul(device):
    a, b = on_device(device, (1024, 1024), (1024, 1024))
    return repeated(lambda: a @ b)


def conv2d(device):
    images, weight, bias = on_device(device, (8, 64, 56, 56), (64, 64, 3, 3), (64,))
    return repeated(lambda: F.conv2d(images, weight, bias, padding=1))


def softmax(device):
    (x,) = on_device(device, (4096, 1024))
    return repeated(lambda: torch.softmax(x, dim=-1))


def layer_norm(device):
    x, weight, bias = on_device(device, (4096, 1024), (1024,), (1024,))
    return repeated(lambda: F.layer_norm(x, (1024,), weight, bias))


def fused_bias_gelu(device):
    x, bias = on_device(device, (4096, 1024), (1024,))
    return repeated(lambda: torch.ops.mydev.fused_bias_gelu(x, bias))


def mode(device):
    (x,) = on_device(device, (512, 1024))
    x = (4 * x).round()  # few distinct values, so that the mode is a real one
    return repeated(lambda: torch.mode(x, dim=-1))


def var_mean(device):
    (x,) = on_device(device, (4096, 1024))
    return repeated(lambda: torch.var_mean(x, dim=-1))


def attention(device):
    # Heads split off a projection, as in a transformer: (batch, length, heads, dim) viewed as (batch, heads, ...).
    # ATen's CPU flash kernels allocate their output and gradients in that layout, so mydev computes them in
    # the device tensors' own memory (HostResults), with no copy.
    query, key, value, grad = (tensor.view(8, 256, 4, 64).transpose(1, 2)
                               for tensor in on_device(device, *[(8, 256, 256)] * 4))
    for tensor in (query, key, value):
        tensor.requires_grad_()

    def forward_and_backward():
        out = F.scaled_dot_product_attention(query, key, value, is_causal=True)
        return torch.autograd.grad(out, (query, key, value), grad)

    return repeated(forward_and_backward)


def elementwise(op):
    def setup(device):
        a, b = on_device(device, (4 * 1024 * 1024,), (4 * 1024 * 1024,))
        return repeated(lambda: op(a, b))

    return setup


CASES = [
    Case("mm 1024x1024 @ 1024x1024", "large ops", TARGET, matmul, RUNS),
    Case("conv2d 8x64x56x56, 64 3x3 filters", "large ops", TARGET, conv2d, RUNS),
    Case("softmax 4096x1024, last dim", "large ops", TARGET, softmax, RUNS),
    Case("layer_norm 4096x1024, affine", "large ops", TARGET, layer_norm, RUNS),
    Case("fused_bias_gelu 4096x1024", "large ops", TARGET, fused_bias_gelu, RUNS),
    Case("mode 512x1024 (rounded), last dim", "large ops", TARGET, mode, RUNS),
    Case("var_mean 4096x1024, last dim", "large ops", TARGET, var_mean, RUNS),
    Case("attention fwd+bwd 8x4x256x64, causal", "large ops", TARGET, attention, RUNS),
    Case("add 4M elements", "large ops", TARGET, elementwise(torch.add), RUNS),
    Case("mul 4M elements", "large ops", TARGET, elementwise(torch.mul), RUNS),
]
