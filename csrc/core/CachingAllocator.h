// The mydev device memory allocator: a stream-ordered caching allocator in the
// design of PyTorch's CUDA caching allocator, over mydevMalloc/mydevFree.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

namespace torch_mydev {

c10::DeviceAllocator* cachingAllocator();

}  // namespace torch_mydev
