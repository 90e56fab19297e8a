"""Per-operator overhead: loops of an operator on a 4-element tensor.

The kernel itself takes nanoseconds, so the time per operation is what the
framework costs around it: dispatch, allocation and, on mydev, queueing the
kernel on the stream worker. The loop ends with one synchronization, as one
measures a CUDA loop: launches overlap with the worker running earlier kernels,
so this is the throughput a Python loop of small ops gets.
"""
import torch

from case import Case

TARGET = 1.5
ITERATIONS = 1000


def tiny_loop(step):
    def setup(device):
        start = torch.ones(4, device=device)
        factor = torch.full((4,), 1.0001, device=device)

        def run():
            y = start
            for _ in range(ITERATIONS):
                y = step(y, factor)
            return y

        return run

    return setup


def in_place_loop(device):
    y = torch.ones(4, device=device)

    def run():
        for _ in range(ITERATIONS):
            y.add_(1)
        return y

    return run


CASES = [
    Case("y = y + 1", "tiny ops", TARGET, tiny_loop(lambda y, factor: y + 1), ITERATIONS),
    Case("y = y * w", "tiny ops", TARGET, tiny_loop(lambda y, factor: y * factor), ITERATIONS),
    Case("y = torch.relu(y)", "tiny ops", TARGET, tiny_loop(lambda y, factor: torch.relu(y)), ITERATIONS),
    Case("y = y.sum() + y", "tiny ops", TARGET, tiny_loop(lambda y, factor: y.sum() + y), 2 * ITERATIONS),
    Case("y.add_(1)", "tiny ops", TARGET, in_place_loop, ITERATIONS),
    # A view launches no kernel: its time is dispatch and tensor metadata only,
    # which separates the cost of the framework from the cost of a launch.
    Case("y = y.view(2, 2).view(4)", "tiny ops", TARGET, tiny_loop(lambda y, factor: y.view(2, 2).view(4)), 2 * ITERATIONS),
]
