"""The mydev demo: tensors on the simulated device, then the same small model
trained on mydev and on the CPU from the same start, with the losses compared,
then the model compiled with torch.compile and trained on mydev against the CPU,
then one training step under torch.profiler, with the device's kernels on its own rows,
then data-parallel training on two mydev devices in two processes (DDP over mydev's "mccl" backend).

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
    losses, seconds = [], []
    for _ in range(steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        seconds.append(time.perf_counter() - start)
    return losses, seconds


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Softmax(dim=1), nn.Linear(64, 1))


def compare_training(steps=30):
    cpu_model = make_model()
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
    print(f"time: cpu {sum(cpu_seconds) * 1000:.1f} ms, mydev {sum(mydev_seconds) * 1000:.1f} ms")
    print(
        f"mydev:0 memory: {torch.mydev.memory_allocated(0)} bytes allocated, "
        f"{torch.mydev.memory_reserved(0)} bytes reserved"
    )
    return worst, weights_match


def compare_compiled(steps=10):
    """torch.compile on mydev: Inductor fuses the model's elementwise work into C++ kernels launched on the device."""
    from torch._inductor import metrics

    cpu_model = make_model()
    compiled_model = torch.compile(copy.deepcopy(cpu_model).to("mydev"))
    inputs, targets = make_data()
    metrics.reset()
    cpu_losses, _ = train(cpu_model, inputs, targets, steps)
    compiled_losses, compiled_seconds = train(compiled_model, inputs.to("mydev"), targets.to("mydev"), steps)
    worst = max(abs(a - b) for a, b in zip(cpu_losses, compiled_losses))
    print(f"\ntorch.compile(model) on mydev, {steps} SGD steps against eager CPU:")
    print(
        f"first step {compiled_seconds[0]:.1f} s: Inductor compiled forward and backward into "
        f"{metrics.generated_kernel_count} C++ kernels (cached on disk for the next run)"
    )
    print(f"next {steps - 1} steps: {sum(compiled_seconds[1:]) * 1000:.1f} ms")
    print(f"final loss: cpu {cpu_losses[-1]:.6f}, compiled mydev {compiled_losses[-1]:.6f}; largest difference {worst:.2e}")
    return worst


def profile_one_step():
    """torch.profiler with the device: kernels on the device's rows, each linked to the ATen op that launched it."""
    from torch.profiler import profile, ProfilerActivity

    model = make_model().to("mydev")
    inputs, targets = (t.to("mydev") for t in make_data())
    train(model, inputs, targets, 1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        train(model, inputs, targets, 1)
    print("\nOne training step under torch.profiler (CPU + mydev activities), top ops by device time:")
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=8, max_name_column_width=30))
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1]
    streams = sorted({(e.device_index, e.device_resource_id) for e in kernels})
    print(f"{len(kernels)} device activities on {len(streams)} device row(s) {streams} (device, stream); "
          "prof.export_chrome_trace('trace.json') opens them in https://ui.perfetto.dev")
    return len(kernels)


def ddp_rank(rank, world_size, init_file, steps):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.mydev.set_device(rank)
    dist.init_process_group(init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    model = DistributedDataParallel(make_model().to(f"mydev:{rank}"), device_ids=[rank])
    inputs, targets = make_data()
    shard = slice(rank * len(inputs) // world_size, (rank + 1) * len(inputs) // world_size)
    losses, _ = train(model, inputs[shard].to(f"mydev:{rank}"), targets[shard].to(f"mydev:{rank}"), steps)
    first = next(model.parameters()).detach()
    copies = [torch.empty_like(first) for _ in range(world_size)]
    dist.all_gather(copies, first)
    if rank == 0:
        same = all(torch.equal(copies[0].cpu(), c.cpu()) for c in copies)
        backend = dist.group.WORLD._get_backend(torch.device("mydev")).name()
        print(f"\nDistributedDataParallel on {world_size} processes (mydev:0, mydev:1), backend "
              f"{backend!r} for mydev tensors: loss {losses[0]:.4f} -> {losses[-1]:.4f} in {steps} steps "
              f"on rank 0's half of the data; weights identical on every rank: {same}")
        if not same:
            raise SystemExit("DDP ranks diverged")
    dist.destroy_process_group()


def data_parallel(steps=5, world_size=2):
    import os
    import tempfile

    import torch.multiprocessing as mp

    # Each rank gets its share of the cores, as torchrun gives it (two ranks each using every core slow both down).
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // world_size)))
    with tempfile.TemporaryDirectory() as folder:
        mp.start_processes(ddp_rank, args=(world_size, f"{folder}/init", steps), nprocs=world_size,
                           start_method="spawn")


if __name__ == "__main__":
    show_device()
    worst_difference, weights_match = compare_training()
    if worst_difference > 1e-4 or not weights_match:
        raise SystemExit("mydev and CPU training diverged")
    if compare_compiled() > 1e-4:
        raise SystemExit("compiled mydev and eager CPU training diverged")
    if profile_one_step() == 0:
        raise SystemExit("the profiler recorded no device activity")
    data_parallel()
