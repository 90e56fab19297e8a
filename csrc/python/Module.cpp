// torch_mydev._C: the Python face of the glue. Only what Python cannot reach
// through PyTorch's own generic APIs (torch.accelerator, torch.Stream,
// torch.Event, torch.Generator) is bound here.
#include "../core/Device.h"
#include "../core/Exception.h"
#include "../core/Generator.h"

#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/device_lazy_init.h>
#include <torch/extension.h>

namespace py = pybind11;

namespace torch_mydev {

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

}  // namespace

}  // namespace torch_mydev

PYBIND11_MODULE(_C, m) {
  using namespace torch_mydev;
  m.doc() = "Bindings of the mydev PyTorch backend";

  m.def("_init", &initRuntime, "Initialises the mydev runtime (called once by torch.mydev._lazy_init)");
  m.def("_is_in_bad_fork", [] { return torch::utils::is_device_in_bad_fork(at::kPrivateUse1); });
  m.def("_device_count", [] { return static_cast<int>(deviceCount()); });
  m.def("_current_device", [] { return static_cast<int>(currentDevice()); });
  m.def("_set_device", [](int device) { setDevice(static_cast<c10::DeviceIndex>(device)); });
  m.def("_synchronize",
        [](int device) {
          ScopedDevice on_device(resolveDevice(static_cast<c10::DeviceIndex>(device)));
          MYDEV_CHECK(mydevDeviceSynchronize());
        },
        py::call_guard<py::gil_scoped_release>());

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
  m.def("_get_device_properties", [](int device) { return deviceProperties(static_cast<c10::DeviceIndex>(device)); });

  // torch.Event.elapsed_time refuses subclasses of torch.Event (2.13 checks the exact type), so
  // torch.mydev.Event times itself through this, with the raw events (Event.event_id).
  m.def("_event_elapsed_time", [](uintptr_t start, uintptr_t end) {
    TORCH_CHECK(start != 0 && end != 0, "Both events must be recorded before calculating elapsed time.");
    float milliseconds = 0;
    MYDEV_CHECK(mydevEventElapsedTime(&milliseconds, reinterpret_cast<mydevEvent_t>(start),
                                      reinterpret_cast<mydevEvent_t>(end)));
    return static_cast<double>(milliseconds);
  });

  m.def("_default_generator", [](int device) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(defaultGenerator(static_cast<c10::DeviceIndex>(device))));
  });
}
