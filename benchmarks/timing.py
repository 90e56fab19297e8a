"""Median time of a case's work on the CPU and on mydev, measured in one process.

mydev queues kernels on a stream worker and returns at once, as CUDA does, so a
run only ends when the device has finished it: the clock stops after
torch.mydev.synchronize(). The devices take turns sample by sample, so that
drift in the machine's speed (other processes, frequency changes) falls on
both alike rather than on whichever device was measured second.
"""
import statistics
import time
from typing import NamedTuple

import torch

DEVICES = ("cpu", "mydev")


def wait_for(device):
    if torch.device(device).type == "mydev":
        torch.mydev.synchronize()


class Timing(NamedTuple):
    seconds: float
    # The process's CPU time over the wall time: how many host cores the run
    # kept busy. A core held by a spinning OpenMP thread counts: it was not
    # free for other work either.
    busy_cores: float


def time_run(run, device):
    wait_for(device)
    cpu_start, start = time.process_time(), time.perf_counter()
    run()
    wait_for(device)
    seconds = time.perf_counter() - start
    return Timing(seconds, (time.process_time() - cpu_start) / seconds)


def relative_spread(samples):
    """Interquartile range over median: how far apart the middle half of the samples lie."""
    if len(samples) < 2:
        return 0.0
    lower, _, upper = statistics.quantiles(samples, n=4)
    return (upper - lower) / statistics.median(samples)


def measure(case, repeat, warmup):
    """Per device: the median seconds per operation, the samples, and the median number of host cores busy."""
    runs = {device: case.setup(device) for device in DEVICES}
    # Warm-up fills the caching allocator, optimizer state and the kernels'
    # own caches (oneDNN primitives), none of which a steady-state loop pays for.
    for device, run in runs.items():
        for _ in range(warmup):
            time_run(run, device)
    samples = {device: [] for device in DEVICES}
    busy_cores = {device: [] for device in DEVICES}
    for _ in range(repeat):
        for device, run in runs.items():
            timing = time_run(run, device)
            samples[device].append(timing.seconds / case.operations)
            busy_cores[device].append(timing.busy_cores)
    medians = {device: statistics.median(values) for device, values in samples.items()}
    cores = {device: statistics.median(values) for device, values in busy_cores.items()}
    return medians, samples, cores
