"""The mydev demo: tensors on the simulated device, then the same small model
trained on mydev and on the CPU from the same start, with the losses compared.

Run it with `bash scripts/demo.sh` (which also sets everything up).
"""
import copy
import time

import torch
from torch import nn


def show_device():
    print(f"torch {torch.__version__}, accelerator: {torch.accelerator.current_accelerator()}")
    properties = torch.mydev.get_device_properties(0)
    print(f"{torch.mydev.device_count()} mydev devices; mydev:0 = {properties}")
    x = torch.randn(4, 4, device="mydev")
    print("x = torch.randn(4, 4, device='mydev'):")
    print(x)
    y = x @ x.T + 1
    print("x @ x.T + 1 matches the CPU result:", torch.allclose(y.cpu(), x.cpu() @ x.cpu().T + 1))


def make_data(samples=512, features=32):
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(samples, features, generator=generator)
    true_weights = torch.randn(features, 1, generator=generator)
    targets = torch.tanh(inputs @ true_weights) + 0.05 * torch.randn(samples, 1, generator=generator)
    return inputs, targets


def train(model, inputs, targets, steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.MSELoss()
    losses = []
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, time.perf_counter() - start


def compare_training(steps=30):
    torch.manual_seed(0)
    cpu_model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Softmax(dim=1), nn.Linear(64, 1))
    mydev_model = copy.deepcopy(cpu_model).to("mydev")
    inputs, targets = make_data()

    cpu_losses, cpu_seconds = train(cpu_model, inputs, targets, steps)
    mydev_losses, mydev_seconds = train(mydev_model, inputs.to("mydev"), targets.to("mydev"), steps)

    print(f"\nTraining a 3-layer MLP for {steps} SGD steps, same initial weights and data:")
    print(f"{'step':>6} {'loss on cpu':>14} {'loss on mydev':>14} {'|difference|':>14}")
    for step in list(range(0, steps, 5)) + [steps - 1]:
        difference = abs(cpu_losses[step] - mydev_losses[step])
        print(f"{step:>6} {cpu_losses[step]:>14.6f} {mydev_losses[step]:>14.6f} {difference:>14.2e}")
    worst = max(abs(a - b) for a, b in zip(cpu_losses, mydev_losses))
    weights_match = all(
        torch.allclose(p_cpu, p_dev.cpu(), rtol=1e-4, atol=1e-5)
        for p_cpu, p_dev in zip(cpu_model.parameters(), mydev_model.parameters())
    )
    print(f"largest loss difference: {worst:.2e}; final weights equal within 1e-4: {weights_match}")
    print(f"time: cpu {cpu_seconds * 1000:.1f} ms, mydev {mydev_seconds * 1000:.1f} ms")
    print(
        f"mydev:0 memory: {torch.mydev.memory_allocated(0)} bytes allocated, "
        f"{torch.mydev.memory_reserved(0)} bytes reserved"
    )
    return worst, weights_match


if __name__ == "__main__":
    show_device()
    worst_difference, weights_match = compare_training()
    if worst_difference > 1e-4 or not weights_match:
        raise SystemExit("mydev and CPU training diverged")
