// Host tasks (include/mydev/host_task.h): a stream slot that an agent outside
// the device ends. The stream does the ordering (stream.cpp); this file is the
// handle the agent holds.
#include <mydev/host_task.h>

#include <exception>

#include "internal.h"

using namespace mydev;

namespace {

constexpr uint32_t kHostTaskMagic = 0x484f5354;  // "HOST"

}  // namespace

// Owned by its stream slot, which frees it once the task completed; the stream
// is held only until the end, so that the two do not keep each other alive.
struct mydevHostTask : HostTaskState {
  std::atomic<uint32_t> magic{kHostTaskMagic};
  std::shared_ptr<mydevStream> stream;
  uint64_t seq = 0;
};

namespace {

mydevError_t check_task(const char* api, mydevHostTask_t task) {
  if (task == nullptr || task->magic.load(std::memory_order_relaxed) != kHostTaskMagic) {
    return set_error(mydevErrorInvalidResourceHandle, "%s: %p is not a host task in progress", api,
                     static_cast<void*>(task));
  }
  return mydevSuccess;
}

}  // namespace

extern "C" {

mydevError_t mydevHostTaskBegin(mydevStream_t handle, mydevHostTask_t* task) {
  const char* api = "mydevHostTaskBegin";
  if (mydevError_t error = enter(api)) return error;
  if (task == nullptr) return set_error(mydevErrorInvalidValue, "%s: task is NULL", api);
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  auto* created = new mydevHostTask();
  created->stream = stream->shared_from_this();
  Task slot;
  slot.args = static_cast<HostTaskState*>(created);
  slot.release = [](void* args) { delete static_cast<mydevHostTask*>(static_cast<HostTaskState*>(args)); };
  slot.is_runtime_work = true;
  try {
    created->seq = stream->begin_host_task(slot);
  } catch (const std::exception& error) {
    delete created;
    return set_error(mydevErrorLaunchFailure, "%s: %s", api, error.what());
  }
  if (created->seq == 0) {
    delete created;
    return set_error(mydevErrorNotReady, "%s: work is still pending on the stream (mydev:%d)", api, stream->device);
  }
  *task = created;
  return mydevSuccess;
}

mydevError_t mydevHostTaskMapPointer(mydevHostTask_t task, const void* dev_ptr, void** host_ptr) {
  const char* api = "mydevHostTaskMapPointer";
  if (mydevError_t error = enter(api)) return error;
  if (mydevError_t error = check_task(api, task)) return error;
  if (host_ptr == nullptr) return set_error(mydevErrorInvalidValue, "%s: host_ptr is NULL", api);
  size_t offset;
  const int device = find_device_of(dev_ptr, &offset);
  if (device < 0) {
    return set_error(mydevErrorInvalidDevicePointer, "%s: %p is not mydev device memory (host task on mydev:%d)", api,
                     dev_ptr, task->stream->device);
  }
  *host_ptr = host_address(device, offset);
  return mydevSuccess;
}

mydevError_t mydevHostTaskEnd(mydevHostTask_t task) {
  const char* api = "mydevHostTaskEnd";
  if (mydevError_t error = enter(api)) return error;
  if (mydevError_t error = check_task(api, task)) return error;
  task->magic.store(0, std::memory_order_relaxed);
  // The task may be freed once it ended; the stream must outlive the call.
  const std::shared_ptr<mydevStream> stream = std::move(task->stream);
  stream->end_host_task(task->seq, task);
  return mydevSuccess;
}

}  // extern "C"
