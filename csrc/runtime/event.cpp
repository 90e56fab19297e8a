#include <chrono>
#include <memory>
#include <mutex>

#include "internal.h"

namespace {

constexpr uint32_t kEventMagic = 0x45564e54;  // "EVNT"
constexpr unsigned kKnownEventFlags = mydevEventBlockingSync | mydevEventDisableTiming;

// What one mydevEventRecord captured: the work queued on `stream` up to `seq`.
struct Capture {
  std::shared_ptr<mydevStream> stream;
  uint64_t seq = 0;
  // Written by the marker task when it runs; NULL for timing-disabled events,
  // which need no marker task.
  std::shared_ptr<std::atomic<int64_t>> time_ns;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct mydevEvent {
  explicit mydevEvent(unsigned flags) : flags(flags) {}
  std::atomic<uint32_t> magic{kEventMagic};
  const unsigned flags;
  std::mutex mutex;
  std::shared_ptr<const Capture> capture;  // the latest record; NULL until then
};

namespace {

using namespace mydev;

mydevError_t check_event(const char* api, mydevEvent_t event) {
  if (event == nullptr || event->magic.load(std::memory_order_relaxed) != kEventMagic) {
    return set_error(mydevErrorInvalidResourceHandle, "%s: %p is not a live mydev event", api,
                     static_cast<void*>(event));
  }
  return mydevSuccess;
}

std::shared_ptr<const Capture> latest_capture(mydevEvent_t event) {
  std::lock_guard<std::mutex> lock(event->mutex);
  return event->capture;
}

}  // namespace

extern "C" {

mydevError_t mydevEventCreateWithFlags(mydevEvent_t* event, unsigned int flags) {
  const char* api = "mydevEventCreateWithFlags";
  if (mydevError_t error = enter(api)) return error;
  if (event == nullptr) return set_error(mydevErrorInvalidValue, "%s: event is NULL", api);
  if ((flags & ~kKnownEventFlags) != 0) return set_error(mydevErrorInvalidValue, "%s: unknown flags 0x%x", api, flags);
  *event = new mydevEvent(flags);
  return mydevSuccess;
}

mydevError_t mydevEventDestroy(mydevEvent_t event) {
  const char* api = "mydevEventDestroy";
  if (mydevError_t error = enter(api)) return error;
  if (mydevError_t error = check_event(api, event)) return error;
  event->magic.store(0);
  delete event;
  return mydevSuccess;
}

mydevError_t mydevEventRecord(mydevEvent_t event, mydevStream_t handle) {
  const char* api = "mydevEventRecord";
  if (mydevError_t error = enter(api)) return error;
  if (mydevError_t error = check_event(api, event)) return error;
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  auto capture = std::make_shared<Capture>();
  capture->stream = stream->shared_from_this();
  if (event->flags & mydevEventDisableTiming) {
    capture->seq = stream->submitted();
  } else {
    capture->time_ns = std::make_shared<std::atomic<int64_t>>(0);
    capture->seq = stream->submit(
        runtime_work([time_ns = capture->time_ns] { time_ns->store(now_ns(), std::memory_order_release); }));
  }
  std::lock_guard<std::mutex> lock(event->mutex);
  event->capture = std::move(capture);
  return mydevSuccess;
}

mydevError_t mydevEventQuery(mydevEvent_t event) {
  const char* api = "mydevEventQuery";
  if (mydevError_t error = enter(api)) return error;
  if (mydevError_t error = check_event(api, event)) return error;
  const auto capture = latest_capture(event);
  if (capture == nullptr || capture->stream->is_complete(capture->seq)) return mydevSuccess;
  return set_error(mydevErrorNotReady, "%s: the event's work on mydev:%d is still pending", api,
                   capture->stream->device);
}

mydevError_t mydevEventSynchronize(mydevEvent_t event) {
  const char* api = "mydevEventSynchronize";
  if (mydevError_t error = enter(api)) return error;
  if (mydevError_t error = check_event(api, event)) return error;
  const auto capture = latest_capture(event);
  if (capture == nullptr) return mydevSuccess;
  // As CUDA's: a blocking-sync event's waiter sleeps at once, where others poll briefly first.
  capture->stream->wait(capture->seq, /*spin=*/(event->flags & mydevEventBlockingSync) == 0);
  return take_stream_error(*capture->stream, capture->seq);
}

mydevError_t mydevEventElapsedTime(float* ms, mydevEvent_t start, mydevEvent_t end) {
  const char* api = "mydevEventElapsedTime";
  if (mydevError_t error = enter(api)) return error;
  if (ms == nullptr) return set_error(mydevErrorInvalidValue, "%s: ms is NULL", api);
  if (mydevError_t error = check_event(api, start)) return error;
  if (mydevError_t error = check_event(api, end)) return error;
  const auto first = latest_capture(start);
  const auto last = latest_capture(end);
  if (first == nullptr || last == nullptr) {
    return set_error(mydevErrorInvalidResourceHandle, "%s: both events must have been recorded", api);
  }
  if (first->time_ns == nullptr || last->time_ns == nullptr) {
    return set_error(mydevErrorInvalidResourceHandle, "%s: an event was created with mydevEventDisableTiming", api);
  }
  if (first->stream->device != last->stream->device) {
    return set_error(mydevErrorInvalidValue, "%s: the events were recorded on different devices (mydev:%d and mydev:%d)",
                     api, first->stream->device, last->stream->device);
  }
  if (!first->stream->is_complete(first->seq) || !last->stream->is_complete(last->seq)) {
    return set_error(mydevErrorNotReady, "%s: an event on mydev:%d has not completed yet", api,
                     first->stream->device);
  }
  const int64_t elapsed = last->time_ns->load(std::memory_order_acquire) - first->time_ns->load(std::memory_order_acquire);
  *ms = static_cast<float>(static_cast<double>(elapsed) / 1e6);
  return mydevSuccess;
}

mydevError_t mydevStreamWaitEvent(mydevStream_t handle, mydevEvent_t event) {
  const char* api = "mydevStreamWaitEvent";
  if (mydevError_t error = enter(api)) return error;
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  if (mydevError_t error = check_event(api, event)) return error;
  auto capture = latest_capture(event);
  // A stream is already ordered after its own work.
  if (capture == nullptr || capture->stream.get() == stream) return mydevSuccess;
  if (capture->stream->is_complete(capture->seq)) {
    // For the work queued from now on, as the deferred wait below passes it.
    capture->stream->pass_failure_to(*stream, capture->seq, stream->submitted() + 1);
    return mydevSuccess;
  }
  // A stream outlives its queued tasks (it drains them before it stops).
  stream->submit(runtime_work([capture = std::move(capture), stream] {
    capture->stream->wait_for_completion(capture->seq);
    capture->stream->pass_failure_to(*stream, capture->seq, stream->running_seq());
  }));
  return mydevSuccess;
}

}  // extern "C"
