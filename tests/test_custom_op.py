"""The vendor custom-op example, mydev::fused_bias_gelu: forward and backward
against the unfused CPU computation, its Meta kernel, and PyTorch's own
custom-op checks (torch.library.opcheck)."""
import torch
import torch.nn.functional as F
from torch.library import opcheck
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import parametrize, run_tests, TestCase

import torch_mydev


class TestFusedBiasGelu(TestCase):
    @dtypes(torch.float32, torch.float64)
    @parametrize("approximate", ["none", "tanh"])
    def test_forward_and_backward_match_unfused_cpu(self, device, dtype, approximate):
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(4, 3, 8, dtype=dtype, generator=generator, requires_grad=True)
        bias = torch.randn(8, dtype=dtype, generator=generator, requires_grad=True)
        dx = x.detach().to(device).requires_grad_()
        dbias = bias.detach().to(device).requires_grad_()

        expected = F.gelu(x + bias, approximate=approximate)
        out = torch_mydev.ops.fused_bias_gelu(dx, dbias, approximate)
        self.assertEqual(out.device, torch.device(device))
        self.assertEqual(out.cpu(), expected)

        grad = torch.randn(expected.shape, dtype=dtype, generator=generator)
        expected.backward(grad)
        out.backward(grad.to(device))
        self.assertEqual(dx.grad.cpu(), x.grad)
        self.assertEqual(dbias.grad.cpu(), bias.grad)

    def test_meta_kernel_infers_shape_and_checks_arguments(self, device):
        out = torch.ops.mydev.fused_bias_gelu(torch.empty(2, 7, 5, device="meta"), torch.empty(5, device="meta"))
        self.assertEqual(out.shape, (2, 7, 5))
        self.assertEqual(out.device.type, "meta")
        with self.assertRaisesRegex(RuntimeError, "expected a 1-D bias of size input.size"):
            torch.ops.mydev.fused_bias_gelu(torch.empty(2, 5, device=device), torch.empty(4, device=device))
        with self.assertRaisesRegex(RuntimeError, "approximate must be 'none' or 'tanh'"):
            torch.ops.mydev.fused_bias_gelu(torch.empty(2, 5, device=device), torch.empty(5, device=device), "erf")

    def test_opcheck(self, device):
        x = torch.randn(3, 6, device=device, requires_grad=True)
        bias = torch.randn(6, device=device, requires_grad=True)
        # PyTorch's autograd-registration check only knows CPU/CUDA/XPU; it runs on CPU tensors.
        opcheck(torch.ops.mydev.fused_bias_gelu.default, (x, bias),
                test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
        opcheck(torch.ops.mydev.fused_bias_gelu.default, (x.detach().cpu().requires_grad_(),
                                                          bias.detach().cpu().requires_grad_()))


instantiate_device_type_tests(TestFusedBiasGelu, globals(), only_for="privateuse1")

if __name__ == "__main__":
    run_tests()
