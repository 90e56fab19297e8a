"""Automatic mixed precision on mydev: torch.autocast("mydev") with CUDA's operator
policy, GradScaler, and activation checkpointing (which re-enters the device's
autocast state when it recomputes)."""
import torch
import torch.nn.functional as F
from torch.testing._internal.common_utils import run_tests, TestCase
from torch.utils.checkpoint import checkpoint


def on(device, *tensors):
    return [t.detach().clone().to(device) for t in tensors]


class TestAutocast(TestCase):
    def setUp(self):
        super().setUp()
        torch.manual_seed(0)
        self.x = torch.randn(8, 16)
        self.weight = torch.randn(4, 16)
        self.bias = torch.randn(4)

    def test_supported_dtypes_and_default(self):
        self.assertEqual(torch.mydev.get_amp_supported_dtype(), [torch.float16, torch.bfloat16])
        self.assertEqual(torch.get_autocast_dtype("mydev"), torch.float16)
        self.assertTrue(torch.amp.is_autocast_available("mydev"))

    def test_policy_matches_cuda(self):
        x, weight, bias = on("mydev", self.x, self.weight, self.bias)
        with torch.autocast("mydev"):
            self.assertTrue(torch.is_autocast_enabled("mydev"))
            self.assertFalse(torch.is_autocast_enabled("cpu"))
            # lower precision: matmuls and convolutions
            self.assertEqual(F.linear(x, weight, bias).dtype, torch.float16)
            self.assertEqual(torch.mm(x, x.t()).dtype, torch.float16)
            conv = F.conv1d(x.unsqueeze(0), torch.randn(2, 8, 3, device="mydev"))
            self.assertEqual(conv.dtype, torch.float16)
            # float32: the numerically touchy operators, even on float16 inputs
            half = x.half()
            self.assertEqual(half.exp().dtype, torch.float32)
            self.assertEqual(F.softmax(half, dim=1).dtype, torch.float32)
            self.assertEqual(F.layer_norm(half, (16,)).dtype, torch.float32)
            self.assertEqual(half.sum().dtype, torch.float32)
            # promote: the widest input dtype
            self.assertEqual(torch.addcmul(x, half, half).dtype, torch.float32)
            # everything else falls through unchanged
            self.assertEqual((half + half).dtype, torch.float16)
            self.assertEqual(torch.relu(x).dtype, torch.float32)
        with torch.autocast("mydev", dtype=torch.bfloat16):
            self.assertEqual(torch.mm(x, x.t()).dtype, torch.bfloat16)
        self.assertEqual(torch.mm(x, x.t()).dtype, torch.float32)

    def test_values_are_the_cpu_kernels_in_the_autocast_dtype(self):
        x, weight, bias = on("mydev", self.x, self.weight, self.bias)
        for dtype in (torch.float16, torch.bfloat16):
            with torch.autocast("mydev", dtype=dtype):
                out = F.linear(x, weight, bias)
            expected = F.linear(self.x.to(dtype), self.weight.to(dtype), self.bias.to(dtype))
            self.assertEqual(out.dtype, dtype)
            self.assertEqual(out.cpu(), expected, atol=0, rtol=0)

    def test_backward_gives_float32_gradients_of_float32_leaves(self):
        x, weight = on("mydev", self.x, self.weight)
        weight.requires_grad_()
        with torch.autocast("mydev"):
            loss = F.linear(x, weight).float().pow(2).mean()
        loss.backward()
        self.assertEqual(weight.grad.dtype, torch.float32)

        cpu_weight = self.weight.clone().requires_grad_()
        F.linear(self.x.half(), cpu_weight.half()).float().pow(2).mean().backward()
        self.assertEqual(weight.grad.cpu(), cpu_weight.grad, atol=0, rtol=0)

    def test_unsupported_dtype_disables_autocast_with_a_warning(self):
        x = torch.ones(2, 2, device="mydev")
        with self.assertWarnsRegex(UserWarning, "mydev Autocast only supports dtypes of torch.float16, torch.bfloat16"):
            with torch.autocast("mydev", dtype=torch.float64):
                self.assertEqual(torch.mm(x, x).dtype, torch.float32)

    def test_binary_cross_entropy_is_refused_as_on_cuda(self):
        probabilities = torch.rand(3, device="mydev")
        with torch.autocast("mydev"):
            with self.assertRaisesRegex(RuntimeError, "unsafe to autocast on mydev.*binary_cross_entropy_with_logits"):
                F.binary_cross_entropy(probabilities, probabilities)
            logits = F.binary_cross_entropy_with_logits(probabilities, probabilities)
        self.assertEqual(logits.dtype, torch.float32)

    def test_grad_scaler_steps_like_the_cpu(self):
        results = {}
        for device in ("cpu", "mydev"):
            torch.manual_seed(1)
            model = torch.nn.Linear(16, 4).to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler(device, init_scale=2.0**10)
            (x,) = on(device, self.x)
            for step in range(3):
                optimizer.zero_grad()
                loss = model(x).pow(2).mean()
                if step == 1:
                    loss = loss * float("inf")  # an overflowing step: skipped, and the scale halves
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            results[device] = ([p.detach().cpu() for p in model.parameters()], scaler.get_scale())
        self.assertEqual(results["mydev"][1], 2.0**9)
        self.assertEqual(results["mydev"], results["cpu"], atol=0, rtol=0)


class TestCheckpoint(TestCase):
    def test_checkpoint_recomputes_like_the_cpu(self):
        torch.manual_seed(0)
        reference = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
        x = torch.randn(4, 8)
        gradients = {}
        for device in ("cpu", "mydev"):
            model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)).to(device)
            model.load_state_dict(reference.state_dict())
            for use_reentrant in (False, True):
                model.zero_grad()
                (inputs,) = on(device, x)
                inputs.requires_grad_()
                checkpoint(model, inputs, use_reentrant=use_reentrant).pow(2).sum().backward()
                gradients[device, use_reentrant] = [inputs.grad.cpu()] + [p.grad.cpu() for p in model.parameters()]
        for use_reentrant in (False, True):
            self.assertEqual(gradients["mydev", use_reentrant], gradients["cpu", use_reentrant])

    def test_checkpoint_recomputes_dropout_with_the_same_mask(self):
        # checkpoint saves and restores the device's RNG state (it asks torch.mydev._initialized first)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1)).to("mydev")
        inputs = torch.randn(16, 4, device="mydev", requires_grad=True)
        torch.mydev.manual_seed(1)
        model(inputs).sum().backward()
        expected = inputs.grad.cpu()
        for use_reentrant in (False, True):
            inputs.grad = None
            torch.mydev.manual_seed(1)
            checkpoint(model, inputs, use_reentrant=use_reentrant).sum().backward()
            self.assertEqual(inputs.grad.cpu(), expected, atol=0, rtol=0)

    def test_checkpoint_inside_autocast(self):
        model = torch.nn.Linear(8, 8).to("mydev")
        inputs = torch.randn(4, 8, device="mydev", requires_grad=True)
        with torch.autocast("mydev"):
            out = checkpoint(model, inputs, use_reentrant=False)
        self.assertEqual(out.dtype, torch.float16)
        out.float().sum().backward()
        self.assertEqual(model.weight.grad.dtype, torch.float32)
        expected = (torch.ones(4, 8, dtype=torch.float16) @ model.weight.detach().cpu().half()).float()
        self.assertEqual(inputs.grad.cpu(), expected, atol=0, rtol=0)


if __name__ == "__main__":
    run_tests()
