#include "Device.h"

#include "Exception.h"
#include "KernelWarnings.h"

#include <c10/util/Exception.h>

#include <atomic>

namespace torch_mydev {

namespace {
// The count is fixed for the life of the process. Kept once known, so that a
// forked child, which the runtime refuses, still counts its parent's devices
// (as torch.cuda's cached count does) and learns why it cannot use them at its
// first use, rather than finding none and quietly running on the CPU.
std::atomic<int> g_known_count{-1};
}  // namespace

c10::DeviceIndex deviceCount() noexcept {
  int count = g_known_count.load(std::memory_order_relaxed);
  if (count < 0) {
    if (mydevGetDeviceCount(&count) != mydevSuccess) {
      return 0;
    }
    g_known_count.store(count, std::memory_order_relaxed);
  }
  return static_cast<c10::DeviceIndex>(count);
}

c10::DeviceIndex currentDevice() {
  int device = 0;
  MYDEV_CHECK(mydevGetDevice(&device));
  return static_cast<c10::DeviceIndex>(device);
}

// Unlike deviceCount(), reports why the runtime cannot be used (a forked
// child, a bad configuration) instead of pretending there are no devices.
// Every operator checks its device, so the count is asked of the runtime only
// until it answers once (it is fixed for the life of the process); a forked
// child is still refused by the runtime call the operator makes next.
void checkDeviceIndex(c10::DeviceIndex device) {
  int count = g_known_count.load(std::memory_order_relaxed);
  if (count < 0 || device < 0 || device >= count) {
    MYDEV_CHECK(mydevGetDeviceCount(&count));
    g_known_count.store(count, std::memory_order_relaxed);
  }
  TORCH_CHECK(device >= 0 && device < count, "Invalid device index ", static_cast<int>(device),
              " for mydev: ", count, " device(s) available (valid indices 0..", count - 1, "; set MYDEV_DEVICE_COUNT to simulate more)");
}

void setDevice(c10::DeviceIndex device) {
  checkDeviceIndex(device);
  MYDEV_CHECK(mydevSetDevice(device));
}

c10::DeviceIndex resolveDevice(c10::DeviceIndex device) {
  if (device == -1) {
    return currentDevice();
  }
  checkDeviceIndex(device);
  return device;
}

void synchronizeDevice(c10::DeviceIndex device) {
  ScopedDevice on_device(resolveDevice(device));
  MYDEV_CHECK(mydevDeviceSynchronize());
  reissueKernelWarnings();
}

ScopedDevice::ScopedDevice(c10::DeviceIndex device) : previous_(currentDevice()), switched_(device != previous_) {
  if (switched_) {
    setDevice(device);
  }
}

ScopedDevice::~ScopedDevice() {
  if (switched_) {
    mydevSetDevice(previous_);
  }
}

}  // namespace torch_mydev
