// A move-only owner of a runtime event, created at its first record (like
// at::cuda::CUDAEvent). Used where the glue itself needs to know when work
// queued on a stream has finished: the caching allocators, mccl's Works.
#pragma once

#include "Exception.h"
#include "Stream.h"

#include <mydev/runtime.h>

#include <utility>

namespace torch_mydev {

class MydevEvent {
 public:
  MydevEvent() = default;
  // Runtime event flags (mydevEventBlockingSync); these events never time.
  explicit MydevEvent(unsigned flags) : flags_(flags | mydevEventDisableTiming) {}
  MydevEvent(const MydevEvent&) = delete;
  MydevEvent& operator=(const MydevEvent&) = delete;
  MydevEvent(MydevEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)), flags_(other.flags_) {}
  MydevEvent& operator=(MydevEvent&& other) noexcept {
    std::swap(event_, other.event_);
    std::swap(flags_, other.flags_);
    return *this;
  }
  ~MydevEvent() {
    if (event_ != nullptr) {
      mydevEventDestroy(event_);
    }
  }

  void record(const MydevStream& stream) {
    if (event_ == nullptr) {
      MYDEV_CHECK(mydevEventCreateWithFlags(&event_, flags_));
    }
    MYDEV_CHECK(mydevEventRecord(event_, stream.handle()));
  }

  // Work queued on `stream` from now on waits for the recorded work.
  void block(const MydevStream& stream) const {
    if (event_ != nullptr) {
      MYDEV_CHECK(mydevStreamWaitEvent(stream.handle(), event_));
    }
  }

  // The host waits for the recorded work (not a device-wide synchronize:
  // sync-debug mode does not see it).
  void synchronize() const {
    if (event_ != nullptr) {
      MYDEV_CHECK(mydevEventSynchronize(event_));
    }
  }

  bool query() const {
    if (event_ == nullptr) {
      return true;
    }
    const mydevError_t status = mydevEventQuery(event_);
    if (status == mydevErrorNotReady) {
      return false;
    }
    MYDEV_CHECK(status);
    return true;
  }

 private:
  mydevEvent_t event_ = nullptr;
  unsigned flags_ = mydevEventDisableTiming;
};

}  // namespace torch_mydev
