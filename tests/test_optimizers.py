"""torch.optim's fused optimizer steps on mydev: one native kernel per step
(ATen's fused CPU step over device memory), equal to the CPU's fused step."""
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import parametrize, run_tests, TestCase

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

if __name__ == "__main__":
    run_tests()
