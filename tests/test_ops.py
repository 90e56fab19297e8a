"""Ordinary PyTorch programs on mydev through the generic kernel tier (ATen's
CPU kernels run over device memory on the stream worker): every result is
compared with the same computation on the CPU."""
import copy
import re
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import (
    DeterministicGuard,
    parametrize,
    run_tests,
    set_warn_always_context,
    TestCase,
)

from helpers import run_python
from torch_mydev.ops import fallback_policy


def reference(tensor):
    return tensor.detach().cpu()


class TestMydevOps(TestCase):
    @dtypes(torch.float32, torch.float64, torch.int64, torch.int8, torch.bool, torch.complex64, torch.bfloat16)
    def test_elementwise_and_reductions(self, device, dtype):
        generator = torch.Generator().manual_seed(3)
        a = (torch.randn(17, 9, generator=generator) * 10).to(dtype)
        b = (torch.randn(17, 9, generator=generator) * 10).to(dtype)
        da, db = a.to(device), b.to(device)
        if dtype is not torch.bool:
            self.assertEqual(reference(da + db), a + b)
            self.assertEqual(reference(da * db), a * b)
            self.assertEqual(reference(da.sum(dim=0)), a.sum(dim=0))
        self.assertEqual(reference(da == db), a == b)
        self.assertEqual(reference(torch.where(da != db, da, db)), torch.where(a != b, a, b))
        self.assertEqual(reference(da.t().contiguous()), a.t().contiguous())

    def test_linear_forward_and_backward(self, device):
        torch.manual_seed(0)
        layer = nn.Linear(16, 8)
        device_layer = copy.deepcopy(layer).to(device)
        inputs = torch.randn(5, 16, requires_grad=True)
        device_inputs = inputs.detach().to(device).requires_grad_()
        out, device_out = layer(inputs), device_layer(device_inputs)
        self.assertEqual(reference(device_out), out)
        out.square().mean().backward()
        device_out.square().mean().backward()
        self.assertEqual(reference(device_inputs.grad), inputs.grad)
        self.assertEqual(reference(device_layer.weight.grad), layer.weight.grad)
        self.assertEqual(reference(device_layer.bias.grad), layer.bias.grad)
        self.assertEqual(device_layer.weight.grad.device, torch.device(device))

    def test_softmax_family_and_norms(self, device):
        x = torch.randn(6, 10, requires_grad=True)
        dx = x.detach().to(device).requires_grad_()
        for fn in (
            lambda t: F.softmax(t, dim=1),
            lambda t: F.log_softmax(t, dim=0),
            lambda t: F.layer_norm(t, (10,)),
            lambda t: F.gelu(t),
        ):
            out, device_out = fn(x), fn(dx)
            self.assertEqual(reference(device_out), out)
            grad_out = torch.randn_like(out)
            (grad,) = torch.autograd.grad(out, x, grad_out)
            (device_grad,) = torch.autograd.grad(device_out, dx, grad_out.to(device))
            self.assertEqual(reference(device_grad), grad)

    def test_convolution_and_pooling(self, device):
        torch.manual_seed(1)
        model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.BatchNorm2d(4))
        device_model = copy.deepcopy(model).to(device)
        images = torch.randn(2, 3, 8, 8)
        out, device_out = model(images), device_model(images.to(device))
        self.assertEqual(reference(device_out), out, atol=1e-5, rtol=1e-4)
        out.sum().backward()
        device_out.sum().backward()
        self.assertEqual(reference(device_model[0].weight.grad), model[0].weight.grad, atol=1e-4, rtol=1e-4)
        self.assertEqual(reference(device_model[3].running_mean), model[3].running_mean)

    def test_training_matches_cpu(self, device):
        torch.manual_seed(2)
        model = nn.Sequential(nn.Embedding(20, 8), nn.Flatten(), nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 5))
        device_model = copy.deepcopy(model).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        device_optimizer = torch.optim.Adam(device_model.parameters(), lr=1e-2)
        tokens = torch.randint(0, 20, (12, 4))
        labels = torch.randint(0, 5, (12,))
        for _ in range(5):
            for net, opt, x, y in (
                (model, optimizer, tokens, labels),
                (device_model, device_optimizer, tokens.to(device), labels.to(device)),
            ):
                opt.zero_grad()
                loss = F.cross_entropy(net(x), y)
                loss.backward()
                opt.step()
        for p, device_p in zip(model.parameters(), device_model.parameters()):
            self.assertEqual(reference(device_p), p, atol=1e-5, rtol=1e-5)

    def test_out_and_inplace_variants(self, device):
        a, b = torch.randn(4, 5), torch.randn(4, 5)
        out = torch.empty(0, device=device)
        torch.add(a.to(device), b.to(device), alpha=2, out=out)
        self.assertEqual(out.shape, (4, 5))
        self.assertEqual(reference(out), torch.add(a, b, alpha=2))
        da = a.to(device)
        da.mul_(b.to(device)).sub_(1)
        self.assertEqual(reference(da), a * b - 1)
        with self.assertRaisesRegex(RuntimeError, "size of tensor a .* must match"):
            torch.ones(3, device=device) + torch.ones(4, device=device)

    def test_data_dependent_outputs(self, device):
        x = torch.tensor([3.0, 0.0, -1.0, 3.0, 5.0, 0.0])
        dx = x.to(device)
        self.assertEqual(reference(dx.nonzero()), x.nonzero())
        self.assertEqual(reference(dx[dx > 0]), x[x > 0])
        self.assertEqual(reference(torch.masked_select(dx, dx < 1)), torch.masked_select(x, x < 1))
        self.assertEqual(reference(torch.unique(dx)), torch.unique(x))
        self.assertTrue(torch.equal(dx, dx.clone()))
        self.assertEqual(reference(dx.sort().values), x.sort().values)
        self.assertEqual(reference(torch.cat([dx, dx[:2]])), torch.cat([x, x[:2]]))
        self.assertEqual([reference(t) for t in dx.split(4)], list(x.split(4)))

    def test_embedding_bag(self, device):
        torch.manual_seed(4)
        bag = nn.EmbeddingBag(10, 4, mode="mean")
        device_bag = copy.deepcopy(bag).to(device)
        indices, offsets = torch.tensor([1, 2, 3, 4, 9]), torch.tensor([0, 2])
        out = bag(indices, offsets)
        device_out = device_bag(indices.to(device), offsets.to(device))
        self.assertEqual(reference(device_out), out)
        out.sum().backward()
        device_out.sum().backward()
        self.assertEqual(reference(device_bag.weight.grad), bag.weight.grad)

    def test_random_sampling_follows_the_device_generator(self, device):
        torch.mydev.manual_seed(42)
        first = reference(torch.randn(100, device=device))
        state = torch.mydev.get_rng_state()
        second = reference(torch.rand(100, device=device))
        torch.mydev.set_rng_state(state)
        self.assertEqual(reference(torch.rand(100, device=device)), second)
        torch.mydev.manual_seed(42)
        self.assertEqual(reference(torch.randn(100, device=device)), first)
        generator = torch.Generator(device=device).manual_seed(5)
        drawn = reference(torch.randint(0, 100, (50,), device=device, generator=generator))
        generator.manual_seed(5)
        self.assertEqual(reference(torch.randint(0, 100, (50,), device=device, generator=generator)), drawn)
        self.assertTrue(0 < first.std() < 2)
        dropped = F.dropout(torch.ones(1000, device=device), p=0.5)
        self.assertTrue(300 < int((reference(dropped) == 0).sum()) < 700)

    @parametrize("loss", [F.mse_loss, F.smooth_l1_loss], name_fn=lambda loss: loss.__name__)
    @parametrize("reduction", ["mean", "sum", "none"])
    def test_reducing_losses(self, device, loss, reduction):
        torch.manual_seed(6)
        inputs, target = torch.randn(64, 3, requires_grad=True), torch.randn(64, 3)
        device_inputs = inputs.detach().to(device).requires_grad_()
        out, device_out = loss(inputs, target, reduction=reduction), loss(device_inputs, target.to(device),
                                                                          reduction=reduction)
        self.assertEqual(reference(device_out), out)
        out.sum().backward()
        device_out.sum().backward()
        self.assertEqual(reference(device_inputs.grad), inputs.grad)

    @parametrize("reduction", [0, 1, 2], name_fn=lambda reduction: ["none", "mean", "sum"][reduction])
    def test_regression_losses_are_native_and_match_the_cpu(self, device, reduction):
        # Broadcasting, a transposed input, 0-dim and empty inputs, reduced precision; the backward also with mixed
        # dtypes (promoted, then cast to grad_input) and an out= tensor of the wrong size (resized, as on the CPU).
        cases = [((5, 7), (5, 7), torch.float32), ((3, 1), (3, 4), torch.float64), ((), (), torch.bfloat16),
                 ((0, 3), (0, 3), torch.float16), ((6, 4), (4, 6), torch.float32)]
        for input_shape, target_shape, dtype in cases:
            input, target = torch.randn(input_shape, dtype=dtype), torch.randn(target_shape, dtype=dtype)
            if input_shape == (6, 4):
                input = input.t()
            grad = torch.randn(torch.broadcast_shapes(input.shape, target.shape) if reduction == 0 else (), dtype=dtype)
            calls = {
                "mse_loss": lambda i, t, g: torch.ops.aten.mse_loss(i, t, reduction),
                "smooth_l1_loss": lambda i, t, g: torch.ops.aten.smooth_l1_loss(i, t, reduction, 0.5),
                "mse_loss_backward": lambda i, t, g: torch.ops.aten.mse_loss_backward(g, i, t, reduction),
                "mixed dtypes": lambda i, t, g: torch.ops.aten.mse_loss_backward(g.double(), i, t.double(), reduction),
                "out=": lambda i, t, g: torch.ops.aten.mse_loss_backward.grad_input(
                    g, i, t, reduction, grad_input=torch.empty(2, dtype=dtype, device=i.device)),
                "smooth_l1_loss_backward": lambda i, t, g: torch.ops.aten.smooth_l1_loss_backward(
                    g, i, t, reduction, 0.5),
                "smooth_l1_loss_backward mixed dtypes": lambda i, t, g: torch.ops.aten.smooth_l1_loss_backward(
                    g.double(), i, t.double(), reduction, 0.5),
                "smooth_l1_loss_backward out=": lambda i, t, g: torch.ops.aten.smooth_l1_loss_backward.grad_input(
                    g, i, t, reduction, 0.5, grad_input=torch.empty(2, dtype=dtype, device=i.device)),
            }
            for name, call in calls.items():
                expected = call(input, target, grad)
                with fallback_policy("error"):
                    actual = call(input.to(device), target.to(device), grad.to(device))
                self.assertEqual((actual.dtype, actual.shape, actual.stride()),
                                 (expected.dtype, expected.shape, expected.stride()), msg=name)
                self.assertEqual(actual.cpu(), expected, atol=0, rtol=0, equal_nan=True, msg=name)

    def test_regression_losses_raise_the_cpu_errors_at_the_call(self, device):
        calls = {
            "integer mse_loss": lambda where: torch.ops.aten.mse_loss(
                torch.ones(3, dtype=torch.long, device=where), torch.ones(3, dtype=torch.long, device=where), 1),
            "complex smooth_l1_loss": lambda where: torch.ops.aten.smooth_l1_loss(
                torch.ones(3, dtype=torch.cfloat, device=where), torch.ones(3, dtype=torch.cfloat, device=where), 0, 1.),
            "negative beta": lambda where: torch.ops.aten.smooth_l1_loss(
                torch.ones(3, device=where), torch.ones(3, device=where), 1, -1.),
            "shapes": lambda where: torch.ops.aten.mse_loss(torch.ones(3, device=where), torch.ones(4, device=where), 0),
            "bool backward": lambda where: torch.ops.aten.mse_loss_backward(
                *(torch.ones(3, dtype=torch.bool, device=where),) * 3, 1),
            "bool smooth_l1_loss backward": lambda where: torch.ops.aten.smooth_l1_loss_backward(
                *(torch.ones(3, dtype=torch.bool, device=where),) * 3, 1, 1.),
            "integer backward over no elements": lambda where: torch.ops.aten.mse_loss_backward(
                *(torch.ones(0, dtype=torch.long, device=where),) * 3, 1),
            "integer smooth_l1_loss backward over no elements": lambda where: torch.ops.aten.smooth_l1_loss_backward(
                *(torch.ones(0, dtype=torch.long, device=where),) * 3, 1, 1.),
        }
        for name, call in calls.items():
            with self.assertRaises(Exception) as cpu_error:
                call("cpu")
            with self.assertRaisesRegex(type(cpu_error.exception), re.escape(str(cpu_error.exception).splitlines()[0])):
                call(device)

    def test_functional_fallback_operators_fill_new_device_outputs(self, device):
        # Functional operators without a mydev kernel: outputs sized by the
        # Meta pass, filled from the CPU kernel's result on the stream; dtype
        # changes, several outputs, non-contiguous inputs.
        generator = torch.Generator().manual_seed(3)
        x = torch.randn(6, 5, generator=generator)
        z = torch.randn(6, 5, dtype=torch.complex64, generator=generator)
        calls = {
            "flip": lambda t, c: torch.flip(t.t(), [0, 1]),
            "angle": lambda t, c: torch.angle(c),
            "abs_complex": lambda t, c: torch.abs(c),
            "aminmax": lambda t, c: torch.aminmax(t, dim=1),
            "cummax": lambda t, c: torch.cummax(t, dim=0),
            "dot": lambda t, c: torch.dot(t[0], t[1]),
            "cdist": lambda t, c: torch.cdist(t, t[:3]),
            "logcumsumexp": lambda t, c: torch.logcumsumexp(t, 1),
        }
        for name, call in calls.items():
            expected = call(x, z)
            actual = call(x.to(device), z.to(device))
            expected = expected if isinstance(expected, tuple) else (expected,)
            actual = actual if isinstance(actual, tuple) else (actual,)
            for got, want in zip(actual, expected):
                self.assertEqual(got.device.type, "mydev", msg=name)
                self.assertEqual(got.cpu(), want, msg=name)

    def test_losses_print_no_resize_warning(self, device):
        # The warning would come from the stream worker, through c10's stderr
        # handler, so only the process's stderr shows it.
        result = run_python(
            """
            import torch
            import torch.nn.functional as F
            a, b = torch.randn(512, 1, device="mydev"), torch.randn(512, 1, device="mydev")
            print(F.mse_loss(a, b).item() > 0, F.smooth_l1_loss(a, b).item() > 0)
            """
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["True", "True"])
        self.assertNotIn("was resized", result.stderr)

    def test_kernel_warnings_reach_python(self, device):
        # index_reduce_ warns from inside ATen's CPU kernel, which runs on the
        # stream worker; the warning is issued again on the next host call.
        index, source = torch.tensor([0, 1], device=device), torch.full((2,), 3.0, device=device)
        with set_warn_always_context(True):
            with self.assertWarnsRegex(UserWarning, "index_reduce\\(\\) is in beta"):
                out = torch.ones(4, device=device).index_reduce_(0, index, source, "prod")
                result = reference(out)
        self.assertEqual(result, torch.tensor([3.0, 3.0, 1.0, 1.0]))


    @parametrize("layer", ["LSTM", "GRU"])
    def test_recurrent_layers_match_cpu(self, device, layer):
        # ATen runs these through the fused cells (_thnn_fused_lstm_cell /
        # _thnn_fused_gru_cell) on every accelerator; mydev implements them.
        torch.manual_seed(0)
        module = getattr(nn, layer)(5, 7, num_layers=2, batch_first=True)
        device_module = copy.deepcopy(module).to(device)
        inputs = torch.randn(3, 4, 5)
        state = torch.randn(2, 3, 7, requires_grad=True)
        device_state = state.detach().to(device).requires_grad_()
        if layer == "LSTM":
            cell = torch.randn(2, 3, 7)
            out, (h, c) = module(inputs, (state, cell))
            device_out, (device_h, device_c) = device_module(inputs.to(device), (device_state, cell.to(device)))
            loss, device_loss = out.sum() + c.square().sum(), device_out.sum() + device_c.square().sum()
        else:
            out, h = module(inputs, state)
            device_out, device_h = device_module(inputs.to(device), device_state)
            loss, device_loss = out.sum() + h.square().sum(), device_out.sum() + device_h.square().sum()
        self.assertEqual(reference(device_out), out)
        self.assertEqual(reference(device_h), h)
        loss.backward()
        device_loss.backward()
        self.assertEqual(reference(device_state.grad), state.grad)
        for (name, parameter), device_parameter in zip(module.named_parameters(), device_module.parameters()):
            self.assertEqual(reference(device_parameter.grad), parameter.grad, msg=name)

    @parametrize("factory", [
        ("arange", lambda d: torch.arange(10, device=d)),
        ("arange_float_step", lambda d: torch.arange(1.5, 7.2, 0.3, device=d)),
        ("arange_half", lambda d: torch.arange(0, 10, 3, device=d, dtype=torch.float16)),
        ("arange_negative_step", lambda d: torch.arange(10, 0, -1.5, device=d, dtype=torch.float64)),
        ("arange_strided_out", lambda d: torch.arange(10, out=torch.empty(10, 2, device=d)[:, 0])),
        ("linspace", lambda d: torch.linspace(-3, 5, 17, device=d)),
        ("linspace_one_step_int", lambda d: torch.linspace(-3, 5, 1, device=d, dtype=torch.int32)),
        ("logspace", lambda d: torch.logspace(0, 2, 9, device=d)),
        ("logspace_complex", lambda d: torch.logspace(0, 2, 9, base=2, device=d, dtype=torch.complex64)),
        ("range", lambda d: torch.range(0, 4, 0.5, device=d)),
        ("arange_zero_step", lambda d: torch.arange(0, 10, 0, device=d)),
        ("arange_wrong_sign", lambda d: torch.arange(0, 10, -1, device=d)),
        ("arange_bool", lambda d: torch.arange(0, 5, device=d, dtype=torch.bool)),
        ("linspace_negative_steps", lambda d: torch.linspace(0, 1, -1, device=d)),
    ], name_fn=lambda factory: factory[0])
    def test_range_factories_are_native_and_match_the_cpu(self, device, factory):
        _, make = factory
        try:
            expected = make("cpu")
        except Exception as error:  # the same error, raised at the call
            with self.assertRaises(type(error)) as raised, fallback_policy("error"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                make(device)
            self.assertEqual(str(raised.exception), str(error))
            return
        with fallback_policy("error"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.assertEqual(make(device).cpu(), expected, atol=0, rtol=0)

    def test_arange_into_a_wrong_sized_out_warns_like_the_cpu(self, device):
        with self.assertWarnsRegex(UserWarning, "does not match the computed number of elements 10"):
            out = torch.arange(10, out=torch.empty(3, device=device))
        self.assertEqual(out.cpu(), torch.arange(10.0))

    def test_out_arguments_must_be_on_the_device_even_0_dim(self, device):
        # A 0-dim CPU tensor is accepted as an input scalar (as on CUDA), never as an output.
        values = torch.tensor([0, 1, 1, 0, 2], device=device)
        with self.assertRaisesRegex(RuntimeError, "Expected all tensors to be on the same device.*nonzero.out"):
            torch.nonzero(values, out=torch.empty([], dtype=torch.long))
        with self.assertRaisesRegex(RuntimeError, "scalar type Long"):
            torch.nonzero(values, out=torch.empty([], dtype=torch.float, device=device))
        out = torch.empty([], dtype=torch.long, device=device)
        torch.nonzero(values, out=out)
        self.assertEqual(out.cpu(), torch.tensor([[1], [2], [4]]))

    def test_quantized_results_are_refused_not_converted(self, device):
        x = torch.arange(6.0, device=device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # quantize_per_tensor's deprecation warning
            with self.assertRaisesRegex(NotImplementedError, "quantize_per_tensor returns a quantized tensor"):
                torch.quantize_per_tensor(x, 0.1, 5, torch.quint8)
        self.assertEqual(x.sum().item(), 15.0)  # nothing pending on the stream

    def test_uint8_mask_warns_once_at_the_call(self, device):
        values = torch.arange(12.0, device=device).view(4, 3)
        mask = torch.tensor([1, 0, 1, 1], dtype=torch.uint8, device=device)
        for name, call in [
            ("index", lambda: values[mask]),
            ("index_put_", lambda: values.index_put_((mask,), torch.ones(3, 3, device=device), accumulate=True)),
            ("setitem", lambda: values.__setitem__(mask, torch.zeros(3, device=device))),
        ]:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                call()
                self.assertEqual(len(caught), 1, msg=name)
            self.assertIn("uint8 is now deprecated", str(caught[0].message))
        torch.mydev.synchronize()
        expected = torch.arange(12.0).view(4, 3)
        expected[torch.tensor([True, False, True, True])] = 0
        self.assertEqual(values.cpu(), expected)

    def test_index_put_checks_shapes_at_the_call(self, device):
        x = torch.zeros(4, 3, device=device)
        index = torch.tensor([0, 2], device=device)
        with self.assertRaisesRegex(RuntimeError, r"shape mismatch: value tensor of shape \[5, 1, 3\] cannot be "
                                                  r"broadcast to indexing result of shape \[2, 3\]"):
            x[index] = torch.ones(5, 1, 3, device=device)
        with self.assertRaisesRegex(IndexError, "too many indices for tensor of dimension 2"):
            x.index_put_((index, index, index), torch.ones(2, device=device))
        with self.assertRaisesRegex(IndexError, "indexing tensors could not be broadcast together"):
            x.index_put_((index, torch.tensor([0, 1, 2], device=device)), torch.ones(1, device=device))
        with self.assertRaisesRegex(RuntimeError, "Index put requires the source and destination dtypes match"):
            x[index] = torch.ones(2, 3, device=device, dtype=torch.float64)
        with self.assertRaises(RuntimeError):
            torch.rand([], device=device).index_put([], torch.tensor([1.0], device=device), True)
        torch.mydev.synchronize()  # nothing failed on the stream
        # Non-adjacent indices move the indexed dimension to the front, as on the CPU.
        cube, cpu_cube = torch.zeros(2, 3, 4, device=device), torch.zeros(2, 3, 4)
        i, k = torch.tensor([0, 1]), torch.tensor([3, 0])
        cube[i.to(device), :, k.to(device)] = torch.arange(6.0, device=device).view(2, 3)
        cpu_cube[i, :, k] = torch.arange(6.0).view(2, 3)
        self.assertEqual(cube.cpu(), cpu_cube)

    def test_index_fill_checks_its_value_at_the_call(self, device):
        x = torch.tensor([[1.0, 2.0], [4.0, 5.0]], device=device)
        index = torch.tensor([0], device=device)
        with self.assertRaisesRegex(RuntimeError, "Converting complex Scalar to non-complex type"):
            x.index_fill_(1, index, 1 + 1j)
        with self.assertRaisesRegex(IndexError, "Expected dtype int64 for index"):
            x.index_fill_(1, index.int(), 0)
        x.index_fill_(1, index, torch.tensor(-1.0, device=device))
        self.assertEqual(x.cpu(), torch.tensor([[-1.0, 2.0], [-1.0, 5.0]]))
        scalar = torch.tensor(1.0, device=device)
        self.assertEqual(scalar.index_fill(0, index, -1).dim(), 0)

    def test_deterministic_mode_applies_to_the_kernels_queued_under_it(self, device):
        # Duplicate indices: the deterministic index_copy keeps the last source row, as on the CPU.
        generator = torch.Generator().manual_seed(0)
        x, source = torch.zeros(50, 3), torch.rand(400, 3, generator=generator)
        index = torch.randint(50, (400,), generator=generator)
        with DeterministicGuard(True):
            expected = torch.index_copy(x, 0, index, source)
            actual = torch.index_copy(x.to(device), 0, index.to(device), source.to(device))
        self.assertEqual(actual.cpu(), expected, atol=0, rtol=0)

    def test_mode_runs_on_the_device_with_out_and_checks_at_the_call(self, device):
        x = torch.tensor([[1.0, 2.0, 2.0, 5.0], [3.0, 3.0, 1.0, 1.0]])
        values, indices = torch.empty(0, device=device), torch.empty(0, device=device, dtype=torch.long)
        torch.mode(x.to(device), 1, out=(values, indices))
        expected = torch.mode(x, 1)
        self.assertEqual((values.cpu(), indices.cpu()), (expected.values, expected.indices))
        self.assertEqual(torch.mode(x.to(device), 0, keepdim=True).values.cpu(), torch.mode(x, 0, keepdim=True).values)
        with self.assertRaisesRegex(RuntimeError, "expected scalar type Float but got Long for values"):
            torch.mode(x.to(device), 1, out=(indices, indices))
        with self.assertRaisesRegex(IndexError, "Expected reduction dim 1 to have non-zero size"):
            torch.mode(torch.empty(2, 0, device=device), 1)

    def test_reductions_whose_meta_kernel_is_lax_check_at_the_call(self, device):
        with self.assertRaisesRegex(IndexError, r"median\(\): Expected reduction dim 1 to have non-zero size"):
            torch.median(torch.empty(2, 0, device=device), 1)
        with self.assertRaisesRegex(RuntimeError, "boundaries tensor must be 1 dimension"):
            torch.bucketize(torch.ones(3, device=device), torch.ones(2, 2, device=device))
        with self.assertRaisesRegex(RuntimeError, "output tensor.s dtype is wrong"):
            torch.searchsorted(torch.arange(5.0, device=device), torch.ones(3, device=device),
                               out=torch.empty(3, device=device))
        with self.assertRaisesRegex(RuntimeError, "range of .* is not finite"):
            torch.histc(torch.ones(3, device=device), min=0, max=float("inf"))
        with self.assertRaisesRegex(NotImplementedError, "\"aminmax_cpu\" not implemented for 'ComplexFloat'"):
            torch.aminmax(torch.ones((), dtype=torch.complex64, device=device))
        # An empty dim list reduces everything, as on the CPU (the Meta kernel reduces nothing).
        self.assertEqual(torch.nansum(torch.ones(2, 2, device=device), dim=[]).cpu(), torch.tensor(4.0))
        torch.mydev.synchronize()

    def test_frexp_checks_dtypes_at_the_call(self, device):
        # frexp's Meta kernel checks neither the input's nor the outputs' dtypes.
        x = torch.randn(4, 4)
        with self.assertRaisesRegex(RuntimeError, r"torch\.frexp\(\) only supports floating-point dtypes"):
            torch.frexp(torch.ones(3, dtype=torch.int64, device=device))
        mantissa = torch.empty(4, 4, dtype=torch.float64, device=device)
        exponent = torch.empty(4, 4, dtype=torch.int32, device=device)
        with self.assertRaisesRegex(RuntimeError, r"torch\.frexp\(\) expects mantissa to have dtype float"):
            torch.frexp(x.to(device), out=(mantissa, exponent))
        torch.mydev.synchronize()
        expected = torch.frexp(x)
        actual = torch.frexp(x.to(device))
        self.assertEqual((actual.mantissa.cpu(), actual.exponent.cpu()), (expected.mantissa, expected.exponent))

    @parametrize("reduce", [torch.var, torch.std, torch.var_mean, torch.std_mean], name_fn=lambda f: f.__name__)
    @dtypes(torch.float32, torch.complex64)
    def test_variance_warns_at_the_call_and_matches_the_cpu(self, device, dtype, reduce):
        x = torch.randn(10, 20, dtype=dtype)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with fallback_policy("error"):
                reduce(x.to(device), dim=-1, correction=20)
            at_call = len(caught)
            torch.mydev.synchronize()
        self.assertEqual(at_call, 2 if dtype.is_complex else 1)  # the CPU warns once per real component
        self.assertEqual(len(caught), at_call)
        self.assertIn("degrees of freedom is <= 0", str(caught[0].message))
        for dim in [None, 0, (0, 1), []]:
            self.assertEqual(reduce(x.to(device), dim=dim, keepdim=True), reduce(x, dim=dim, keepdim=True))

    def test_dropout_uses_the_device_generator(self, device):
        x = torch.randn(4000)
        torch.manual_seed(5)
        host_state, device_state = torch.get_rng_state(), torch.mydev.get_rng_state()
        out = F.dropout(x.to(device), 0.3, training=True).cpu()
        self.assertEqual(torch.get_rng_state(), host_state)
        self.assertNotEqual(torch.mydev.get_rng_state(), device_state)
        # Each element is dropped or scaled by 1 / (1 - p); about p of them are dropped.
        kept = out != 0
        self.assertEqual(out[kept], x[kept] / 0.7)
        self.assertTrue(0.27 < 1 - kept.float().mean().item() < 0.33)
        torch.manual_seed(5)
        self.assertEqual(F.dropout(x.to(device), 0.3, training=True).cpu(), out)
        self.assertEqual(F.dropout(x.to(device), 0.3, training=False).cpu(), x)

    def test_dropout_of_everything_returns_zeros_without_drawing(self, device):
        # CUDA's native_dropout returns zeros and an all-false mask for p = 1 and
        # draws nothing; the CPU's formula gives NaN for an infinite input.
        x = torch.tensor([1.0, -2.0, float("inf"), float("nan")], device=device)
        state = torch.mydev.get_rng_state()
        out, mask = torch.native_dropout(x, 1.0, True)
        self.assertEqual(out.cpu(), torch.zeros(4), atol=0, rtol=0)
        self.assertEqual(mask.cpu(), torch.zeros(4, dtype=torch.bool))
        self.assertEqual(torch.mydev.get_rng_state(), state)

    def test_dropout_backward_is_native_and_uses_the_forward_mask(self, device):
        for dtype in (torch.float32, torch.float64, torch.bfloat16):
            x = torch.randn(64, 8, dtype=dtype).abs() + 1
            leaf = x.to(device, copy=True).requires_grad_()
            with fallback_policy("error"):
                out = F.dropout(leaf, 0.25, training=True)
                out.sum().backward()
            # The backward pass uses the forward's mask: an element's gradient is 0 where it was dropped, else the
            # scale 1 / (1 - p).
            mask = (out.detach().cpu() != 0).to(dtype)
            self.assertEqual(leaf.grad.cpu(), torch.ones_like(x) * mask * (1 / 0.75), atol=0, rtol=0)
            self.assertEqual(out.detach().cpu(), x * mask * (1 / 0.75))
        grad, mask = torch.randn(4, 3), torch.rand(4, 3) > 0.5
        for mask_form in (mask, mask[:1]):
            expected = torch.ops.aten.native_dropout_backward(grad, mask_form, 2.0)
            with fallback_policy("error"):
                actual = torch.ops.aten.native_dropout_backward(grad.to(device), mask_form.to(device), 2.0)
            self.assertEqual(actual.cpu(), expected, atol=0, rtol=0)
            self.assertEqual(actual.dtype, expected.dtype)

    def test_empty_tensors_in_one_kernel_are_distinct_storages(self, device):
        # Zero-byte storages have no device address; a kernel must not see them as one storage.
        a = torch.randn(5, 0)
        q, r = torch.linalg.qr(a.to(device))
        expected_q, expected_r = torch.linalg.qr(a)
        self.assertEqual(q.cpu(), expected_q)
        self.assertEqual(r.cpu(), expected_r)

    def test_asynchronous_kernel_errors_keep_their_exception_class(self, device):
        # The CPU raises IndexError for an index its kernel finds out of range;
        # on mydev the same kernel fails on the stream and surfaces at the sync.
        with self.assertRaisesRegex(IndexError, "index out of range in self"):
            torch.index_select(torch.ones(3), 0, torch.tensor([5]))
        device_x = torch.ones(3, device=device)
        # A valid call first: the first launch of a signature without a probe waits for its kernel, and would raise
        # the kernel's error at the call (tests/test_bad_input.py).
        torch.index_select(device_x, 0, torch.tensor([1], device=device))
        selected = torch.index_select(device_x, 0, torch.tensor([5], device=device))
        self.assertEqual(selected.shape, (1,))
        with self.assertRaisesRegex(IndexError, "kernel 'aten::index_select.out' failed on mydev:0: index out of range"):
            torch.mydev.synchronize()
        self.assertEqual(torch.ones(2, device=device).sum().item(), 2.0)

    def test_where_result_follows_the_inputs_layout_as_on_the_cpu(self, device):
        generator = torch.Generator().manual_seed(0)
        permuted = torch.randn(2, 3, 4, generator=generator).permute(2, 0, 1)
        channels_last = torch.randn(2, 3, 4, 5, generator=generator).to(memory_format=torch.channels_last)
        other = torch.randn(4, 2, 3, generator=generator)
        cases = [
            lambda a, c, o: torch.where(a > 0, a, 0.0),
            lambda a, c, o: torch.where(c > 0, c, -c),
            lambda a, c, o: torch.where(a > 0, a, o),
            lambda a, c, o: torch.where(torch.tensor(True), a, 1),  # a CPU 0-dim condition
            lambda a, c, o: torch.where(o > 0, o.long(), 2.5),  # type promotion
        ]
        for case in cases:
            expected = case(permuted, channels_last, other)
            actual = case(permuted.to(device), channels_last.to(device), other.to(device))
            self.assertEqual(actual.stride(), expected.stride())
            self.assertEqual(actual.cpu(), expected, atol=0, rtol=0)

    def test_max_and_min_of_no_element_raise_at_the_call(self, device):
        for reduction in (torch.max, torch.min):
            with self.assertRaisesRegex(RuntimeError, r"Expected reduction dim to be specified for input.numel\(\) == 0"):
                reduction(torch.empty(0, 3, device=device))
        torch.mydev.synchronize()  # nothing left to report
        self.assertEqual(torch.tensor([[2.0, -1.0]], device=device).max().item(), 2.0)

    def test_kaiser_window_fills_through_the_stub_slot(self, device):
        # ATen's composite calls kaiser_window_stub directly on the device tensor
        for args in ((7,), (8, False, 5.0)):
            for dtype in (torch.float32, torch.float64):
                self.assertEqual(torch.kaiser_window(*args, device=device, dtype=dtype).cpu(),
                                 torch.kaiser_window(*args, dtype=dtype), atol=0, rtol=0)

    def test_dtypes_with_few_cpu_kernels_raise_at_the_call(self, device):
        # For uint16/32/64, float8 and complex32 the CPU has only some kernels:
        # a missing one raises at the call on the CPU and on CUDA, and so on mydev.
        cases = {
            "add (native)": (torch.uint16, lambda t: t + t),
            "abs (native)": (torch.uint64, lambda t: t.abs()),
            "sum (native)": (torch.float8_e4m3fn, lambda t: t.sum()),
            "cumsum (fallback)": (torch.complex32, lambda t: t.cumsum(0)),
            "prod with dtype= (fallback)": (torch.int32, lambda t: torch.prod(t, dtype=torch.uint64)),
            "conversion (copy)": (torch.bits16, lambda t: t.to(torch.float32)),
            "fill_ (fill)": (torch.bits8, lambda t: t.fill_(1)),
        }
        for name, (dtype, operation) in cases.items():
            with self.subTest(name):
                cpu = torch.ones(3, dtype=dtype) if dtype.is_floating_point or dtype.is_complex or dtype in (
                    torch.uint16, torch.uint64, torch.int32) else torch.empty(3, dtype=dtype)
                with self.assertRaisesRegex(NotImplementedError, "not implemented for") as on_cpu:
                    operation(cpu)
                # the kernel's name may differ (fill_ converts the value on the host first): the dtype may not
                missing_for = re.search(r"not implemented for '\w+'", str(on_cpu.exception)).group(0)
                with self.assertRaisesRegex(NotImplementedError, missing_for):
                    operation(cpu.to(device))
                torch.mydev.synchronize()  # nothing left to report
        # zero_ has kernels for every dtype, the bit types included, as on the CPU
        for dtype in (torch.bits8, torch.bits16, torch.float4_e2m1fn_x2, torch.int4):
            zeros = torch.zeros(2, 3, dtype=dtype, device=device)
            self.assertEqual(zeros.cpu().view(torch.uint8 if dtype.itemsize == 1 else torch.int16),
                             torch.zeros(2, 3, dtype=torch.uint8 if dtype.itemsize == 1 else torch.int16))
        # the kernels the CPU has give the CPU's values
        for dtype in (torch.uint16, torch.uint32, torch.uint64):
            cpu = torch.arange(5, dtype=torch.int64).to(dtype)
            on_device = cpu.to(device)
            self.assertEqual((on_device * on_device).cpu().to(torch.int64), (cpu * cpu).to(torch.int64))
            self.assertEqual(on_device.cumsum(0).cpu().to(torch.int64), cpu.cumsum(0).to(torch.int64))
            other = torch.tensor([4, 1, 2, 0, 4]).to(dtype)
            self.assertEqual((on_device == other.to(device)).cpu(), cpu == other)

    @parametrize("mask", ["none", "causal", "boolean", "additive"])
    def test_attention_matches_cpu_bit_for_bit(self, device, mask):
        # mydev takes the CPU's own flash kernels where the CPU does (Attention.cpp).
        generator = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(2, 4, 8, 16, generator=generator, requires_grad=True) for _ in range(3))
        attn_mask = {"boolean": torch.rand(8, 8, generator=generator) > 0.3,
                     "additive": torch.randn(8, 8, generator=generator)}.get(mask)
        kwargs = dict(is_causal=mask == "causal")
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, **kwargs)
        dq, dk, dv = (t.detach().to(device).requires_grad_() for t in (q, k, v))
        device_mask = None if attn_mask is None else attn_mask.to(device)
        device_out = F.scaled_dot_product_attention(dq, dk, dv, attn_mask=device_mask, **kwargs)
        self.assertEqual(device_out.cpu(), out, atol=0, rtol=0)
        grad = torch.randn(out.shape, generator=generator)
        out.backward(grad)
        device_out.backward(grad.to(device))
        for device_input, cpu_input in ((dq, q), (dk, k), (dv, v)):
            self.assertEqual(device_input.grad.cpu(), cpu_input.grad, atol=0, rtol=0)

    def test_attention_with_dropout_uses_the_device_generator(self, device):
        q = torch.randn(1, 2, 6, 8)
        torch.manual_seed(1)
        first = F.scaled_dot_product_attention(q.to(device), q.to(device), q.to(device), dropout_p=0.5)
        torch.manual_seed(1)
        second = F.scaled_dot_product_attention(q.to(device), q.to(device), q.to(device), dropout_p=0.5)
        self.assertEqual(first.cpu(), second.cpu(), atol=0, rtol=0)
        self.assertNotEqual(first.cpu(), F.scaled_dot_product_attention(q, q, q))

    def test_attention_backend_selection_follows_the_cpu(self, device):
        # sdpa_kernel restricts mydev's choice as it restricts the CPU's: the fused kernel answers to FLASH_ATTENTION,
        # which refuses dropout; a selection nothing enabled can run raises the CPU's error.
        q = torch.randn(1, 2, 6, 8)
        for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION):
            for dropout_p in (0.0, 0.5):
                outcomes = []
                for on in ("cpu", device):
                    try:
                        with sdpa_kernel(backend), warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            torch.manual_seed(0)
                            out = F.scaled_dot_product_attention(q.to(on), q.to(on), q.to(on), dropout_p=dropout_p)
                        outcomes.append(out.shape)
                    except RuntimeError as error:
                        outcomes.append(str(error).splitlines()[0])
                self.assertEqual(outcomes[0], outcomes[1], msg=f"{backend} with dropout {dropout_p}")
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            self.assertEqual(F.scaled_dot_product_attention(q.to(device), q.to(device), q.to(device)).cpu(),
                             F.scaled_dot_product_attention(q, q, q), atol=0, rtol=0)

    def test_in_place_results_are_not_broadcast_to_a_new_shape(self, device):
        small, large = torch.zeros(4, 4, dtype=torch.bool), torch.ones(1, 4, 4, dtype=torch.bool)
        with self.assertRaisesRegex(RuntimeError, r"output with shape \[4, 4\] doesn't match the broadcast shape"):
            small.logical_and_(large)
        device_small = small.to(device)
        with self.assertRaisesRegex(RuntimeError, r"output with shape \[4, 4\] doesn't match the broadcast shape"):
            device_small.logical_and_(large.to(device))
        self.assertEqual(device_small.shape, (4, 4))

    @parametrize("op", ["add_", "sub_", "mul_", "div_"])
    def test_native_in_place_arithmetic_matches_the_cpu(self, device, op):
        # add_/sub_/mul_/div_ have their own mydev kernels (one meta pass):
        # values on a transposed self with a broadcast operand, and the CPU's
        # errors for a self that cannot hold the result.
        base = torch.arange(1.0, 7.0).view(2, 3).t()
        other = torch.tensor([[2.0], [4.0], [8.0]])
        extra = {"alpha": 3} if op in ("add_", "sub_") else {}
        expected = getattr(base.clone(), op)(other, **extra)
        device_base = base.to(device)
        result = getattr(device_base, op)(other.to(device), **extra)
        self.assertIs(result, device_base)
        self.assertEqual(device_base.stride(), (1, 3))
        self.assertEqual(reference(device_base), expected, atol=0, rtol=0)
        with self.assertRaisesRegex(RuntimeError, r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
            getattr(torch.ones(3, device=device), op)(torch.ones(2, 3, device=device), **extra)
        with self.assertRaisesRegex(RuntimeError, "result type Float can't be cast to the desired output type Long"):
            getattr(torch.ones(3, dtype=torch.long, device=device), op)(torch.full((3,), 2.0, device=device), **extra)
        with self.assertRaisesRegex(RuntimeError, "Expected all tensors to be on the same device"):
            getattr(torch.ones(3, device=device), op)(torch.ones(3), **extra)

    @dtypes(torch.int8, torch.int64, torch.bfloat16, torch.float32, torch.complex64, torch.complex128)
    def test_abs_is_native_and_matches_the_cpu(self, device, dtype):
        base = (torch.arange(-6, 6).view(3, 4).t() * 1.5).to(dtype)
        out_dtype = dtype.to_real() if dtype.is_complex else dtype
        with fallback_policy("error"):
            functional = torch.abs(base.to(device))
            in_place = base.to(device)
            if not dtype.is_complex:
                in_place.abs_()
            into = torch.empty(0, dtype=out_dtype, device=device)
            torch.abs(base.to(device), out=into)
        self.assertEqual(reference(functional), torch.abs(base), atol=0, rtol=0)
        self.assertEqual(functional.stride(), torch.abs(base).stride())
        self.assertEqual(reference(into), torch.abs(base), atol=0, rtol=0)
        if not dtype.is_complex:
            self.assertEqual(reference(in_place), torch.abs(base), atol=0, rtol=0)

    def test_abs_raises_the_cpu_errors_at_the_call(self, device):
        cases = [
            (lambda d: torch.abs(torch.ones(3, dtype=torch.bool, device=d)), NotImplementedError,
             "\"abs_cpu\" not implemented for 'Bool'"),
            (lambda d: torch.ones(3, dtype=torch.complex64, device=d).abs_(), RuntimeError,
             "In-place abs is not supported for complex tensors"),
            (lambda d: torch.abs(torch.ones(3, dtype=torch.complex64, device=d),
                                 out=torch.empty(3, dtype=torch.int32, device=d)), RuntimeError,
             "result type Float can't be cast to the desired output type Int"),
            (lambda d: torch.abs(torch.ones(3, device=d), out=torch.empty(3, dtype=torch.int32, device=d)),
             RuntimeError, "Found dtype Int but expected Float"),
        ]
        for call, error, message in cases:
            with self.assertRaisesRegex(error, message):
                call("cpu")
            with self.assertRaisesRegex(error, message):
                call(device)
        torch.mydev.synchronize()

    def test_outputs_the_cpu_kernel_turns_into_conjugate_views(self, device):
        # linalg_lu_solve(left=False) returns a conjugate view on the CPU; on
        # mydev the values must be the same even though the bit stays on the worker.
        generator = torch.Generator().manual_seed(0)
        a = torch.randn(3, 3, dtype=torch.complex64, generator=generator)
        b = torch.randn(4, 3, dtype=torch.complex64, generator=generator)
        lu, pivots = torch.linalg.lu_factor(a)
        expected = torch.linalg.lu_solve(lu, pivots, b, left=False)
        out = torch.linalg.lu_solve(lu.to(device), pivots.to(device), b.to(device), left=False)
        self.assertEqual(out.cpu().resolve_conj(), expected.resolve_conj())

    @dtypes(torch.bfloat16, torch.float16)
    def test_grid_sample_of_large_two_byte_inputs_runs_in_float32(self, device, dtype):
        # ATen's vectorized CPU kernel gathers 2-byte inputs with int16 offsets,
        # which a 200x200 plane overflows (it then reads outside the input).
        theta = torch.tensor([[[0.9, 0.3, 0.05], [-0.3, 0.8, -0.1]]]).expand(2, 2, 3)
        grid = F.affine_grid(theta, (2, 3, 200, 200), align_corners=False)
        image = (torch.arange(2 * 3 * 200 * 200) % 251).reshape(2, 3, 200, 200).float()

        def sample(image, grid):
            image, grid = image.requires_grad_(), grid.requires_grad_()
            out = F.grid_sample(image, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
            return (out, *torch.autograd.grad(out, (image, grid), torch.ones_like(out)))

        got = sample(image.to(device, dtype), grid.to(device, dtype))
        in_float32 = sample(image.to(dtype).float(), grid.to(dtype).float())
        self.assertEqual([t.dtype for t in got], [dtype] * 3)
        for result, expected in zip(got, in_float32):
            self.assertEqual(result.cpu(), expected.to(dtype))
        self.assertFalse(got[0].isnan().any().item())

    def test_results_keep_the_strides_of_the_cpu_kernel(self, device):
        # LAPACK's results are column-major, lstsq's solution a view of a larger buffer: with other strides, later
        # matrix products take other BLAS paths, and lstsq's gradient came out 2e-5 away from the CPU's.
        from torch.testing._internal.common_methods_invocations import op_db

        lstsq = next(op for op in op_db if op.name == "linalg.lstsq" and op.variant_test_name == "")
        sample = list(lstsq.reference_inputs("cpu", torch.float32))[8]
        self.assertEqual(sample.kwargs, {"driver": "gelss"})
        grad_output = torch.randn(3, 3, generator=torch.Generator().manual_seed(1))

        def run(on):
            a = sample.input.to(on).requires_grad_()
            b = sample.args[0].to(on).requires_grad_()
            solution = torch.linalg.lstsq(a, b, driver="gelss").solution
            geometry = (solution.stride(), solution.untyped_storage().nbytes())
            eigenvectors = torch.linalg.eig(sample.input[:3].to(on)).eigenvectors
            gradients = [g.cpu() for g in torch.autograd.grad(solution, (a, b), grad_output.to(on))]
            return geometry, eigenvectors.stride(), gradients

        on_device, on_cpu = run(device), run("cpu")
        self.assertEqual(on_device[:2], on_cpu[:2])
        self.assertEqual(on_device[2], on_cpu[2], atol=0, rtol=0)

    def test_real_to_complex_fft_keeps_the_strides_of_the_cpu_kernel(self, device):
        # For a meta tensor, _fft_r2c's Meta kernel predicts cuFFT's layout, which differs from the CPU's once the
        # transform spans three dims.
        x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(2))
        for dim in [(0, 1, 2), (1, 2), (0,), (2, 0, 1)]:
            expected = torch.fft.rfftn(x, dim=dim)
            actual = torch.fft.rfftn(x.to(device), dim=dim)
            self.assertEqual(actual.stride(), expected.stride(), msg=str(dim))
            self.assertEqual(actual.cpu(), expected, msg=str(dim))

    def test_out_arguments_the_cpu_kernel_grows_keep_its_view_of_the_storage(self, device):
        # lstsq makes a too-small out= solution a column-major view into its grown storage, whose other views see it.
        a = torch.randn(4, 3, generator=torch.Generator().manual_seed(3))
        b = torch.randn(4, 3, generator=torch.Generator().manual_seed(4))

        def run(on):
            base = torch.full((2, 5), 7.0, device=on)
            solution = base[1, :0]
            rest = (torch.empty(0, device=on), torch.empty(0, dtype=torch.int64, device=on), torch.empty(0, device=on))
            torch.linalg.lstsq(a.to(on), b.to(on), driver="gelss", out=(solution, *rest))
            return solution.stride(), solution.storage_offset(), solution.cpu(), base.cpu(), solution.untyped_storage().cpu()

        on_device, on_cpu = run(device), run("cpu")
        self.assertEqual(on_device[:2], on_cpu[:2])
        self.assertEqual(on_device[2:4], on_cpu[2:4], atol=0, rtol=0)
        self.assertEqual(torch.tensor(on_device[4].tolist()), torch.tensor(on_cpu[4].tolist()))


instantiate_device_type_tests(TestMydevOps, globals(), only_for=("privateuse1",))

if __name__ == "__main__":
    run_tests()
