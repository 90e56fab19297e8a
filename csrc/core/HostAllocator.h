// Pinned host memory allocator for mydev (see HostAllocator.cpp).
#pragma once

#include <ATen/core/CachingHostAllocator.h>

namespace torch_mydev {

at::HostAllocator* hostAllocator();
// Whether ptr lies in pinned memory from the mydev runtime.
bool isPinned(const void* ptr);

}  // namespace torch_mydev
