// Device management for the PyTorch glue: counting, selecting and validating
// mydev devices on top of the runtime's per-thread current device.
#pragma once

#include <c10/core/Device.h>

namespace torch_mydev {

// Number of devices; 0 (never an exception) if the runtime cannot be used.
c10::DeviceIndex deviceCount() noexcept;
c10::DeviceIndex currentDevice();
void setDevice(c10::DeviceIndex device);
// Throws a clear error for an index outside [0, deviceCount()).
void checkDeviceIndex(c10::DeviceIndex device);
// -1 means "the current device"; any other index must be valid.
c10::DeviceIndex resolveDevice(c10::DeviceIndex device);

// Waits for every stream of a device, then issues the warnings its kernels
// raised (KernelWarnings.h) on the calling thread.
void synchronizeDevice(c10::DeviceIndex device);

// Switches the runtime's current device for a scope, only if it differs.
class ScopedDevice {
 public:
  explicit ScopedDevice(c10::DeviceIndex device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  c10::DeviceIndex previous_;
  bool switched_;
};

}  // namespace torch_mydev
