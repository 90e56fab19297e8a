"""The C++ wrapper code Inductor generates for mydev (``torch._inductor.config.cpp_wrapper = True``).

It is Inductor's CPU C++ wrapper (``CppWrapperCpu``: host code over AOTI tensor handles) with three changes for
mydev's tensors:

- A mydev C++ kernel is not called on the host: each gets an entry point (``kernel_compiler.entry_point_source``) and
  is queued on the current mydev stream through the launch API that ``torch_mydev._C`` exports in the capsule
  ``_inductor_launch_api`` (csrc/inductor/CompiledKernel.h), found when the module first launches.
- ATen operators on mydev tensors (matmuls, convolutions, operators without a lowering) go through the dispatcher,
  since the C-shim functions Inductor would call are per device and torch has none for mydev; the CPU's would run
  CPU kernels on device memory.
- The wrapper includes the CPU's headers: mydev needs no device runtime header in host code.

AOTInductor (``aot_mode``) shares this class, but its runtime cannot load a mydev model in torch 2.13
(docs/extension-points/inductor.md).
"""
import dataclasses

import torch
from torch._inductor import ir
from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
from torch._inductor.codegen.wrapper import ExternKernelOutLine
from torch._inductor.virtualized import V

from torch_mydev.inductor.kernel_compiler import argument_kinds, ENTRY_POINT_HELPERS, entry_point_source

LAUNCH_API_SOURCE = """
namespace mydev_inductor {
// torch_mydev's InductorLaunchApi (csrc/inductor/CompiledKernel.h), version 1.
struct LaunchApi {
    int64_t version;
    int (*launch)(const char* name, void (*entry)(const uint64_t*), const char* kinds, void* const* tensors,
                  const uint64_t* values);
    const char* (*last_error)();
};

inline const LaunchApi& launch_api() {
    static const LaunchApi* api = [] {
        PyGILState_STATE gil = PyGILState_Ensure();
        const auto* found = static_cast<const LaunchApi*>(
            PyCapsule_Import("torch_mydev._C._inductor_launch_api", 0));
        if (found == nullptr) {
            PyErr_Clear();
        }
        PyGILState_Release(gil);
        if (found == nullptr || found->version != 1) {
            throw std::runtime_error("mydev: this compiled module needs torch_mydev's launch API version 1");
        }
        return found;
    }();
    return *api;
}

inline void launch(const char* name, void (*entry)(const uint64_t*), const char* kinds, void* const* tensors,
                   const uint64_t* values) {
    const LaunchApi& api = launch_api();
    if (api.launch(name, entry, kinds, tensors, values) != 0) {
        throw std::runtime_error(api.last_error());
    }
}

inline uint64_t double_to_word(double value) {
    uint64_t word;
    std::memcpy(&word, &value, sizeof(word));
    return word;
}
}  // namespace mydev_inductor
"""


# The C shims Inductor calls for a mydev node outside the paths this wrapper reroutes through the dispatcher: its
# in-place bernoulli_ under fallback_random, which the IR node writes itself. mydev's shim is the dispatcher's call
# (AOTI's tensor handles point at at::Tensor; Inductor passes no generator), defined in a module that calls it.
MYDEV_C_SHIMS = {
    "aoti_torch_mydev_bernoulli__float": """
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>
inline void aoti_torch_mydev_bernoulli__float(AtenTensorHandle self, double p, void* /* no generator: NULL */) {
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::bernoulli_", "float");
    std::vector<c10::IValue> stack{
        c10::IValue(*torch::aot_inductor::tensor_handle_to_tensor_pointer(self)), c10::IValue(p), c10::IValue()};
    op.callBoxed(&stack);
}
""",
}


def _on_mydev(node):
    device = node.get_device()
    return device is not None and device.type == "mydev"


def dispatcher_arguments(node, out=None):
    """The arguments of ``node.op_overload`` in schema order, as Inductor's boxed dispatcher call takes them: the
    node's positional arguments (defaults filled in), then its keyword arguments, with ``out`` for an out= one."""
    if isinstance(node, ir.FallbackKernel):
        positional, kwargs = node.unflatten_args(node.inputs, node.constant_args)
    else:
        positional, kwargs = [*node.inputs, *node.constant_args], node.kwargs
    arguments = list(node.fill_non_provided_args(positional, kwargs))
    schema_arguments = node.op_overload._schema.arguments
    for schema_argument in schema_arguments[len(arguments) :]:
        arguments.append(out if schema_argument.is_out else node.get_kwargs_value(schema_argument.name, **kwargs))
    return [
        _UndefinedTensor if value is None and isinstance(schema_argument.type, torch.TensorType) else value
        for value, schema_argument in zip(arguments, schema_arguments)
    ]


class _UndefinedTensor:
    """Where a schema takes a Tensor and the graph has none (attention's backward takes the forward's absent
    cumulative sequence lengths), a boxed dispatcher call needs an undefined tensor: None does not convert."""

    @staticmethod
    def codegen_reference():
        return "RAIIAtenTensorHandle(torch::aot_inductor::new_tensor_handle(at::Tensor()))"


def _result_name(output):
    """The wrapper's name for one result of a dispatched operator; None for a result it does not read (an integer
    known when compiling, such as attention's sequence lengths, or an absent tensor)."""
    if isinstance(output, ir.MutationOutput):
        return output.get_mutation_names()[0]
    if isinstance(output, ir.Buffer):
        return output.get_name()
    return None


@dataclasses.dataclass
class _DispatchedExternKernelOutLine(ExternKernelOutLine):
    """An out= ATen call of a mydev node (``at::mm_out``...), made through the dispatcher."""

    def codegen(self, code):
        node = self.node
        out = node.output_view if node.output_view else node
        self.wrapper.generate_fallback_kernel_with_runtime_lookup_boxed(
            node.op_overload, dispatcher_arguments(node, out), [None], []
        )


class MydevCppWrapperCodegen(CppWrapperCpu):
    def __init__(self):
        super().__init__()
        self._defined_in_header = set()

    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        return MydevCppWrapperCodegen()

    @staticmethod
    def get_device_include_path_jit(device):
        return CppWrapperCpu.get_device_include_path_jit("cpu" if device == "mydev" else device)

    @staticmethod
    def get_device_include_path_aot(device):
        return CppWrapperCpu.get_device_include_path_aot("cpu" if device == "mydev" else device)

    def write_header(self):
        super().write_header()
        if "mydev" in V.graph.device_types:
            self.header.splice(ENTRY_POINT_HELPERS)
            self.header.splice(LAUNCH_API_SOURCE)

    def get_c_shim_func_name(self, kernel, device):
        name = super().get_c_shim_func_name(kernel, device)
        if name in MYDEV_C_SHIMS and name not in self._defined_in_header:
            self._defined_in_header.add(name)
            self.header.splice(MYDEV_C_SHIMS[name])
        return name

    def _mydev_entry_point(self, kernel_name, argument_types):
        entry_name = f"{kernel_name}_mydev_entry"
        if entry_name not in self._defined_in_header:
            self._defined_in_header.add(entry_name)
            self.header.splice(entry_point_source(entry_name, kernel_name, argument_types))
        return entry_name

    def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, triton=True, arg_types=None, **kwargs):
        device = device or V.graph.get_current_device_or_throw()
        if triton and device.type == "mydev":
            raise NotImplementedError(
                "mydev runs Triton kernels through Triton's interpreter, which only the Python wrapper launches: "
                "use codegen='cpp' with cpp_wrapper=True, or the Python wrapper (cpp_wrapper=False) with Triton"
            )
        if device.type != "mydev":
            super()._generate_kernel_call_helper(
                kernel_name, call_args, device=device, triton=triton, arg_types=arg_types, **kwargs
            )
            return
        entry = self._mydev_entry_point(kernel_name, arg_types)
        kinds = argument_kinds(arg_types)
        tensors, values = [], []
        for argument, kind in zip(call_args, kinds):
            if kind in "rw":
                tensors.append(f"{argument}.get()")
                values.append("0")
            else:
                tensors.append("nullptr")
                values.append(f"mydev_inductor::double_to_word({argument})" if kind == "f" else f"static_cast<uint64_t>({argument})")
        tensor_array = self._generate_temporary_array_pointer("void*", tensors, force_mutable=True)
        value_array = self._generate_temporary_array_pointer("uint64_t", values)
        self.writeline(f'mydev_inductor::launch("{kernel_name}", {entry}, "{kinds}", {tensor_array}, {value_array});')

    def generate_scatter_fallback(self, node):
        if not _on_mydev(node):
            super().generate_scatter_fallback(node)
            return
        # The in-place scatter_ or scatter_reduce_ through the dispatcher (Inductor calls a C shim of the device).
        source = node.inputs[2] if node.src_is_tensor else node.constant_args[1]
        arguments = [node.inputs[0], node.constant_args[0], node.inputs[1], source]
        for schema_argument in node.op_overload._schema.arguments[len(arguments) :]:
            arguments.append(node.kwargs.get(schema_argument.name, schema_argument.default_value))
        self.generate_fallback_kernel_with_runtime_lookup_boxed(node.op_overload, arguments, [None], [])

    def generate_extern_kernel_out(self, node):
        if not _on_mydev(node):
            super().generate_extern_kernel_out(node)
            return
        node.codegen_comment(self)
        self.writeline(_DispatchedExternKernelOutLine(self, node))

    def _generate_extern_kernel_alloc_helper(self, extern_kernel, args):
        if not _on_mydev(extern_kernel):
            super()._generate_extern_kernel_alloc_helper(extern_kernel, args)
            return
        if isinstance(extern_kernel, ir.FallbackKernel):
            outputs = extern_kernel.outputs if extern_kernel.outputs else extern_kernel.mutation_outputs
        else:
            outputs = [extern_kernel]
        raw_args = dispatcher_arguments(extern_kernel)
        if any(isinstance(output, (list, tuple)) for output in outputs):
            # A list of tensors comes back through Inductor's call into Python.
            self.generate_fallback_kernel_with_runtime_lookup(
                extern_kernel.get_name(), extern_kernel.python_kernel_name, lambda: args, extern_kernel.op_overload,
                raw_args, outputs,
            )
            return
        self.generate_fallback_kernel_with_runtime_lookup_boxed(
            extern_kernel.op_overload, raw_args, [_result_name(output) for output in outputs], outputs
        )
