#include "stream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <mutex>
#include <system_error>

#include <pthread.h>

#include "internal.h"

namespace {

// Worker and waiters spin this long before sleeping: a launch right after the
// queue drained (the common case in a loop of small kernels) or a task that
// finishes quickly then costs no futex round trip.
constexpr std::chrono::microseconds kSpinTime{30};

template <typename Predicate>
bool spin_until(Predicate done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  do {
    if (done()) return true;
    mydev::cpu_relax();
  } while (std::chrono::steady_clock::now() < deadline);
  return done();
}

// A task that ran this long is followed by a sleep, not a spin (run()).
constexpr std::chrono::microseconds kLongTask{10 * kSpinTime};

// mydevSetHostWaitCallbacks: read as a pair, under a lock taken only to set or read them.
struct HostWaitCallbacks {
  mydevHostWaitCallback before = nullptr;
  mydevHostWaitCallback after = nullptr;
};
std::mutex g_host_wait_mutex;
HostWaitCallbacks g_host_wait_callbacks;

HostWaitCallbacks host_wait_callbacks() {
  std::lock_guard<std::mutex> lock(g_host_wait_mutex);
  return g_host_wait_callbacks;
}

// Finished tasks a submitting thread leaves unreleased before it releases
// them: it then reads the worker's completion counter once per batch rather
// than once per launch.
constexpr uint64_t kReleaseBatch = 64;

constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -1;

}  // namespace

namespace {
std::atomic<uint64_t> g_next_stream_id{1};
}  // namespace

mydevStream::mydevStream(int device, int priority, bool is_default)
    : id(g_next_stream_id.fetch_add(1, std::memory_order_relaxed)), device(device), priority(priority),
      is_default(is_default) {
  worker_ = std::thread(&mydevStream::run, this);
}

mydevStream::~mydevStream() {
  if (worker_.joinable()) stop();
  // Tasks queued after stop() never ran; what they hold is freed all the same.
  std::lock_guard<std::mutex> lock(submit_mutex_);
  release_until_locked(submitted_.load(std::memory_order_acquire));
}

uint64_t mydevStream::submit(mydev::Task task, const char* name) {
  std::lock_guard<std::mutex> lock(submit_mutex_);
  uint64_t seq;
  try {
    seq = next_seq_locked();
  } catch (...) {
    if (task.release != nullptr) task.release(task.args);
    throw;
  }
  publish_locked(seq, std::move(task), name);
  return seq;
}

uint64_t mydevStream::submit_kernel(const char* name, mydevKernelFn fn, size_t args_size,
                                    mydevArgsConstructFn construct, void* context, mydevReleaseFn release,
                                    const mydev::Task& tags) {
  std::lock_guard<std::mutex> lock(submit_mutex_);
  const uint64_t seq = next_seq_locked();
  const size_t bytes = std::max<size_t>(kCacheLine, (args_size + kCacheLine - 1) / kCacheLine * kCacheLine);
  mydev::Task task = tags;
  task.fn = fn;
  task.release = release;
  task.args = reserve_args_locked(bytes, &task.args_end);
  if (task.args == nullptr) {
    // Finished tasks not released yet may hold the space.
    release_until_locked(completed_.load(std::memory_order_acquire));
    task.args = reserve_args_locked(bytes, &task.args_end);
  }
  // Freed here if construct fails or throws; the task owns it once queued.
  std::unique_ptr<void, HeapArgsDelete> heap_args;
  if (task.args == nullptr) {
    heap_args.reset(::operator new(bytes, std::align_val_t(kCacheLine)));
    task.args = heap_args.get();
  }
  if (construct(context, task.args) != 0) return 0;
  task.heap_args = heap_args.release();
  if (task.args_end != 0) args_head_ = task.args_end;
  publish_locked(seq, std::move(task), name);
  prefetch_next_launch_locked(seq + 1);
  return seq;
}

void mydevStream::prefetch_next_launch_locked(uint64_t next_seq) {
  mydev::prefetch_for_write(&slots_[next_seq % kCapacity].task);
  for (uint64_t line = 0; line < kPrefetchArgsLines; ++line) {
    mydev::prefetch_for_write(args_at(args_head_ + line * kCacheLine));
  }
}

void* mydevStream::reserve_args_locked(size_t bytes, uint64_t* end) {
  if (bytes > kArgsBytes) return nullptr;
  uint64_t start = args_head_;
  const uint64_t offset = start % kArgsBytes;
  if (offset + bytes > kArgsBytes) start += kArgsBytes - offset;
  if (start + bytes - args_tail_ > kArgsBytes) return nullptr;
  *end = start + bytes;
  return args_at(start);
}

uint64_t mydevStream::next_seq_locked() {
  const uint64_t seq = submitted_.load(std::memory_order_relaxed) + 1;
  // Finished tasks are released a batch at a time, and at the latest when
  // their slot comes round again.
  if (seq - released_ > kReleaseBatch) {
    if (seq > kCapacity) wait_for_completion(seq - kCapacity);
    release_until_locked(completed_.load(std::memory_order_acquire));
  }
  return seq;
}

void mydevStream::publish_locked(uint64_t seq, mydev::Task task, const char* name, bool wake) {
  const uint64_t index = seq % kCapacity;
  if (name != nullptr) {
    std::strncpy(names_[index].text, name, mydev::kMaxKernelName);
    names_[index].text[mydev::kMaxKernelName] = '\0';
  }
  if (task.activity != 0) launch_stamps_[index] = {mydev::activity_clock_ns(), mydev::activity_thread_id()};
  Slot& slot = slots_[index];
  slot.task = std::move(task);
  submitted_.store(seq, std::memory_order_release);
  // seq_cst here and on worker_asleep_ (wait_for_task): either the worker
  // sees this task before it sleeps, or this thread sees it asleep.
  slot.published.store(seq, std::memory_order_seq_cst);
  if (wake && worker_asleep_.load(std::memory_order_seq_cst)) {
    std::lock_guard<std::mutex> sleeping(sleep_mutex_);
    work_cv_.notify_one();
  }
}

void mydevStream::release_until_locked(uint64_t seq) {
  for (; released_ < seq; ++released_) {
    mydev::Task& done = slots_[(released_ + 1) % kCapacity].task;
    if (done.release != nullptr) done.release(done.args);
    if (done.heap_args != nullptr) HeapArgsDelete()(done.heap_args);
    if (done.args_end != 0) args_tail_ = done.args_end;
    done = mydev::Task();
  }
}

void mydevStream::release_retired() {
  std::lock_guard<std::mutex> lock(submit_mutex_);
  release_until_locked(completed_.load(std::memory_order_acquire));
}

uint64_t mydevStream::begin_host_task(mydev::Task task) {
  std::lock_guard<std::mutex> lock(submit_mutex_);
  if (!is_complete(submitted_.load(std::memory_order_relaxed))) return 0;
  const uint64_t seq = next_seq_locked();
  publish_locked(seq, std::move(task), nullptr, /*wake=*/false);
  return seq;
}

void mydevStream::end_host_task(uint64_t seq, mydev::HostTaskState* state) {
  bool ended_for_worker = false;
  bool work_queued_behind = false;
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    state->ended = true;
    // Everything before the task was done when it began, so a sleeping worker
    // runs nothing: it sleeps at this task, or at an earlier one that ended
    // the same way, and this thread completes the task for it. The completion
    // is stored under the lock, so that the worker, woken by a later launch,
    // cannot miss it and fall asleep again with work queued.
    if (worker_asleep_.load(std::memory_order_relaxed)) {
      completed_.store(seq, std::memory_order_seq_cst);
      ended_for_worker = true;
      // The slot, not submitted_: its seq_cst store pairs with this load as
      // it does with worker_asleep_ in publish_locked.
      work_queued_behind = slots_[(seq + 1) % kCapacity].published.load(std::memory_order_seq_cst) == seq + 1;
    }
  }
  if (work_queued_behind) work_cv_.notify_one();
  if (ended_for_worker) wake_waiters();
}

void mydevStream::wait_for_host_task(uint64_t seq, const mydev::HostTaskState& state) {
  std::unique_lock<std::mutex> lock(sleep_mutex_);
  if (state.ended) return;
  worker_asleep_.store(true, std::memory_order_seq_cst);
  // Not `state`: ending the task here may free it (end_host_task).
  work_cv_.wait(lock, [&] { return is_complete(seq); });
  worker_asleep_.store(false, std::memory_order_relaxed);
}

void mydevStream::complete(uint64_t seq) {
  completed_.store(seq, std::memory_order_seq_cst);
  wake_waiters();
}

void mydevStream::wake_waiters() {
  // seq_cst on both sides (waiters_ here, completed_ in wait_for_completion)
  // guarantees that either a waiter is seen and notified, or it sees the
  // completion.
  if (waiters_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(done_mutex_);
    done_cv_.notify_all();
  }
}

void mydevStream::wait_for_completion(uint64_t seq, bool spin) {
  if (spin ? spin_until([&] { return is_complete(seq); }) : is_complete(seq)) return;
  // One pair for the whole wait, whatever another thread sets meanwhile.
  const HostWaitCallbacks callbacks = host_wait_callbacks();
  if (callbacks.before != nullptr) callbacks.before();
  // The other half of wake_waiters' handshake.
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock<std::mutex> lock(done_mutex_);
    done_cv_.wait(lock, [&] { return completed_.load(std::memory_order_seq_cst) >= seq; });
  }
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
  if (callbacks.after != nullptr) callbacks.after();
}

void mydevStream::wait(uint64_t seq, bool spin) {
  wait_for_completion(seq, spin);
  release_retired();
}

void mydevStream::stop() {
  wait(submitted());
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stopping_.store(true, std::memory_order_seq_cst);
  }
  work_cv_.notify_one();
  worker_.join();
  release_retired();
  magic.store(0);
}

bool mydevStream::wait_for_task(uint64_t seq, bool spin) {
  const Slot& slot = slots_[seq % kCapacity];
  // A host task queued without waking this worker may also be ended (and so
  // completed) while it sleeps.
  const auto has_work = [&] {
    return slot.published.load(std::memory_order_seq_cst) == seq || stopping_.load(std::memory_order_seq_cst) ||
           is_complete(seq);
  };
  if (!(spin ? spin_until(has_work) : has_work())) {
    std::unique_lock<std::mutex> lock(sleep_mutex_);
    worker_asleep_.store(true, std::memory_order_seq_cst);
    work_cv_.wait(lock, has_work);
    worker_asleep_.store(false, std::memory_order_relaxed);
  }
  // stop() drains the queue first, so a stopping stream has nothing left.
  return slot.published.load(std::memory_order_acquire) == seq || is_complete(seq);
}

void mydevStream::run() {
  // Named for debuggers and /proc, as a driver's threads are; unnamed, it
  // would carry the name of whichever thread first used the stream.
  char name[16];
  std::snprintf(name, sizeof(name), "mydev%d s%llu", device, static_cast<unsigned long long>(id));
  pthread_setname_np(pthread_self(), name);
  bool spin = true;
  for (uint64_t seq = 1; wait_for_task(seq, spin); ++seq) {
    // A host task its agent ended while this worker slept: its slot may be
    // released already.
    if (is_complete(seq)) continue;
    const uint64_t index = seq % kCapacity;
    const mydev::Task& task = slots_[index].task;
    const bool host_task = task.fn == nullptr;
    const auto start = std::chrono::steady_clock::now();
    if (host_task) {
      wait_for_host_task(seq, *static_cast<const mydev::HostTaskState*>(task.args));
    } else {
      execute(task, names_[index].text, seq);
    }
    // After a long task (a collective waiting on its peers, a large kernel)
    // the next launch is rarely a spin away: polling for it would take a core
    // from other threads (another rank's, on a shared host) for nothing.
    spin = std::chrono::steady_clock::now() - start < kLongTask;
    // A host task's agent may have completed it, and later ones, already:
    // the completion must not go back.
    if (!host_task || !is_complete(seq)) complete(seq);
  }
}

void mydevStream::execute(const mydev::Task& task, const char* name, uint64_t seq) {
  if (task.fault_kind == mydevFaultKernelFailure) {
    record_failure(seq, std::string("kernel '") + name + "' failed on mydev:" + std::to_string(device) +
                            ": injected fault (mydevInjectFault, MYDEV_INJECT_FAULT)");
    return;
  }
  if (task.fault_kind == mydevFaultKernelHang) mydev::hang_until_removed(task.fault_id);
  const int64_t start_ns = task.activity != 0 ? mydev::activity_clock_ns() : 0;
  if (task.is_runtime_work) {
    running_seq_ = seq;
    task.fn(task.args);
  } else {
    std::string failure;
    if (!mydev::run_kernel(device, name, task.fn, task.args, &failure)) {
      record_failure(seq,
                     std::string("kernel '") + name + "' failed on mydev:" + std::to_string(device) + ": " + failure);
    }
  }
  if (task.activity != 0) {
    const LaunchStamp& launched = launch_stamps_[seq % kCapacity];
    mydev::record_activity(task, name, device, id, start_ns, mydev::activity_clock_ns(), launched.launch_ns,
                           launched.thread);
  }
}

void mydevStream::record_failure(uint64_t seq, std::string message) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (has_failure_.load(std::memory_order_relaxed) && failure_.origin == id) return;
  failure_ = Failure{seq, id, std::make_shared<std::atomic<bool>>(false), std::move(message)};
  has_failure_.store(true, std::memory_order_release);
}

bool mydevStream::take_failure(uint64_t seq, Failure* failure) {
  if (!has_failure_.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (!has_failure_.load(std::memory_order_relaxed) || failure_.seq > seq) return false;
  *failure = std::move(failure_);
  failure_ = Failure{};
  has_failure_.store(false, std::memory_order_release);
  return !failure->reported->exchange(true);
}

void mydevStream::pass_failure_to(mydevStream& waiter, uint64_t seq, uint64_t waiter_seq) {
  if (!has_failure_.load(std::memory_order_acquire)) return;
  Failure passed;
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!has_failure_.load(std::memory_order_relaxed) || failure_.seq > seq || failure_.origin == waiter.id) return;
    passed = failure_;
  }
  passed.seq = waiter_seq;
  std::lock_guard<std::mutex> lock(waiter.failure_mutex_);
  // What the waiter holds stays, unless it is a copy reported elsewhere since.
  const bool holds_one = waiter.has_failure_.load(std::memory_order_relaxed) &&
                         (waiter.failure_.origin == waiter.id || !waiter.failure_.reported->load());
  if (holds_one || passed.reported->load()) return;
  waiter.failure_ = std::move(passed);
  waiter.has_failure_.store(true, std::memory_order_release);
}

namespace mydev {

mydevError_t resolve_stream(const char* api, mydevStream_t handle, mydevStream** stream) {
  if (handle == nullptr) {
    const int index = current_device();
    if (mydevError_t error = ensure_device_ready(api, index)) return error;
    *stream = device(index).default_stream.get();
    return mydevSuccess;
  }
  if (handle->magic.load(std::memory_order_relaxed) != kStreamMagic) {
    return set_error(mydevErrorInvalidResourceHandle, "%s: %p is not a live mydev stream", api,
                     static_cast<void*>(handle));
  }
  *stream = handle;
  return mydevSuccess;
}

mydevError_t take_stream_error(mydevStream& stream, uint64_t seq) {
  mydevStream::Failure failure;
  if (!stream.take_failure(seq, &failure)) return mydevSuccess;
  return set_error(mydevErrorLaunchFailure, "%s", failure.message.c_str());
}

void register_stream(const std::shared_ptr<mydevStream>& stream) {
  Device& owner = device(stream->device);
  std::lock_guard<std::mutex> lock(owner.streams_mutex);
  owner.streams.push_back(stream);
}

}  // namespace mydev

using namespace mydev;

extern "C" {

mydevError_t mydevDeviceGetStreamPriorityRange(int* least_priority, int* greatest_priority) {
  if (mydevError_t error = enter("mydevDeviceGetStreamPriorityRange")) return error;
  if (least_priority != nullptr) *least_priority = kLeastPriority;
  if (greatest_priority != nullptr) *greatest_priority = kGreatestPriority;
  return mydevSuccess;
}

mydevError_t mydevStreamCreate(mydevStream_t* stream) { return mydevStreamCreateWithPriority(stream, kLeastPriority); }

mydevError_t mydevStreamCreateWithPriority(mydevStream_t* stream, int priority) {
  const char* api = "mydevStreamCreateWithPriority";
  if (mydevError_t error = enter(api)) return error;
  if (stream == nullptr) return set_error(mydevErrorInvalidValue, "%s: stream is NULL", api);
  const int index = current_device();
  if (mydevError_t error = ensure_device_ready(api, index)) return error;
  // Like CUDA, out-of-range priorities are clamped rather than rejected.
  priority = std::min(kLeastPriority, std::max(kGreatestPriority, priority));
  std::shared_ptr<mydevStream> created;
  try {
    created = std::make_shared<mydevStream>(index, priority, false);
  } catch (const std::system_error& e) {
    return set_error(mydevErrorMemoryAllocation, "%s: cannot start a stream worker on mydev:%d: %s", api, index,
                     e.what());
  }
  register_stream(created);
  *stream = created.get();
  return mydevSuccess;
}

mydevError_t mydevStreamDestroy(mydevStream_t handle) {
  const char* api = "mydevStreamDestroy";
  if (mydevError_t error = enter(api)) return error;
  if (handle == nullptr) return set_error(mydevErrorInvalidResourceHandle, "%s: stream is NULL", api);
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  if (stream->is_default) {
    return set_error(mydevErrorInvalidResourceHandle, "%s: the default stream of mydev:%d cannot be destroyed", api,
                     stream->device);
  }
  stream->stop();
  Device& owner = device(stream->device);
  std::lock_guard<std::mutex> lock(owner.streams_mutex);
  auto destroyed = std::stable_partition(owner.streams.begin(), owner.streams.end(),
                                         [&](const std::shared_ptr<mydevStream>& s) { return s.get() != stream; });
  std::move(destroyed, owner.streams.end(), std::back_inserter(owner.destroyed_streams));
  owner.streams.erase(destroyed, owner.streams.end());
  while (owner.destroyed_streams.size() > Device::kKeptDestroyedStreams) {
    owner.destroyed_streams.pop_front();
  }
  return mydevSuccess;
}

mydevError_t mydevDeviceGetDefaultStream(int index, mydevStream_t* stream) {
  const char* api = "mydevDeviceGetDefaultStream";
  if (mydevError_t error = enter(api)) return error;
  if (stream == nullptr) return set_error(mydevErrorInvalidValue, "%s: stream is NULL", api);
  if (mydevError_t error = check_device(api, index)) return error;
  if (mydevError_t error = ensure_device_ready(api, index)) return error;
  *stream = device(index).default_stream.get();
  return mydevSuccess;
}

mydevError_t mydevStreamGetDevice(mydevStream_t handle, int* device_index) {
  const char* api = "mydevStreamGetDevice";
  if (mydevError_t error = enter(api)) return error;
  if (device_index == nullptr) return set_error(mydevErrorInvalidValue, "%s: device is NULL", api);
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  *device_index = stream->device;
  return mydevSuccess;
}

mydevError_t mydevStreamGetId(mydevStream_t handle, uint64_t* id) {
  const char* api = "mydevStreamGetId";
  if (mydevError_t error = enter(api)) return error;
  if (id == nullptr) return set_error(mydevErrorInvalidValue, "%s: id is NULL", api);
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  *id = stream->id;
  return mydevSuccess;
}

mydevError_t mydevStreamGetPriority(mydevStream_t handle, int* priority) {
  const char* api = "mydevStreamGetPriority";
  if (mydevError_t error = enter(api)) return error;
  if (priority == nullptr) return set_error(mydevErrorInvalidValue, "%s: priority is NULL", api);
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  *priority = stream->priority;
  return mydevSuccess;
}

mydevError_t mydevStreamQuery(mydevStream_t handle) {
  const char* api = "mydevStreamQuery";
  if (mydevError_t error = enter(api)) return error;
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  const uint64_t seq = stream->submitted();
  // Completion first: a failure is recorded before its task completes, so
  // "complete" can never hide one.
  const bool complete = stream->is_complete(seq);
  if (mydevError_t error = take_stream_error(*stream, seq)) return error;
  if (complete) return mydevSuccess;
  return set_error(mydevErrorNotReady, "%s: work is still pending on a stream of mydev:%d", api, stream->device);
}

mydevError_t mydevSetHostWaitCallbacks(mydevHostWaitCallback before, mydevHostWaitCallback after) {
  std::lock_guard<std::mutex> lock(g_host_wait_mutex);
  g_host_wait_callbacks = HostWaitCallbacks{before, after};
  return mydevSuccess;
}

mydevError_t mydevGetHostWaitCallbacks(mydevHostWaitCallback* before, mydevHostWaitCallback* after) {
  if (before == nullptr || after == nullptr) {
    return set_error(mydevErrorInvalidValue, "mydevGetHostWaitCallbacks: before or after is NULL");
  }
  const HostWaitCallbacks callbacks = host_wait_callbacks();
  *before = callbacks.before;
  *after = callbacks.after;
  return mydevSuccess;
}

mydevError_t mydevStreamSynchronize(mydevStream_t handle) {
  const char* api = "mydevStreamSynchronize";
  if (mydevError_t error = enter(api)) return error;
  mydevStream* stream;
  if (mydevError_t error = resolve_stream(api, handle, &stream)) return error;
  const uint64_t seq = stream->submitted();
  stream->wait(seq);
  return take_stream_error(*stream, seq);
}

}  // extern "C"
