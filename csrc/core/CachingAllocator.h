// The mydev device memory allocator: a stream-ordered caching allocator in the
// design of PyTorch's CUDA caching allocator, over mydevMalloc/mydevFree.
#pragma once

#include "MemoryHistory.h"

#include <c10/core/CachingDeviceAllocator.h>

#include <vector>

namespace torch_mydev {

c10::DeviceAllocator* cachingAllocator();

// Caps what the allocator may reserve on a device at fraction x its capacity,
// as torch.cuda.set_per_process_memory_fraction does.
void setMemoryFraction(double fraction, c10::DeviceIndex device);
double memoryFraction(c10::DeviceIndex device);

// Frees a pointer from raw_allocate; unlike the DataPtr deleter it raises for
// a pointer the allocator does not own.
void rawDelete(void* ptr);

// Every device's segments and trace (torch.mydev.memory._snapshot).
struct MemorySnapshot {
  std::vector<SegmentInfo> segments;
  std::vector<std::vector<TraceEntry>> device_traces;
};
MemorySnapshot memorySnapshot();

}  // namespace torch_mydev
