// Runs a Python function as a kernel on a mydev stream, the way mydev runs
// Triton kernels: through Triton's interpreter, which is Python. The function
// is queued on the current stream of its tensors' device like any kernel; when
// the stream reaches it, the worker takes the GIL and calls it with each mydev
// tensor argument replaced by a CPU tensor over the same device memory
// (KernelMemory), so the interpreter reads and writes device memory in place,
// in stream order, with no copy. An exception it raises fails the kernel, and
// surfaces at the next synchronizing call like any kernel fault.
//
// Because the worker needs the GIL, a host thread must not wait for that
// stream while it holds the GIL: while Python kernels are queued, every host
// wait of the runtime (mydevSetHostWaitCallbacks) and of the glue releases it.
#pragma once

#include <torch/csrc/utils/pybind.h>

#include <string>

namespace torch_mydev {

void launchPythonKernel(const std::string& name, const pybind11::object& function, const pybind11::tuple& arguments);

}  // namespace torch_mydev
