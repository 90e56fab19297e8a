// Memory history (torch.mydev.memory._record_memory_history): what the
// caching allocator did and the stack that made it, kept in PyTorch's own
// types (c10::CachingDeviceAllocator::TraceEntry, SegmentInfo, RecordContext),
// so that a snapshot reads in PyTorch's memory viewer as a CUDA one does.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace torch_mydev {

using c10::CachingDeviceAllocator::RecordContext;
using c10::CachingDeviceAllocator::SegmentInfo;
using c10::CachingDeviceAllocator::TraceEntry;

// What is recorded, for every device, from now on. `gather` captures the
// current stack (the Python layer passes one of PyTorch's CapturedTraceback
// gatherers); null records no stacks.
struct MemoryHistorySettings {
  bool record_trace = false;  // enabled="all": each allocator action
  RecordContext context = RecordContext::NEVER;
  c10::CachingDeviceAllocator::CreateContextFn gather = nullptr;
  size_t max_entries = 0;
  // Actions left out of the trace (skip_actions): bit 1 << TraceEntry::Action.
  uint32_t skipped_actions = 0;
};

void setMemoryHistory(const MemoryHistorySettings& settings, bool clear_trace);

// One device's trace: the last max_entries actions, in a ring. Its caching
// allocator records into it under its own lock.
class MemoryHistory {
 public:
  explicit MemoryHistory(c10::DeviceIndex device) : device_(device) {}

  // The stack of an allocation (kept with its block) or of a free; null when
  // not recorded. One relaxed load when history is off.
  std::shared_ptr<c10::GatheredContext> allocationContext() const;
  std::shared_ptr<c10::GatheredContext> freeContext() const;

  void record(TraceEntry::Action action, const void* address, size_t size, c10::StreamId stream,
              std::shared_ptr<c10::GatheredContext> context = nullptr);

  // Oldest first; empty once cleared.
  std::vector<TraceEntry> trace() const;

 private:
  std::vector<TraceEntry> inOrder() const;

  const c10::DeviceIndex device_;
  std::vector<TraceEntry> ring_;
  size_t next_ = 0;  // where the next entry goes once the ring is full
  uint64_t cleared_generation_ = 0;
};

// A TraceEntry's or SegmentInfo's `stream` holds the stream's id.
inline void* streamTag(c10::StreamId stream) { return reinterpret_cast<void*>(static_cast<intptr_t>(stream)); }

}  // namespace torch_mydev
