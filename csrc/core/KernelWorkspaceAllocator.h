// Host memory that kernels allocate while they run on a stream worker (see
// KernelWorkspaceAllocator.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace torch_mydev {

struct KernelWorkspaceStats {
  size_t active_bytes = 0;  // in blocks kernels' tensors hold now
  size_t idle_bytes = 0;    // in blocks kept for reuse
  uint64_t requests = 0;    // large allocations made inside kernels
  uint64_t reused = 0;      // ... that an idle block served
};

KernelWorkspaceStats kernelWorkspaceStats();
// False when another CPU allocator could not be wrapped (see the .cpp).
bool kernelWorkspaceCacheInstalled();

// Frees the idle workspace blocks kept for reuse (torch.mydev.empty_cache).
void releaseIdleKernelWorkspaces();

}  // namespace torch_mydev
