"""Triton code generation for mydev: Inductor's ``TritonScheduling`` writes the kernels, Triton's interpreter runs them.

Selected with ``torch.compile(m, backend="mydev", options={"codegen": "triton"})`` or
``TORCH_MYDEV_INDUCTOR_CODEGEN=triton``. Then:

- ``prepare_triton`` registers mydev's Triton backend (``triton_backend``) with Triton, sets ``TRITON_INTERPRET=1``
  (process-wide: Triton's ``jit`` and Inductor read it when a kernel module loads, so user ``@triton.jit`` kernels
  defined later are interpreted too) and makes mydev's Triton driver the active one, so Inductor hashes and describes
  kernels for the ``mydev`` target.
- The generated wrapper launches each Triton kernel with ``launch_triton_kernel`` instead of ``kernel.run(...)``: the
  launch is queued on the current mydev stream as a Python kernel (csrc/inductor/PythonKernel.h). When the stream
  reaches it, the worker runs ``kernel.run`` in the interpreter with CPU tensors that alias the device memory, so the
  interpreter's copies "to the host and back" copy nothing between devices: they see host tensors already. What is
  left of them is the interpreter copying each whole storage onto itself after the run (a memcpy of the bytes in
  place; benchmarks/compile_vs_cpu.py measures the launch).
- The interpreter cannot run ``libdevice`` calls (Triton lowers them to the device's math library), so the kernels
  get ``InterpreterLibdevice``, which computes each with the CPU's ATen kernel on the interpreter's arrays, and a
  copy of Inductor's ``triton_helpers`` loaded for the interpreter.

This is a functional path for testing Triton code generation on mydev, not a fast one: the interpreter evaluates a
kernel in Python, block by block.
"""
import atexit
import functools
import importlib.util
import os
import threading

import torch

from torch_mydev import _C
from torch_mydev.patches import jit_functions_interpreted, register_triton_backend

TRITON_REQUIREMENT = "triton==3.9.0"

# The interpreter keeps its grid position and its patches of triton.language in module state: kernels of two
# streams must not interleave.
_interpreter_lock = threading.Lock()


def require_triton():
    try:
        import triton  # noqa: F401
    except ImportError as error:
        raise RuntimeError(
            f"mydev's Inductor backend: codegen='triton' needs the optional 'triton' package ({TRITON_REQUIREMENT}); "
            "it is not installed. Install it, or use the default codegen='cpp'"
        ) from error


def prepare_triton():
    """Makes Triton run mydev's kernels: the interpreter, and mydev's driver active."""
    require_triton()
    import triton

    from torch_mydev.inductor.triton_backend.compiler import MydevTritonBackend
    from torch_mydev.inductor.triton_backend.driver import MydevTritonDriver

    register_triton_backend("mydev", MydevTritonBackend, MydevTritonDriver)
    os.environ["TRITON_INTERPRET"] = "1"
    MydevTritonDriver.selected = True
    if not isinstance(triton.runtime.driver.active, MydevTritonDriver):
        triton.runtime.driver.set_active(MydevTritonDriver())


def launch_triton_kernel(kernel, *args):
    """Queues ``kernel.run(*args)`` (an Inductor ``CachingAutotuner``) on the current mydev stream."""
    _finish_queued_kernels_at_exit()
    _C._launch_python_kernel(kernel.fn.__name__, _run_interpreted, (kernel, *args))


@functools.cache
def _finish_queued_kernels_at_exit():
    """A worker that still waits for the GIL when the interpreter finalizes is ended by CPython with pthread_exit,
    which aborts the process. Interpreted kernels still queued at exit therefore run before finalization begins."""

    def finish():
        for index in range(torch.mydev.device_count()):
            try:
                torch.mydev.synchronize(index)
            except RuntimeError:
                pass  # a kernel's failure nobody waited for; the program is ending

    atexit.register(finish)


def _run_interpreted(kernel, *args):
    with _interpreter_lock:
        kernel_globals = kernel.fn.fn.__globals__
        if not isinstance(kernel_globals.get("libdevice"), InterpreterLibdevice):
            kernel_globals["libdevice"] = INTERPRETER_LIBDEVICE
            kernel_globals["triton_helpers"] = _interpreted_triton_helpers()
        with jit_functions_interpreted():
            kernel.run(*args, stream=0)


@functools.cache
def _interpreted_triton_helpers():
    """A copy of Inductor's ``triton_helpers`` whose ``@triton.jit`` functions the interpreter can call: a kernel
    calls them as device functions, and the module that torch imported before ``TRITON_INTERPRET`` was set has them
    compiled-only. Loaded from the same file, with the interpreter's ``libdevice``."""
    from torch._inductor.runtime import triton_helpers

    spec = importlib.util.spec_from_file_location("torch_mydev.inductor.interpreted_triton_helpers", triton_helpers.__file__)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = triton_helpers.__package__
    spec.loader.exec_module(module)
    module.libdevice = INTERPRETER_LIBDEVICE
    return module


class InterpreterLibdevice:
    """``libdevice`` for Triton's interpreter: each function runs the CPU's ATen kernel on the interpreter's numpy
    arrays and returns an interpreter tensor of the argument's type (booleans for the predicates)."""

    _SAME_TYPE = {
        "abs": torch.abs, "acos": torch.acos, "acosh": torch.acosh, "asin": torch.asin, "asinh": torch.asinh,
        "atan": torch.atan, "atan2": torch.atan2, "atanh": torch.atanh, "ceil": torch.ceil, "copysign": torch.copysign,
        "cos": torch.cos, "cosh": torch.cosh, "erf": torch.erf, "erfc": torch.erfc, "erfinv": torch.erfinv,
        "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1, "fast_tanhf": torch.tanh, "floor": torch.floor,
        "fmod": torch.fmod, "hypot": torch.hypot, "ldexp": torch.ldexp, "lgamma": torch.lgamma, "log": torch.log,
        "log10": torch.log10, "log1p": torch.log1p, "log2": torch.log2, "nearbyint": torch.round,
        "nextafter": torch.nextafter, "pow": torch.pow, "rint": torch.round, "rsqrt": torch.rsqrt, "sin": torch.sin,
        "sinh": torch.sinh, "sqrt": torch.sqrt, "tan": torch.tan, "tanh": torch.tanh, "trunc": torch.trunc,
    }
    _PREDICATES = {"isinf": torch.isinf, "isnan": torch.isnan, "signbit": torch.signbit}

    def __getattr__(self, name):
        if name in self._SAME_TYPE:
            return lambda *args: _apply(self._SAME_TYPE[name], args, None)
        if name in self._PREDICATES:
            return lambda *args: _apply(self._PREDICATES[name], args, "int1")
        if name == "llrint":
            return lambda x: _apply(lambda t: torch.round(t).to(torch.int64), (x,), "int64")
        if name == "ilogb":
            return lambda x: _apply(lambda t: torch.frexp(t).exponent - 1, (x,), "int32")
        raise AttributeError(f"libdevice.{name} has no implementation in mydev's Triton interpreter")


def _apply(function, args, result_type):
    import triton.language as tl
    from triton.runtime.interpreter import _get_np_dtype, TensorHandle

    reference = next(a for a in args if isinstance(a, tl.tensor))
    as_torch = [_to_torch(a) if isinstance(a, tl.tensor) else a for a in args]
    result = function(*as_torch)
    scalar_type = reference.dtype.scalar if result_type is None else getattr(tl, result_type)
    if scalar_type == tl.bfloat16:
        data = result.to(torch.bfloat16).view(torch.int16).numpy().view("uint16")
    else:
        data = result.numpy().astype(_get_np_dtype(scalar_type))
    block = reference.type.shape if reference.type.is_block() else None
    return tl.tensor(TensorHandle(data, scalar_type), tl.block_type(scalar_type, block) if block else scalar_type)


def _to_torch(value):
    import triton.language as tl

    data = value.handle.data
    if value.dtype.scalar == tl.bfloat16:
        return torch.from_numpy(data.view("int16").copy()).view(torch.bfloat16)
    return torch.from_numpy(data.copy())


INTERPRETER_LIBDEVICE = InterpreterLibdevice()
