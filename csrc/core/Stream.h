// mydev streams as PyTorch sees them. A c10::Stream of type PrivateUse1 is
// mapped onto a runtime stream (mydevStream_t) the way CUDAStream maps onto
// cudaStream_t: id 0 is the device's default stream, and each device has two
// lazily created pools (normal and high priority) of kStreamsPerPool streams
// handed out round robin, which live as long as the process. Above them are
// dedicated streams, which their owner destroys, ending their worker thread.
// The current stream is per thread and per device.
#pragma once

#include <mydev/runtime.h>

#include <c10/core/Stream.h>

namespace torch_mydev {

constexpr int kStreamsPerPool = 32;
constexpr int kDedicatedStreams = 1024;  // per device, in use at once

class MydevStream {
 public:
  explicit MydevStream(c10::Stream stream);

  c10::Stream unwrap() const { return stream_; }
  operator c10::Stream() const { return stream_; }
  c10::DeviceIndex device_index() const { return stream_.device_index(); }
  c10::StreamId id() const { return stream_.id(); }
  // The runtime handle; created on first use for pool streams.
  mydevStream_t handle() const;
  int priority() const;
  bool query() const;
  void synchronize() const;

  bool operator==(const MydevStream& other) const { return stream_ == other.stream_; }

 private:
  c10::Stream stream_;
};

// `device` -1 means the current device.
MydevStream getDefaultMydevStream(c10::DeviceIndex device = -1);
MydevStream getCurrentMydevStream(c10::DeviceIndex device = -1);
// priority follows CUDA: 0 is normal, negative is high.
MydevStream getStreamFromPool(int priority, c10::DeviceIndex device = -1);
void setCurrentMydevStream(MydevStream stream);

// A stream no one else is handed, for an owner that must leave no thread
// behind when it is done (mccl's comm streams: destroy_process_group).
// Refused with all kDedicatedStreams of the device in use.
MydevStream createDedicatedStream(int priority, c10::DeviceIndex device);
// Waits for the stream's work, then ends its worker. Later uses of its id (an
// event the caching allocator records for memory the stream used) land on
// the device's default stream, which orders them no earlier; no later stream
// gets the same id.
void destroyDedicatedStream(const MydevStream& stream);
// Whether `stream` is a dedicated stream that was destroyed: what a thread
// racing its destruction may find it to be when the runtime refuses it.
bool isDestroyedDedicatedStream(const MydevStream& stream);

}  // namespace torch_mydev
