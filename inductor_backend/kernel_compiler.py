"""Compiles the C++ kernels that Inductor generates for mydev into launchable kernels.

Inductor's C++ code generator writes ``extern "C" void kernel(const float* in_ptr0, float* out_ptr0, const int64_t
ks0, ...)``, host code over raw pointers. For the CPU, Inductor wraps it in a Python binding that calls it on the
calling thread with each tensor's ``data_ptr()``. On mydev a data pointer is a device pointer, which host code must
not touch, and kernels run in order on a stream. So mydev compiles the same source with one more function, an entry
point of a fixed C signature that unpacks an array of 64-bit words into the kernel's parameters, and hands that
entry point to ``torch_mydev._C._CompiledKernel``: calling it queues the kernel on the current stream of its tensors'
device, where the glue translates the device pointers into the addresses a running kernel may use before the entry
point runs (csrc/inductor/CompiledKernel.cpp).
"""
import ctypes

from torch._inductor.async_compile import get_compile_threads
from torch._inductor.codecache import CppCodeCache, LambdaFuture, _get_cpp_prefix_header

from torch_mydev import _C

ENTRY_POINT = "mydev_kernel_entry"


def _argument_kind(argument_type):
    """How the launcher passes a parameter (csrc/inductor/CompiledKernel.h): 'r' a pointer the kernel only reads,
    'w' a pointer it writes, 'i' an integer, 'f' a floating-point value."""
    if argument_type.endswith("*"):
        return "r" if argument_type.startswith("const ") else "w"
    base = argument_type.replace("const ", "").strip()
    if base in ("float", "double"):
        return "f"
    if base in ("int64_t", "long", "int", "int32_t", "bool", "uint64_t", "uintptr_t"):
        return "i"
    raise NotImplementedError(f"mydev compiled kernels: unsupported kernel parameter type '{argument_type}'")


def _unpack_expression(argument_type, index):
    kind = _argument_kind(argument_type)
    base = argument_type.replace("const ", "").strip()
    if kind in "rw":
        return f"reinterpret_cast<{argument_type}>(arguments[{index}])"
    if kind == "f":
        return f"static_cast<{base}>(mydev_word_to_double(arguments[{index}]))"
    return f"static_cast<{base}>(static_cast<int64_t>(arguments[{index}]))"


# Included once before the entry points of a translation unit.
ENTRY_POINT_HELPERS = """
#include <cstdint>
#include <cstring>
static inline double mydev_word_to_double(uint64_t word) {
    double value;
    std::memcpy(&value, &word, sizeof(value));
    return value;
}
"""


def entry_point_source(entry_name, function_name, argument_types):
    """C++ source of ``entry_name``, which calls ``function_name`` with its parameters unpacked from 64-bit words."""
    unpacked = ",\n        ".join(_unpack_expression(t, i) for i, t in enumerate(argument_types))
    return f"""
extern "C" void {entry_name}(const uint64_t* arguments) {{
    {function_name}(
        {unpacked});
}}
"""


def argument_kinds(argument_types):
    return "".join(_argument_kind(t) for t in argument_types)


class MydevKernelCodeCache(CppCodeCache):
    """Inductor's C++ kernel cache with the flags of its CPU kernels (no libtorch, the precompiled cpp_prefix.h);
    its libraries are plain shared objects whose entry point mydev's launcher calls."""

    cache = {}
    cpp_compile_command_flags = {"include_pytorch": False, "shared": True}

    @classmethod
    def _get_uncompiled_header(cls, device):
        return _get_cpp_prefix_header(device)


def _launchable(name, argument_types, library):
    # ctypes never unloads a library, so the entry point stays valid for the kernel object's lifetime.
    entry = ctypes.cast(getattr(library, ENTRY_POINT), ctypes.c_void_p).value
    return _C._CompiledKernel(name, entry, argument_kinds(argument_types))


class MydevKernels:
    """What generated wrapper code calls to define its mydev C++ kernels, beside Inductor's ``async_compile``:
    compiles on Inductor's compile workers when it uses them, as ``AsyncCompile.cpp_pybinding`` does."""

    def __init__(self, async_compile):
        self.async_compile = async_compile

    def cpp(self, name, argument_types, source):
        main_code = source + ENTRY_POINT_HELPERS + entry_point_source(ENTRY_POINT, "kernel", argument_types)
        if get_compile_threads() <= 1:
            return _launchable(name, argument_types, MydevKernelCodeCache.load(main_code))
        get_library = MydevKernelCodeCache.load_async(main_code, submit_fn=self.async_compile.submit)
        return LambdaFuture(lambda: _launchable(name, argument_types, get_library()))
