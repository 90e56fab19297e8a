"""Median time of a case's work on the CPU and on mydev, measured in one process.

mydev queues kernels on a stream worker and returns at once, as CUDA does, so a
run only ends when the device has finished it: the clock stops after
torch.mydev.synchronize(). The devices take turns sample by sample, so that
drift in the machine's speed (other processes, frequency changes) falls on
both alike rather than on whichever device was measured second.
"""
import statistics
import time

import torch

DEVICES = ("cpu", "mydev")


def wait_for(device):
    if torch.device(device).type == "mydev":
        torch.mydev.synchronize()


def time_run(run, device):
    wait_for(device)
    start = time.perf_counter()
    run()
    wait_for(device)
    return time.perf_counter() - start


def relative_spread(samples):
    """Interquartile range over median: how far apart the middle half of the samples lie."""
    if len(samples) < 2:
        return 0.0
    lower, _, upper = statistics.quantiles(samples, n=4)
    return (upper - lower) / statistics.median(samples)


def measure(case, repeat, warmup):
    """Seconds per operation on each device: the median over `repeat` samples and the samples themselves."""
    runs = {device: case.setup(device) for device in DEVICES}
    # Warm-up fills the caching allocator, optimizer state and the kernels'
    # own caches (oneDNN primitives), none of which a steady-state loop pays for.
    for device, run in runs.items():
        for _ in range(warmup):
            time_run(run, device)
    samples = {device: [] for device in DEVICES}
    for _ in range(repeat):
        for device, run in runs.items():
            samples[device].append(time_run(run, device) / case.operations)
    return {device: statistics.median(values) for device, values in samples.items()}, samples
