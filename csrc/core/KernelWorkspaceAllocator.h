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
  uint64_t outputs_lent = 0;  // allocations a kernel's own output served
};

KernelWorkspaceStats kernelWorkspaceStats();
// False when another CPU allocator could not be wrapped (see the .cpp).
bool kernelWorkspaceCacheInstalled();

// Inside a kernel: the ordinal-th CPU allocation of exactly `bytes` that this
// thread makes (1: the first) gets `ptr` (a fresh device output, as the kernel
// maps it), so that a CPU function allocating its own result writes it in
// place. Whichever allocation has that ordinal takes it, an intermediate too:
// the kernel checks where each result landed. Offers last until withdrawn.
void offerKernelOutput(void* ptr, size_t bytes, int ordinal);
// While offers stand: which allocation of its size (an offered one) the block
// at `ptr` was, 0 when it was none of them.
int kernelAllocationOrdinal(const void* ptr, size_t bytes);
void withdrawKernelOutputs();

// Frees the idle workspace blocks kept for reuse (torch.mydev.empty_cache).
void releaseIdleKernelWorkspaces();

}  // namespace torch_mydev
