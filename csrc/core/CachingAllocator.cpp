// Blocks are carved out of segments obtained from mydevMalloc. A freed block
// goes back to the pool of the stream it was allocated on and is only reused by
// allocations on that stream, so reuse is ordered after every kernel already
// queued there. Use on other streams is declared with recordStream; such blocks
// wait for an event on each of those streams before they are reusable.
// Small requests (<= 1 MiB) share 2 MiB segments; large ones get their own.
#include "CachingAllocator.h"

#include "Device.h"
#include "Event.h"
#include "Exception.h"
#include "KernelWorkspaceAllocator.h"
#include "MemoryHistory.h"
#include "Stream.h"

#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>
#include <c10/util/flat_hash_map.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_set>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

namespace torch_mydev {

namespace {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;
using c10::CachingAllocator::StatType;
using c10::CachingDeviceAllocator::BlockInfo;
using c10::CachingDeviceAllocator::DeviceStats;

constexpr size_t kMinBlockSize = 512;
constexpr size_t kSmallSize = 1 << 20;
constexpr size_t kSmallBuffer = 2 << 20;
constexpr size_t kLargeBuffer = 20 << 20;
constexpr size_t kMinLargeAlloc = 10 << 20;
constexpr size_t kRoundLarge = 2 << 20;

struct Block {
  c10::DeviceIndex device;
  c10::StreamId stream;
  size_t size;
  size_t requested_size = 0;
  void* ptr;
  bool is_small;
  bool allocated = false;
  bool recent = false;  // free, and held whole in DeviceCache::recent_
  Block* prev = nullptr;
  Block* next = nullptr;
  // Streams of any device (record_stream takes them all), as CUDA's allocator keeps them.
  std::unordered_set<c10::Stream> stream_uses;
  int pending_events = 0;
  std::shared_ptr<c10::GatheredContext> context;  // the allocating stack, under memory history

  Block(c10::DeviceIndex device_, c10::StreamId stream_, size_t size_, void* ptr_, bool is_small_)
      : device(device_), stream(stream_), size(size_), ptr(ptr_), is_small(is_small_) {}

  bool isSplit() const { return prev != nullptr || next != nullptr; }
};

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    return std::make_tuple(a->stream, a->size, reinterpret_cast<uintptr_t>(a->ptr)) <
        std::make_tuple(b->stream, b->size, reinterpret_cast<uintptr_t>(b->ptr));
  }
};

using BlockPool = std::set<Block*, BlockOrder>;

size_t roundSize(size_t size) {
  return size < kMinBlockSize ? kMinBlockSize : kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

size_t segmentSize(size_t size) {
  if (size <= kSmallSize) {
    return kSmallBuffer;
  }
  if (size < kMinLargeAlloc) {
    return kLargeBuffer;
  }
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

std::string formatBytes(size_t bytes) {
  std::ostringstream out;
  out.precision(2);
  out << std::fixed;
  if (bytes < 1024) {
    out << bytes << " bytes";
  } else if (bytes < (1ULL << 20)) {
    out << bytes / 1024.0 << " KiB";
  } else if (bytes < (1ULL << 30)) {
    out << bytes / 1048576.0 << " MiB";
  } else {
    out << bytes / 1073741824.0 << " GiB";
  }
  return out.str();
}

// What a free or recordStream of a pointer this allocator does not hold says.
void checkPointer(bool live, void* ptr, const char* caller) {
  TORCH_CHECK(live, caller, ": invalid device pointer ", ptr,
              " (not allocated by the mydev caching allocator, or already freed)");
}

bool inForkedChild() {
  int count = 0;
  return mydevGetDeviceCount(&count) == mydevErrorForkedChild;
}

class DeviceCache {
 public:
  explicit DeviceCache(c10::DeviceIndex device) : device_(device), history_(device) {}

  Block* allocate(size_t requested, const MydevStream& stream) {
    std::shared_ptr<c10::GatheredContext> context = history_.allocationContext();
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    processPendingFrees();
    const size_t size = roundSize(requested);
    const bool is_small = size <= kSmallSize;
    BlockPool& pool = is_small ? small_blocks_ : large_blocks_;

    Block* block = is_small ? takeRecent(stream.id(), size) : nullptr;
    if (block == nullptr) {
      block = takeFromPool(pool, stream.id(), size);
    }
    if (block == nullptr && is_small && recent_count_ > 0) {
      // Merged with their free neighbours, the kept blocks may make room
      // without a new segment.
      flushRecent();
      block = takeFromPool(pool, stream.id(), size);
    }
    if (block == nullptr) {
      block = allocateSegment(size, stream, is_small, context);
    }
    if (block->size - size >= (is_small ? kMinBlockSize : kSmallSize + 1)) {
      auto* remaining = new Block(device_, block->stream, block->size - size, static_cast<char*>(block->ptr) + size,
                                  is_small);
      remaining->prev = block;
      remaining->next = block->next;
      if (remaining->next != nullptr) {
        remaining->next->prev = remaining;
      }
      block->next = remaining;
      block->size = size;
      pool.insert(remaining);
      updateStat(&DeviceStats::inactive_split, is_small, 1);
      updateStat(&DeviceStats::inactive_split_bytes, is_small, static_cast<int64_t>(remaining->size));
    }
    block->allocated = true;
    block->requested_size = requested;
    block->context = context;
    history_.record(TraceEntry::ALLOC, block->ptr, block->size, block->stream, std::move(context));
    allocated_blocks_[block->ptr] = block;
    updateStat(&DeviceStats::allocation, is_small, 1);
    updateStat(&DeviceStats::allocated_bytes, is_small, static_cast<int64_t>(block->size));
    updateStat(&DeviceStats::active, is_small, 1);
    updateStat(&DeviceStats::active_bytes, is_small, static_cast<int64_t>(block->size));
    updateStat(&DeviceStats::requested_bytes, is_small, static_cast<int64_t>(requested));
    reportToProfiler(block->ptr, static_cast<int64_t>(block->size));
    return block;
  }

  void free(void* ptr) {
    std::shared_ptr<c10::GatheredContext> context = history_.freeContext();
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    Block* block = liveBlockLocked(ptr, "mydev allocator");
    allocated_blocks_.erase(ptr);
    block->allocated = false;
    history_.record(TraceEntry::FREE_REQUESTED, block->ptr, block->size, block->stream, context);
    updateStat(&DeviceStats::allocation, block->is_small, -1);
    updateStat(&DeviceStats::allocated_bytes, block->is_small, -static_cast<int64_t>(block->size));
    updateStat(&DeviceStats::requested_bytes, block->is_small, -static_cast<int64_t>(block->requested_size));
    reportToProfiler(block->ptr, -static_cast<int64_t>(block->size));
    if (!block->stream_uses.empty()) {
      for (const c10::Stream& used_on : block->stream_uses) {
        MydevEvent event;
        const MydevStream stream(used_on);
        try {
          event.record(stream);
        } catch (const c10::Error&) {
          // Destroyed meanwhile, on another thread, after its work was done:
          // nothing to wait for. Any other failure is the caller's.
          if (!isDestroyedDedicatedStream(stream)) {
            throw;
          }
          continue;
        }
        pending_frees_.emplace_back(std::move(event), block);
        ++block->pending_events;
      }
      block->stream_uses.clear();
      if (block->pending_events > 0) {
        return;
      }
    }
    completeFree(block, std::move(context));
    if (block->is_small) {
      keepRecent(block);
    } else {
      returnToPool(block);
    }
  }

  void recordStream(void* ptr, const MydevStream& stream) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    Block* block = liveBlockLocked(ptr, "recordStream");
    if (stream.device_index() != device_ || stream.id() != block->stream) {
      block->stream_uses.insert(stream.unwrap());
    }
  }

  // Every segment with its blocks, by address, in PyTorch's snapshot types.
  std::vector<SegmentInfo> segments() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    std::map<uintptr_t, const Block*> heads;
    const auto add_segment_of = [&heads](const Block* block) {
      while (block->prev != nullptr) {
        block = block->prev;
      }
      heads.emplace(reinterpret_cast<uintptr_t>(block->ptr), block);
    };
    for (const auto& [ptr, block] : allocated_blocks_) {
      add_segment_of(block);
    }
    for (const BlockPool* pool : {&small_blocks_, &large_blocks_}) {
      for (const Block* block : *pool) {
        add_segment_of(block);
      }
    }
    for (size_t i = 0; i < recent_count_; ++i) {
      add_segment_of(recent_[i]);
    }
    for (const auto& [event, block] : pending_frees_) {
      add_segment_of(block);
    }
    std::vector<SegmentInfo> segments;
    for (const auto& [address, head] : heads) {
      SegmentInfo& segment = segments.emplace_back();
      segment.device = device_;
      segment.address = address;
      segment.stream = streamTag(head->stream);
      segment.is_large = !head->is_small;
      for (const Block* block = head; block != nullptr; block = block->next) {
        BlockInfo& info = segment.blocks.emplace_back();
        info.size = block->size;
        info.allocated = block->allocated;
        info.active = block->allocated || block->pending_events > 0;
        info.requested_size = info.active ? block->requested_size : 0;
        info.context_when_allocated = block->context;
        segment.total_size += block->size;
        segment.allocated_size += block->allocated ? block->size : 0;
        segment.active_size += info.active ? block->size : 0;
        segment.requested_size += info.requested_size;
      }
    }
    return segments;
  }

  // The segments and the trace under one lock, so that they agree.
  std::pair<std::vector<SegmentInfo>, std::vector<TraceEntry>> snapshot() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    // As CUDA's allocator, a snapshot is an action of the trace, sized by
    // the memory allocated when it was taken.
    history_.record(TraceEntry::SNAPSHOT, nullptr,
                    stats_.allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)].current, 0);
    return {segments(), history_.trace()};
  }

  void emptyCache() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    releaseAllCached();
  }

  DeviceStats stats() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return stats_;
  }

  void setMemoryFraction(double fraction) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    {
      ScopedDevice on_device(device_);
      MYDEV_CHECK(mydevMemGetInfo(&free_bytes, &total_bytes));
    }
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    fraction_ = fraction;
    allowed_bytes_ = static_cast<size_t>(fraction * static_cast<double>(total_bytes));
  }

  double memoryFraction() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return fraction_;
  }

  void resetAccumulatedStats() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    forEachStatArray([](StatArray& array) {
      for (Stat& stat : array) {
        stat.reset_accumulated();
      }
    });
    stats_.num_alloc_retries = 0;
    stats_.num_ooms = 0;
    stats_.num_sync_all_streams = 0;
    stats_.num_device_alloc = 0;
    stats_.num_device_free = 0;
  }

  void resetPeakStats() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    forEachStatArray([](StatArray& array) {
      for (Stat& stat : array) {
        stat.reset_peak();
      }
    });
  }

 private:
  // The live block starting at ptr (mutex_ held).
  Block* liveBlockLocked(void* ptr, const char* caller) {
    auto it = allocated_blocks_.find(ptr);
    checkPointer(it != allocated_blocks_.end(), ptr, caller);
    return it->second;
  }

  template <typename F>
  void forEachStatArray(F f) {
    for (StatArray DeviceStats::*member :
         {&DeviceStats::allocation, &DeviceStats::segment, &DeviceStats::active, &DeviceStats::inactive_split,
          &DeviceStats::allocated_bytes, &DeviceStats::reserved_bytes, &DeviceStats::active_bytes,
          &DeviceStats::inactive_split_bytes, &DeviceStats::requested_bytes}) {
      f(stats_.*member);
    }
  }

  void updateStat(StatArray DeviceStats::*member, bool is_small, int64_t delta) {
    StatArray& array = stats_.*member;
    for (const StatType type : {StatType::AGGREGATE, is_small ? StatType::SMALL_POOL : StatType::LARGE_POOL}) {
      Stat& stat = array[static_cast<size_t>(type)];
      if (delta >= 0) {
        stat.increase(static_cast<size_t>(delta));
      } else {
        stat.decrease(static_cast<size_t>(-delta));
      }
    }
  }

  Block* takeFromPool(BlockPool& pool, c10::StreamId stream, size_t size) {
    Block key(device_, stream, size, nullptr, false);
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->stream != stream) {
      return nullptr;
    }
    Block* block = *it;
    pool.erase(it);
    countInactiveSplit(block, -1);
    return block;
  }

  Block* allocateSegment(size_t size, const MydevStream& stream, bool is_small,
                         const std::shared_ptr<c10::GatheredContext>& context) {
    const size_t segment = segmentSize(size);
    ScopedDevice on_device(device_);
    void* ptr = nullptr;
    mydevError_t status = mallocWithinFraction(&ptr, segment);
    if (status == mydevErrorMemoryAllocation) {
      ++stats_.num_alloc_retries;
      releaseAllCached();
      status = mallocWithinFraction(&ptr, segment);
    }
    if (status == mydevErrorMemoryAllocation) {
      ++stats_.num_ooms;
      size_t free_bytes = 0;
      size_t total_bytes = 0;
      mydevMemGetInfo(&free_bytes, &total_bytes);
      const auto allocated =
          static_cast<size_t>(stats_.allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)].current);
      const size_t reserved = reservedBytes();
      // As CUDA's trace: the address field holds what the device has free.
      history_.record(TraceEntry::OOM, reinterpret_cast<void*>(free_bytes), size, stream.id(), context);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "mydev out of memory. Tried to allocate ", formatBytes(size),
                       ". mydev:", static_cast<int>(device_), " has a total capacity of ", formatBytes(total_bytes),
                       " of which ", formatBytes(free_bytes), " is free. Of the allocated memory ",
                       formatBytes(allocated), " is allocated by PyTorch, and ", formatBytes(reserved - allocated),
                       " is reserved by PyTorch but unallocated. ", limitDescription());
    }
    MYDEV_CHECK(status);
    ++stats_.num_device_alloc;
    updateStat(&DeviceStats::segment, is_small, 1);
    updateStat(&DeviceStats::reserved_bytes, is_small, static_cast<int64_t>(segment));
    history_.record(TraceEntry::SEGMENT_ALLOC, ptr, segment, stream.id(), context);
    return new Block(device_, stream.id(), segment, ptr, is_small);
  }

  // The block can be reused from now on.
  void completeFree(Block* block, std::shared_ptr<c10::GatheredContext> context) {
    block->context = nullptr;
    history_.record(TraceEntry::FREE_COMPLETED, block->ptr, block->size, block->stream, std::move(context));
  }

  // torch.profiler's profile_memory=True: the allocation or free, with the
  // device's totals after it, as the CUDA caching allocator reports them.
  void reportToProfiler(void* ptr, int64_t bytes) const {
    if (C10_LIKELY(!c10::memoryProfilingEnabled())) {
      return;
    }
    c10::reportMemoryUsageToProfiler(
        ptr, bytes, static_cast<size_t>(stats_.allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)].current),
        reservedBytes(), c10::Device(c10::DeviceType::PrivateUse1, device_));
  }

  size_t reservedBytes() const {
    return static_cast<size_t>(stats_.reserved_bytes[static_cast<size_t>(StatType::AGGREGATE)].current);
  }

  // The per-process limit (torch.mydev.set_per_process_memory_fraction) is
  // this allocator's own: the runtime only knows the device capacity.
  mydevError_t mallocWithinFraction(void** ptr, size_t segment) {
    if (reservedBytes() + segment > allowed_bytes_) {
      return mydevErrorMemoryAllocation;
    }
    return mydevMalloc(ptr, segment);
  }

  std::string limitDescription() const {
    if (allowed_bytes_ == std::numeric_limits<size_t>::max()) {
      return "The capacity is set by MYDEV_DEVICE_MEMORY.";
    }
    std::ostringstream out;
    out << "This process may reserve at most " << formatBytes(allowed_bytes_) << " on mydev:"
        << static_cast<int>(device_) << " (set_per_process_memory_fraction(" << fraction_ << ")).";
    return out.str();
  }

  void returnToPool(Block* block) {
    deactivate(block);
    mergeIntoPool(block);
  }

  void deactivate(Block* block) {
    updateStat(&DeviceStats::active, block->is_small, -1);
    updateStat(&DeviceStats::active_bytes, block->is_small, -static_cast<int64_t>(block->size));
  }

  // A free part of a split segment counts as an inactive split.
  void countInactiveSplit(Block* block, int64_t sign) {
    if (block->isSplit()) {
      updateStat(&DeviceStats::inactive_split, block->is_small, sign);
      updateStat(&DeviceStats::inactive_split_bytes, block->is_small, sign * static_cast<int64_t>(block->size));
    }
  }

  // Puts a free block in its pool, merged with the free neighbours there.
  void mergeIntoPool(Block* block) {
    BlockPool& pool = block->is_small ? small_blocks_ : large_blocks_;
    for (Block* neighbour : {block->prev, block->next}) {
      if (neighbour == nullptr || neighbour->allocated || neighbour->recent || neighbour->pending_events > 0) {
        continue;
      }
      pool.erase(neighbour);
      countInactiveSplit(neighbour, -1);
      if (neighbour == block->prev) {
        block->ptr = neighbour->ptr;
        block->prev = neighbour->prev;
        if (block->prev != nullptr) {
          block->prev->next = block;
        }
      } else {
        block->next = neighbour->next;
        if (block->next != nullptr) {
          block->next->prev = block;
        }
      }
      block->size += neighbour->size;
      delete neighbour;
    }
    countInactiveSplit(block, 1);
    pool.insert(block);
  }

  // Small blocks freed last stay whole, outside the pool, for the next
  // allocations of their size on their stream: a loop of small operators
  // frees and allocates the same few sizes over and over, and reusing the
  // block as it is skips the pool's merge, split and set updates.
  void keepRecent(Block* block) {
    deactivate(block);
    countInactiveSplit(block, 1);
    // Marked first: the block evicted below may be its neighbour, and must
    // not merge it away.
    block->recent = true;
    if (recent_count_ == kRecentBlocks) {
      Block* oldest = recent_[0];
      std::move(recent_.begin() + 1, recent_.end(), recent_.begin());
      --recent_count_;
      leaveRecent(oldest);
      mergeIntoPool(oldest);
    }
    recent_[recent_count_++] = block;
  }

  Block* takeRecent(c10::StreamId stream, size_t size) {
    for (size_t i = recent_count_; i-- > 0;) {
      Block* block = recent_[i];
      if (block->stream == stream && block->size == size) {
        std::move(recent_.begin() + i + 1, recent_.begin() + recent_count_, recent_.begin() + i);
        --recent_count_;
        leaveRecent(block);
        return block;
      }
    }
    return nullptr;
  }

  void leaveRecent(Block* block) {
    block->recent = false;
    countInactiveSplit(block, -1);
  }

  void flushRecent() {
    for (size_t i = 0; i < recent_count_; ++i) {
      leaveRecent(recent_[i]);
      mergeIntoPool(recent_[i]);
    }
    recent_count_ = 0;
  }

  void processPendingFrees() {
    while (!pending_frees_.empty() && pending_frees_.front().first.query()) {
      Block* block = pending_frees_.front().second;
      pending_frees_.pop_front();
      if (--block->pending_events == 0) {
        completeFree(block, nullptr);
        returnToPool(block);
      }
    }
  }

  void waitForPendingFrees() {
    if (pending_frees_.empty()) {
      return;
    }
    ++stats_.num_sync_all_streams;
    ScopedDevice on_device(device_);
    MYDEV_CHECK(mydevDeviceSynchronize());
    processPendingFrees();
  }

  // Every free block back to the pool, then every wholly free segment back
  // to the runtime.
  void releaseAllCached() {
    flushRecent();
    waitForPendingFrees();
    releaseCachedSegments();
  }

  void releaseCachedSegments() {
    for (BlockPool* pool : {&small_blocks_, &large_blocks_}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* block = *it;
        if (block->isSplit()) {
          ++it;
          continue;
        }
        ScopedDevice on_device(device_);
        MYDEV_CHECK(mydevFree(block->ptr));
        history_.record(TraceEntry::SEGMENT_FREE, block->ptr, block->size, block->stream);
        ++stats_.num_device_free;
        updateStat(&DeviceStats::segment, block->is_small, -1);
        updateStat(&DeviceStats::reserved_bytes, block->is_small, -static_cast<int64_t>(block->size));
        it = pool->erase(it);
        delete block;
      }
    }
  }

  const c10::DeviceIndex device_;
  std::recursive_mutex mutex_;
  MemoryHistory history_;
  // The live blocks by address, for free() and recordStream().
  ska::flat_hash_map<void*, Block*> allocated_blocks_;
  DeviceStats stats_;
  BlockPool small_blocks_;
  BlockPool large_blocks_;
  std::deque<std::pair<MydevEvent, Block*>> pending_frees_;
  static constexpr size_t kRecentBlocks = 8;
  std::array<Block*, kRecentBlocks> recent_{};
  size_t recent_count_ = 0;
  double fraction_ = 1.0;
  size_t allowed_bytes_ = std::numeric_limits<size_t>::max();
};

void deleteBlock(void* ptr);

class MydevCachingAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t size) override {
    const c10::DeviceIndex device = currentDevice();
    const c10::Device where(c10::DeviceType::PrivateUse1, device);
    if (size == 0) {
      return {nullptr, nullptr, &deleteBlock, where};
    }
    Block* block = cache(device).allocate(size, getCurrentMydevStream(device));
    return {block->ptr, block->ptr, &deleteBlock, where};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &deleteBlock; }

  // PyTorch copies a copy-on-write storage with this when a write makes it
  // materialize, then writes the copy on the current stream; the copy must
  // follow that stream's pending writes to the source (mydevMemcpy would run
  // it on the default stream, ahead of them) and be complete on return, as
  // CUDA's cudaMemcpy is.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count == 0) {
      return;
    }
    int device = 0;
    MYDEV_CHECK(mydevPointerGetDevice(&device, dest));
    const MydevStream stream = getCurrentMydevStream(static_cast<c10::DeviceIndex>(device));
    MYDEV_CHECK(mydevMemcpyAsync(dest, src, count, mydevMemcpyDeviceToDevice, stream.handle()));
    stream.synchronize();
  }

  bool initialized() override { return true; }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (c10::DeviceIndex device = 0; device < deviceCount(); ++device) {
      cache(device).emptyCache();
    }
    releaseIdleKernelWorkspaces();
  }

  void recordStream(const c10::DataPtr& data_ptr, c10::Stream stream) override {
    // Memory this allocator does not own (a DLPack import, from_blob) is the
    // owner's to keep alive, as CUDA's allocator leaves it.
    if (data_ptr.get() == nullptr || data_ptr.get_deleter() != &deleteBlock) {
      return;
    }
    void* ptr = data_ptr.get_context();
    cache(deviceOfPointer(ptr, "recordStream")).recordStream(ptr, MydevStream(stream));
  }

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    return cache(resolveDevice(device)).stats();
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    cache(resolveDevice(device)).resetAccumulatedStats();
  }

  void resetPeakStats(c10::DeviceIndex device) override { cache(resolveDevice(device)).resetPeakStats(); }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    ScopedDevice on_device(resolveDevice(device));
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    MYDEV_CHECK(mydevMemGetInfo(&free_bytes, &total_bytes));
    return {free_bytes, total_bytes};
  }

  void free(void* ptr) {
    if (ptr == nullptr) {
      return;
    }
    cache(deviceOfPointer(ptr, "mydev allocator")).free(ptr);
  }

  DeviceCache& cache(c10::DeviceIndex device) {
    // Every allocation and free asks; std::call_once alone costs four
    // thread-local accesses, so the flag is read first.
    if (!caches_ready_.load(std::memory_order_acquire)) {
      std::call_once(caches_once_, [this] {
        for (c10::DeviceIndex i = 0; i < deviceCount(); ++i) {
          caches_.push_back(std::make_unique<DeviceCache>(i));
        }
        caches_ready_.store(true, std::memory_order_release);
      });
    }
    checkDeviceIndex(device);
    return *caches_[static_cast<size_t>(device)];
  }

 private:
  // Each device keeps its own blocks under its own lock; the runtime tells
  // which device a pointer belongs to without taking one.
  static c10::DeviceIndex deviceOfPointer(void* ptr, const char* caller) {
    int device = -1;
    checkPointer(mydevPointerGetDevice(&device, ptr) == mydevSuccess, ptr, caller);
    return static_cast<c10::DeviceIndex>(device);
  }

  std::once_flag caches_once_;
  std::atomic<bool> caches_ready_{false};
  std::vector<std::unique_ptr<DeviceCache>> caches_;
};

MydevCachingAllocator g_allocator;

void deleteBlock(void* ptr) {
  if (inForkedChild()) {
    return;  // the parent owns the memory; the child must not touch the allocator state
  }
  try {
    g_allocator.free(ptr);
  } catch (const std::exception& e) {
    TORCH_WARN("mydev: failed to free device memory: ", e.what());
  }
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

}  // namespace

c10::DeviceAllocator* cachingAllocator() { return &g_allocator; }

void setMemoryFraction(double fraction, c10::DeviceIndex device) {
  TORCH_CHECK(fraction >= 0.0 && fraction <= 1.0, "Invalid fraction value: ", fraction, ". Allowed range: 0~1");
  g_allocator.cache(resolveDevice(device)).setMemoryFraction(fraction);
}

double memoryFraction(c10::DeviceIndex device) { return g_allocator.cache(resolveDevice(device)).memoryFraction(); }

void rawDelete(void* ptr) { g_allocator.free(ptr); }

MemorySnapshot memorySnapshot() {
  MemorySnapshot snapshot;
  for (c10::DeviceIndex device = 0; device < deviceCount(); ++device) {
    auto [segments, trace] = g_allocator.cache(device).snapshot();
    std::move(segments.begin(), segments.end(), std::back_inserter(snapshot.segments));
    snapshot.device_traces.push_back(std::move(trace));
  }
  return snapshot;
}

}  // namespace torch_mydev
