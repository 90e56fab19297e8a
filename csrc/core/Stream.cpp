#include "Stream.h"

#include "Device.h"
#include "Exception.h"
#include "KernelWarnings.h"

#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace torch_mydev {

namespace {

constexpr int kPriorityPools = 2;  // 0: normal priority, 1: high priority

constexpr c10::StreamId kFirstDedicatedId = kPriorityPools * kStreamsPerPool + 1;

struct DeviceStreams {
  std::atomic<mydevStream_t> default_stream{nullptr};
  std::mutex create_mutex;  // also guards the dedicated streams' creation and destruction
  std::array<std::atomic<mydevStream_t>, kPriorityPools * kStreamsPerPool> pool{};
  std::array<std::atomic<uint32_t>, kPriorityPools> next{};
  // A dedicated stream's id names its slot and the slot's generation (how
  // many streams the slot held before it), so that an id outliving its
  // stream never names the slot's next one.
  std::array<std::atomic<mydevStream_t>, kDedicatedStreams> dedicated{};
  std::array<std::atomic<int64_t>, kDedicatedStreams> dedicated_generation{};  // of the slot's current stream
  std::array<int, kDedicatedStreams> dedicated_priority{};
};

// Sized once to the device count; streams live for the whole process like CUDA's pools.
std::vector<std::unique_ptr<DeviceStreams>>& allDeviceStreams() {
  static auto* streams = [] {
    auto* result = new std::vector<std::unique_ptr<DeviceStreams>>();
    for (c10::DeviceIndex i = 0; i < deviceCount(); ++i) {
      result->push_back(std::make_unique<DeviceStreams>());
    }
    return result;
  }();
  return *streams;
}

thread_local std::vector<c10::StreamId> current_stream_ids;

c10::StreamId& currentIdSlot(c10::DeviceIndex device) {
  if (current_stream_ids.empty()) {
    current_stream_ids.assign(static_cast<size_t>(deviceCount()), 0);
  }
  return current_stream_ids.at(static_cast<size_t>(device));
}

c10::Stream makeStream(c10::DeviceIndex device, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), id);
}

int poolOf(c10::StreamId id) { return static_cast<int>((id - 1) / kStreamsPerPool); }

bool isDedicated(c10::StreamId id) { return id >= kFirstDedicatedId; }

size_t dedicatedSlot(c10::StreamId id) { return static_cast<size_t>((id - kFirstDedicatedId) % kDedicatedStreams); }

int64_t dedicatedGeneration(c10::StreamId id) { return (id - kFirstDedicatedId) / kDedicatedStreams; }

}  // namespace

MydevStream::MydevStream(c10::Stream stream) : stream_(stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "Expected a mydev stream, got a stream of ",
              stream.device_type());
  checkDeviceIndex(stream.device_index());
  TORCH_CHECK(stream.id() >= 0, "Invalid mydev stream id ", stream.id());
  if (isDedicated(stream.id())) {
    // The slot's generation is read again after its stream: a destruction
    // in between leaves the stream null and the generation moved on.
    const auto& streams = *allDeviceStreams().at(static_cast<size_t>(stream.device_index()));
    const size_t slot = dedicatedSlot(stream.id());
    const int64_t generation = dedicatedGeneration(stream.id());
    const int64_t before = streams.dedicated_generation[slot].load();
    const bool live = streams.dedicated[slot].load() != nullptr;
    const int64_t after = streams.dedicated_generation[slot].load();
    const bool created = generation < before || (generation == before && (live || generation < after));
    TORCH_CHECK(created, "Invalid mydev stream id ", stream.id(), " (no such dedicated stream was created)");
  }
}

mydevStream_t MydevStream::handle() const {
  const auto device = device_index();
  auto& streams = *allDeviceStreams().at(static_cast<size_t>(device));
  if (isDedicated(id())) {
    // Read as a sequence lock: the stream counts only if the slot's
    // generation is the id's before and after it (a destruction and a new
    // stream in between would hand out the slot's next stream).
    const size_t slot = dedicatedSlot(id());
    const int64_t generation = dedicatedGeneration(id());
    if (streams.dedicated_generation[slot].load(std::memory_order_acquire) == generation) {
      mydevStream_t result = streams.dedicated[slot].load(std::memory_order_acquire);
      if (result != nullptr && streams.dedicated_generation[slot].load(std::memory_order_acquire) == generation) {
        return result;
      }
    }
    return getDefaultMydevStream(device).handle();  // destroyed (destroyDedicatedStream)
  }
  if (id() == 0) {
    // Asked of the runtime once per device: every kernel launch needs it.
    mydevStream_t result = streams.default_stream.load(std::memory_order_acquire);
    if (result == nullptr) {
      MYDEV_CHECK(mydevDeviceGetDefaultStream(device, &result));
      streams.default_stream.store(result, std::memory_order_release);
    }
    return result;
  }
  auto& slot = streams.pool.at(static_cast<size_t>(id() - 1));
  mydevStream_t result = slot.load(std::memory_order_acquire);
  if (result != nullptr) {
    return result;
  }
  std::lock_guard<std::mutex> lock(streams.create_mutex);
  result = slot.load(std::memory_order_acquire);
  if (result == nullptr) {
    ScopedDevice on_device(device);
    MYDEV_CHECK(mydevStreamCreateWithPriority(&result, poolOf(id()) == 1 ? -1 : 0));
    slot.store(result, std::memory_order_release);
  }
  return result;
}

int MydevStream::priority() const {
  if (isDedicated(id())) {
    auto& streams = *allDeviceStreams().at(static_cast<size_t>(device_index()));
    std::lock_guard<std::mutex> lock(streams.create_mutex);
    return streams.dedicated_priority.at(dedicatedSlot(id()));
  }
  return id() == 0 ? 0 : (poolOf(id()) == 1 ? -1 : 0);
}

bool MydevStream::query() const {
  const mydevError_t status = mydevStreamQuery(handle());
  if (status == mydevErrorNotReady) {
    return false;
  }
  MYDEV_CHECK(status);
  return true;
}

void MydevStream::synchronize() const {
  MYDEV_CHECK(mydevStreamSynchronize(handle()));
  reissueKernelWarnings();
}

MydevStream getDefaultMydevStream(c10::DeviceIndex device) {
  return MydevStream(makeStream(resolveDevice(device), 0));
}

MydevStream getCurrentMydevStream(c10::DeviceIndex device) {
  device = resolveDevice(device);
  return MydevStream(makeStream(device, currentIdSlot(device)));
}

MydevStream getStreamFromPool(int priority, c10::DeviceIndex device) {
  device = resolveDevice(device);
  const int pool = priority < 0 ? 1 : 0;
  auto& streams = *allDeviceStreams().at(static_cast<size_t>(device));
  const uint32_t index = streams.next[pool].fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool;
  return MydevStream(makeStream(device, 1 + pool * kStreamsPerPool + static_cast<c10::StreamId>(index)));
}

void setCurrentMydevStream(MydevStream stream) { currentIdSlot(stream.device_index()) = stream.id(); }

MydevStream createDedicatedStream(int priority, c10::DeviceIndex device) {
  device = resolveDevice(device);
  auto& streams = *allDeviceStreams().at(static_cast<size_t>(device));
  std::lock_guard<std::mutex> lock(streams.create_mutex);
  for (size_t slot = 0; slot < streams.dedicated.size(); ++slot) {
    if (streams.dedicated[slot].load(std::memory_order_relaxed) != nullptr) {
      continue;
    }
    mydevStream_t created = nullptr;
    ScopedDevice on_device(device);
    MYDEV_CHECK(mydevStreamCreateWithPriority(&created, priority < 0 ? -1 : 0));
    // A destroyed slot's generation was moved on by destroyDedicatedStream.
    const int64_t generation = streams.dedicated_generation[slot].load(std::memory_order_relaxed);
    streams.dedicated_priority[slot] = priority < 0 ? -1 : 0;
    streams.dedicated[slot].store(created, std::memory_order_release);
    return MydevStream(makeStream(device, kFirstDedicatedId + generation * kDedicatedStreams +
                                              static_cast<c10::StreamId>(slot)));
  }
  // Not a pool stream instead: a collective holds its stream's worker until
  // its peers arrive, so two groups sharing one could wait for each other.
  TORCH_CHECK(false, "mydev: all ", kDedicatedStreams, " dedicated streams of mydev:", static_cast<int>(device),
              " are in use (each process group holds one or two per device it uses until it is destroyed)");
}

void destroyDedicatedStream(const MydevStream& stream) {
  TORCH_CHECK(isDedicated(stream.id()), "mydev: stream ", stream.id(), " is not a dedicated stream");
  // Idle before its id is retired, so that a retired id means a stream with
  // nothing left to wait for. Outside the lock: its last kernels may create
  // a pool stream.
  stream.synchronize();
  auto& streams = *allDeviceStreams().at(static_cast<size_t>(stream.device_index()));
  const size_t slot = dedicatedSlot(stream.id());
  mydevStream_t handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(streams.create_mutex);
    if (streams.dedicated_generation[slot].load(std::memory_order_relaxed) != dedicatedGeneration(stream.id())) {
      return;  // destroyed already
    }
    handle = streams.dedicated[slot].exchange(nullptr);
    streams.dedicated_generation[slot].fetch_add(1, std::memory_order_release);
  }
  if (handle != nullptr) {
    MYDEV_CHECK(mydevStreamDestroy(handle));
  }
}

bool isDestroyedDedicatedStream(const MydevStream& stream) {
  if (!isDedicated(stream.id())) {
    return false;
  }
  const auto& streams = *allDeviceStreams().at(static_cast<size_t>(stream.device_index()));
  return streams.dedicated_generation[dedicatedSlot(stream.id())].load() > dedicatedGeneration(stream.id());
}

}  // namespace torch_mydev
