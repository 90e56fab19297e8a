// DDP's timer for mydev (c10d::TimerRegistry): the forward, backward compute
// and backward communication times that DDP's logger reports
// (DistributedDataParallel._get_ddp_logging_data(), TORCH_DISTRIBUTED_DEBUG),
// measured as CUDA's timer measures them: a timing event on the current stream
// at each point, read when DDP asks. Without one DDP warns, on every
// iteration it samples, that it collects times only for CPU and CUDA.
#include "../core/Device.h"
#include "../core/Exception.h"
#include "../core/Stream.h"

#include <mydev/runtime.h>

#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include <array>

namespace torch_mydev {

namespace {

class MydevTimer final : public c10d::Timer {
 public:
  explicit MydevTimer(c10::Device device) : device_(device.index()) {}

  MydevTimer(const MydevTimer&) = delete;
  MydevTimer& operator=(const MydevTimer&) = delete;

  ~MydevTimer() override {
    for (mydevEvent_t event : events_) {
      if (event != nullptr) {
        mydevEventDestroy(event);
      }
    }
  }

  void record(Event event) override {
    c10d::Timer::record(event);  // the host time, which DDP reads too
    mydevEvent_t& timing = events_[static_cast<size_t>(event)];
    ScopedDevice on_device(device_);
    if (timing == nullptr) {
      MYDEV_CHECK(mydevEventCreateWithFlags(&timing, mydevEventDefault));
    }
    MYDEV_CHECK(mydevEventRecord(timing, getCurrentMydevStream(device_).handle()));
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    mydevEvent_t first = events_[static_cast<size_t>(start)];
    mydevEvent_t second = events_[static_cast<size_t>(end)];
    if (first == nullptr || second == nullptr) {
      return std::nullopt;
    }
    MYDEV_CHECK(mydevEventSynchronize(first));
    MYDEV_CHECK(mydevEventSynchronize(second));
    float milliseconds = 0;
    MYDEV_CHECK(mydevEventElapsedTime(&milliseconds, first, second));
    // As CUDA's: an end recorded before its start (a backward that ended
    // before the reduction DDP measures from began) is no time.
    if (milliseconds < 0) {
      return std::nullopt;
    }
    return static_cast<int64_t>(milliseconds * 1000.0f * 1000.0f);
  }

 private:
  const c10::DeviceIndex device_;
  std::array<mydevEvent_t, 5> events_{};
};

}  // namespace

}  // namespace torch_mydev

namespace c10d {
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1, torch_mydev::MydevTimer);
}  // namespace c10d
