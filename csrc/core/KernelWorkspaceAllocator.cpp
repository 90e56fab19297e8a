// The device's kernels are ATen's CPU kernels, and they allocate their
// scratch buffers and results from the CPU allocator: oneDNN's convolution,
// for one, takes ~20 MB per call for reordered inputs and outputs. glibc hands
// buffers of that size back to the system when they are freed, so every call
// pays for fresh pages again (page faults were 40 % of a 3x3 convolution's
// time), and how much it pays depends on glibc's history of frees. A GPU
// backend takes such workspaces from its caching allocator instead (cuDNN's
// workspace comes from CUDA's), and so does mydev: the process's CPU
// allocator is wrapped, and while the calling thread runs a mydev kernel a
// large buffer is taken from, and given back to, a cache of idle blocks.
// Every other allocation goes to the wrapped allocator unchanged.
//
// The same wrapper lets a kernel point a CPU function's own result at the
// device output it computes (offerKernelOutput): without it, a CPU function
// with no out= form (flash attention, the normalizations' backward) writes its
// result to host memory, which the kernel then copies into the device output.
#include "KernelWorkspaceAllocator.h"

#include <mydev/runtime.h>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>
#include <c10/util/flat_hash_map.h>

#include <pthread.h>

#include <atomic>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace torch_mydev {

namespace {

// Below this size glibc serves a buffer from its heap without new pages.
constexpr size_t kMinCachedBytes = 128 << 10;
// Idle blocks kept for reuse at most; a block freed beyond that goes back.
constexpr size_t kMaxIdleBytes = 512 << 20;
// live_'s size for a device output's memory lent to a result: when the result
// is freed, the memory is neither kept nor freed (the device owns it).
constexpr size_t kLentBlock = 0;

class WorkspaceCache {
 public:
  WorkspaceCache() {
    pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                   [] { instance().mutex_.unlock(); });
  }

  static WorkspaceCache& instance() {
    // Leaked: tensors can be freed during static destruction.
    static auto* cache = new WorkspaceCache();
    return *cache;
  }

  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.requests;
      // A block up to a quarter larger serves: kernels ask for the same few
      // sizes again and again, and a close fit keeps the waste small.
      auto it = idle_.lower_bound(bytes);
      if (it != idle_.end() && it->first - bytes <= bytes / 4) {
        void* ptr = it->second;
        stats_.idle_bytes -= it->first;
        ++stats_.reused;
        markLiveLocked(ptr, it->first);
        idle_.erase(it);
        return ptr;
      }
    }
    void* ptr = c10::alloc_cpu(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    markLiveLocked(ptr, bytes);
    return ptr;
  }

  void lend(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.outputs_lent;
    // A result that outlived the kernel its output was lent to (none of
    // ATen's does) would, when freed, end this loan's record.
    TORCH_INTERNAL_ASSERT(live_.emplace(ptr, kLentBlock).second,
                          "mydev: a kernel's output memory is lent again while an earlier loan is alive");
    live_count_.fetch_add(1, std::memory_order_relaxed);
  }

  // Whether ptr was a live workspace block (it is now idle, or freed) or lent.
  bool giveBack(void* ptr) {
    // Outside kernels no workspace block is live, and the wrapped
    // allocator's frees (every raw free of oneDNN's) skip the lock.
    if (live_count_.load(std::memory_order_acquire) == 0) {
      return false;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) {
      return false;
    }
    const size_t bytes = it->second;
    live_.erase(it);
    live_count_.fetch_sub(1, std::memory_order_release);
    if (bytes == kLentBlock) {
      return true;
    }
    stats_.active_bytes -= bytes;
    if (stats_.idle_bytes + bytes > kMaxIdleBytes) {
      lock.unlock();
      c10::free_cpu(ptr);
      return true;
    }
    idle_.emplace(bytes, ptr);
    stats_.idle_bytes += bytes;
    return true;
  }

  KernelWorkspaceStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void releaseIdle() {
    std::vector<void*> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [bytes, ptr] : idle_) {
        blocks.push_back(ptr);
      }
      idle_.clear();
      stats_.idle_bytes = 0;
    }
    for (void* ptr : blocks) {
      c10::free_cpu(ptr);
    }
  }

 private:
  void markLiveLocked(void* ptr, size_t bytes) {
    live_.emplace(ptr, bytes);
    live_count_.fetch_add(1, std::memory_order_relaxed);
    stats_.active_bytes += bytes;
  }

  std::mutex mutex_;
  std::multimap<size_t, void*> idle_;
  KernelWorkspaceStats stats_;
  ska::flat_hash_map<void*, size_t> live_;
  std::atomic<size_t> live_count_{0};
};

// The allocator the wrapper replaced, and its raw deleter: set before the
// wrapper is installed, so that a free racing with the installation finds them.
c10::Allocator* g_wrapped = nullptr;
c10::DeleterFnPtr g_wrapped_raw_deleter = nullptr;

struct OutputOffer {
  void* ptr;
  size_t bytes;
  int ordinal;  // the allocation of `bytes` that takes it: 1, the first
  int seen;     // allocations of `bytes` so far
  bool taken;
};
// This thread's offers: only its running kernel may take them.
thread_local c10::SmallVector<OutputOffer, 4> t_output_offers;

// While offers stand, allocations of an offered size with their ordinals
// (kernelAllocationOrdinal). Bounded: a kernel that allocates one size more
// often than this has no allocation worth remembering.
struct OfferedSizeAllocation {
  const void* ptr;
  size_t bytes;
  int ordinal;
};
constexpr size_t kMaxRecordedAllocations = 32;
thread_local c10::SmallVector<OfferedSizeAllocation, 8> t_offered_size_allocations;

// This allocation's ordinal among those of its size (0 when no offer has that
// size), and the offer it takes, if any.
std::pair<int, void*> countAndTakeOffer(size_t bytes) {
  int ordinal = 0;
  void* lent = nullptr;
  for (OutputOffer& offer : t_output_offers) {
    if (offer.bytes != bytes) {
      continue;
    }
    ordinal = ++offer.seen;
    if (!offer.taken && offer.ordinal == ordinal && lent == nullptr) {
      offer.taken = true;
      lent = offer.ptr;
    }
  }
  if (lent != nullptr) {
    WorkspaceCache::instance().lend(lent);
  }
  return {ordinal, lent};
}

void recordOfferedSize(const void* ptr, size_t bytes, int ordinal) {
  if (ordinal > 0 && t_offered_size_allocations.size() < kMaxRecordedAllocations) {
    t_offered_size_allocations.push_back({ptr, bytes, ordinal});
  }
}

// raw_allocate's blocks (oneDNN's, through ideep) come back to raw_deleter()
// with their address only, so one deleter serves blocks of both origins; the
// cache's blocks carry it too.
void deleteWorkspaceOrWrapped(void* ptr) {
  if (ptr != nullptr && !WorkspaceCache::instance().giveBack(ptr)) {
    g_wrapped_raw_deleter(ptr);
  }
}

// c10's contract asks allocate() to attach raw_deleter() to every block. The
// blocks the cache does not serve keep the wrapped allocator's own DataPtr
// instead, so that CPU tensors outside mydev's kernels carry exactly what
// they carry without mydev (the profiler's reporting deleter among them);
// raw_deleter() accepts those blocks as well.
class KernelWorkspaceAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    if (mydevInKernel() == 0) {
      return g_wrapped->allocate(bytes);
    }
    auto [ordinal, ptr] = t_output_offers.empty() ? std::pair<int, void*>{0, nullptr} : countAndTakeOffer(bytes);
    if (ptr == nullptr) {
      if (bytes < kMinCachedBytes) {
        c10::DataPtr wrapped = g_wrapped->allocate(bytes);
        recordOfferedSize(wrapped.get(), bytes, ordinal);
        return wrapped;
      }
      ptr = WorkspaceCache::instance().take(bytes);
    }
    recordOfferedSize(ptr, bytes, ordinal);
    return {ptr, ptr, &deleteWorkspaceOrWrapped, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &deleteWorkspaceOrWrapped; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    g_wrapped->copy_data(dest, src, count);
  }
};

// An allocator without a raw deleter cannot be wrapped (the shared deleter
// needs it); kernels then allocate from it directly. A CPU allocator set
// with a higher priority before this library loads stays in place, unwrapped.
const bool g_installed = [] {
  c10::Allocator* wrapped = c10::GetCPUAllocator();
  if (wrapped->raw_deleter() == nullptr) {
    return false;
  }
  g_wrapped = wrapped;
  g_wrapped_raw_deleter = wrapped->raw_deleter();
  // Leaked: tensors are freed during static destruction too.
  auto* allocator = new KernelWorkspaceAllocator();
  c10::SetCPUAllocator(allocator);
  return c10::GetCPUAllocator() == allocator;
}();

}  // namespace

void releaseIdleKernelWorkspaces() { WorkspaceCache::instance().releaseIdle(); }

KernelWorkspaceStats kernelWorkspaceStats() { return WorkspaceCache::instance().stats(); }

bool kernelWorkspaceCacheInstalled() { return g_installed; }

void offerKernelOutput(void* ptr, size_t bytes, int ordinal) {
  if (g_installed && bytes > 0 && ordinal > 0) {
    t_output_offers.push_back({ptr, bytes, ordinal, 0, false});
  }
}

int kernelAllocationOrdinal(const void* ptr, size_t bytes) {
  // From the latest: a block freed and taken again is the later allocation.
  for (auto it = t_offered_size_allocations.rbegin(); it != t_offered_size_allocations.rend(); ++it) {
    if (it->ptr == ptr && it->bytes == bytes) {
      return it->ordinal;
    }
  }
  return 0;
}

void withdrawKernelOutputs() {
  t_output_offers.clear();
  t_offered_size_allocations.clear();
}

}  // namespace torch_mydev
