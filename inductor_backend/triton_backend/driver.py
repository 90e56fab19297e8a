"""The Triton driver of mydev: the current device and stream, the target, and a benchmarker, from torch.mydev."""
import torch
from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

_CPP_TYPES = {
    "i1": "int8_t", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
    "u1": "uint8_t", "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
    "fp16": "double", "bf16": "double", "fp32": "double", "f32": "double", "fp64": "double",
}


class MydevTritonDriver(DriverBase):
    # Set by torch_mydev.inductor.triton_support once mydev's Triton code generation is selected.
    selected = False

    @classmethod
    def is_active(cls):
        return cls.selected

    def map_python_to_cpp_type(self, ty):
        return "void*" if ty.startswith("*") else _CPP_TYPES[ty]

    def get_current_target(self):
        major, minor = torch.mydev.get_device_capability()
        return GPUTarget("mydev", major * 10 + minor, 32)

    def get_active_torch_device(self):
        return torch.device("mydev", torch.mydev.current_device())

    def get_device_interface(self):
        return torch.mydev

    def get_current_device(self):
        return torch.mydev.current_device()

    def set_current_device(self, device):
        torch.mydev.set_device(device)

    def get_current_stream(self, device=None):
        return torch.mydev.current_stream(device).stream_id

    def get_benchmarker(self):
        return _benchmark

    def get_empty_cache_for_benchmark(self):
        return torch.empty(0, dtype=torch.int8, device=self.get_active_torch_device())

    def clear_cache(self, cache):
        cache.zero_()


def _benchmark(kernel_call, *, quantiles=None, warmup=1, rep=5, **kwargs):
    """Milliseconds per call, timed with mydev events around each call (median first, as triton.testing.do_bench)."""
    for _ in range(warmup):
        kernel_call()
    times = []
    for _ in range(rep):
        start, end = torch.mydev.Event(enable_timing=True), torch.mydev.Event(enable_timing=True)
        start.record()
        kernel_call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    if quantiles is None:
        return times[len(times) // 2]
    return [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]
