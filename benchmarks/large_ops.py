"""Large operators: each runs for milliseconds, so the device machinery's fixed
cost per call should vanish and mydev should match the CPU kernel it runs."""
import torch
import torch.nn.functional as F

from case import Case

TARGET = 1.05


def on_device(device, *shapes):
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(*shape, generator=generator).to(device) for shape in shapes]


def matmul(device):
    a, b = on_device(device, (1024, 1024), (1024, 1024))
    return lambda: a @ b


def conv2d(device):
    images, weight, bias = on_device(device, (8, 64, 56, 56), (64, 64, 3, 3), (64,))
    return lambda: F.conv2d(images, weight, bias, padding=1)


def softmax(device):
    (x,) = on_device(device, (4096, 1024))
    return lambda: torch.softmax(x, dim=-1)


def layer_norm(device):
    x, weight, bias = on_device(device, (4096, 1024), (1024,), (1024,))
    return lambda: F.layer_norm(x, (1024,), weight, bias)


def elementwise(op):
    def setup(device):
        a, b = on_device(device, (4 * 1024 * 1024,), (4 * 1024 * 1024,))
        return lambda: op(a, b)

    return setup


CASES = [
    Case("mm 1024x1024 @ 1024x1024", "large ops", TARGET, matmul),
    Case("conv2d 8x64x56x56, 64 3x3 filters", "large ops", TARGET, conv2d),
    Case("softmax 4096x1024, last dim", "large ops", TARGET, softmax),
    Case("layer_norm 4096x1024, affine", "large ops", TARGET, layer_norm),
    Case("add 4M elements", "large ops", TARGET, elementwise(torch.add)),
    Case("mul 4M elements", "large ops", TARGET, elementwise(torch.mul)),
]
