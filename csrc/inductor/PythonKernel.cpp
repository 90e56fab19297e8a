#include "PythonKernel.h"

#include "../aten/DeviceTensorRef.h"
#include "../aten/KernelLaunch.h"
#include "../core/Exception.h"
#include "../core/Stream.h"
#include "../python/Gil.h"

#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/autograd/python_variable.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <utility>

namespace py = pybind11;

namespace torch_mydev {

namespace {

// Python kernels launched and not yet released, on every stream.
std::atomic<int64_t> queued_python_kernels{0};

// Counts a kernel from its launch until its task is released (run or dropped).
struct QueuedPythonKernel {
  bool counted = true;
  QueuedPythonKernel() { ++queued_python_kernels; }
  QueuedPythonKernel(QueuedPythonKernel&& other) noexcept : counted(std::exchange(other.counted, false)) {}
  QueuedPythonKernel& operator=(QueuedPythonKernel&&) = delete;
  ~QueuedPythonKernel() {
    if (counted) {
      --queued_python_kernels;
    }
  }
};

// A thread that waits for the device while it holds the GIL would never wake
// if a Python kernel queued before needs it. PyTorch's tensor bindings release
// it around an operator, but not all of its bindings do (a storage's copy_,
// which torch.save and pickling reach): while Python kernels are queued, the
// runtime's host-wait callbacks release it for each wait. Only then: a thread
// that released the GIL inside a wait made under a lock of mydev's (a full
// launch queue, the allocator emptying its cache) can deadlock with a thread
// that holds the GIL and wants that lock. Not once the interpreter finalizes:
// CPython ends a thread other than the finalizing one that takes the GIL back
// then (a wait begun before finalization and ended during it still does).
thread_local PyThreadState* gil_released_for_host_wait = nullptr;

void releaseGilForHostWait() {
  if (queued_python_kernels.load() > 0 && holdsGil() && !interpreterFinalizing()) {
    gil_released_for_host_wait = PyEval_SaveThread();
  }
}

void retakeGilAfterHostWait() {
  if (PyThreadState* state = std::exchange(gil_released_for_host_wait, nullptr)) {
    PyEval_RestoreThread(state);
  }
}

// Owns a reference to the function and its arguments until the kernel has run;
// it drops them on the worker, under the GIL, since the host thread that later
// releases the finished task may not hold it.
struct PythonKernelCall {
  PyObject* function;
  PyObject* arguments;  // the call's tuple, with None where a mydev tensor goes
  c10::SmallVector<std::pair<size_t, DeviceTensorRef>, 6> tensors;
  QueuedPythonKernel queued;

  void operator()() {
    KernelMemory memory;
    c10::SmallVector<at::Tensor, 6> aliases;
    for (const auto& entry : tensors) {
      aliases.push_back(memory.map(entry.second));
    }
    // A worker that waits for the GIL while the interpreter finalizes is ended by CPython (pthread_exit); a
    // kernel still queued when the program exits is dropped instead.
    TORCH_CHECK(!interpreterFinalizing(), "Python is shutting down: the kernel was not run");
    std::string failure;
    {
      py::gil_scoped_acquire gil;
      try {
        py::tuple call_arguments(PyTuple_GET_SIZE(arguments));
        for (Py_ssize_t index = 0; index < PyTuple_GET_SIZE(arguments); ++index) {
          call_arguments[index] = py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(arguments, index));
        }
        for (size_t index = 0; index < tensors.size(); ++index) {
          call_arguments[tensors[index].first] = py::reinterpret_steal<py::object>(THPVariable_Wrap(aliases[index]));
        }
        py::reinterpret_borrow<py::object>(function)(*call_arguments);
      } catch (py::error_already_set& error) {
        failure = error.what();
      }
      Py_CLEAR(function);
      Py_CLEAR(arguments);
    }
    TORCH_CHECK(failure.empty(), failure);
  }
};

}  // namespace

void launchPythonKernel(const std::string& name, const py::object& function, const py::tuple& arguments) {
  static std::once_flag callbacks_set;
  std::call_once(callbacks_set,
                 [] { MYDEV_CHECK(mydevSetHostWaitCallbacks(&releaseGilForHostWait, &retakeGilAfterHostWait)); });
  PythonKernelCall call{nullptr, nullptr, {}, {}};
  py::tuple placeholders(arguments.size());
  std::optional<c10::Device> device;
  for (size_t index = 0; index < arguments.size(); ++index) {
    PyObject* argument = arguments[index].ptr();
    if (THPVariable_Check(argument)) {
      const at::Tensor& tensor = THPVariable_Unpack(argument);
      if (tensor.device().type() == c10::DeviceType::PrivateUse1) {
        if (!device) {
          device = tensor.device();
        }
        TORCH_CHECK(*device == tensor.device(), "mydev kernel '", name, "': expected all tensors on ", *device,
                    ", argument ", index, " is on ", tensor.device());
        call.tensors.emplace_back(index, describe(tensor));
        placeholders[index] = py::none();
        continue;
      }
      TORCH_CHECK(tensor.device().type() != c10::DeviceType::CPU || tensor.dim() == 0, "mydev kernel '", name,
                  "': argument ", index, " is a tensor on ", tensor.device(),
                  "; a mydev kernel takes mydev tensors and 0-dim cpu tensors");
      // A 0-dim CPU tensor is read by value, as at a CUDA launch: the kernel gets a copy.
      placeholders[index] = py::reinterpret_steal<py::object>(THPVariable_Wrap(tensor.clone()));
      continue;
    }
    placeholders[index] = arguments[index];
  }
  TORCH_CHECK(device.has_value(), "mydev kernel '", name, "' has no mydev tensor argument to place it on");
  call.function = function.inc_ref().ptr();
  call.arguments = placeholders.release().ptr();
  const MydevStream stream = getCurrentMydevStream(device->index());
  py::gil_scoped_release no_gil;
  launchKernelBuiltBy(name.c_str(), stream, [&]() { return std::move(call); });
}

}  // namespace torch_mydev
