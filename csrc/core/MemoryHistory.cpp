#include "MemoryHistory.h"

#include <c10/util/ApproximateClock.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <mutex>

namespace torch_mydev {

namespace {

// The allocators read the flags on every allocation and free; the rest of the
// settings only while something is recorded.
std::atomic<bool> g_trace_on{false};
std::atomic<bool> g_context_on{false};
std::atomic<uint64_t> g_clear_generation{0};
std::mutex g_settings_mutex;
MemoryHistorySettings g_settings;

MemoryHistorySettings settings() {
  std::lock_guard<std::mutex> lock(g_settings_mutex);
  return g_settings;
}

}  // namespace

void setMemoryHistory(const MemoryHistorySettings& new_settings, bool clear_trace) {
  std::lock_guard<std::mutex> lock(g_settings_mutex);
  g_settings = new_settings;
  if (clear_trace) {
    ++g_clear_generation;
  }
  g_trace_on.store(new_settings.record_trace && new_settings.max_entries > 0, std::memory_order_relaxed);
  g_context_on.store(new_settings.context != RecordContext::NEVER && new_settings.gather != nullptr,
                     std::memory_order_relaxed);
}

std::shared_ptr<c10::GatheredContext> MemoryHistory::allocationContext() const {
  if (!g_context_on.load(std::memory_order_relaxed)) {
    return nullptr;
  }
  const MemoryHistorySettings current = settings();
  return current.gather != nullptr && current.context >= RecordContext::STATE ? current.gather() : nullptr;
}

std::shared_ptr<c10::GatheredContext> MemoryHistory::freeContext() const {
  if (!g_context_on.load(std::memory_order_relaxed)) {
    return nullptr;
  }
  const MemoryHistorySettings current = settings();
  return current.gather != nullptr && current.context == RecordContext::ALL ? current.gather() : nullptr;
}

void MemoryHistory::record(TraceEntry::Action action, const void* address, size_t size, c10::StreamId stream,
                           std::shared_ptr<c10::GatheredContext> context) {
  if (!g_trace_on.load(std::memory_order_relaxed)) {
    return;
  }
  // The settings and the clear generation as one snapshot: history may be
  // turned off or cleared meanwhile.
  MemoryHistorySettings current;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(g_settings_mutex);
    current = g_settings;
    generation = g_clear_generation.load();
  }
  if (generation != cleared_generation_) {
    ring_.clear();
    next_ = 0;
    cleared_generation_ = generation;
  }
  const size_t max_entries = current.max_entries;
  if (!current.record_trace || max_entries == 0 || (current.skipped_actions & (1u << action)) != 0) {
    return;
  }
  // The trace keeps stacks of allocations only from context="alloc" on; a
  // block keeps its own from "state" on.
  if (action == TraceEntry::ALLOC && current.context < RecordContext::ALLOC) {
    context = nullptr;
  }
  TraceEntry entry(action, device_, reinterpret_cast<size_t>(address), size, streamTag(stream), {0, 0},
                   /*time=*/0, std::move(context));
  entry.time_.t_ = static_cast<time_t>(c10::getTime() / 1000);  // microseconds, as the viewer reads them
  if (ring_.size() != max_entries && next_ != 0) {
    // max_entries changed after the ring wrapped: unwrap it, keeping the newest.
    std::vector<TraceEntry> oldest_first = inOrder();
    const size_t kept = std::min(oldest_first.size(), max_entries);
    ring_.assign(std::make_move_iterator(oldest_first.end() - static_cast<std::ptrdiff_t>(kept)),
                 std::make_move_iterator(oldest_first.end()));
    next_ = 0;
  } else if (ring_.size() > max_entries) {
    ring_.erase(ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(ring_.size() - max_entries));
  }
  if (ring_.size() < max_entries) {
    ring_.push_back(std::move(entry));
    return;
  }
  ring_[next_] = std::move(entry);
  next_ = (next_ + 1) % max_entries;
}

std::vector<TraceEntry> MemoryHistory::trace() const {
  if (g_clear_generation.load() != cleared_generation_) {
    return {};
  }
  return inOrder();
}

std::vector<TraceEntry> MemoryHistory::inOrder() const {
  std::vector<TraceEntry> ordered;
  ordered.reserve(ring_.size());
  ordered.insert(ordered.end(), ring_.begin() + static_cast<std::ptrdiff_t>(next_), ring_.end());
  ordered.insert(ordered.end(), ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(next_));
  return ordered;
}

}  // namespace torch_mydev
