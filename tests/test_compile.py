"""torch.compile on mydev (torch_mydev/inductor): Inductor generates C++ kernels for the device and launches them on
its streams. Compiled results are compared with eager CPU and eager mydev; the generated code is inspected."""
import copy
import importlib.util
import os
import tempfile
import unittest

import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.utils import counters
from torch._inductor import config as inductor_config, metrics
from torch._inductor.compile_fx import compile_fx  # noqa: F401  (importing it registers mydev with Inductor)
from torch._inductor.utils import run_and_get_code
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import parametrize, run_tests, TestCase

from helpers import run_python
from models import TinyBertEncoder, TinyLanguageModel, TinyVisionTransformer
from torch_mydev.inductor import config as mydev_config

# Inductor's kernels vectorise and associate differently from ATen's eager kernels.
COMPILED_TOLERANCE = dict(atol=1e-5, rtol=1e-5)


def host(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    return type(value)(host(v) for v in value)


def moved(values, device):
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


# name -> (function, argument makers); arguments are made on the CPU and copied to each device.
OPERATIONS = {
    "pointwise": (lambda a: a.sin() * 2 + a.exp() - 1, lambda: [torch.randn(16, 32)]),
    "reduction": (lambda a: a.sum(1) + a.amax(0).sum(), lambda: [torch.randn(16, 32)]),
    "large_reduction": (lambda a: a.sum(), lambda: [torch.randn(100_000)]),
    "softmax": (lambda a: a.softmax(-1), lambda: [torch.randn(16, 32)]),
    "layer_norm": (
        lambda a, w, b: F.layer_norm(a, (32,), w, b).relu(),
        lambda: [torch.randn(16, 32), torch.randn(32), torch.randn(32)],
    ),
    "matmul": (lambda a, b: (a @ b).relu() + 1, lambda: [torch.randn(16, 32), torch.randn(32, 8)]),
    "conv": (
        lambda a, w: F.conv2d(a, w, padding=1).relu(),
        lambda: [torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)],
    ),
    "views": (lambda a: a.t().reshape(8, 64)[:, ::2].contiguous() + 1, lambda: [torch.randn(16, 32)]),
    "gather": (lambda a, i: a.gather(1, i) * 2, lambda: [torch.randn(16, 32), torch.randint(0, 32, (16, 4))]),
    "scatter_add": (
        lambda a, i, s: a.scatter_add(1, i, s),
        lambda: [torch.randn(16, 32), torch.randint(0, 32, (16, 4)), torch.randn(16, 4)],
    ),
    "index": (lambda a, i: a[i] + 1, lambda: [torch.randn(16, 32), torch.tensor([0, 3, 5])]),
    "embedding": (
        lambda i, w: F.embedding(i, w).sum(1),
        lambda: [torch.randint(0, 10, (4, 5)), torch.randn(10, 8)],
    ),
    "integer": (lambda a: (a * 3) // 2 + a % 5, lambda: [torch.randint(-100, 100, (16, 16))]),
    "where_and_masks": (lambda a: torch.where((a > 0) & (a < 1), a, a * 0.1), lambda: [torch.randn(16, 32)]),
    "cat_and_pad": (lambda a, b: F.pad(torch.cat([a, b], 0), (1, 2)).sum(0), lambda: [torch.randn(4, 8)] * 2),
    "cumsum_fallback": (lambda a: a.cumsum(1) * 2, lambda: [torch.randn(16, 32)]),
    "cpu_scalar_tensor": (lambda a, s: a * s + 1, lambda: [torch.randn(16, 32), torch.tensor(3.0)]),
}


class TestCompile(TestCase):
    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    def compile_and_compare(self, function, args, device, tolerance=COMPILED_TOLERANCE, **compile_options):
        expected = function(*moved(args, "cpu"))
        eager_device = function(*moved(args, device))
        compiled = torch.compile(function, **compile_options)(*moved(args, device))
        for result in (compiled if isinstance(compiled, (tuple, list)) else [compiled]):
            if isinstance(result, torch.Tensor) and result.device.type != "cpu":
                self.assertEqual(result.device, torch.device(device))
        self.assertEqual(host(compiled), host(expected), **tolerance)
        self.assertEqual(host(compiled), host(eager_device), **tolerance)
        return compiled

    @parametrize("name", list(OPERATIONS))
    def test_operations_match_eager(self, device, name):
        function, make_args = OPERATIONS[name]
        torch.manual_seed(0)
        self.compile_and_compare(function, make_args(), device)

    def test_generated_code_launches_cpp_kernels_on_mydev(self, device):
        metrics.reset()
        x = torch.randn(8, 8, device=device)
        compiled = torch.compile(lambda a: (a.sin() + 1).softmax(-1))
        result, (source,) = run_and_get_code(compiled, x)
        self.assertGreater(metrics.generated_kernel_count, 0)
        self.assertIn("mydev_kernels.cpp('cpp_fused", source)
        self.assertIn('extern "C"', source)
        self.assertNotIn("async_compile.cpp_pybinding", source)
        self.assertIn("device='mydev", source)
        self.assertEqual(host(result), (x.cpu().sin() + 1).softmax(-1), **COMPILED_TOLERANCE)

    def test_mixed_cpu_and_mydev_graph(self, device):
        def function(a, host_tensor):
            on_host = a.sin().cpu() * host_tensor
            return on_host, (a + on_host.to(a.device)).relu()

        a, host_tensor = torch.randn(16, 8), torch.randn(16, 8)
        on_host, on_device = torch.compile(function)(a.to(device), host_tensor)
        expected = function(a, host_tensor)
        self.assertEqual(on_host.device, torch.device("cpu"))
        self.assertEqual(on_device.device, torch.device(device))
        self.assertEqual(host((on_host, on_device)), expected, **COMPILED_TOLERANCE)

    def test_input_mutation(self, device):
        def function(a):
            a.mul_(2).add_(1)
            return a.sum()

        x = torch.randn(16, 8)
        on_device = x.to(device)
        total = torch.compile(function)(on_device)
        self.assertEqual(on_device.cpu(), x * 2 + 1, **COMPILED_TOLERANCE)
        self.assertEqual(total.cpu(), (x * 2 + 1).sum(), **COMPILED_TOLERANCE)

    def test_dynamic_shapes(self, device):
        function = torch.compile(lambda a: (a * 2).softmax(0).sum(1), dynamic=True)
        for rows in (5, 9, 17):
            x = torch.randn(rows, 6)
            self.assertEqual(function(x.to(device)).cpu(), (x * 2).softmax(0).sum(1), **COMPILED_TOLERANCE)

    def test_automatic_dynamic_shapes_recompile_once(self, device):
        counters.clear()
        function = torch.compile(lambda a: a.relu() + a.shape[0])
        for rows in (4, 7, 11, 13):
            x = torch.randn(rows, 3)
            self.assertEqual(function(x.to(device)).cpu(), x.relu() + rows)
        # One static graph, then one dynamic graph for every later shape.
        self.assertEqual(counters["stats"]["unique_graphs"], 2)

    @dtypes(torch.bfloat16, torch.float16)
    def test_reduced_precision(self, device, dtype):
        def function(a, b):
            return ((a @ b) * 2).softmax(-1) + a.sum()

        args = [torch.randn(8, 16).to(dtype), torch.randn(16, 16).to(dtype)]
        self.compile_and_compare(function, args, device, tolerance=dict(atol=2e-2, rtol=2e-2))

    def test_autocast_inside_compiled_region(self, device):
        def function(a, b):
            with torch.autocast(device, dtype=torch.bfloat16):
                product = a @ b
                return product, product.float().softmax(-1)

        a, b = torch.randn(8, 16, device=device), torch.randn(16, 4, device=device)
        compiled = torch.compile(function)(a, b)
        eager = function(a, b)
        self.assertEqual(compiled[0].dtype, torch.bfloat16)
        self.assertEqual(host(compiled), host(eager), atol=1e-2, rtol=1e-2)

    def test_dropout_is_reproducible_under_a_seed(self, device):
        function = torch.compile(lambda a: F.dropout(a, 0.5, training=True) * 3)
        x = torch.randn(64, 64, device=device)
        torch.manual_seed(7)
        first = function(x).cpu()
        torch.manual_seed(7)
        second = function(x).cpu()
        self.assertEqual(first, second)
        self.assertTrue(0.4 < (first == 0).float().mean().item() < 0.6)
        self.assertNotEqual(first, function(x).cpu())

    def test_fallback_random_matches_eager(self, device):
        def function(a):
            return F.dropout(a, 0.3, training=True) + torch.rand_like(a)

        x = torch.randn(32, 32, device=device)
        with inductor_config.patch(fallback_random=True):
            compiled = torch.compile(function)
            torch.manual_seed(11)
            result = compiled(x).cpu()
        torch.manual_seed(11)
        self.assertEqual(result, function(x).cpu())

    def test_synchronize_and_streams_of_torch_mydev_stay_in_the_graph(self, device):
        # As Dynamo keeps torch.cuda.synchronize, current_stream and stream blocks in the graph.
        side = torch.mydev.Stream(device=device)

        def function(a):
            b = a.sin()
            torch.mydev.synchronize()
            with torch.mydev.stream(side):
                c = b * 2
            torch.mydev.current_stream().wait_stream(side)
            return c + 1

        x = torch.randn(64, device=device)
        torch._dynamo.reset()
        result = torch.compile(function, fullgraph=True)(x)
        self.assertEqual(result.cpu(), x.cpu().sin() * 2 + 1)
        self.assertEqual(torch.mydev.current_stream(), torch.mydev.default_stream())

    def test_compiled_and_eager_kernels_share_a_side_stream(self, device):
        compiled = torch.compile(lambda a: (a * 2).sin() + 1)
        weights = torch.randn(512, 512, device=device)
        compiled(weights)
        side = torch.mydev.Stream(device=device)
        weights_host = weights.cpu()
        with torch.mydev.stream(side):
            # A slow eager kernel, then a compiled kernel reading its result, then an eager kernel reading that:
            # launched on the default stream, the compiled kernel would race with the matmul.
            product = weights @ weights
            compiled_result = compiled(product)
            final = compiled_result * 3
        side.synchronize()
        expected = (((weights_host @ weights_host) * 2).sin() + 1) * 3
        self.assertEqual(final.cpu(), expected, atol=1e-3, rtol=1e-4)

    def test_a_graph_on_another_device_than_the_current_one(self, device):
        # The buffers must be made on the graph's device, not the current one, in training too (whose backward graph
        # runs on autograd's thread).
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
        x = torch.randn(8, 16)
        model(x).square().mean().backward()
        on_device = copy.deepcopy(model).to("mydev:1")
        for parameter in on_device.parameters():
            parameter.grad = None
        self.assertEqual(torch.mydev.current_device(), 0)
        loss = torch.compile(on_device)(x.to("mydev:1")).square().mean()
        loss.backward()
        self.assertEqual(loss.device, torch.device("mydev:1"))
        for compiled, expected in zip(on_device.parameters(), model.parameters()):
            self.assertEqual(compiled.grad.device, torch.device("mydev:1"))
            self.assertEqual(compiled.grad.cpu(), expected.grad, **COMPILED_TOLERANCE)

    def test_graph_break_runs_mydev_kernels(self, device):
        def function(a):
            b = a.sin()
            if b.sum() > 0:  # data-dependent branch: Dynamo breaks the graph here
                return b.cos()
            return b.tan()

        x = torch.randn(16, 16)
        self.assertEqual(torch._dynamo.explain(function)(x.to(device)).graph_break_count, 1)
        torch._dynamo.reset()
        result = torch.compile(function)(x.to(device))
        self.assertEqual(result.device, torch.device(device))
        self.assertEqual(result.cpu(), function(x), **COMPILED_TOLERANCE)

    @parametrize("mode", ["reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
    def test_modes(self, device, mode):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8))
        x = torch.randn(16, 32)
        expected = model(x)
        on_device = copy.deepcopy(model).to(device)
        compiled = torch.compile(on_device, mode=mode)
        for _ in range(3):
            result = compiled(x.to(device))
        self.assertEqual(result.cpu(), expected, **COMPILED_TOLERANCE)


class TestCppWrapper(TestCase):
    """Inductor's C++ wrapper (config.cpp_wrapper): the same kernels, launched from generated C++."""

    def setUp(self):
        super().setUp()
        torch._dynamo.reset()
        self.enterContext(inductor_config.patch(cpp_wrapper=True))

    @parametrize("name", ["pointwise", "softmax", "layer_norm", "matmul", "conv", "gather", "index",
                          "cumsum_fallback", "cpu_scalar_tensor"])
    def test_operations_match_eager(self, device, name):
        function, make_args = OPERATIONS[name]
        torch.manual_seed(0)
        args = make_args()
        compiled = torch.compile(function)(*moved(args, device))
        self.assertEqual(host(compiled), function(*args), **COMPILED_TOLERANCE)

    def test_generated_code_launches_through_the_launch_api(self, device):
        x, w = torch.randn(8, 8, device=device), torch.randn(8, 4, device=device)
        result, (source,) = run_and_get_code(torch.compile(lambda a, b: (a.sin() + 1).softmax(-1) @ b), x, w)
        self.assertIn('mydev_inductor::launch("cpp_fused', source)
        self.assertIn("_mydev_entry(const uint64_t* arguments)", source)
        self.assertIn('findSchemaOrThrow("aten::mm", "out")', source)
        self.assertNotIn("aoti_torch_mydev_", source)
        self.assertEqual(result.cpu(), (x.cpu().sin() + 1).softmax(-1) @ w.cpu(), **COMPILED_TOLERANCE)

    def test_dynamic_shapes(self, device):
        function = torch.compile(lambda a: (a * 2).softmax(0).sum(1), dynamic=True)
        for rows in (5, 9):
            x = torch.randn(rows, 6)
            self.assertEqual(function(x.to(device)).cpu(), (x * 2).softmax(0).sum(1), **COMPILED_TOLERANCE)

    def test_training(self, device):
        torch.manual_seed(0)
        model = TinyLanguageModel()
        reference = train(copy.deepcopy(model), "cpu", 2)
        on_device = train(copy.deepcopy(model).to(device), device, 2, compile_model=True)
        assert_training_matches(self, on_device, reference)

    @parametrize("reduce", ["amax", "sum", None])
    def test_scatter_goes_through_the_dispatcher(self, device, reduce):
        # Inductor calls scatter_ and scatter_reduce_ through a C shim of the device, where it calls other operators
        # otherwise; mydev has none.
        def scatter(x, index, source):
            if reduce is None:
                return x.scatter(1, index, source) + 1
            return x.scatter_reduce(1, index, source, reduce) + 1

        torch.manual_seed(0)
        args = (torch.randn(4, 8), torch.randint(0, 8, (4, 3)), torch.randn(4, 3))
        result, (source,) = run_and_get_code(torch.compile(scatter), *moved(args, device))
        self.assertNotIn("aoti_torch_mydev_", source)
        self.assertEqual(result.cpu(), scatter(*args), **COMPILED_TOLERANCE)

    def test_inplace_bernoulli_under_fallback_random_matches_eager(self, device):
        # Inductor's in-place bernoulli_ calls a C shim of the device: mydev's is a dispatcher call.
        def dropout_like(a):
            return torch.empty_like(a).bernoulli_(0.3) * a

        x = torch.randn(8, 16, device=device)
        with inductor_config.patch(fallback_random=True):
            torch.manual_seed(0)
            compiled = torch.compile(dropout_like)(x)
        torch.manual_seed(0)
        self.assertEqual(compiled.cpu(), dropout_like(x).cpu())

    @unittest.skipIf(importlib.util.find_spec("triton") is None, "triton is not installed")
    def test_triton_kernels_with_the_cpp_wrapper_are_refused_while_compiling(self, device):
        with self.assertRaisesRegex(Exception, "mydev runs Triton kernels .* only the Python wrapper"):
            torch.compile(lambda a: a.sin() + 1, backend="mydev", options={"codegen": "triton"})(
                torch.randn(8, device=device))


TRITON_INSTALLED = importlib.util.find_spec("triton") is not None
TRITON = {"backend": "mydev", "options": {"codegen": "triton"}}


@unittest.skipUnless(TRITON_INSTALLED, "the optional triton package (triton==3.9.0) is not installed")
class TestTritonCodegen(TestCase):
    """Inductor's Triton code generator for mydev, its kernels run by Triton's interpreter on the mydev stream."""

    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    @parametrize("name", ["pointwise", "softmax", "layer_norm", "matmul", "gather", "integer", "where_and_masks",
                          "cpu_scalar_tensor"])
    def test_operations_match_eager(self, device, name):
        function, make_args = OPERATIONS[name]
        torch.manual_seed(0)
        args = make_args()
        compiled = torch.compile(function, **TRITON)(*moved(args, device))
        self.assertEqual(host(compiled), function(*args), **COMPILED_TOLERANCE)

    def test_generated_code_is_triton_launched_on_the_mydev_stream(self, device):
        x = torch.randn(8, 8, device=device)
        result, (source,) = run_and_get_code(torch.compile(lambda a: (a.sin() + 1).softmax(-1), **TRITON), x)
        self.assertIn("@triton.jit", source)
        self.assertIn("mydev_triton_launch(triton_", source)
        self.assertNotIn("mydev_kernels.cpp(", source)
        self.assertEqual(result.cpu(), (x.cpu().sin() + 1).softmax(-1), **COMPILED_TOLERANCE)

    def test_kernels_follow_eager_kernels_on_a_side_stream(self, device):
        compiled = torch.compile(lambda a: (a * 2).tanh() + 1, **TRITON)
        weights = torch.randn(128, 128, device=device)
        compiled(weights)
        side = torch.mydev.Stream(device=device)
        side.wait_stream(torch.mydev.current_stream(device))  # weights' randn, as on CUDA
        with torch.mydev.stream(side):
            product = weights @ weights
            final = compiled(product) * 3
        side.synchronize()
        expected = (((weights.cpu() @ weights.cpu()) * 2).tanh() + 1) * 3
        self.assertEqual(final.cpu(), expected, atol=1e-4, rtol=1e-4)

    def test_training(self, device):
        torch.manual_seed(0)
        model = MlpRegressor()
        reference = train(copy.deepcopy(model), "cpu", 2)
        on_device = train(copy.deepcopy(model).to(device), device, 2, compile_model=True, compile_options=TRITON)
        assert_training_matches(self, on_device, reference)

    def test_a_graph_on_another_device_than_the_current_one(self, device):
        x = torch.randn(8, 16)
        compiled = torch.compile(lambda a: (a * 2).sin().sum(0) + 1, **TRITON)
        result = compiled(x.to("mydev:1"))
        self.assertEqual(result.device, torch.device("mydev:1"))
        self.assertEqual(result.cpu(), (x * 2).sin().sum(0) + 1, **COMPILED_TOLERANCE)

    def test_host_waits_release_the_gil_for_queued_triton_kernels(self, device):
        # The worker takes the GIL to run an interpreted kernel: a host wait that kept it would never return, and a
        # worker still waiting for it when the interpreter finalizes must not abort the process.
        result = run_python(
            """
            import io
            import torch
            x = torch.randn(8, 16, device="mydev")
            kernel = torch.compile(lambda a: (a.sin() * 2).softmax(-1), backend="mydev", options={"codegen": "triton"})
            kernel(x)
            waits = {
                "stream": lambda y: torch.mydev.current_stream().synchronize(),
                "event": lambda y: (lambda event: (event.record(), event.synchronize()))(torch.mydev.Event()),
                "device": lambda y: torch.mydev.synchronize(),
                "accelerator": lambda y: torch.accelerator.synchronize(),
                "item": lambda y: y.sum().item(),
                "copy": lambda y: y.cpu(),
                "empty_cache": lambda y: torch.mydev.empty_cache(),
                "storage_copy": lambda y: y.untyped_storage().cpu(),  # a binding that keeps the GIL
                "save": lambda y: torch.save(y, io.BytesIO()),
            }
            for name, wait in waits.items():
                wait(kernel(x))
                print(name)
            kernel(x)  # and the program ends with a kernel queued: it must still exit cleanly
            """,
            timeout=240,
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["stream", "event", "device", "accelerator", "item", "copy", "empty_cache",
                                                 "storage_copy", "save"])

    def test_environment_selects_triton(self, device):
        result = run_python(
            """
            import torch
            from torch._inductor.utils import run_and_get_code
            x = torch.ones(4, device="mydev")
            result, (source,) = run_and_get_code(torch.compile(lambda a: a.exp() + 1), x)
            print("@triton.jit" in source, result.cpu().tolist())
            """,
            env={"TORCH_MYDEV_INDUCTOR_CODEGEN": "triton"},
            timeout=300,
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split()[0], "True")

    def test_graph_cache_is_keyed_on_the_codegen(self, device):
        with tempfile.TemporaryDirectory() as cache_dir:
            triton = "config.codegen = 'triton'"
            self.assertEqual(cached_run(self, cache_dir), (0, 1))
            self.assertEqual(cached_run(self, cache_dir, triton), (0, 1))
            self.assertEqual(cached_run(self, cache_dir, triton), (1, 0))
            self.assertEqual(cached_run(self, cache_dir), (1, 0))


class TestTritonMissing(TestCase):
    def test_triton_selected_but_not_installed_is_a_clear_error(self, device):
        result = run_python(
            """
            import importlib.abc, sys

            class NoTriton(importlib.abc.MetaPathFinder):
                def find_spec(self, name, path, target=None):
                    if name == "triton" or name.startswith("triton."):
                        raise ImportError(f"No module named {name!r}")

            sys.meta_path.insert(0, NoTriton())
            import torch
            try:
                torch.compile(lambda a: a + 1, backend="mydev", options={"codegen": "triton"})(torch.ones(2, device="mydev"))
            except Exception as error:
                print(error)
            """
        )
        self.assertIn("codegen='triton' needs the optional 'triton' package (triton==3.9.0)", result.stdout)


def train(model, device, steps, compile_model=False, compile_step=False, compile_options=None):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    forward = torch.compile(model, **(compile_options or {})) if compile_model else model
    step = torch.compile(optimizer.step) if compile_step else optimizer.step
    generator = torch.Generator().manual_seed(1)
    losses, gradients = [], []
    for _ in range(steps):
        inputs, targets = model.batch(generator)
        optimizer.zero_grad()
        loss = model.loss(forward(inputs.to(device)), targets.to(device))
        loss.backward()
        losses.append(host(loss))
        gradients.append({name: host(p.grad) for name, p in model.named_parameters()})
        step()
    return losses, gradients, {name: host(p) for name, p in model.named_parameters()}


def assert_training_matches(test, device_run, reference_run):
    for step, (device_loss, reference_loss) in enumerate(zip(device_run[0], reference_run[0])):
        test.assertEqual(device_loss, reference_loss, **COMPILED_TOLERANCE, msg=f"loss at step {step}")
    for step, (device_grads, reference_grads) in enumerate(zip(device_run[1], reference_run[1])):
        for name, gradient in device_grads.items():
            test.assertEqual(gradient, reference_grads[name], atol=1e-5, rtol=1e-4, msg=f"{name} at step {step}")
    for name, parameter in device_run[2].items():
        test.assertEqual(parameter, reference_run[2][name], atol=1e-5, rtol=1e-4, msg=f"parameter {name}")


class MlpRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(20, 64), nn.GELU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))

    def forward(self, inputs):
        return self.layers(inputs)

    @staticmethod
    def loss(outputs, targets):
        return F.mse_loss(outputs.squeeze(-1), targets)

    @staticmethod
    def batch(generator):
        return torch.randn(16, 20, generator=generator), torch.randn(16, generator=generator)


TRAINED_MODELS = {"mlp": MlpRegressor, "gpt": TinyLanguageModel, "bert": TinyBertEncoder, "vit": TinyVisionTransformer}


class TestCompiledTraining(TestCase):
    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    @parametrize("model_name", list(TRAINED_MODELS))
    def test_compiled_training_matches_cpu_eager(self, device, model_name):
        torch.manual_seed(0)
        model = TRAINED_MODELS[model_name]()
        steps = 3 if model_name == "mlp" else 2
        reference = train(copy.deepcopy(model), "cpu", steps)
        metrics.reset()
        on_device = train(copy.deepcopy(model).to(device), device, steps, compile_model=True)
        self.assertGreater(metrics.generated_kernel_count, 0)
        assert_training_matches(self, on_device, reference)

    def test_compiled_optimizer_step(self, device):
        torch.manual_seed(0)
        model = MlpRegressor()
        reference = train(copy.deepcopy(model), "cpu", 3)
        on_device = train(copy.deepcopy(model).to(device), device, 3, compile_model=True, compile_step=True)
        assert_training_matches(self, on_device, reference)

    def test_compiled_adamw_step_with_cpu_step_counters(self, device):
        # Adam keeps its step counts on the host (capturable=False): the compiled step reads 0-dim CPU tensors
        # inside mydev kernels, which the launcher passes by value.
        torch.manual_seed(0)
        model = MlpRegressor()
        results = []
        for target_device, compiled in (("cpu", False), (device, True)):
            copy_ = copy.deepcopy(model).to(target_device)
            optimizer = torch.optim.AdamW(copy_.parameters(), lr=1e-2, foreach=True)
            step = torch.compile(optimizer.step) if compiled else optimizer.step
            for parameter in copy_.parameters():
                parameter.grad = torch.ones_like(parameter) * 0.1
            for _ in range(3):
                step()
            self.assertEqual(optimizer.state[next(copy_.parameters())]["step"].device, torch.device("cpu"))
            results.append([host(p) for p in copy_.parameters()])
        for device_parameter, cpu_parameter in zip(*reversed(results)):
            self.assertEqual(device_parameter, cpu_parameter, atol=1e-6, rtol=1e-5)


class TestCompileBackend(TestCase):
    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    def test_named_backend_takes_options(self, device):
        x = torch.randn(8, 8, device=device)
        function = lambda a: (a.sin() + 1).softmax(-1)  # noqa: E731
        for options in (None, {"codegen": "cpp"}, {"codegen": "cpp", "max_autotune": True}):
            torch._dynamo.reset()
            result = torch.compile(function, backend="mydev", options=options)(x)
            self.assertEqual(result.cpu(), function(x.cpu()), **COMPILED_TOLERANCE)

    def test_aot_eager_backend(self, device):
        x = torch.randn(8, 8, device=device)
        result = torch.compile(lambda a: a.relu() * 2, backend="aot_eager")(x)
        self.assertEqual(result.cpu(), x.cpu().relu() * 2)

    def test_unknown_codegen_is_a_clear_error(self, device):
        x = torch.randn(4, device=device)
        with self.assertRaisesRegex(Exception, "mydev's Inductor backend: unknown codegen 'cuda'"):
            torch.compile(lambda a: a + 1, backend="mydev", options={"codegen": "cuda"})(x)
        with self.assertRaisesRegex(Exception, "Unexpected optimization option not_an_option"):
            torch.compile(lambda a: a + 1, backend="mydev", options={"not_an_option": 1})(x)

    def test_unknown_codegen_from_the_environment(self, device):
        result = run_python(
            """
            import torch
            for attempt in range(2):  # the failed registration is tried again, and fails alike
                try:
                    torch.compile(lambda a: a + 1)(torch.ones(2, device="mydev"))
                except Exception as error:
                    print(type(error).__name__, error)
                torch._dynamo.reset()
            """,
            env={"TORCH_MYDEV_INDUCTOR_CODEGEN": "opencl"},
        )
        self.assertEqual((result.stdout + result.stderr).count("unknown codegen 'opencl'"), 2, result.stdout)
        self.assertIn("TORCH_MYDEV_INDUCTOR_CODEGEN", result.stdout + result.stderr)
        self.assertNotIn("KeyError", result.stdout + result.stderr)

    def test_backend_resolves_through_its_entry_point(self, device):
        result = run_python(
            """
            import sys
            import torch
            from torch._dynamo.backends.registry import lookup_backend
            assert "torch_mydev" not in sys.modules
            backend = lookup_backend("mydev")
            print(backend.__module__, backend.__name__)
            """,
            env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["torch_mydev.inductor.dynamo_backend", "mydev_backend"])

    def test_device_interface_rejects_a_device_that_does_not_exist(self, device):
        from torch._dynamo.device_interface import get_interface_for_device

        interface = get_interface_for_device("mydev")
        self.assertEqual(interface.device_count(), torch.mydev.device_count())
        properties = interface.get_device_properties(0)
        self.assertEqual(properties.multi_processor_count, os.cpu_count())
        for call in (interface.get_device_properties, interface.set_device, interface.synchronize):
            with self.assertRaisesRegex(ValueError, "mydev device index 7 is out of range"):
                call(7)

    def test_registration_does_not_slow_down_import_torch(self, device):
        result = run_python(
            """
            import sys
            import torch
            assert torch.mydev.is_available()
            print(sorted(name for name in ("torch._dynamo", "torch._inductor") if name in sys.modules))
            """
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "[]")


GRAPH_CACHE_RUN = """
import torch
from torch._dynamo.utils import counters
from torch_mydev.inductor import config
{setup}
x = torch.arange(12.0, device="mydev").reshape(3, 4)
result = torch.compile(lambda a: (a.sin() * 2).softmax(-1))(x)
assert torch.allclose(result.cpu(), (x.cpu().sin() * 2).softmax(-1), atol=1e-6)
print(counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"])
"""


def cached_run(test, cache_dir, setup=""):
    """FX graph cache (hits, misses) of one compile in a fresh process sharing ``cache_dir``."""
    result = run_python(
        GRAPH_CACHE_RUN.format(setup=setup),
        env={"TORCHINDUCTOR_CACHE_DIR": cache_dir, "TORCHINDUCTOR_FX_GRAPH_CACHE": "1"},
        timeout=300,
    )
    test.assertEqual(result.returncode, 0, result.stderr)
    hits, misses = map(int, result.stdout.split())
    return hits, misses


class TestCompileCaches(TestCase):

    def test_graph_cache_is_keyed_on_the_mydev_build(self, device):
        with tempfile.TemporaryDirectory() as cache_dir:
            self.assertEqual(cached_run(self, cache_dir), (0, 1))
            self.assertEqual(cached_run(self, cache_dir), (1, 0))
            other_build = "config.build_identity = 'another torch_mydev build'"
            self.assertEqual(cached_run(self, cache_dir, other_build), (0, 1))
            self.assertEqual(cached_run(self, cache_dir, other_build), (1, 0))

    def test_aot_inductor_compile_is_refused_in_torch_2_13(self, device):
        # docs/extension-points/inductor.md, AOTInductor: export works, AOTInductor's compile does not.
        model = nn.Linear(8, 4).to(device)
        x = torch.randn(2, 8, device=device)
        exported = torch.export.export(model, (x,))
        self.assertEqual(exported.module()(x).cpu(), model(x).cpu())
        with tempfile.TemporaryDirectory() as directory:
            with self.assertRaisesRegex(Exception, "Mixed-device constants are only supported"):
                torch._inductor.aoti_compile_and_package(exported, package_path=os.path.join(directory, "m.pt2"))

    def test_build_identity_reads_every_source_that_shapes_the_generated_code(self, device):
        from unittest import mock

        read = []
        real_open = open

        def recording_open(path, *args, **kwargs):
            read.append(os.fspath(path))
            return real_open(path, *args, **kwargs)

        with mock.patch("builtins.open", recording_open):
            identity = mydev_config._build_identity()
        self.assertEqual(identity, mydev_config.build_identity)
        for source in ("wrapper.py", os.path.join("triton_backend", "compiler.py"), "patches.py"):
            self.assertTrue(any(path.endswith(source) for path in read), (source, read))

    def test_build_identity_is_in_the_cache_key(self, device):
        from torch._inductor.codegen.common import get_custom_backend_config_for_device

        self.assertIs(get_custom_backend_config_for_device("mydev"), mydev_config)
        saved = mydev_config.save_config_portable(ignore_private_configs=False)
        self.assertEqual(saved["codegen"], "cpp")
        self.assertEqual(len(saved["build_identity"]), 64)


instantiate_device_type_tests(TestCompile, globals(), only_for=("privateuse1",))
instantiate_device_type_tests(TestCppWrapper, globals(), only_for=("privateuse1",))
instantiate_device_type_tests(TestTritonCodegen, globals(), only_for=("privateuse1",))
instantiate_device_type_tests(TestTritonMissing, globals(), only_for=("privateuse1",))
instantiate_device_type_tests(TestCompiledTraining, globals(), only_for=("privateuse1",))
instantiate_device_type_tests(TestCompileBackend, globals(), only_for=("privateuse1",))
instantiate_device_type_tests(TestCompileCaches, globals(), only_for=("privateuse1",))

if __name__ == "__main__":
    run_tests()
