// PrivateUse1HooksInterface for mydev: what ATen asks of an accelerator outside
// any kernel — availability, device count, primary context, generators, pinned
// memory, the device of a pointer, and growing a storage in place.
#include "../aten/Resize.h"
#include "Device.h"
#include "Exception.h"
#include "Generator.h"
#include "HostAllocator.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/util/Exception.h>

namespace torch_mydev {

namespace {

class MydevHooks final : public at::PrivateUse1HooksInterface {
 public:
  void init() const override {
    int count = 0;
    MYDEV_CHECK(mydevGetDeviceCount(&count));
  }

  bool isBuilt() const override { return true; }

  bool isAvailable() const override { return deviceCount() > 0; }

  c10::DeviceIndex deviceCount() const override { return torch_mydev::deviceCount(); }

  void setCurrentDevice(c10::DeviceIndex device) const override { setDevice(device); }

  c10::DeviceIndex getCurrentDevice() const override { return currentDevice(); }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const c10::DeviceIndex previous = currentDevice();
    if (previous != device) {
      setDevice(device);
    }
    return previous;
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override { return exchangeDevice(device); }

  bool hasPrimaryContext(c10::DeviceIndex device) const override {
    int initialized = 0;
    return mydevDeviceIsInitialized(device, &initialized) == mydevSuccess && initialized != 0;
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return defaultGenerator(device);
  }

  at::Generator getNewGenerator(c10::DeviceIndex device) const override { return newGenerator(device); }

  at::Device getDeviceFromPtr(void* data) const override {
    mydevPointerAttributes attributes{};
    MYDEV_CHECK(mydevPointerGetAttributes(&attributes, data));
    TORCH_CHECK(attributes.type == mydevMemoryTypeDevice, "The pointer ", data, " is not mydev device memory");
    return {c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(attributes.device)};
  }

  bool isPinnedPtr(const void* data) const override { return isPinned(data); }

  at::Allocator* getPinnedMemoryAllocator() const override { return hostAllocator(); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    resizeStorageBytes(storage, new_bytes);
  }
};

// Registered at library load, before any Python code can create a mydev tensor.
const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new MydevHooks());
  return true;
}();

}  // namespace

}  // namespace torch_mydev
