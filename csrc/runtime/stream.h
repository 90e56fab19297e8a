// A stream: an ordered queue of tasks run by the stream's own worker thread.
#pragma once

#include <mydev/runtime.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "spin_lock.h"

namespace mydev {

// Kernel names are kept in the task itself: a launch allocates nothing for
// its name. Longer names are cut (they only label error messages).
constexpr size_t kMaxKernelName = 63;

struct Task {
  // A user kernel (fn != NULL), run with the kernel context set ...
  mydevKernelFn fn = nullptr;
  void* args = nullptr;
  mydevReleaseFn release = nullptr;
  char name[kMaxKernelName + 1] = {};
  // ... or runtime work: copies, event markers, waits on other streams.
  std::function<void()> op;
};

constexpr uint32_t kStreamMagic = 0x5354524d;  // "STRM"

}  // namespace mydev

// Tasks are numbered from 1 in submission order; `submitted` and `completed`
// count them, so "task n is done" is completed() >= n.
struct mydevStream : std::enable_shared_from_this<mydevStream> {
  mydevStream(int device, int priority, bool is_default);
  ~mydevStream();
  mydevStream(const mydevStream&) = delete;
  mydevStream& operator=(const mydevStream&) = delete;

  // Queues a task and returns its sequence number.
  uint64_t submit(mydev::Task task);
  uint64_t submitted() const { return submitted_.load(std::memory_order_acquire); }
  bool is_complete(uint64_t seq) const { return completed_.load(std::memory_order_acquire) >= seq; }
  // Blocks until task `seq` (and so every earlier one) has run.
  void wait(uint64_t seq);
  // Destroys the tasks the worker ran since the last call (running their
  // release functions) on this thread: memory a host thread allocated for a
  // task is freed by a host thread, never by the worker, so that the two
  // threads do not contend for the allocator's locks on every launch.
  void release_retired();
  // Drains the queue and joins the worker; the stream accepts no more work.
  void stop();

  // The first kernel failure not yet reported; a later one is dropped while
  // it is pending.
  void record_failure(uint64_t seq, std::string message);
  // Hands out (and clears) the pending failure if it came from a task <= seq.
  bool take_failure(uint64_t seq, std::string* message);

  std::atomic<uint32_t> magic{mydev::kStreamMagic};
  const int device;
  const int priority;
  const bool is_default;

 private:
  void run();
  bool next_task(mydev::Task* task, uint64_t dequeued);
  void push_locked(mydev::Task task);
  void release_locked();  // with release_mutex_ held
  void execute(mydev::Task& task, uint64_t seq);

  // The host and the worker run on different cores and touch this object on
  // every launch: what each side writes sits on cache lines of its own, so
  // that a write does not evict what the other side is reading (the worker
  // polls submitted_ while the host fills the ring, for one).
  static constexpr size_t kCacheLine = 64;

  // Guards the ring, retired_ and their swap with releasing_.
  alignas(kCacheLine) mydev::SpinLock queue_lock_;
  // A ring of queued tasks (no allocation per launch once it has grown).
  std::vector<mydev::Task> ring_ = std::vector<mydev::Task>(64);
  size_t head_ = 0;
  size_t queued_ = 0;
  std::vector<mydev::Task> retired_;  // run by the worker, not yet released

  // The worker sleeps on work_cv_ only after spinning on an empty queue; a
  // submitter takes sleep_mutex_ only to wake it.
  alignas(kCacheLine) std::mutex sleep_mutex_;
  std::condition_variable work_cv_;
  std::atomic<bool> worker_asleep_{false};

  // Host threads release retired tasks one at a time; the two vectors trade
  // places, so that neither thread allocates per task in steady state.
  alignas(kCacheLine) std::mutex release_mutex_;
  std::vector<mydev::Task> releasing_;
  alignas(kCacheLine) std::atomic<uint64_t> submitted_{0};
  std::atomic<bool> stopping_{false};

  alignas(kCacheLine) std::atomic<uint64_t> completed_{0};
  std::atomic<int> waiters_{0};
  std::mutex done_mutex_;
  std::condition_variable done_cv_;

  alignas(kCacheLine) std::mutex failure_mutex_;
  std::atomic<bool> has_failure_{false};
  uint64_t failure_seq_ = 0;
  std::string failure_;

  std::thread worker_;
};
