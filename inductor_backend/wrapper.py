"""The Python wrapper code that Inductor generates for a graph with mydev tensors.

Inductor's Python wrapper allocates buffers and calls kernels. Two things differ from the CPU's:

- A C++ kernel written for mydev is compiled by ``torch_mydev.inductor.kernel_compiler`` instead of Inductor's Python
  binding (which would call it on the host with device pointers): the generated module defines it with
  ``mydev_kernels.cpp(name, argument_types, source)``.
- The call of such a kernel is a plain call of that kernel object, which queues it on the current mydev stream.
- A Triton kernel for mydev is launched with ``mydev_triton_launch(kernel, ...)`` (``triton_support``), which queues
  it on the current mydev stream, instead of Inductor's GPU launch ``kernel.run(..., stream=...)``.
- A buffer's allocation names its device index (``device='mydev:1'``), not only the guard's device.

Kernels of other devices in the same graph (a CPU kernel of a mixed graph) are left as Inductor writes them.
"""
import re

from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.virtualized import V

# How Inductor 2.13's CppScheduling.define_kernel wraps a kernel's source for the Python wrapper.
_CPP_PYBINDING_DEFINITION = re.compile(
    r"\Aasync_compile\.cpp_pybinding\((?P<argument_types>\[[^\]]*\]), r'''\n(?P<source>.*)'''\)\s*\Z", re.S
)


def _defining_for_mydev():
    device = V.graph.current_device
    return device is not None and device.type == "mydev"


def mydev_cpp_kernel_definition(kernel_name, kernel_body):
    """The definition of a mydev C++ kernel in the generated module, from Inductor's CPU definition of it."""
    match = _CPP_PYBINDING_DEFINITION.match(kernel_body)
    if match is None:
        raise RuntimeError(
            f"mydev's Inductor backend does not recognise how this version of torch defines the C++ kernel "
            f"{kernel_name!r} (expected async_compile.cpp_pybinding([...], r'''...''')); "
            "inductor_backend/wrapper.py must follow CppScheduling.define_kernel"
        )
    return f"mydev_kernels.cpp({kernel_name!r}, {match['argument_types']}, r'''\n{match['source']}''')"


class _MydevKernels:
    """What mydev changes in a Python wrapper: its C++ kernels' definitions and calls, and its buffers' device."""

    def make_allocation(self, name, device, dtype, shape, stride, allocation_shape=None, is_pinned=False):
        # Inductor writes device='mydev' for a device type it does not know. The device guard that patches.py
        # extends to mydev (device_need_guard) makes it the graph's device where the scheduler enters one; the
        # index in the allocation does not depend on where that is. mydev's kernels run on their tensors' device
        # (on its current stream), as its eager operators do.
        line = super().make_allocation(name, device, dtype, shape, stride, allocation_shape, is_pinned)
        if device.type == "mydev" and device.index is not None:
            line = line.replace("device='mydev'", f"device='mydev:{device.index}'", 1)
        return line

    def define_kernel(self, kernel_name, kernel_body, metadata=None, gpu=True, cpp_definition=None):
        if not gpu and _defining_for_mydev():
            kernel_body = mydev_cpp_kernel_definition(kernel_name, kernel_body)
        super().define_kernel(kernel_name, kernel_body, metadata=metadata, gpu=gpu, cpp_definition=cpp_definition)

    def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, triton=True, **kwargs):
        device = device or V.graph.get_current_device_or_throw()
        if device.type != "mydev":
            super()._generate_kernel_call_helper(kernel_name, call_args, device=device, triton=triton, **kwargs)
        elif triton:
            self.write_triton_header_once()
            arguments = ", ".join(self.prepare_triton_kernel_call(call_args))
            self.writeline(f"mydev_triton_launch({kernel_name}, {arguments})")
        else:
            self.writeline(self.wrap_kernel_call(kernel_name, call_args))


class MydevSubgraphWrapperCodegen(_MydevKernels, SubgraphPythonWrapperCodegen):
    """The wrapper of a subgraph (a branch of torch.cond, a loop body); its kernels live in its parent's module."""


class MydevPythonWrapperCodegen(_MydevKernels, PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            return MydevSubgraphWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return MydevPythonWrapperCodegen()

    def write_header(self):
        super().write_header()
        self.header.splice(
            """
            from torch_mydev.inductor.kernel_compiler import MydevKernels
            from torch_mydev.inductor.triton_support import launch_triton_kernel as mydev_triton_launch
            mydev_kernels = MydevKernels(async_compile)
            """,
            strip=True,
        )
