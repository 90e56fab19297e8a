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

    @parametrize("approximate", ["none", "tanh"])
    def test_double_backward_matches_unfused_cpu(self, device, approximate):
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(4, 6, dtype=torch.float64, generator=generator, requires_grad=True)
        bias = torch.randn(6, dtype=torch.float64, generator=generator, requires_grad=True)
        dx = x.detach().to(device).requires_grad_()
        dbias = bias.detach().to(device).requires_grad_()

        # a gradient penalty: the gradient of a function of the input gradient
        (grad,) = torch.autograd.grad(F.gelu(x + bias, approximate=approximate).sum(), x, create_graph=True)
        expected = torch.autograd.grad(grad.pow(2).sum(), (x, bias))
        (dgrad,) = torch.autograd.grad(torch_mydev.ops.fused_bias_gelu(dx, dbias, approximate).sum(), dx,
                                       create_graph=True)
        actual = torch.autograd.grad(dgrad.pow(2).sum(), (dx, dbias))
        self.assertEqual([t.cpu() for t in actual], expected)

        self.assertTrue(torch.autograd.gradgradcheck(
            lambda x, bias: torch_mydev.ops.fused_bias_gelu(x, bias, approximate), (dx[:2, :3], dbias[:3])))

        # float16, the default autocast dtype, with inputs where gelu'' is 0 far out in the tails
        x = torch.tensor([[-30.0, -1.0, 0.5, 30.0]], dtype=torch.float16, requires_grad=True)
        bias = torch.zeros(4, dtype=torch.float16, requires_grad=True)
        dx = x.detach().to(device).requires_grad_()
        dbias = bias.detach().to(device).requires_grad_()
        (grad,) = torch.autograd.grad(F.gelu(x + bias, approximate=approximate).sum(), x, create_graph=True)
        (expected,) = torch.autograd.grad(grad.sum(), x)
        (dgrad,) = torch.autograd.grad(torch_mydev.ops.fused_bias_gelu(dx, dbias, approximate).sum(), dx,
                                       create_graph=True)
        (actual,) = torch.autograd.grad(dgrad.sum(), dx)
        self.assertFalse(actual.isnan().any())
        self.assertEqual(actual.cpu(), expected, atol=2e-3, rtol=2e-3)

    def test_backward_operator_checks_grad_output_at_the_call(self, device):
        input = torch.randn(3, 5, device=device)
        bias = torch.randn(5, device=device)
        backward = torch.ops.mydev.fused_bias_gelu_backward
        with self.assertRaisesRegex(RuntimeError, r"expected grad_output of the input's shape \[3, 5\], got \[7, 3, 5\]"):
            backward(torch.randn(7, 3, 5, device=device), input, bias)
        with self.assertRaisesRegex(RuntimeError, "grad_output dtype Double differs from input dtype Float"):
            backward(torch.randn(3, 5, dtype=torch.float64, device=device), input, bias)
        with self.assertRaisesRegex(RuntimeError, "expected grad_output of the input's shape"):
            backward(torch.empty(7, 3, 5, device="meta"), input.to("meta"), bias.to("meta"))

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
        grad_output = torch.randn(3, 6, device=device, requires_grad=True)
        opcheck(torch.ops.mydev.fused_bias_gelu_backward.default, (grad_output, x, bias),
                test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
        opcheck(torch.ops.mydev.fused_bias_gelu_backward.default,
                tuple(t.detach().cpu().requires_grad_() for t in (grad_output, x, bias)))

    def test_inductor_calls_it_as_an_extern_kernel(self, device):
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(8, 16, generator=generator, requires_grad=True)
        bias = torch.randn(16, generator=generator, requires_grad=True)
        dx = x.detach().to(device).requires_grad_()
        dbias = bias.detach().to(device).requires_grad_()

        def scaled(input, bias):
            return torch.ops.mydev.fused_bias_gelu(input, bias, "none") * 2

        torch._dynamo.reset()
        out = torch.compile(scaled)(dx, dbias)
        expected = F.gelu(x + bias) * 2
        self.assertEqual(out.cpu(), expected)
        out.sum().backward()
        expected.sum().backward()
        self.assertEqual(dx.grad.cpu(), x.grad)
        self.assertEqual(dbias.grad.cpu(), bias.grad)


instantiate_device_type_tests(TestFusedBiasGelu, globals(), only_for="privateuse1")

if __name__ == "__main__":
    run_tests()
