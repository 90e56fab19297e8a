"""mccl against gloo on the CPU, in the same processes: all_reduce of 1 KB to 64 MB on mydev tensors (mccl, which
runs gloo as kernels over device memory) and on CPU tensors (gloo itself), as algorithm bandwidth (bytes / time);
target: mccl at least 0.9x gloo's bandwidth. Then a DDP training step on 2 ranks against the same step on 1 rank.

    .venv/bin/python benchmarks/distributed_vs_gloo.py [--ranks 2] [--repeat 9]
"""
import argparse
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

TARGET = 0.9
SAMPLING_SECONDS = 0.5
SIZES = [1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def timed(function, repeat):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def interleaved(first, second, repeat):
    """Medians of both, timed in turns, so that a slow phase of the machine falls on both."""
    samples = ([], [])
    for _ in range(repeat):
        for function, times in zip((first, second), samples):
            start = time.perf_counter()
            function()
            times.append(time.perf_counter() - start)
    return statistics.median(samples[0]), statistics.median(samples[1])


def sample_count(on_cpu, repeat):
    """Samples enough to last about SAMPLING_SECONDS per device (at least `repeat`, at most 40x that): a collective of
    1 KB to 1 MB takes ~1 ms, and the scheduler's stalls on a 2-core host last several ms. Every rank takes the largest
    count, or the collectives would not pair up."""
    start = time.perf_counter()
    on_cpu()
    count = torch.tensor([min(40 * repeat, max(repeat, int(SAMPLING_SECONDS / (time.perf_counter() - start))))])
    dist.all_reduce(count, op=dist.ReduceOp.MAX)
    return int(count)


def all_reduce_rank(rank, world_size, init_file, repeat, results):
    torch.mydev.set_device(rank)
    dist.init_process_group("cpu:gloo,mydev:mccl", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    rows = []
    for size in SIZES:
        cpu = torch.ones(size // 4)
        device = cpu.to(f"mydev:{rank}")

        def on_cpu():
            dist.all_reduce(cpu)

        def on_device():
            dist.all_reduce(device)
            torch.mydev.synchronize()

        for function in (on_cpu, on_device):
            function()
        rows.append((size, *interleaved(on_cpu, on_device, sample_count(on_cpu, repeat))))
    if rank == 0:
        results.put(rows)
    dist.destroy_process_group()


def ddp_step_rank(rank, world_size, init_file, repeat, results):
    from torch.nn.parallel import DistributedDataParallel

    torch.mydev.set_device(rank)
    dist.init_process_group("cpu:gloo,mydev:mccl", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    device = torch.device("mydev", rank)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.GELU()) for _ in range(8)))
    model = DistributedDataParallel(model.to(device), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs = torch.randn(64, 512, device=device)

    def step():
        optimizer.zero_grad()
        model(inputs).square().mean().backward()
        optimizer.step()
        torch.mydev.synchronize()

    step()
    seconds = timed(step, repeat)
    if rank == 0:
        results.put(seconds)
    dist.destroy_process_group()


def run(worker, world_size, repeat):
    os.environ["MYDEV_DEVICE_COUNT"] = str(max(2, world_size))
    # Each rank gets its share of the cores, as torchrun gives it (OMP_NUM_THREADS): two ranks each running kernels
    # on every core made the 2-rank DDP step 7.7x the 1-rank one, against 2.3x with a share each.
    threads = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // world_size))
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    try:
        with tempfile.TemporaryDirectory() as folder:
            mp.start_processes(worker, args=(world_size, os.path.join(folder, "init"), repeat, results),
                               nprocs=world_size, start_method="spawn")
    finally:
        if threads is None:
            del os.environ["OMP_NUM_THREADS"]
        else:
            os.environ["OMP_NUM_THREADS"] = threads
    return results.get()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()

    print(f"all_reduce on {args.ranks} ranks (median of {args.repeat} to {40 * args.repeat} samples, as many as last "
          f"~{SAMPLING_SECONDS} s per size and device; gloo and mccl timed in turns):")
    print(f"{'size':>8} {'gloo (CPU)':>12} {'mccl (mydev)':>14} {'mccl/gloo bandwidth':>20}")
    worst = None
    for size, cpu, device in run(all_reduce_rank, args.ranks, args.repeat):
        ratio = cpu / device
        worst = ratio if worst is None else min(worst, ratio)
        label = f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB"
        print(f"{label:>8} {size / cpu / 1e6:>9.1f} MB/s {size / device / 1e6:>11.1f} MB/s {ratio:>19.2f}x")
    print(f"worst ratio {worst:.2f}x (target >= {TARGET}x: {'met' if worst >= TARGET else 'MISSED'})")

    one = run(ddp_step_rank, 1, args.repeat)
    many = run(ddp_step_rank, args.ranks, args.repeat)
    print(f"DDP step (8x Linear 512, batch 64 per rank): 1 rank {one * 1000:.1f} ms, {args.ranks} ranks "
          f"{many * 1000:.1f} ms ({many / one:.2f}x the 1-rank step)")


if __name__ == "__main__":
    main()
