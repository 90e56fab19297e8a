"""torch.optim's fused optimizer steps on mydev: one native kernel per step
(ATen's fused CPU step over device memory), equal to the CPU's fused step; and
the _foreach_ operators behind foreach=True steps, one native kernel per call."""
import re

import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import parametrize, run_tests, TestCase

from torch_mydev import ops
from torch_mydev.ops import fallback_policy

FUSED = {
    "adam": lambda params: torch.optim.Adam(params, lr=1e-2, fused=True),
    "adam_amsgrad_maximize": lambda params: torch.optim.Adam(params, lr=1e-2, amsgrad=True, maximize=True, fused=True),
    "adam_tensor_lr": lambda params: torch.optim.Adam(params, lr=torch.tensor(1e-2), fused=True),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, fused=True),
    "adamw_amsgrad": lambda params: torch.optim.AdamW(params, lr=1e-2, amsgrad=True, fused=True),
    "sgd": lambda params: torch.optim.SGD(params, lr=0.1, fused=True),
    "sgd_nesterov": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01,
                                                   fused=True),
    "adagrad": lambda params: torch.optim.Adagrad(params, lr=0.1, lr_decay=0.01, fused=True),
}


def parameters(device, dtype=torch.float32):
    generator = torch.Generator().manual_seed(0)
    shapes = [(7, 5), (5,), (3, 2, 4), ()]
    return [torch.randn(shape, generator=generator, dtype=dtype).to(device).requires_grad_() for shape in shapes]


def run_steps(make_optimizer, device, dtype=torch.float32, steps=3):
    params = parameters(device, dtype)
    optimizer = make_optimizer(params)
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        for param in params:
            param.grad = torch.randn(param.shape, generator=generator, dtype=dtype).to(device)
        optimizer.step()
    return [param.detach().cpu() for param in params], optimizer


class TestMydevFusedOptimizers(TestCase):
    @parametrize("name", list(FUSED))
    def test_fused_step_is_one_native_kernel_equal_to_the_cpu(self, device, name):
        expected, _ = run_steps(FUSED[name], "cpu")
        with fallback_policy("error"):
            actual, optimizer = run_steps(FUSED[name], device)
        self.assertEqual(actual, expected, atol=0, rtol=0)
        for state in optimizer.state.values():
            for value in state.values():
                if isinstance(value, torch.Tensor) and value.dim() > 0:
                    self.assertEqual(value.device.type, "mydev")

    def test_fused_adamw_in_half_precision_matches_the_cpu(self, device):
        expected, _ = run_steps(FUSED["adamw"], "cpu", dtype=torch.bfloat16)
        actual, _ = run_steps(FUSED["adamw"], device, dtype=torch.bfloat16)
        self.assertEqual(actual, expected, atol=0, rtol=0)

    def test_mismatched_state_raises_at_the_call(self, device):
        params = [torch.zeros(3, device=device), torch.zeros(2, device=device)]
        grads = [torch.ones(3, device=device), torch.ones(4, device=device)]
        states = [torch.zeros(3, device=device), torch.zeros(2, device=device)]
        steps = [torch.zeros((), device=device), torch.zeros((), device=device)]
        with self.assertRaisesRegex(RuntimeError, r"_fused_adamw_: grads\[1\] has shape \[4\]"):
            torch._fused_adamw_(params, grads, states, [s.clone() for s in states], [], steps, lr=0.1, beta1=0.9,
                                beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
        with self.assertRaisesRegex(RuntimeError, "_fused_adagrad_: expected 2 state_steps"):
            torch._fused_adagrad_(params, [torch.ones(3, device=device), torch.ones(2, device=device)], states,
                                  steps[:1], lr=0.1, lr_decay=0.0, weight_decay=0.0, eps=1e-10, maximize=False)
        self.assertEqual(params[0].cpu(), torch.zeros(3))


instantiate_device_type_tests(TestMydevFusedOptimizers, globals(), only_for="mydev")


FOREACH_CALLS = {
    "add_list_alpha": lambda xs, ys: torch._foreach_add(xs, ys, alpha=2.0),
    "add_scalar": lambda xs, ys: torch._foreach_add(xs, 1.5),
    "sub_scalar_list": lambda xs, ys: torch._foreach_sub(xs, [0.5 * i for i in range(len(xs))]),
    "mul_tensor": lambda xs, ys: torch._foreach_mul(xs, torch.tensor(3.0, device=xs[0].device)),
    "add_tensor_alpha": lambda xs, ys: torch._foreach_add(xs, torch.tensor(3.0, device=xs[0].device), alpha=0.5),
    "div_tensor": lambda xs, ys: torch._foreach_div(xs, torch.tensor(4.0, device=xs[0].device)),
    "div_list": lambda xs, ys: torch._foreach_div(xs, [y * y + 1 for y in ys]),
    "div_scalar_list_integers": lambda xs, ys: torch._foreach_div([x.to(torch.int64) for x in xs], [2] * len(xs)),
    "sub_list_alpha": lambda xs, ys: torch._foreach_sub(xs, ys, alpha=0.5),
    "mul_scalar": lambda xs, ys: torch._foreach_mul(xs, 0.75),
    "mul_scalar_integers": lambda xs, ys: torch._foreach_mul([x.to(torch.int64) for x in xs], 2.5),
    "addcmul": lambda xs, ys: torch._foreach_addcmul(xs, ys, ys, value=0.25),
    "addcmul_scalar_list": lambda xs, ys: torch._foreach_addcmul(xs, ys, xs, [0.1 * i for i in range(len(xs))]),
    "addcdiv": lambda xs, ys: torch._foreach_addcdiv(xs, ys, [y * y + 1 for y in ys], value=-0.5),
    "addcdiv_scalar_list": lambda xs, ys: torch._foreach_addcdiv(xs, xs, [y * y + 1 for y in ys], [2.0] * len(xs)),
    # The .Tensor overloads' packed scalars stay on the CPU, as CUDA requires.
    "addcmul_scalars_tensor": lambda xs, ys: torch._foreach_addcmul(xs, ys, xs, torch.linspace(-1, 1, len(xs))),
    "addcdiv_scalars_tensor": lambda xs, ys: torch._foreach_addcdiv(
        xs, ys, [y * y + 1 for y in ys], torch.arange(len(xs), dtype=torch.float64)),
    "lerp": lambda xs, ys: torch._foreach_lerp(xs, ys, 0.3),
    "lerp_scalar_list": lambda xs, ys: torch._foreach_lerp(xs, ys, [0.2 * i for i in range(len(xs))]),
    "lerp_list": lambda xs, ys: torch._foreach_lerp(xs, ys, [y.sigmoid() for y in ys]),
    "sqrt": lambda xs, ys: torch._foreach_sqrt(xs),
    "neg": lambda xs, ys: torch._foreach_neg(xs),
    "exp_of_sigmoid": lambda xs, ys: torch._foreach_exp(torch._foreach_sigmoid(xs)),
    "round_integers": lambda xs, ys: torch._foreach_round([x.to(torch.int64) for x in xs]),
    "sqrt_of_abs": lambda xs, ys: torch._foreach_sqrt(torch._foreach_abs(xs)),
    "maximum": lambda xs, ys: torch._foreach_maximum(xs, ys),
    "minimum_scalar_list": lambda xs, ys: torch._foreach_minimum(xs, [0.1 * i for i in range(len(xs))]),
    "clamp_max_scalar_integers": lambda xs, ys: torch._foreach_clamp_max([x.to(torch.int64) for x in xs], 1),
    "norm": lambda xs, ys: torch._foreach_norm(xs, 2),
    "pow": lambda xs, ys: torch._foreach_pow(xs, 2),
}


# Calls that use a _foreach_ operator without a native kernel (abs, pow): the generic fallback runs them.
RUN_BY_THE_FALLBACK = {"sqrt_of_abs", "pow"}


def foreach_inputs(device):
    generator = torch.Generator().manual_seed(2)
    shapes = [(4, 3), (5,), (), (0, 2)]
    xs = [torch.randn(shape, generator=generator) for shape in shapes]
    ys = [torch.randn(shape, generator=generator) for shape in shapes]
    xs.append(torch.randn(6, 4, generator=generator).t())
    ys.append(torch.randn(4, 6, generator=generator))
    return [x.to(device) for x in xs], [y.to(device) for y in ys]


class TestMydevForeach(TestCase):
    @parametrize("name", list(FOREACH_CALLS))
    def test_functional_foreach_matches_the_cpu(self, device, name):
        expected = FOREACH_CALLS[name](*foreach_inputs("cpu"))
        with fallback_policy("allow" if name in RUN_BY_THE_FALLBACK else "error"):
            actual = FOREACH_CALLS[name](*foreach_inputs(device))
        self.assertEqual(len(actual), len(expected))
        for got, want in zip(actual, expected):
            self.assertEqual(got.device.type, "mydev")
            self.assertEqual(got.cpu(), want)

    def test_in_place_foreach_updates_every_tensor(self, device):
        cpu_xs, cpu_ys = foreach_inputs("cpu")
        xs, ys = foreach_inputs(device)
        for tensors, others in ((cpu_xs, cpu_ys), (xs, ys)):
            torch._foreach_mul_(tensors, 0.5)
            torch._foreach_add_(tensors, others, alpha=0.1)
            torch._foreach_sub_(tensors, [0.25] * len(tensors))
            torch._foreach_div_(tensors, 3)
            torch._foreach_mul_(tensors, others)
            torch._foreach_addcdiv_(tensors, others, [o * o + 1 for o in others], value=-0.1)
            torch._foreach_zero_(tensors[:1])
        for got, want in zip(xs, cpu_xs):
            self.assertEqual(got.cpu(), want)

    def test_in_place_optimizer_steps_update_every_tensor(self, device):
        # The pointwise steps of foreach Adam/AdamW, with every weight form (ForeachPointwise.cpp).
        cpu_xs, cpu_ys = foreach_inputs("cpu")
        xs, ys = foreach_inputs(device)
        for tensors, others in ((cpu_xs, cpu_ys), (xs, ys)):
            squares = [o * o + 1 for o in others]
            with fallback_policy("error"):
                torch._foreach_lerp_(tensors, others, 0.1)
                torch._foreach_lerp_(tensors, others, [0.3] * len(tensors))
                torch._foreach_lerp_(tensors, others, [o.sigmoid() for o in others])
                torch._foreach_addcmul_(tensors, others, others, 0.01)
                torch._foreach_addcmul_(tensors, others, squares, [0.5] * len(tensors))
                torch._foreach_sqrt_(squares)
                torch._foreach_reciprocal_(squares)
                torch._foreach_log1p_(squares)
                torch._foreach_addcdiv_(tensors, others, squares, -0.2)
                torch._foreach_addcdiv_(tensors, others, squares, [0.1 * i for i in range(len(tensors))])
        for got, want in zip(xs, cpu_xs):
            self.assertEqual(got.cpu(), want)

    def test_pointwise_foreach_errors_match_the_cpu_at_the_call(self, device):
        def longs(where):
            return [torch.ones(2, dtype=torch.long, device=where) for _ in range(2)]

        calls = {
            "list lengths": lambda xs, ys, where: torch._foreach_addcdiv_(xs, ys[:2], ys, 0.5),
            "scalar list length": lambda xs, ys, where: torch._foreach_lerp_(xs, ys, [0.5]),
            "empty list": lambda xs, ys, where: torch._foreach_sqrt([]),
            "broadcast into self": lambda xs, ys, where: torch._foreach_addcmul_(
                xs[:1], [torch.ones(2, 4, 3, device=where)], xs[:1], 1),
            "integer division": lambda xs, ys, where: torch._foreach_addcdiv_(
                longs(where), longs(where), longs(where), 1),
            "cast into self": lambda xs, ys, where: torch._foreach_sqrt_(longs(where)),
            "scalar cast into self": lambda xs, ys, where: torch._foreach_mul_(longs(where), 0.5),
            "bool subtraction": lambda xs, ys, where: torch._foreach_sub([t.bool() for t in longs(where)], True),
            "alpha for integers": lambda xs, ys, where: torch._foreach_add(longs(where), longs(where), alpha=0.5),
        }
        for name, call in calls.items():
            with self.assertRaises(RuntimeError) as cpu_error:
                call(*foreach_inputs("cpu"), "cpu")
            xs, ys = foreach_inputs(device)
            with self.assertRaisesRegex(RuntimeError, re.escape(str(cpu_error.exception).splitlines()[0])):
                call(xs, ys, device)
            self.assertEqual(xs[0].cpu(), foreach_inputs("cpu")[0][0], msg=name)

    def test_foreach_operators_are_native(self, device):
        table = {entry.op: entry.how for entry in ops.coverage()}
        for name in ("aten::_foreach_add_.List", "aten::_foreach_addcdiv_.Scalar", "aten::_foreach_norm.Scalar",
                     "aten::_foreach_lerp_.Scalar", "aten::_foreach_lerp_.List", "aten::_foreach_mul.Scalar",
                     "aten::_foreach_addcmul_.ScalarList", "aten::_foreach_sqrt", "aten::_foreach_sqrt_",
                     "aten::_foreach_sub_.ScalarList", "aten::_foreach_div.List", "aten::_foreach_maximum_.List",
                     "aten::_foreach_clamp_min_.Scalar", "aten::_foreach_neg", "aten::_foreach_tanh_"):
            self.assertEqual(table[name], "native", name)

    def test_foreach_errors_are_raised_at_the_call(self, device):
        xs, ys = foreach_inputs(device)
        with self.assertRaisesRegex(RuntimeError, "same number of tensors|length"):
            torch._foreach_add(xs, ys[:2])
        with self.assertRaisesRegex(RuntimeError, "same device"):
            torch._foreach_add(xs, [y.cpu() for y in ys])
        with self.assertRaisesRegex(RuntimeError, "size"):
            torch._foreach_add_(xs[:1], [torch.ones(7, device=device)])
        with self.assertRaisesRegex(RuntimeError, "Expected scalars to be on CPU, got mydev:0 instead"):
            torch._foreach_addcmul_(xs, ys, ys, torch.ones(len(xs), device=device))
        self.assertEqual(xs[0].cpu(), foreach_inputs("cpu")[0][0])

    @parametrize("norm_type", [2.0, 1.0, float("inf")])
    def test_clip_grad_norm_is_native_and_matches_the_cpu(self, device, norm_type):
        # _foreach_norm, then _foreach_mul_ by a 0-dim device tensor: no fallback, no wait for the norm's value.
        results = {}
        for where in ("cpu", device):
            params = parameters(where, torch.float32)
            generator = torch.Generator().manual_seed(4)
            for param in params:
                param.grad = (10 * torch.randn(param.shape, generator=generator)).to(where)
            with fallback_policy("error" if where == device else "allow"):
                total = torch.nn.utils.clip_grad_norm_(params, max_norm=1.0, norm_type=norm_type, foreach=True)
            results[where] = (total.cpu(), [param.grad.cpu() for param in params])
        self.assertEqual(results[device], results["cpu"])

    @parametrize("optimizer", ["adamw", "adam_amsgrad", "sgd_momentum", "rmsprop", "adagrad"])
    def test_foreach_optimizer_steps_match_the_cpu(self, device, optimizer):
        make = {
            "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, foreach=True),
            "adam_amsgrad": lambda p: torch.optim.Adam(p, lr=1e-2, amsgrad=True, foreach=True),
            "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=True),
            "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-2, foreach=True),
            "adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1, foreach=True),
        }[optimizer]
        expected, _ = run_steps(make, "cpu")
        with fallback_policy("error"):
            actual, _ = run_steps(make, device)
        self.assertEqual(actual, expected)


instantiate_device_type_tests(TestMydevForeach, globals(), only_for="mydev")

if __name__ == "__main__":
    run_tests()
