// A stream: an ordered queue of tasks run by the stream's own worker thread.
#pragma once

#include <mydev/runtime.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>

namespace mydev {

// Kernel names are kept in the stream's ring, beside the tasks: a launch
// allocates nothing for its name. Longer names are cut (they only label error
// messages).
constexpr size_t kMaxKernelName = 63;

// A task as a slot of a stream's launch queue holds it: one cache line (the
// slot's first), which the host writes and the worker reads on every launch.
// A task owns nothing by itself: what it holds is freed by its release
// function, which the stream calls once the task has run or was dropped.
struct Task {
  // A user kernel, run with the kernel context set, or the runtime's own work
  // (copies, event markers, waits on other streams), made by runtime_work.
  // NULL for a host task, whose args are its HostTaskState.
  mydevKernelFn fn = nullptr;
  void* args = nullptr;
  mydevReleaseFn release = nullptr;
  // Arguments the runtime holds for a kernel: the end of their span in the
  // stream's argument ring (0: none there), or a heap block to free.
  uint64_t args_end = 0;
  void* heap_args = nullptr;
  // Set when the launch was recorded for a profiler (activity.cpp).
  uint64_t correlation_id = 0;
  uint64_t bytes = 0;       // copies and memsets
  bool is_runtime_work = false;
  uint8_t activity = 0;     // a mydevActivityKind; 0: not recorded
  uint8_t copy_kind = 0;    // a mydevMemcpyKind
  uint8_t fault_kind = 0;   // a mydevFaultKind injected into this launch; 0: none
  uint32_t fault_id = 0;
};
static_assert(sizeof(Task) <= 64, "a task fills one cache line of the launch queue");

// Runtime work as a task. The callable lives on the heap, so that a task
// stays one line whatever it runs.
template <typename Work>
Task runtime_work(Work work) {
  Task task;
  task.fn = [](void* args) { (*static_cast<Work*>(args))(); };
  task.args = new Work(std::move(work));
  task.release = [](void* args) { delete static_cast<Work*>(args); };
  task.is_runtime_work = true;
  return task;
}

// A host task's slot (host_task.cpp): whether its agent has ended it,
// guarded by the stream's sleep lock.
struct HostTaskState {
  bool ended = false;
};

constexpr uint32_t kStreamMagic = 0x5354524d;  // "STRM"

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A hint to fetch the line at `address` for writing. On x86 the instruction
// is written out (PREFETCHW, a no-op on processors without it), since
// __builtin_prefetch emits a read prefetch there unless the compiler targets
// PRFCHW.
inline void prefetch_for_write(const void* address) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(address)));
#else
  __builtin_prefetch(address, 1);
#endif
}

}  // namespace mydev

// Tasks are numbered from 1 in submission order; `submitted` and `completed`
// count them, so "task n is done" is completed() >= n.
//
// The queue is a ring of kCapacity slots that host threads fill and the
// worker only reads: the host writes task n into slot n % kCapacity and
// publishes it in the slot; the worker runs it and stores completed = n. Host
// threads release finished tasks (their release functions, their runtime
// closures) from the slots themselves, in batches, and only then reuse a slot.
// So the host and the worker, on different cores, share no lock, and per
// launch only the slot's lines and the kernel's argument bytes move between
// them (the worker's completion counter is read once per batch).
struct mydevStream : std::enable_shared_from_this<mydevStream> {
  static constexpr uint64_t kCapacity = 1024;

  mydevStream(int device, int priority, bool is_default);
  ~mydevStream();
  mydevStream(const mydevStream&) = delete;
  mydevStream& operator=(const mydevStream&) = delete;

  // Queues a task and returns its sequence number. `name` labels a kernel's
  // errors (NULL for runtime work). A full ring blocks the caller until the
  // worker frees a slot, as a full launch queue does on CUDA. If it throws,
  // the task has been released.
  uint64_t submit(mydev::Task task, const char* name = nullptr);
  // Queues a kernel whose arguments construct(context, args) builds in
  // args_size bytes of the stream's argument ring (or of the heap when the
  // ring is full). Returns 0 and queues nothing if construct fails; its
  // exceptions propagate, with nothing queued.
  // `tags` carries what the launch's task records besides its kernel
  // (correlation, activity, injected fault).
  uint64_t submit_kernel(const char* name, mydevKernelFn fn, size_t args_size, mydevArgsConstructFn construct,
                         void* context, mydevReleaseFn release, const mydev::Task& tags);
  // Queues a host task (fn NULL, args its HostTaskState) if nothing is
  // pending, without waking the worker: its agent may end it before the
  // worker gets there. Returns its sequence number, or 0 and queues nothing.
  uint64_t begin_host_task(mydev::Task task);
  // The agent's end of host task `seq`. If the worker sleeps, the task
  // completes here and wakes the stream's waiters; the worker passes it when
  // the next launch wakes it. `state` may be freed once this returns.
  void end_host_task(uint64_t seq, mydev::HostTaskState* state);
  uint64_t submitted() const { return submitted_.load(std::memory_order_acquire); }
  bool is_complete(uint64_t seq) const { return completed_.load(std::memory_order_acquire) >= seq; }
  // Blocks until task `seq` (and so every earlier one) has run, then
  // releases what has finished. `spin`: poll briefly before sleeping (a
  // short task then costs no futex round trip); without it the thread sleeps
  // at once, leaving the core to the threads the task itself waits on.
  void wait(uint64_t seq, bool spin = true);
  // Blocks until task `seq` has run, releasing nothing: what a worker waiting
  // for another stream calls, since releasing takes the host side's lock,
  // which a host thread blocked on a full ring may hold.
  void wait_for_completion(uint64_t seq, bool spin = true);
  // Releases every task the worker has finished, on this thread: memory a
  // host thread allocated for a task is freed by a host thread, never by the
  // worker, so that the two threads do not contend for the allocator's locks.
  void release_retired();
  // Drains the queue and joins the worker; the stream accepts no more work.
  void stop();

  // A kernel failure, recorded for the task `seq` of the stream holding it.
  // A copy passed to another stream shares `reported` with the original, so
  // that whichever synchronization comes first reports it, and only that one;
  // `origin` is the id of the stream whose kernel failed.
  struct Failure {
    uint64_t seq = 0;
    uint64_t origin = 0;
    std::shared_ptr<std::atomic<bool>> reported;
    std::string message;
  };
  // The first kernel failure of this stream not yet reported; a later one is
  // dropped while it is pending. It replaces a copy passed from another
  // stream: its own failure is what the stream's work reports first.
  void record_failure(uint64_t seq, std::string message);
  // Hands out (and clears) the pending failure if it came from a task <= seq
  // and no copy of it was reported yet.
  bool take_failure(uint64_t seq, Failure* failure);
  // What `waiter` queues after waiting for this stream's tasks up to `seq`
  // consumes their results, so a failure among them that is still pending
  // becomes `waiter`'s too, as of its task `waiter_seq` (CUDA's errors are
  // sticky: a consumer on another stream or device cannot miss one). Not
  // when the failure came from `waiter` in the first place.
  void pass_failure_to(mydevStream& waiter, uint64_t seq, uint64_t waiter_seq);
  // Inside runtime work, on the worker: the sequence number of its task.
  uint64_t running_seq() const { return running_seq_; }

  std::atomic<uint32_t> magic{mydev::kStreamMagic};
  const uint64_t id;  // unique in the process, names the stream in activity records
  const int device;
  const int priority;
  const bool is_default;

 private:
  static constexpr size_t kCacheLine = 64;

  // Slots start on their own cache lines, so that neighbouring tasks do not
  // share one. `published` is the sequence number of the task the slot holds,
  // stored once the task is in place: the worker waits on the slot itself, so
  // a launch moves the slot's lines to the worker's core and no shared
  // counter. It has a line of its own because the worker spins on it while
  // the host writes the task (sharing one cost ~0.05 us per launch).
  struct alignas(kCacheLine) Slot {
    mydev::Task task;
    alignas(kCacheLine) std::atomic<uint64_t> published{0};
  };
  static_assert(sizeof(Slot) == 2 * kCacheLine, "a slot is its task's line and its published word's line");
  struct KernelName {
    char text[mydev::kMaxKernelName + 1];
  };
  // When and by which thread a recorded task was queued (activity.cpp).
  struct LaunchStamp {
    int64_t launch_ns;
    uint64_t thread;
  };

  // Argument bytes in flight at most; like the task ring, reused once the
  // tasks using them are released.
  static constexpr uint64_t kArgsBytes = 512 << 10;
  struct alignas(kCacheLine) ArgsLine {
    unsigned char bytes[kCacheLine];
  };
  // Kernel arguments that did not fit in the ring.
  struct HeapArgsDelete {
    void operator()(void* args) const { ::operator delete(args, std::align_val_t(kCacheLine)); }
  };
  // The ring's bytes at `position`, counted from the start as args_head_ is.
  unsigned char* args_at(uint64_t position) { return args_ring_[(position % kArgsBytes) / kCacheLine].bytes; }

  void run();
  // Takes the next sequence number, releasing finished tasks first as needed
  // (submit_mutex_ held).
  uint64_t next_seq_locked();
  // Puts task `seq` in its slot and hands it to the worker, waking it if
  // `wake` (submit_mutex_ held).
  void publish_locked(uint64_t seq, mydev::Task task, const char* name, bool wake = true);
  // Where `bytes` of kernel arguments fit in the ring, or nullptr when they do
  // not; `end` receives the end of their span (submit_mutex_ held).
  void* reserve_args_locked(size_t bytes, uint64_t* end);
  // Asks for the lines the next launch writes (its slot's task, the next
  // argument bytes) to be owned by this core already: the worker read them
  // last, and moving them here then overlaps with the caller's own work
  // instead of stalling the next launch (submit_mutex_ held).
  void prefetch_next_launch_locked(uint64_t next_seq);
  static constexpr uint64_t kPrefetchArgsLines = 10;
  // Waits until task `seq` is queued (polling first if `spin`); false once
  // the stream stops with none.
  bool wait_for_task(uint64_t seq, bool spin);
  // Sleeps until the agent of host task `seq` has ended it.
  void wait_for_host_task(uint64_t seq, const mydev::HostTaskState& state);
  // Marks every task up to `seq` done and wakes the threads waiting for one.
  void complete(uint64_t seq);
  void wake_waiters();
  void execute(const mydev::Task& task, const char* name, uint64_t seq);
  // Releases the tasks up to `seq`, which have completed (submit_mutex_ held).
  void release_until_locked(uint64_t seq);

  const std::unique_ptr<Slot[]> slots_{new Slot[kCapacity]};
  // Read by the worker only when a kernel fails, so kept apart from the slots.
  const std::unique_ptr<KernelName[]> names_{new KernelName[kCapacity]};
  // Written and read only for tasks recorded for a profiler.
  const std::unique_ptr<LaunchStamp[]> launch_stamps_{new LaunchStamp[kCapacity]};

  // Host side: serializes submitting and releasing threads.
  alignas(kCacheLine) std::mutex submit_mutex_;
  uint64_t released_ = 0;  // tasks whose slots are free again
  // Argument ring: bytes handed out and bytes released, counted from the
  // start; a span never wraps (the bytes before the end are skipped).
  // Untouched pages of it stay unallocated by the system.
  const std::unique_ptr<ArgsLine[]> args_ring_{new ArgsLine[kArgsBytes / kCacheLine]};
  uint64_t args_head_ = 0;
  uint64_t args_tail_ = 0;
  std::atomic<uint64_t> submitted_{0};

  alignas(kCacheLine) std::atomic<bool> stopping_{false};

  // The worker sleeps on work_cv_ only after spinning on an empty queue; a
  // submitter takes sleep_mutex_ only to wake it.
  alignas(kCacheLine) std::mutex sleep_mutex_;
  std::condition_variable work_cv_;
  // Set and cleared under sleep_mutex_.
  std::atomic<bool> worker_asleep_{false};

  alignas(kCacheLine) std::atomic<uint64_t> completed_{0};
  std::atomic<int> waiters_{0};
  std::mutex done_mutex_;
  std::condition_variable done_cv_;

  // Written and read by the worker only.
  uint64_t running_seq_ = 0;

  alignas(kCacheLine) std::mutex failure_mutex_;
  std::atomic<bool> has_failure_{false};
  Failure failure_;

  std::thread worker_;
};
