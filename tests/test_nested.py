"""Strided nested tensors on mydev (NestedTensorPrivateUse1): creation, movement and printing, ATen's nested kernels
against the CPU, the kernels mydev replaces (sum over the last dimension, layer norm, attention's bias transform),
and nn.TransformerEncoder's nested fast path in evaluation with a padding mask."""
import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import profile, ProfilerActivity
from torch.testing._internal.common_utils import run_tests, TestCase


def components(seed=0, lengths=(2, 3, 1), features=4):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(length, features, generator=generator) for length in lengths]


def on_both(seed=0, **kwargs):
    cpu = torch.nested.nested_tensor(components(seed, **kwargs))
    return cpu, cpu.to("mydev")


class TestNestedTensors(TestCase):
    def assert_nested_equal(self, mydev, cpu, **tolerance):
        self.assertTrue(mydev.is_nested)
        self.assertEqual(mydev.device.type, "mydev")
        self.assertEqual(len(mydev.unbind()), len(cpu.unbind()))
        for got, expected in zip(mydev.unbind(), cpu.unbind()):
            self.assertEqual(got.cpu(), expected, **tolerance)

    def test_creation_movement_and_printing(self):
        parts = components()
        created = torch.nested.nested_tensor([p.clone() for p in parts], device="mydev")
        moved = torch.nested.nested_tensor(parts).to("mydev")
        for nested in (created, moved):
            self.assert_nested_equal(nested, torch.nested.nested_tensor(parts))
        self.assertIn("device='mydev:0'", repr(created))
        back = moved.to("cpu")
        self.assertEqual(back.device.type, "cpu")
        self.assertEqual(torch.nested.to_padded_tensor(back, 0), torch.nested.to_padded_tensor(torch.nested.nested_tensor(parts), 0))
        self.assertEqual(moved.to(torch.float64).dtype, torch.float64)
        view = torch.nested.as_nested_tensor(torch.arange(24.0, device="mydev").view(2, 3, 4))
        self.assertTrue(view.is_nested)
        self.assertEqual(view.to_padded_tensor(0).cpu(), torch.arange(24.0).view(2, 3, 4))

    def test_aten_nested_kernels_match_the_cpu(self):
        cpu, mydev = on_both()
        weight = torch.randn(5, 4)
        cases = {
            "pointwise": lambda t: (t * 2 + 1).relu().sin(),
            "in_place": lambda t: t.clone().mul_(t).add_(t),
            "softmax": lambda t: t.softmax(-1),
            "linear": lambda t: F.linear(t, weight.to(t.device)),
            "matmul": lambda t: torch.matmul(t.transpose(1, 2), t),
            "bmm": lambda t: torch.bmm(t, t.transpose(1, 2)),
            "transpose": lambda t: t.transpose(1, 2).contiguous(),
            "gelu": lambda t: F.gelu(t),
        }
        for name, function in cases.items():
            with self.subTest(name):
                self.assert_nested_equal(function(mydev), function(cpu), atol=1e-5, rtol=1e-5)
        self.assertEqual(mydev.to_padded_tensor(-1.0).cpu(), cpu.to_padded_tensor(-1.0))
        self.assertEqual(mydev.to_padded_tensor(0.0, (3, 4, 6)).cpu(), cpu.to_padded_tensor(0.0, (3, 4, 6)))

    def test_sum_over_the_last_dimension_and_its_backward(self):
        cpu, mydev = on_both()
        self.assert_nested_equal(mydev.sum(-1, keepdim=True), cpu.sum(-1, keepdim=True), atol=1e-5, rtol=1e-5)
        for bad in (lambda t: t.sum(1, keepdim=True), lambda t: t.sum(-1)):
            with self.assertRaisesRegex(RuntimeError, "NestedTensor"):
                bad(mydev)
        grad_cpu = cpu.sum(-1, keepdim=True)
        grad = grad_cpu.to("mydev")
        self.assert_nested_equal(torch.ops.aten._nested_sum_backward(grad, mydev, [-1], True),
                                 torch.ops.aten._nested_sum_backward(grad_cpu, cpu, [-1], True))

    def test_sum_of_empty_nested_tensors_matches_the_cpu(self):
        for parts in ([torch.randn(2, 0), torch.randn(3, 0)], [torch.randn(0, 3), torch.randn(0, 3)]):
            cpu = torch.nested.nested_tensor(parts)
            self.assert_nested_equal(cpu.to("mydev").sum(-1, keepdim=True), cpu.sum(-1, keepdim=True))
        nothing = torch.nested.nested_tensor([], device="mydev")
        self.assertEqual(len(nothing.sum(-1, keepdim=True).unbind()), 0)

    def test_sum_refuses_the_dtypes_the_cpu_refuses(self):
        for dtype in (torch.bool, torch.complex64):
            cpu = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3)]).to(dtype)
            with self.assertRaisesRegex(RuntimeError, '"nested_sum_dim_cpu" not implemented for'):
                cpu.sum(-1, keepdim=True)
            with self.assertRaisesRegex(RuntimeError, '"nested_sum_dim_cpu" not implemented for'):
                cpu.to("mydev").sum(-1, keepdim=True)

    def test_layer_norm_forward_and_backward(self):
        cpu, mydev = on_both()
        cpu_norm = nn.LayerNorm(4)
        with torch.no_grad():
            cpu_norm.weight.uniform_(0.5, 1.5)
        mydev_norm = copy.deepcopy(cpu_norm).to("mydev")
        cpu_input = cpu.clone().requires_grad_()
        mydev_input = mydev.clone().requires_grad_()
        outputs = []
        for inputs, module in ((cpu_input, cpu_norm), (mydev_input, mydev_norm)):
            output = module(inputs)
            output.backward(output.detach().clone())
            outputs.append(output)
        self.assert_nested_equal(outputs[1].detach(), outputs[0].detach(), atol=1e-5, rtol=1e-5)
        self.assert_nested_equal(mydev_input.grad, cpu_input.grad, atol=1e-5, rtol=1e-4)
        self.assertEqual(mydev_norm.weight.grad.cpu(), cpu_norm.weight.grad, atol=1e-5, rtol=1e-4)

    def test_layer_norm_statistics_have_the_cpus_shape(self):
        cpu, mydev = on_both()
        weight, bias = torch.ones(4), torch.zeros(4)
        for got, expected in zip(torch.native_layer_norm(mydev, (4,), weight.to("mydev"), bias.to("mydev"), 1e-5)[1:],
                                 torch.native_layer_norm(cpu, (4,), weight, bias, 1e-5)[1:]):
            self.assertEqual(got.cpu(), expected, atol=1e-5, rtol=1e-5)
        for device in ("cpu", "mydev"):
            with self.assertRaisesRegex(ValueError, "NestedTensor layer_norm requires weight and bias"):
                torch.native_layer_norm(mydev.to(device), (4,), None, None, 1e-5)

    def test_layer_norm_of_an_empty_last_dimension_is_refused(self):
        # The CPU's nested kernel divides by the normalized shape's elements: SIGFPE.
        nested = torch.nested.nested_tensor([torch.randn(2, 0), torch.randn(3, 0)], device="mydev")
        with self.assertRaisesRegex(RuntimeError, r"normalized_shape with elements, got \[0\]"):
            F.layer_norm(nested, (0,), torch.ones(0, device="mydev"), torch.zeros(0, device="mydev"))

    def test_nested_metadata_on_the_device_is_refused(self):
        # ATen's generic constructors read a nested tensor's sizes on the host: a device tensor there ended the
        # process with an illegal memory access.
        sizes = torch.tensor([[2, 3], [4, 3]])
        with self.assertRaisesRegex(RuntimeError, "_nested_from_padded: the nested sizes must be a CPU tensor"):
            torch._nested_from_padded(torch.randn(2, 4, 3, device="mydev"), sizes.to("mydev"))
        padded = torch.randn(2, 4, 3)
        self.assertEqual(torch._nested_from_padded(padded.to("mydev"), sizes).to_padded_tensor(0).cpu(),
                         torch._nested_from_padded(padded, sizes).to_padded_tensor(0))
        with self.assertRaisesRegex(RuntimeError, "_nested_view_from_buffer: the nested sizes must be a CPU tensor"):
            torch._nested_view_from_buffer(torch.randn(12, device="mydev"), torch.tensor([[2, 3], [2, 3]], device="mydev"),
                                           torch.tensor([[3, 1], [3, 1]]), torch.tensor([0, 6]))

    def test_layer_norm_refuses_a_ragged_dimension_as_the_cpu_does(self):
        parts = [torch.randn(2, 4), torch.randn(2, 2)]
        for device in ("cpu", "mydev"):
            nested = torch.nested.nested_tensor(parts).to(device)
            with self.assertRaisesRegex(RuntimeError, "irregular dimensions"):
                F.layer_norm(nested, (4,), torch.ones(4, device=device), torch.zeros(4, device=device))

    def test_operators_without_a_nested_kernel_fail_as_on_the_cpu(self):
        cpu, mydev = on_both()
        with self.assertRaises(NotImplementedError):
            cpu.cumsum(0)
        with self.assertRaisesRegex(NotImplementedError, "NestedTensor"):
            mydev.cumsum(0)

    def test_nested_kernels_do_not_wait_for_the_device(self):
        _, mydev = on_both()
        torch.mydev.set_sync_debug_mode("error")
        try:
            result = F.linear((mydev * 2).relu(), torch.randn(3, 4, device="mydev"))
        finally:
            torch.mydev.set_sync_debug_mode("default")
        self.assertEqual(result.to_padded_tensor(0).shape, (3, 3, 3))


class TestTransformerFastPath(TestCase):
    def encoder(self, activation):
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation, batch_first=True)
        return nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()

    def test_encoder_with_a_padding_mask_matches_the_cpu_on_the_nested_path(self):
        src = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(1))
        mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 2 + [True] * 3])
        for activation in ("relu", "gelu"):
            with self.subTest(activation):
                model = self.encoder(activation)
                with torch.no_grad():
                    expected = model(src, src_key_padding_mask=mask)
                    model.to("mydev")
                    with profile(activities=[ProfilerActivity.CPU]) as trace:
                        got = model(src.to("mydev"), src_key_padding_mask=mask.to("mydev"))
                self.assertEqual(got.device.type, "mydev")
                self.assertEqual(got.cpu(), expected, atol=1e-5, rtol=1e-5)
                called = [event.name for event in trace.events()]
                self.assertIn("aten::_nested_tensor_from_mask", called)
                self.assertEqual(called.count("aten::_transformer_encoder_layer_fwd"), 2)

    def test_multihead_attention_on_nested_inputs(self):
        torch.manual_seed(0)
        attention = nn.MultiheadAttention(4, 2, batch_first=True).eval()
        cpu, mydev = on_both(lengths=(3, 2))
        with torch.no_grad():
            expected = attention(cpu, cpu, cpu, need_weights=False)[0]
            got = attention.to("mydev")(mydev, mydev, mydev, need_weights=False)[0]
        self.assertEqual(got.to_padded_tensor(0).cpu(), expected.to_padded_tensor(0), atol=1e-5, rtol=1e-5)


if __name__ == "__main__":
    run_tests()
