"""Eager mydev against the CPU, measured in the same process.

Prints, for each case, the median time per operation on each device and the
ratio mydev/CPU (lower is better; 1.0 means as fast as the CPU). mydev runs
ATen's CPU kernels on a stream worker thread, so the ratio shows the cost of
the device machinery: dispatch, asynchronous launch, and memory management.

Run: .venv/bin/python benchmarks/eager_vs_cpu.py [--repeat N]
"""
import argparse
import statistics
import time

import torch


def synchronize(device):
    if device.startswith("mydev"):
        torch.mydev.synchronize()


def time_per_op(fn, device, ops_per_run, repeat):
    fn()
    synchronize(device)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        synchronize(device)
        samples.append((time.perf_counter() - start) / ops_per_run)
    return statistics.median(samples)


def small_op_loop(device, iterations=2000):
    x = torch.ones(4, device=device)

    def run():
        y = x
        for _ in range(iterations):
            y = y + 1
        return y

    return run, iterations


def large_matmul(device, size=1024):
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=generator).to(device)
    b = torch.randn(size, size, generator=generator).to(device)
    return (lambda: a @ b), 1


CASES = {
    "small-op loop (x + 1, 4 elements)": small_op_loop,
    "matmul 1024x1024 float32": large_matmul,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, mydev:0 = {torch.mydev.get_device_name(0)}")
    print(f"{'case':<38}{'cpu':>12}{'mydev':>12}{'mydev/cpu':>11}")
    for name, make in CASES.items():
        timings = {}
        for device in ("cpu", "mydev"):
            fn, ops = make(device)
            timings[device] = time_per_op(fn, device, ops, args.repeat)
        ratio = timings["mydev"] / timings["cpu"]
        print(f"{name:<38}{timings['cpu'] * 1e6:>10.1f}us{timings['mydev'] * 1e6:>10.1f}us{ratio:>10.2f}x")


if __name__ == "__main__":
    main()
