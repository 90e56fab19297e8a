// A move-only owner of a runtime event, created at its first record (like
// at::cuda::CUDAEvent). Used where the glue itself needs to know when work
// queued on a stream has finished: the caching allocators.
#pragma once

#include "Exception.h"
#include "Stream.h"

#include <mydev/runtime.h>

#include <utility>

namespace torch_mydev {

class MydevEvent {
 public:
  MydevEvent() = default;
  MydevEvent(const MydevEvent&) = delete;
  MydevEvent& operator=(const MydevEvent&) = delete;
  MydevEvent(MydevEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  MydevEvent& operator=(MydevEvent&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  ~MydevEvent() {
    if (event_ != nullptr) {
      mydevEventDestroy(event_);
    }
  }

  void record(const MydevStream& stream) {
    if (event_ == nullptr) {
      MYDEV_CHECK(mydevEventCreateWithFlags(&event_, mydevEventDisableTiming));
    }
    MYDEV_CHECK(mydevEventRecord(event_, stream.handle()));
  }

  // Work queued on `stream` from now on waits for the recorded work.
  void block(const MydevStream& stream) const {
    if (event_ != nullptr) {
      MYDEV_CHECK(mydevStreamWaitEvent(stream.handle(), event_));
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
};

}  // namespace torch_mydev
