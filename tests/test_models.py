"""Real models on mydev against a reference device: the CPU always, CUDA where
this machine has it. Both copies start from the same weights, see the same
batches and take the same optimizer steps; losses, gradients, parameters,
optimizer state and buffers must agree at every step."""
import copy
import unittest

import torch
from torch.profiler import profile
from torch.testing._internal.common_cuda import tf32_off
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import parametrize, run_tests, subtest, TestCase

from models import MODELS, TinyLanguageModel
from torch_mydev.ops import fallback_counts, fallback_policy, reset_fallback_counts

TRAINING_STEPS = 4

# mydev runs the CPU's kernels, so against the CPU the results agree to the
# last bit or nearly (the fused transformer layers used in inference are
# composite and may associate differently); CUDA has kernels of its own.
# 1e-5 leaves room for such differences to grow over the steps and still
# catches a wrong result.
TOLERANCE = dict(atol=1e-5, rtol=1e-5)

# AdamW's eps is 1e-6, not 1e-8, because of attention's key bias: its gradient
# is zero in exact arithmetic (softmax ignores a shift shared by all of a
# query's scores), so what the devices compute is rounding noise of ~1e-10.
# Adam divides a gradient by its own magnitude plus eps; at 1e-8 that turns
# the noise into steps near the learning rate (1e-3 apart after four steps),
# at 1e-6 the noise-driven steps stay ~1e-6, below the tolerance.
OPTIMIZERS = {
    "sgd_momentum_foreach": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, foreach=True),
    "sgd_momentum_for_loop": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, foreach=False),
    "adamw_foreach": lambda params: torch.optim.AdamW(params, lr=1e-3, eps=1e-6, foreach=True),
    "adamw_for_loop": lambda params: torch.optim.AdamW(params, lr=1e-3, eps=1e-6, foreach=False),
    "adamw_fused": lambda params: torch.optim.AdamW(params, lr=1e-3, eps=1e-6, fused=True),
}

reference_devices = parametrize(
    "reference_device",
    [
        subtest("cpu", name="cpu"),
        subtest(
            "cuda",
            name="cuda",
            # TF32 would make CUDA's matmuls and convolutions differ by ~1e-3.
            decorators=[
                unittest.skipIf(not torch.cuda.is_available(), "CUDA reference needs a CUDA device; none on this machine"),
                tf32_off(),
            ],
        ),
    ],
)


def host(tensor):
    return tensor.detach().cpu()


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad()
    loss = model.loss(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss


def identical_copies(model_class, reference_device, device):
    torch.manual_seed(0)
    initial = model_class()
    return copy.deepcopy(initial).to(reference_device), copy.deepcopy(initial).to(device)


class TestModelParity(TestCase):
    def assert_tensors_match(self, device_tensors, reference_tensors, what):
        device_tensors, reference_tensors = dict(device_tensors), dict(reference_tensors)
        self.assertEqual(list(device_tensors), list(reference_tensors))
        for name, tensor in device_tensors.items():
            self.assertEqual(
                host(tensor), host(reference_tensors[name]), **TOLERANCE, msg=lambda generated: f"{what} {name}: {generated}"
            )

    def assert_optimizer_states_match(self, device_model, device_optimizer, reference_model, reference_optimizer, device):
        for (name, device_param), reference_param in zip(device_model.named_parameters(), reference_model.parameters()):
            device_state, reference_state = device_optimizer.state[device_param], reference_optimizer.state[reference_param]
            self.assert_tensors_match(device_state, reference_state, f"optimizer state of {name}:")
            for key, value in device_state.items():
                if value.shape == device_param.shape:
                    self.assertEqual(value.device, torch.device(device), msg=f"optimizer state {key} of {name}")

    @reference_devices
    @parametrize("optimizer_name", list(OPTIMIZERS), name_fn=str)
    @parametrize("model_name", list(MODELS), name_fn=str)
    def test_training_matches_reference(self, device, model_name, optimizer_name, reference_device):
        model_class, make_optimizer = MODELS[model_name], OPTIMIZERS[optimizer_name]
        reference_model, device_model = identical_copies(model_class, reference_device, device)
        reference_optimizer = make_optimizer(reference_model.parameters())
        device_optimizer = make_optimizer(device_model.parameters())
        batches = torch.Generator().manual_seed(1)
        for step in range(TRAINING_STEPS):
            inputs, targets = model_class.batch(batches)
            reference_loss = train_step(
                reference_model, reference_optimizer, inputs.to(reference_device), targets.to(reference_device)
            )
            device_loss = train_step(device_model, device_optimizer, inputs.to(device), targets.to(device))
            self.assertEqual(host(device_loss), host(reference_loss), **TOLERANCE, msg=lambda g: f"loss at step {step}: {g}")
            self.assert_tensors_match(
                ((name, p.grad) for name, p in device_model.named_parameters()),
                ((name, p.grad) for name, p in reference_model.named_parameters()),
                f"gradient at step {step} of",
            )
        self.assert_tensors_match(device_model.named_parameters(), reference_model.named_parameters(), "parameter")
        self.assert_tensors_match(device_model.named_buffers(), reference_model.named_buffers(), "buffer")
        self.assert_optimizer_states_match(device_model, device_optimizer, reference_model, reference_optimizer, device)
        for name, param in device_model.named_parameters():
            self.assertEqual(param.device, torch.device(device), msg=f"parameter {name}")
            self.assertEqual(param.grad.device, torch.device(device), msg=f"gradient of {name}")

    @parametrize("optimizer_name", ["adamw_foreach", "adamw_fused", "sgd_momentum_for_loop"], name_fn=str)
    @parametrize("model_name", list(MODELS), name_fn=str)
    def test_training_step_needs_no_fallback(self, device, model_name, optimizer_name):
        # MYDEV_FALLBACK=error semantics: any operator without a native or composite kernel raises, naming itself.
        model_class = MODELS[model_name]
        _, model = identical_copies(model_class, "cpu", device)
        optimizer = OPTIMIZERS[optimizer_name](model.parameters())
        inputs, targets = model_class.batch(torch.Generator().manual_seed(3))
        reset_fallback_counts()
        with fallback_policy("error"):
            loss = train_step(model, optimizer, inputs.to(device), targets.to(device))
        self.assertTrue(torch.isfinite(host(loss)))
        self.assertEqual(fallback_counts(), {})

    @reference_devices
    @parametrize("model_name", list(MODELS), name_fn=str)
    def test_inference_matches_reference(self, device, model_name, reference_device):
        model_class = MODELS[model_name]
        reference_model, device_model = identical_copies(model_class, reference_device, device)
        inputs, _ = model_class.batch(torch.Generator().manual_seed(2))
        with torch.no_grad():
            # A training-mode pass first, so batch norm then evaluates with
            # running statistics other than its initial zeros and ones.
            reference_model(inputs.to(reference_device))
            device_model(inputs.to(device))
            self.assert_tensors_match(device_model.named_buffers(), reference_model.named_buffers(), "buffer")
            reference_model.eval()
            device_model.eval()
            reference_out = reference_model(inputs.to(reference_device))
            device_out = device_model(inputs.to(device))
        self.assertEqual(host(device_out), host(reference_out), **TOLERANCE)
        self.assertEqual(device_out.device, torch.device(device))
        self.assertFalse(device_out.requires_grad)

    def test_transformer_inference_takes_the_fused_encoder_path(self, device):
        # TransformerEncoderLayer's eval fast path admits only some device
        # types; mydev must be one, or inference silently runs the slow path.
        _, model = identical_copies(TinyLanguageModel, "cpu", device)
        tokens, _ = TinyLanguageModel.batch(torch.Generator().manual_seed(3))
        model.eval()
        with torch.no_grad(), profile() as trace:
            model(tokens.to(device))
        # The ops the host called, not the device rows of the kernels they launched.
        called = [event.name for event in trace.events() if event.device_type == torch.autograd.DeviceType.CPU]
        self.assertEqual(called.count("aten::_transformer_encoder_layer_fwd"), len(model.blocks))


instantiate_device_type_tests(TestModelParity, globals(), only_for=("privateuse1",))

if __name__ == "__main__":
    run_tests()
