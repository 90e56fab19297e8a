#include <cstring>
#include <system_error>
#include <thread>

#include "internal.h"

namespace mydev {
namespace {
thread_local int t_current_device = 0;
}

int current_device() { return t_current_device; }

mydevError_t check_device(const char* api, int index) {
  const int count = config().device_count;
  if (index >= 0 && index < count) return mydevSuccess;
  return set_error(mydevErrorInvalidDevice, "%s: invalid device mydev:%d (there %s %d mydev device%s)", api, index,
                   count == 1 ? "is" : "are", count, count == 1 ? "" : "s");
}

mydevError_t ensure_device_ready(const char* api, int index) {
  Device& target = device(index);
  if (target.ready.load(std::memory_order_acquire)) return mydevSuccess;
  std::lock_guard<std::mutex> lock(target.init_mutex);
  if (target.ready.load(std::memory_order_relaxed)) return mydevSuccess;
  std::string reason;
  std::unique_ptr<Arena> arena = Arena::create(index, config().device_memory, &reason);
  if (arena == nullptr) {
    return set_error(mydevErrorInitialization, "%s: cannot set up the memory of mydev:%d (%s): %s", api, index,
                     format_bytes(config().device_memory).c_str(), reason.c_str());
  }
  std::shared_ptr<mydevStream> default_stream;
  try {
    default_stream = std::make_shared<mydevStream>(index, 0, true);
  } catch (const std::system_error& e) {
    return set_error(mydevErrorInitialization, "%s: cannot start the default stream of mydev:%d: %s", api, index,
                     e.what());
  }
  target.arena = std::move(arena);
  target.default_stream = default_stream;
  register_stream(default_stream);
  note_device_used();
  target.ready.store(true, std::memory_order_release);
  return mydevSuccess;
}

void wait_device_idle(Device& target) {
  std::vector<std::shared_ptr<mydevStream>> streams;
  {
    std::lock_guard<std::mutex> lock(target.streams_mutex);
    streams = target.streams;
  }
  for (const auto& stream : streams) stream->wait(stream->submitted());
}

mydevError_t take_device_error(Device& target) {
  std::vector<std::shared_ptr<mydevStream>> streams;
  {
    std::lock_guard<std::mutex> lock(target.streams_mutex);
    streams = target.streams;
  }
  for (const auto& stream : streams) {
    if (mydevError_t error = take_stream_error(*stream, stream->submitted())) return error;
  }
  return mydevSuccess;
}

}  // namespace mydev

using namespace mydev;

extern "C" {

mydevError_t mydevGetDeviceCount(int* count) {
  const char* api = "mydevGetDeviceCount";
  if (mydevError_t error = enter(api)) return error;
  if (count == nullptr) return set_error(mydevErrorInvalidValue, "%s: count is NULL", api);
  *count = config().device_count;
  return mydevSuccess;
}

mydevError_t mydevSetDevice(int index) {
  const char* api = "mydevSetDevice";
  if (mydevError_t error = enter(api)) return error;
  if (mydevError_t error = check_device(api, index)) return error;
  t_current_device = index;
  return mydevSuccess;
}

mydevError_t mydevGetDevice(int* index) {
  const char* api = "mydevGetDevice";
  if (mydevError_t error = enter(api)) return error;
  if (index == nullptr) return set_error(mydevErrorInvalidValue, "%s: device is NULL", api);
  *index = t_current_device;
  return mydevSuccess;
}

mydevError_t mydevGetDeviceProperties(mydevDeviceProp* prop, int index) {
  const char* api = "mydevGetDeviceProperties";
  if (mydevError_t error = enter(api)) return error;
  if (prop == nullptr) return set_error(mydevErrorInvalidValue, "%s: prop is NULL", api);
  if (mydevError_t error = check_device(api, index)) return error;
  std::memset(prop, 0, sizeof(*prop));
  std::strncpy(prop->name, "mydev simulated device", sizeof(prop->name) - 1);
  prop->totalGlobalMem = config().device_memory;
  const unsigned cores = std::thread::hardware_concurrency();
  prop->multiProcessorCount = cores > 0 ? static_cast<int>(cores) : 1;
  prop->major = 1;
  prop->minor = 0;
  return mydevSuccess;
}

mydevError_t mydevDeviceSynchronize(void) {
  const char* api = "mydevDeviceSynchronize";
  if (mydevError_t error = enter(api)) return error;
  Device& target = device(current_device());
  if (!target.ready.load(std::memory_order_acquire)) return mydevSuccess;
  wait_device_idle(target);
  return take_device_error(target);
}

mydevError_t mydevMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  const char* api = "mydevMemGetInfo";
  if (mydevError_t error = enter(api)) return error;
  if (free_bytes == nullptr || total_bytes == nullptr) {
    return set_error(mydevErrorInvalidValue, "%s: free_bytes and total_bytes must not be NULL", api);
  }
  const int index = current_device();
  if (mydevError_t error = ensure_device_ready(api, index)) return error;
  const Arena& arena = *device(index).arena;
  *free_bytes = arena.free_bytes();
  *total_bytes = arena.capacity();
  return mydevSuccess;
}

mydevError_t mydevDeviceIsInitialized(int index, int* initialized) {
  const char* api = "mydevDeviceIsInitialized";
  if (mydevError_t error = enter(api)) return error;
  if (initialized == nullptr) return set_error(mydevErrorInvalidValue, "%s: initialized is NULL", api);
  if (mydevError_t error = check_device(api, index)) return error;
  *initialized = device(index).ready.load(std::memory_order_acquire) ? 1 : 0;
  return mydevSuccess;
}

}  // extern "C"

