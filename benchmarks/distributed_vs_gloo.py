"""mccl against gloo on the CPU, in the same processes: all_reduce of 1 KB to 64 MB on mydev tensors (mccl, which
runs gloo as kernels over device memory) and on CPU tensors (gloo itself, and gloo again as a control), each on a few
process groups of its own, as algorithm bandwidth (bytes / time); target: mccl at least 0.9x gloo's bandwidth (the
median over runs). Then a DDP training step on 2 ranks against the same step on 1 rank. With --check, mccl compares
each collective across ranks first (MCCL_CHECK_COLLECTIVES=1): what that costs; the target is for the default,
unchecked.

    .venv/bin/python benchmarks/distributed_vs_gloo.py [--ranks 2] [--repeat 15] [--runs 5] [--groups 3] [--check]
"""
import argparse
import os
import random
import statistics
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
TARGET = 0.9
SAMPLING_SECONDS = 0.5
BATCH_SECONDS = 0.025


def timed(function, repeat):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def batch_shape(on_cpu, repeat, group):
    """How many operations a timed batch runs (enough for ~BATCH_SECONDS) and how many batches each contender gets
    (enough for ~SAMPLING_SECONDS, at least `repeat`). Every rank takes the largest counts, or the collectives
    would not pair up."""
    start = time.perf_counter()
    on_cpu()
    seconds = time.perf_counter() - start
    per_batch = max(1, int(BATCH_SECONDS / seconds))
    batches = max(repeat, int(SAMPLING_SECONDS / (per_batch * seconds)))
    counts = torch.tensor([per_batch, min(4 * repeat, batches)])
    dist.all_reduce(counts, op=dist.ReduceOp.MAX, group=group)
    return int(counts[0]), int(counts[1])


def batch(function, count, group):
    """The seconds each of `count` operations took, in a batch that starts on every rank at once (a barrier).
    Timing operations of one contender in a row keeps a rank's sample from absorbing its peer's lag from another
    contender's last operation, which moved ratios by up to 50% when they alternated operation by operation."""
    dist.barrier(group=group)
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return samples


def all_reduce_rank(rank, world_size, init_file, repeat, groups, results):
    """Per size, the median all_reduce of three contenders, each on `groups` process groups of its own: gloo on CPU
    tensors (the default group's and more), gloo again (the control: what the same transport measures against
    itself) and mccl on mydev tensors (the default group's and more). A group keeps the speed its connection was
    dealt for the whole run: at 1 MB, two gloo groups of one run measured 1.66 and 2.41 ms, and two mccl groups
    1.59 and 1.97 ms (2026-11-27). A contender's time is therefore the median over its groups."""
    torch.mydev.set_device(rank)
    dist.init_process_group("cpu:gloo,mydev:mccl", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    pacing = dist.new_group(backend="gloo")
    contenders = {
        "gloo": [dist.group.WORLD] + [dist.new_group(backend="gloo") for _ in range(groups - 1)],
        "control": [dist.new_group(backend="gloo") for _ in range(groups)],
        "mccl": [dist.group.WORLD] + [dist.new_group(backend="mccl") for _ in range(groups - 1)],
    }
    rows = []
    for size in SIZES:
        cpu = torch.ones(size // 4)
        device = cpu.to(f"mydev:{rank}")
        timed_groups = []
        for name, members in contenders.items():
            for group in members:
                if name == "mccl":
                    timed_groups.append((name, lambda group=group: (dist.all_reduce(device, group=group),
                                                                    torch.mydev.synchronize())))
                else:
                    timed_groups.append((name, lambda group=group: dist.all_reduce(cpu, group=group)))
        for _, function in timed_groups:
            function()
        count, batches = batch_shape(timed_groups[0][1], repeat, pacing)
        samples = [[] for _ in timed_groups]
        for turn in range(batches):
            # A fresh order each turn, the same on every rank (seeded), so that no group always follows the same one.
            order = list(range(len(timed_groups)))
            random.Random(turn).shuffle(order)
            for index in order:
                samples[index].extend(batch(timed_groups[index][1], count, pacing))
        # The median operation: this host's scheduler stalls a woken thread for a 4 ms tick now and then (a tenth of
        # small collectives, on any backend), which would otherwise decide the result. A collective ends when its
        # slowest rank does.
        medians = torch.tensor([statistics.median(times) for times in samples])
        dist.all_reduce(medians, op=dist.ReduceOp.MAX, group=pacing)
        per_contender = {name: [] for name in contenders}
        for (name, _), seconds in zip(timed_groups, medians.tolist()):
            per_contender[name].append(seconds)
        rows.append((size, *(statistics.median(per_contender[name]) for name in contenders)))
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


def run(worker, world_size, *arguments):
    os.environ["MYDEV_DEVICE_COUNT"] = str(max(2, world_size))
    # Each rank gets its share of the cores, as torchrun gives it (OMP_NUM_THREADS): two ranks each running kernels
    # on every core made the 2-rank DDP step 7.7x the 1-rank one, against 2.3x with a share each.
    threads = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // world_size))
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    try:
        with tempfile.TemporaryDirectory() as folder:
            mp.start_processes(worker, args=(world_size, os.path.join(folder, "init"), *arguments, results),
                               nprocs=world_size, start_method="spawn")
    finally:
        if threads is None:
            del os.environ["OMP_NUM_THREADS"]
        else:
            os.environ["OMP_NUM_THREADS"] = threads
    return results.get()


def size_label(size):
    return f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=15, help="batches per group and size, at least")
    parser.add_argument("--runs", type=int, default=5, help="all_reduce runs, each with fresh ranks and connections")
    parser.add_argument("--groups", type=int, default=3, help="process groups per contender in each run")
    parser.add_argument("--check", action="store_true", help="mccl checks each collective across ranks first")
    args = parser.parse_args()
    if args.groups < 1 or args.runs < 1:
        parser.error("--groups and --runs take at least 1")
    os.environ["MCCL_CHECK_COLLECTIVES"] = "1" if args.check else "0"

    print(f"all_reduce on {args.ranks} ranks{', mccl checking each collective' if args.check else ''}, {args.runs} "
          f"runs of fresh ranks; in each, per size, contender and group ({args.groups} groups a contender), the median "
          f"operation of {args.repeat} to {4 * args.repeat} batches of ~{BATCH_SECONDS * 1000:.0f} ms (each started on "
          f"all ranks at once, groups in turns, slowest rank), then the median over the contender's groups. Bandwidth "
          f"ratios against gloo per run, then their median:")
    ratios = {size: ([], []) for size in SIZES}
    bandwidths = {size: ([], []) for size in SIZES}
    for _ in range(args.runs):
        for size, gloo, control, mccl in run(all_reduce_rank, args.ranks, args.repeat, args.groups):
            ratios[size][0].append(gloo / mccl)
            ratios[size][1].append(gloo / control)
            bandwidths[size][0].append(size / gloo / 1e6)
            bandwidths[size][1].append(size / mccl / 1e6)
    print(f"{'size':>8} {'gloo MB/s':>10} {'mccl MB/s':>10}  {'mccl/gloo per run':<{6 * args.runs}} {'median':>7}   "
          f"{'control/gloo per run':<{6 * args.runs}} {'median':>7}")
    worst = None
    for size in SIZES:
        mccl_runs, control_runs = ratios[size]
        mccl_ratio = statistics.median(mccl_runs)
        worst = mccl_ratio if worst is None else min(worst, mccl_ratio)
        print(f"{size_label(size):>8} {statistics.median(bandwidths[size][0]):>10.1f} "
              f"{statistics.median(bandwidths[size][1]):>10.1f}  "
              f"{''.join(f'{r:6.2f}' for r in mccl_runs):<{6 * args.runs}} {mccl_ratio:>6.2f}x   "
              f"{''.join(f'{r:6.2f}' for r in control_runs):<{6 * args.runs}} {statistics.median(control_runs):>6.2f}x")
    print(f"worst median ratio {worst:.2f}x (target >= {TARGET}x: {'met' if worst >= TARGET else 'MISSED'}); the control "
          f"is gloo against gloo on groups of its own: how far this host moves a ratio of equals")

    one = run(ddp_step_rank, 1, args.repeat)
    many = run(ddp_step_rank, args.ranks, args.repeat)
    print(f"DDP step (8x Linear 512, batch 64 per rank): 1 rank {one * 1000:.1f} ms, {args.ranks} ranks "
          f"{many * 1000:.1f} ms ({many / one:.2f}x the 1-rank step)")


if __name__ == "__main__":
    main()
