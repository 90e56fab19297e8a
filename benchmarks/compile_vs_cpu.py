"""torch.compile on mydev against torch.compile on the CPU, measured in the same process.

Both devices compile with Inductor's C++ code generator, so the same generated kernels run on both: on the CPU called
from the wrapper, on mydev queued on the stream worker. The ratio compiled mydev / compiled CPU is therefore the cost
of the device machinery around compiled code (target <= 1.05). Also reported: the speed-up of compiled mydev over
eager mydev, and the time of a first compile (fresh process, empty Inductor cache) of each model on each device
(target mydev/CPU <= 1.2). A Triton row shows what a launch through the Triton interpreter costs.

Run: .venv/bin/python benchmarks/compile_vs_cpu.py [--repeat N] [--skip-first-compile] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import torch
import torch.nn.functional as F
from torch import nn

from timing import relative_spread, time_run

COMPILED_TARGET = 1.05
FIRST_COMPILE_TARGET = 1.2


class TransformerBlock(nn.Module):
    """Pre-norm block of a GPT: causal self-attention and a GELU MLP, d_model 256, 4 heads."""

    def __init__(self, d_model=256, heads=4):
        super().__init__()
        self.heads = heads
        self.attention_norm = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.attention_out = nn.Linear(d_model, d_model)
        self.mlp_norm = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        batch, seq_len, d_model = x.shape
        q, k, v = self.qkv(self.attention_norm(x)).split(d_model, dim=-1)
        q, k, v = (t.view(batch, seq_len, self.heads, d_model // self.heads).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attention_out(attended.transpose(1, 2).reshape(batch, seq_len, d_model))
        return x + self.mlp(self.mlp_norm(x))


def mlp():
    return nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 512))


MODELS = {
    "MLP 512-1024-1024-512, batch 256: fwd+bwd+SGD": (mlp, (256, 512)),
    "transformer block d256, 8x128 tokens: fwd+bwd+SGD": (TransformerBlock, (8, 128, 256)),
}


def training_step(make_model, input_shape, device, compiled, options=None):
    torch.manual_seed(0)
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    forward = torch.compile(model, **({"backend": "mydev", "options": options} if options else {})) if compiled else model
    inputs = torch.randn(input_shape, generator=torch.Generator().manual_seed(1)).to(device)

    def run():
        optimizer.zero_grad()
        loss = forward(inputs).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss

    return run


def measure(runs, repeat, warmup):
    """Median seconds per run of each (name, device, run), sampled in turns."""
    for name, device, run in runs:
        for _ in range(warmup):
            time_run(run, device)
    samples = {name: [] for name, _, _ in runs}
    for _ in range(repeat):
        for name, device, run in runs:
            samples[name].append(time_run(run, device).seconds)
    return samples


FIRST_COMPILE = """
import time, torch
from compile_vs_cpu import MODELS, training_step
make_model, shape = MODELS[{model!r}]
run = training_step(make_model, shape, {device!r}, compiled=True)
start = time.perf_counter()
run()
if {device!r} == "mydev":
    torch.mydev.synchronize()
print(time.perf_counter() - start)
"""


def first_compile_seconds(model, device):
    """Seconds of the first compiled step (compile included) in a fresh process with an empty Inductor cache."""
    with tempfile.TemporaryDirectory() as cache:
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(FIRST_COMPILE.format(model=model, device=device))],
            cwd=os.path.dirname(os.path.abspath(__file__)),
            env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache},
            capture_output=True,
            text=True,
            check=True,
        )
    return float(result.stdout.split()[-1])


def triton_launch_cost(repeat):
    """Per-call time of one compiled pointwise kernel on mydev with each code generator, and of the storage copy
    onto itself that Triton's interpreter makes after a run (the only copy left of its host round trip)."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return None
    x = torch.randn(65536, device="mydev")
    costs = {}
    for codegen in ("cpp", "triton"):
        torch._dynamo.reset()
        kernel = torch.compile(lambda a: a * 2 + 1, backend="mydev", options={"codegen": codegen})
        kernel(x)
        costs[codegen] = sorted(time_run(lambda: kernel(x), "mydev").seconds for _ in range(repeat))[repeat // 2]
    storage = x.cpu().untyped_storage()
    costs["storage_self_copy"] = sorted(time_run(lambda: storage.copy_(storage), "cpu").seconds for _ in range(repeat))[repeat // 2]
    return costs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="timed samples per configuration (default 11)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first, compiling included (default 3)")
    parser.add_argument("--skip-first-compile", action="store_true", help="do not time first compiles")
    parser.add_argument("--skip-triton", action="store_true", help="do not time the Triton interpreter's launch")
    parser.add_argument("--json", metavar="FILE", help="also write the results to FILE")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; medians of {args.repeat} samples\n")
    results = []
    for model, (make_model, shape) in MODELS.items():
        runs = [
            ("compiled cpu", "cpu", training_step(make_model, shape, "cpu", compiled=True)),
            ("compiled mydev", "mydev", training_step(make_model, shape, "mydev", compiled=True)),
            ("eager mydev", "mydev", training_step(make_model, shape, "mydev", compiled=False)),
        ]
        samples = measure(runs, args.repeat, args.warmup)
        median = {name: sorted(values)[len(values) // 2] for name, values in samples.items()}
        ratio = median["compiled mydev"] / median["compiled cpu"]
        result = {
            "case": model,
            "seconds": median,
            "compiled_ratio": ratio,
            "compiled_target": COMPILED_TARGET,
            "speedup_over_eager_mydev": median["eager mydev"] / median["compiled mydev"],
            "spread": max(relative_spread(values) for values in samples.values()),
        }
        if not args.skip_first_compile:
            first = {device: first_compile_seconds(model, device) for device in ("cpu", "mydev")}
            result["first_compile_seconds"] = first
            result["first_compile_ratio"] = first["mydev"] / first["cpu"]
        results.append(result)
        print(model)
        print(
            f"  compiled: cpu {median['compiled cpu'] * 1e3:.2f} ms, mydev {median['compiled mydev'] * 1e3:.2f} ms, "
            f"ratio {ratio:.2f}x (target <= {COMPILED_TARGET}) {'met' if ratio <= COMPILED_TARGET else 'MISSED'}"
        )
        print(
            f"  eager mydev {median['eager mydev'] * 1e3:.2f} ms: compiled is {result['speedup_over_eager_mydev']:.2f}x "
            f"faster; spread {result['spread']:.0%}"
        )
        if "first_compile_ratio" in result:
            first, first_ratio = result["first_compile_seconds"], result["first_compile_ratio"]
            print(
                f"  first compile: cpu {first['cpu']:.1f} s, mydev {first['mydev']:.1f} s, ratio {first_ratio:.2f}x "
                f"(target <= {FIRST_COMPILE_TARGET}) {'met' if first_ratio <= FIRST_COMPILE_TARGET else 'MISSED'}"
            )
        print(flush=True)
    triton_costs = None if args.skip_triton else triton_launch_cost(args.repeat)
    if triton_costs:
        print("x * 2 + 1 on 65,536 elements, per call on mydev (compile excluded)")
        print(
            f"  C++ kernel {triton_costs['cpp'] * 1e3:.3f} ms, Triton interpreter {triton_costs['triton'] * 1e3:.1f} ms; "
            f"of which the interpreter's copy of the 256 KiB storage onto itself {triton_costs['storage_self_copy'] * 1e3:.3f} ms"
        )
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"cases": results, "triton_launch": triton_costs}, file, indent=2)


if __name__ == "__main__":
    main()
