#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "internal.h"

namespace {

struct FreeDelete {
  void operator()(char* bytes) const { free(bytes); }
};

using namespace mydev;

// Pinned host allocations (mydevHostAlloc): base -> size.
struct HostRegistry {
  std::mutex mutex;
  std::map<uintptr_t, size_t> allocations;
};

HostRegistry& host_registry() {
  // Leaked: stream workers may still run copies while static destructors run.
  static HostRegistry* registry = new HostRegistry;
  return *registry;
}

bool find_pinned(const void* p, uintptr_t* base, size_t* size) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  HostRegistry& registry = host_registry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto it = registry.allocations.upper_bound(address);
  if (it == registry.allocations.begin()) return false;
  --it;
  if (address - it->first >= it->second) return false;
  *base = it->first;
  *size = it->second;
  return true;
}

// The arena of a device whose view contains a pointer; NULL while the device
// is still being set up (no pointer into it can have been handed out yet).
Arena* arena_of(int index) {
  Device& owner = device(index);
  return owner.ready.load(std::memory_order_acquire) ? owner.arena.get() : nullptr;
}

enum class Memory { Pageable, Pinned, Device };

const char* describe(Memory memory) {
  switch (memory) {
    case Memory::Pageable: return "pageable host memory";
    case Memory::Pinned: return "pinned host memory";
    case Memory::Device: return "device memory";
  }
  return "";
}

// Where `count` bytes at `p` live, and the address the runtime reaches them at.
struct Location {
  Memory memory = Memory::Pageable;
  int device = -1;
  char* address = nullptr;
};

mydevError_t locate(const char* api, const char* role, const void* p, size_t count, Location* location) {
  size_t offset;
  const int index = find_device_of(p, &offset);
  if (index >= 0) {
    Arena* arena = arena_of(index);
    size_t base, size;
    if (arena == nullptr || !arena->find_allocation(offset, &base, &size) || count > base + size - offset) {
      return set_error(mydevErrorInvalidValue, "%s: %s range [%p, %p) is not inside a live allocation of mydev:%d", api,
                       role, p, static_cast<const char*>(p) + count, index);
    }
    location->memory = Memory::Device;
    location->device = index;
    location->address = host_address(index, offset);
    return mydevSuccess;
  }
  if (p == nullptr) return set_error(mydevErrorInvalidValue, "%s: %s is NULL", api, role);
  uintptr_t base;
  size_t size;
  const bool pinned = find_pinned(p, &base, &size) && count <= base + size - reinterpret_cast<uintptr_t>(p);
  location->memory = pinned ? Memory::Pinned : Memory::Pageable;
  location->address = const_cast<char*>(static_cast<const char*>(p));
  return mydevSuccess;
}

const char* kind_name(mydevMemcpyKind kind) {
  switch (kind) {
    case mydevMemcpyHostToHost: return "mydevMemcpyHostToHost";
    case mydevMemcpyHostToDevice: return "mydevMemcpyHostToDevice";
    case mydevMemcpyDeviceToHost: return "mydevMemcpyDeviceToHost";
    case mydevMemcpyDeviceToDevice: return "mydevMemcpyDeviceToDevice";
  }
  return "an unknown kind";
}

mydevError_t check_kind(const char* api, mydevMemcpyKind kind, const Location& dst, const Location& src) {
  bool dst_device, src_device;
  switch (kind) {
    case mydevMemcpyHostToHost: dst_device = false, src_device = false; break;
    case mydevMemcpyHostToDevice: dst_device = true, src_device = false; break;
    case mydevMemcpyDeviceToHost: dst_device = false, src_device = true; break;
    case mydevMemcpyDeviceToDevice: dst_device = true, src_device = true; break;
    default: return set_error(mydevErrorInvalidValue, "%s: unknown copy kind %d", api, static_cast<int>(kind));
  }
  if ((dst.memory == Memory::Device) == dst_device && (src.memory == Memory::Device) == src_device) {
    return mydevSuccess;
  }
  return set_error(mydevErrorInvalidValue, "%s: %s does not match the pointers: destination is %s%s, source is %s%s",
                   api, kind_name(kind), describe(dst.memory),
                   dst.device >= 0 ? (" of mydev:" + std::to_string(dst.device)).c_str() : "", describe(src.memory),
                   src.device >= 0 ? (" of mydev:" + std::to_string(src.device)).c_str() : "");
}

// A copy task, with its activity record while a profiler records.
Task traced_copy(Task task, const Location& dst, const Location& src, size_t count) {
  if (!activity_recording()) return task;
  tag_activity(&task, mydevActivityMemcpy);
  task.bytes = count;
  const bool to_device = dst.memory == Memory::Device;
  const bool from_device = src.memory == Memory::Device;
  task.copy_kind = static_cast<uint8_t>(to_device ? (from_device ? mydevMemcpyDeviceToDevice : mydevMemcpyHostToDevice)
                                                  : (from_device ? mydevMemcpyDeviceToHost : mydevMemcpyHostToHost));
  return task;
}

// Queues the copy; a pageable source is copied into a staging buffer first so
// that the caller may reuse it as soon as this returns.
mydevError_t submit_copy(const char* api, mydevStream& stream, const Location& dst, const Location& src, size_t count,
                         uint64_t* seq) {
  if (src.memory == Memory::Pageable) {
    // The source bytes are staged at the call, as CUDA does; the staging
    // buffer goes with the task, whether it runs or not.
    std::unique_ptr<char, FreeDelete> staging(static_cast<char*>(malloc(count)));
    if (staging == nullptr) {
      return set_error(mydevErrorMemoryAllocation, "%s: cannot allocate %s to stage a copy from pageable memory", api,
                       format_bytes(count).c_str());
    }
    memcpy(staging.get(), src.address, count);
    *seq = stream.submit(traced_copy(
        runtime_work([to = dst.address, staging = std::move(staging), count] { memcpy(to, staging.get(), count); }),
        dst, src, count));
  } else {
    *seq = stream.submit(
        traced_copy(runtime_work([to = dst.address, from = src.address, count] { memcpy(to, from, count); }), dst,
                    src, count));
  }
  return mydevSuccess;
}

size_t round_up_to_page(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

}  // namespace

extern "C" {

mydevError_t mydevMalloc(void** dev_ptr, size_t size) {
  const char* api = "mydevMalloc";
  if (mydevError_t error = enter(api)) return error;
  if (dev_ptr == nullptr) return set_error(mydevErrorInvalidValue, "%s: dev_ptr is NULL", api);
  *dev_ptr = nullptr;
  if (size == 0) return mydevSuccess;
  const int index = current_device();
  if (mydevError_t error = ensure_device_ready(api, index)) return error;
  if (allocation_fault_fires()) {
    return set_error(mydevErrorMemoryAllocation, "%s: out of memory on mydev:%d: tried to allocate %s (injected fault)",
                     api, index, format_bytes(size).c_str());
  }
  Arena& arena = *device(index).arena;
  size_t offset;
  if (!arena.allocate(size, &offset)) {
    const size_t free_bytes = arena.free_bytes();
    std::string detail;
    if (free_bytes >= size) detail = " (fragmented: largest free block " + format_bytes(arena.largest_free_block()) + ")";
    return set_error(mydevErrorMemoryAllocation, "%s: out of memory on mydev:%d: tried to allocate %s; %s of %s free%s",
                     api, index, format_bytes(size).c_str(), format_bytes(free_bytes).c_str(),
                     format_bytes(arena.capacity()).c_str(), detail.c_str());
  }
  *dev_ptr = arena.device_base() + offset;
  return mydevSuccess;
}

mydevError_t mydevFree(void* dev_ptr) {
  const char* api = "mydevFree";
  if (mydevError_t error = enter(api)) return error;
  if (dev_ptr == nullptr) return mydevSuccess;
  size_t offset;
  const int index = find_device_of(dev_ptr, &offset);
  Arena* arena = index >= 0 ? arena_of(index) : nullptr;
  if (arena == nullptr) return set_error(mydevErrorInvalidDevicePointer, "%s: %p is not mydev device memory", api, dev_ptr);
  size_t base, size;
  if (!arena->find_allocation(offset, &base, &size) || base != offset) {
    return set_error(mydevErrorInvalidDevicePointer, "%s: %p is not the start of a live allocation on mydev:%d", api,
                     dev_ptr, index);
  }
  // Queued work may still use the memory.
  wait_device_idle(device(index));
  if (!arena->release(offset)) {
    return set_error(mydevErrorInvalidDevicePointer, "%s: %p on mydev:%d was freed concurrently", api, dev_ptr, index);
  }
  return mydevSuccess;
}

mydevError_t mydevHostAlloc(void** host_ptr, size_t size) {
  const char* api = "mydevHostAlloc";
  if (mydevError_t error = enter(api)) return error;
  if (host_ptr == nullptr) return set_error(mydevErrorInvalidValue, "%s: host_ptr is NULL", api);
  *host_ptr = nullptr;
  if (size == 0) return mydevSuccess;
  void* allocation = nullptr;
  // A size within a page of SIZE_MAX would round up to 0.
  if (round_up_to_page(size) < size ||
      posix_memalign(&allocation, static_cast<size_t>(sysconf(_SC_PAGESIZE)), round_up_to_page(size)) != 0) {
    return set_error(mydevErrorMemoryAllocation, "%s: cannot allocate %s of pinned host memory", api,
                     format_bytes(size).c_str());
  }
  HostRegistry& registry = host_registry();
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    registry.allocations[reinterpret_cast<uintptr_t>(allocation)] = size;
  }
  *host_ptr = allocation;
  return mydevSuccess;
}

mydevError_t mydevFreeHost(void* host_ptr) {
  const char* api = "mydevFreeHost";
  if (mydevError_t error = enter(api)) return error;
  if (host_ptr == nullptr) return mydevSuccess;
  HostRegistry& registry = host_registry();
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    if (registry.allocations.erase(reinterpret_cast<uintptr_t>(host_ptr)) == 0) {
      return set_error(mydevErrorInvalidValue, "%s: %p was not allocated by mydevHostAlloc", api, host_ptr);
    }
  }
  free(host_ptr);
  return mydevSuccess;
}

mydevError_t mydevPointerGetDevice(int* device, const void* ptr) {
  const char* api = "mydevPointerGetDevice";
  if (mydevError_t error = enter(api)) return error;
  if (device == nullptr) return set_error(mydevErrorInvalidValue, "%s: device is NULL", api);
  size_t offset;
  const int index = find_device_of(ptr, &offset);
  if (index < 0) return set_error(mydevErrorInvalidDevicePointer, "%s: %p is not mydev device memory", api, ptr);
  *device = index;
  return mydevSuccess;
}

mydevError_t mydevPointerGetAttributes(mydevPointerAttributes* attr, const void* ptr) {
  const char* api = "mydevPointerGetAttributes";
  if (mydevError_t error = enter(api)) return error;
  if (attr == nullptr) return set_error(mydevErrorInvalidValue, "%s: attr is NULL", api);
  *attr = mydevPointerAttributes{mydevMemoryTypeUnregistered, -1, nullptr, 0};
  size_t offset;
  const int index = find_device_of(ptr, &offset);
  if (index >= 0) {
    attr->type = mydevMemoryTypeDevice;
    attr->device = index;
    Arena* arena = arena_of(index);
    size_t base, size;
    if (arena != nullptr && arena->find_allocation(offset, &base, &size)) {
      attr->base = arena->device_base() + base;
      attr->size = size;
    }
    return mydevSuccess;
  }
  uintptr_t base;
  size_t size;
  if (ptr != nullptr && find_pinned(ptr, &base, &size)) {
    attr->type = mydevMemoryTypeHost;
    attr->base = reinterpret_cast<void*>(base);
    attr->size = size;
  }
  return mydevSuccess;
}

mydevError_t mydevMemcpy(void* dst, const void* src, size_t count, mydevMemcpyKind kind) {
  const char* api = "mydevMemcpy";
  if (mydevError_t error = enter(api)) return error;
  if (count == 0) return mydevSuccess;
  Location to, from;
  if (mydevError_t error = locate(api, "destination", dst, count, &to)) return error;
  if (mydevError_t error = locate(api, "source", src, count, &from)) return error;
  if (mydevError_t error = check_kind(api, kind, to, from)) return error;
  if (to.memory != Memory::Device && from.memory != Memory::Device) {
    memcpy(to.address, from.address, count);
    return mydevSuccess;
  }
  mydevStream& stream = *device(to.memory == Memory::Device ? to.device : from.device).default_stream;
  const uint64_t seq = stream.submit(
      traced_copy(runtime_work([to = to.address, from = from.address, count] { memcpy(to, from, count); }), to, from,
                  count));
  stream.wait(seq);
  return take_stream_error(stream, seq);
}

mydevError_t mydevMemcpyAsync(void* dst, const void* src, size_t count, mydevMemcpyKind kind, mydevStream_t handle) {
  const char* api = "mydevMemcpyAsync";
  if (mydevError_t error = enter(api)) return error;
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  if (count == 0) return mydevSuccess;
  Location to, from;
  if (mydevError_t error = locate(api, "destination", dst, count, &to)) return error;
  if (mydevError_t error = locate(api, "source", src, count, &from)) return error;
  if (mydevError_t error = check_kind(api, kind, to, from)) return error;
  uint64_t seq = 0;
  if (mydevError_t error = submit_copy(api, *stream, to, from, count, &seq)) return error;
  if (config().launch_blocking) {
    stream->wait(seq);
    return take_stream_error(*stream, seq);
  }
  if (to.memory == Memory::Pageable) stream->wait(seq);
  return mydevSuccess;
}

mydevError_t mydevMemsetAsync(void* dev_ptr, int value, size_t count, mydevStream_t handle) {
  const char* api = "mydevMemsetAsync";
  if (mydevError_t error = enter(api)) return error;
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  if (count == 0) return mydevSuccess;
  Location target;
  if (mydevError_t error = locate(api, "destination", dev_ptr, count, &target)) return error;
  if (target.memory != Memory::Device) {
    return set_error(mydevErrorInvalidValue, "%s: %p is %s, not device memory", api, dev_ptr, describe(target.memory));
  }
  Task task =
      runtime_work([to = target.address, byte = static_cast<unsigned char>(value), count] { memset(to, byte, count); });
  if (activity_recording()) {
    tag_activity(&task, mydevActivityMemset);
    task.bytes = count;
  }
  const uint64_t seq = stream->submit(std::move(task));
  if (!config().launch_blocking) return mydevSuccess;
  stream->wait(seq);
  return take_stream_error(*stream, seq);
}

}  // extern "C"
