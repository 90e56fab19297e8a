// torch_mydev._C: the Python face of the glue. Only what Python cannot reach
// through PyTorch's own generic APIs (torch.accelerator, torch.Stream,
// torch.Event, torch.Generator) is bound here.
#include "../aten/DtypeSignatures.h"
#include "../aten/Fallback.h"
#include "../aten/FallbackPolicy.h"
#include "../aten/HostResults.h"
#include "../core/CachingAllocator.h"
#include "../core/Device.h"
#include "../core/Exception.h"
#include "../core/Generator.h"
#include "../core/HostAllocator.h"
#include "../core/KernelWorkspaceAllocator.h"
#include "../core/Stream.h"
#include "../core/SyncDebug.h"
#include "../inductor/CompiledKernel.h"
#include "../inductor/PythonKernel.h"

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/extension.h>

#include <cstring>
#include <limits>

namespace py = pybind11;

namespace torch_mydev {

void bindMemoryHistory(py::module_& m);  // MemorySnapshot.cpp
void bindDistributed(py::module_& m);    // ProcessGroupMydev.cpp

namespace {

void initRuntime() {
  int count = 0;
  MYDEV_CHECK(mydevGetDeviceCount(&count));
  torch::utils::register_fork_handler_for_device_init(at::kPrivateUse1);
}

mydevDeviceProp deviceProperties(c10::DeviceIndex device) {
  mydevDeviceProp properties{};
  MYDEV_CHECK(mydevGetDeviceProperties(&properties, resolveDevice(device)));
  return properties;
}

py::dict statToDict(const c10::CachingAllocator::Stat& stat) {
  py::dict result;
  result["current"] = stat.current;
  result["peak"] = stat.peak;
  result["allocated"] = stat.allocated;
  result["freed"] = stat.freed;
  return result;
}

py::dict durationToDict(const c10::CachingAllocator::DurationStat& stat) {
  py::dict result;
  result["total"] = stat.total;
  result["max"] = stat.max;
  result["min"] = stat.min;
  result["count"] = stat.count;
  result["avg"] = stat.count == 0 ? 0 : stat.total / stat.count;
  return result;
}

// The same nesting as torch.cuda.host_memory_stats_as_nested_dict().
py::dict hostMemoryStats() {
  const at::HostStats stats = hostAllocator()->get_stats();
  py::dict result;
  result["allocations"] = statToDict(stats.allocations);
  result["allocated_bytes"] = statToDict(stats.allocated_bytes);
  result["active_requests"] = statToDict(stats.active_requests);
  result["active_bytes"] = statToDict(stats.active_bytes);
  result["num_host_alloc"] = stats.num_host_alloc;
  result["num_host_free"] = stats.num_host_free;
  result["host_alloc_time"] = durationToDict(stats.host_alloc_time);
  result["host_free_time"] = durationToDict(stats.host_free_time);
  return result;
}

// A kernel torch.compile generated for mydev, as the generated Python wrapper
// calls it: with its tensors and sizes, in the order of `kinds`
// (CompiledKernel.h).
class PythonCompiledKernel {
 public:
  PythonCompiledKernel(std::string name, uintptr_t entry, std::string kinds)
      : name_(std::move(name)), entry_(reinterpret_cast<CompiledKernelEntry>(entry)), kinds_(std::move(kinds)) {
    TORCH_CHECK(entry_ != nullptr, "mydev compiled kernel '", name_, "': null entry point");
    for (const char kind : kinds_) {
      TORCH_CHECK(isCompiledKernelArgumentKind(kind), "mydev compiled kernel '", name_, "': unknown argument kind '",
                  kind, "' (expected 'r', 'w', 'i' or 'f')");
    }
  }

  void operator()(const py::args& args) const {
    const size_t count = kinds_.size();
    TORCH_CHECK(args.size() == count, "mydev compiled kernel '", name_, "' takes ", count, " arguments, got ",
                args.size());
    c10::SmallVector<CompiledKernelArgument, 12> arguments(count);
    for (size_t index = 0; index < count; ++index) {
      PyObject* object = PyTuple_GET_ITEM(args.ptr(), index);
      CompiledKernelArgument& argument = arguments[index];
      const char kind = kinds_[index];
      if (kind == 'r' || kind == 'w') {
        TORCH_CHECK_TYPE(THPVariable_Check(object), "mydev compiled kernel '", name_, "': argument ", index,
                         " must be a tensor, got ", Py_TYPE(object)->tp_name);
        argument.tensor = &THPVariable_Unpack(object);
      } else if (kind == 'i') {
        const long long value = PyLong_AsLongLong(object);
        if (value == -1 && PyErr_Occurred()) {
          throw py::error_already_set();
        }
        argument.value = static_cast<uint64_t>(value);
      } else {
        const double value = PyFloat_AsDouble(object);
        if (value == -1.0 && PyErr_Occurred()) {
          throw py::error_already_set();
        }
        std::memcpy(&argument.value, &value, sizeof(value));
      }
    }
    // A Triton kernel queued before this one may need the GIL to run (PythonKernel.h): a full launch queue
    // must not wait for it while holding the GIL.
    py::gil_scoped_release no_gil;
    launchCompiledKernel(name_, entry_, kinds_, arguments);
  }

  const std::string& name() const { return name_; }
  const std::string& kinds() const { return kinds_; }

 private:
  std::string name_;
  CompiledKernelEntry entry_;
  std::string kinds_;
};

// pybind11 hands the index over as an int: narrowed to c10::DeviceIndex
// unchecked, 257 would name device 1.
c10::DeviceIndex toDeviceIndex(int device) {
  TORCH_CHECK(device >= std::numeric_limits<c10::DeviceIndex>::min() &&
                  device <= std::numeric_limits<c10::DeviceIndex>::max(),
              "Invalid device index ", device, " for mydev: ", static_cast<int>(deviceCount()), " device(s) available");
  return static_cast<c10::DeviceIndex>(device);
}

}  // namespace

}  // namespace torch_mydev

PYBIND11_MODULE(_C, m) {
  using namespace torch_mydev;
  m.doc() = "Bindings of the mydev PyTorch backend";
  routeOperatorsToFallback();

  m.def("_init", &initRuntime, "Initialises the mydev runtime (called once by torch.mydev._lazy_init)");
  m.def("_is_in_bad_fork", [] { return torch::utils::is_device_in_bad_fork(at::kPrivateUse1); });
  m.def("_device_count", [] { return static_cast<int>(deviceCount()); });
  m.def("_current_device", [] { return static_cast<int>(currentDevice()); });
  m.def("_set_device", [](int device) { setDevice(toDeviceIndex(device)); });
  m.def("_synchronize", [](int device) {
    // pybind11 installs no warning handler: this one buffers the kernels' warnings
    // while the GIL is released and raises them as Python warnings when it goes.
    torch::PyWarningHandler python_warnings;
    py::gil_scoped_release no_gil;
    synchronizeDevice(toDeviceIndex(device));
  });

  py::class_<mydevDeviceProp>(m, "_MydevDeviceProperties")
      .def_property_readonly("name", [](const mydevDeviceProp& p) { return std::string(p.name); })
      .def_readonly("total_memory", &mydevDeviceProp::totalGlobalMem)
      .def_readonly("multi_processor_count", &mydevDeviceProp::multiProcessorCount)
      .def_readonly("major", &mydevDeviceProp::major)
      .def_readonly("minor", &mydevDeviceProp::minor)
      .def("__repr__", [](const mydevDeviceProp& p) {
        return "_MydevDeviceProperties(name='" + std::string(p.name) + "', major=" + std::to_string(p.major) +
            ", minor=" + std::to_string(p.minor) + ", total_memory=" + std::to_string(p.totalGlobalMem >> 20) +
            "MB, multi_processor_count=" + std::to_string(p.multiProcessorCount) + ")";
      });
  m.def("_get_device_properties", [](int device) { return deviceProperties(toDeviceIndex(device)); });

  // torch.Stream has no priority; torch.cuda.Stream reads it from its own base class.
  m.def("_stream_priority", [](int device, int64_t stream_id) {
    return MydevStream(c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, toDeviceIndex(device)),
                                   stream_id))
        .priority();
  });
  m.def("_stream_priority_range", [] {
    int lowest = 0;
    int highest = 0;
    MYDEV_CHECK(mydevDeviceGetStreamPriorityRange(&lowest, &highest));
    return std::make_pair(lowest, highest);
  });

  // torch.Event.elapsed_time refuses subclasses of torch.Event (2.13 checks the exact type), so
  // torch.mydev.Event times itself through this, with the raw events (Event.event_id).
  m.def("_event_elapsed_time", [](uintptr_t start, uintptr_t end) {
    TORCH_CHECK(start != 0 && end != 0, "Both events must be recorded before calculating elapsed time.");
    float milliseconds = 0;
    MYDEV_CHECK(mydevEventElapsedTime(&milliseconds, reinterpret_cast<mydevEvent_t>(start),
                                      reinterpret_cast<mydevEvent_t>(end)));
    return static_cast<double>(milliseconds);
  });

  m.def("_set_memory_fraction", [](double fraction, int device) {
    setMemoryFraction(fraction, toDeviceIndex(device));
  });
  m.def("_get_memory_fraction", [](int device) { return memoryFraction(toDeviceIndex(device)); });
  // Allocates on the current device and stream, like torch.cuda.caching_allocator_alloc.
  m.def("_caching_allocator_alloc",
        [](size_t size) { return reinterpret_cast<uintptr_t>(cachingAllocator()->raw_allocate(size)); });
  m.def("_caching_allocator_delete",
        [](uintptr_t ptr) { rawDelete(reinterpret_cast<void*>(ptr)); });

  bindMemoryHistory(m);
  bindDistributed(m);
  m.def("_host_memory_stats", &hostMemoryStats);
  m.def("_reset_accumulated_host_memory_stats", [] { hostAllocator()->reset_accumulated_stats(); });
  m.def("_reset_peak_host_memory_stats", [] { hostAllocator()->reset_peak_stats(); });

  m.def("_kernel_workspace_stats", [] {
    const KernelWorkspaceStats stats = kernelWorkspaceStats();
    py::dict result;
    result["enabled"] = kernelWorkspaceCacheInstalled();
    result["active_bytes"] = stats.active_bytes;
    result["idle_bytes"] = stats.idle_bytes;
    result["requests"] = stats.requests;
    result["reused"] = stats.reused;
    result["outputs_lent"] = stats.outputs_lent;
    const HostResultCounts results = hostResultCounts();
    result["results_in_place"] = results.in_place;
    result["results_copied"] = results.copied;
    result["results_moved"] = results.moved;
    return result;
  });

  m.def("_fallback_counts", [] {
    py::dict counts;
    for (const auto& [name, calls] : fallbackCounts()) {
      counts[py::str(name)] = calls;
    }
    return counts;
  });
  m.def("_reset_fallback_counts", &resetFallbackCounts);
  m.def("_errors_raised_by_first_launches", &errorsRaisedByFirstLaunches);
  m.def("_get_fallback_policy", [] { return std::string(fallbackPolicyName(fallbackPolicy())); });
  m.def("_set_fallback_policy", [](const std::string& policy) {
    setFallbackPolicy(parseFallbackPolicy(policy, "the fallback policy"));
  });
  py::class_<PythonCompiledKernel>(m, "_CompiledKernel")
      .def(py::init<std::string, uintptr_t, std::string>(), py::arg("name"), py::arg("entry"), py::arg("kinds"))
      .def("__call__", &PythonCompiledKernel::operator())
      .def_property_readonly("name", &PythonCompiledKernel::name)
      .def_property_readonly("kinds", &PythonCompiledKernel::kinds);
  m.def("_get_sync_debug_mode", [] { return static_cast<int>(syncDebugMode()); });
  m.def("_set_sync_debug_mode", [](int mode) {
    TORCH_CHECK(mode >= 0 && mode <= 2, "invalid value of debug_mode, expected 0, 1 or 2, got ", mode);
    setSyncDebugMode(static_cast<SyncDebugMode>(mode));
  });
  m.def("_inject_fault", [](int kind, const std::string& name, int nth) {
    int id = 0;
    MYDEV_CHECK(mydevInjectFault(static_cast<mydevFaultKind>(kind), name.c_str(), nth, &id));
    return id;
  });
  m.def("_remove_fault", [](int id) { MYDEV_CHECK(mydevRemoveFault(id)); });
  m.def("_launch_python_kernel", &launchPythonKernel, py::arg("name"), py::arg("function"), py::arg("arguments"));
  m.attr("_inductor_launch_api") = py::capsule(inductorLaunchApi(), "torch_mydev._C._inductor_launch_api");
  m.def("_default_generator", [](int device) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(defaultGenerator(toDeviceIndex(device))));
  });
}
