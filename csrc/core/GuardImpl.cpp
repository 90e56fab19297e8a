// DeviceGuardImplInterface for mydev: how PyTorch's device-generic code
// (DeviceGuard, StreamGuard, torch.Stream, torch.Event, torch.accelerator, the
// autograd engine) switches devices and streams and uses events on mydev.
#include "CachingAllocator.h"
#include "Device.h"
#include "Exception.h"
#include "KernelWarnings.h"
#include "Stream.h"
#include "SyncDebug.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace torch_mydev {

namespace {

class MydevGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }

  c10::Device exchangeDevice(c10::Device device) const override {
    const c10::Device previous = getDevice();
    if (previous.index() != device.index()) {
      setDevice(device);
    }
    return previous;
  }

  c10::Device getDevice() const override { return {c10::DeviceType::PrivateUse1, currentDevice()}; }

  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, "Expected a mydev device, got ", device);
    torch_mydev::setDevice(device.index());
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override { mydevSetDevice(device.index()); }

  c10::Stream getStream(c10::Device device) const override {
    return getCurrentMydevStream(device.index()).unwrap();
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    return getDefaultMydevStream(device.index()).unwrap();
  }

  c10::Stream getStreamFromGlobalPool(c10::Device device, bool is_high_priority) const override {
    return getStreamFromPool(is_high_priority ? -1 : 0, device.index()).unwrap();
  }

  c10::Stream getNewStream(c10::Device device, int priority) const override {
    return getStreamFromPool(priority, device.index()).unwrap();
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    const MydevStream next(stream);
    const MydevStream previous = getCurrentMydevStream(next.device_index());
    setCurrentMydevStream(next);
    return previous.unwrap();
  }

  void* getStreamNativeHandle(const c10::Stream stream) const override { return MydevStream(stream).handle(); }

  c10::DeviceIndex deviceCount() const noexcept override { return torch_mydev::deviceCount(); }

  c10::DeviceCapability getDeviceCapability(c10::Device /*device*/) const override {
    // Kernels are ATen's CPU kernels, so every dtype the CPU supports is supported.
    return c10::DeviceCapability();
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ",
                static_cast<int>(device_index), " does not match recording stream's device index ",
                static_cast<int>(stream.device_index()), ".");
    const MydevStream mydev_stream(stream);
    if (*event == nullptr) {
      mydevEvent_t created = nullptr;
      const unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT ? mydevEventDefault : mydevEventDisableTiming;
      MYDEV_CHECK(mydevEventCreateWithFlags(&created, flags));
      *event = created;
    }
    MYDEV_CHECK(mydevEventRecord(static_cast<mydevEvent_t>(*event), mydev_stream.handle()));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) {
      return;
    }
    MYDEV_CHECK(mydevStreamWaitEvent(MydevStream(stream).handle(), static_cast<mydevEvent_t>(event)));
  }

  bool queryEvent(void* event) const override {
    if (event == nullptr) {
      return true;
    }
    const mydevError_t status = mydevEventQuery(static_cast<mydevEvent_t>(event));
    if (status == mydevErrorNotReady) {
      return false;
    }
    MYDEV_CHECK(status);
    // The recorded work is done. A kernel failure before the event is raised
    // here, once, as cudaEventQuery reports it: mydevEventQuery leaves failures
    // to a synchronizing call, since the allocators poll events too, and the
    // event's synchronize returns at once now.
    MYDEV_CHECK(mydevEventSynchronize(static_cast<mydevEvent_t>(event)));
    return true;
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    if (event != nullptr) {
      mydevEventDestroy(static_cast<mydevEvent_t>(event));
    }
  }

  bool queryStream(const c10::Stream& stream) const override { return MydevStream(stream).query(); }

  // As CUDA's stream synchronization (c10::cuda::stream_synchronize), unlike
  // its device and event synchronization, this wait reports in sync-debug mode.
  void synchronizeStream(const c10::Stream& stream) const override {
    reportHostWait("Stream.synchronize()");
    MydevStream(stream).synchronize();
  }

  void synchronizeEvent(void* event) const override {
    if (event != nullptr) {
      MYDEV_CHECK(mydevEventSynchronize(static_cast<mydevEvent_t>(event)));
    }
    reissueKernelWarnings();
  }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    torch_mydev::synchronizeDevice(device_index);
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const override {
    cachingAllocator()->recordStream(data_ptr, stream);
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(start != nullptr && end != nullptr,
                "Both events must be recorded before calculating elapsed time.");
    float milliseconds = 0;
    MYDEV_CHECK(mydevEventElapsedTime(&milliseconds, static_cast<mydevEvent_t>(start),
                                      static_cast<mydevEvent_t>(end)));
    return static_cast<double>(milliseconds);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, MydevGuardImpl);

}  // namespace

}  // namespace torch_mydev
