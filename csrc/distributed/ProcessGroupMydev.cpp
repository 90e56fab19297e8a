// "mccl", mydev's c10d backend: PyTorch's collectives for mydev tensors, with
// NCCL's stream semantics, over gloo.
//
// Gloo is the transport (the wheel ships it inside libtorch, but not its
// headers): the Python creator builds a private ProcessGroupGloo on the store
// it is given, and this backend drives it through the c10d::Backend interface.
//
//   caller's thread: the operation's stream (per device, a high-priority
//     pool stream for collectives and receives, another for sends) waits for
//     an event on the current stream (the inputs' producers); every tensor is
//     marked as used on that stream (the caching allocator then keeps it
//     until the stream is done with it); the operation is launched as a
//     kernel there, gloo reading and writing device memory in place through
//     the kernel's CPU aliases of it (no copies); an event is recorded after
//     it; the Work is returned. Launches are serialized, so gloo sees the
//     collectives in the order they were issued, as its tags require.
//     A collective with nothing to wait for (its inputs ready, the stream
//     idle) is handed to gloo from this thread instead, as a host task of the
//     stream (runtime/include/mydev/host_task.h), which gloo's thread ends:
//     no stream worker wakes for it.
//   Work.wait(): the host waits for that event (the runtime wakes it), as a
//     blocking NCCL wait does; the caller's stream then needs no wait.
//   comm thread (one per backend): completes the future of an operation
//     whose future was taken, so that its callbacks (Python ones too) never
//     run on a stream worker, and ends profiler ranges.
#include "../aten/DeviceTensorRef.h"
#include "../aten/KernelLaunch.h"
#include "../core/Device.h"
#include "../core/Event.h"
#include "../core/Exception.h"
#include "../core/Stream.h"

#include <mydev/host_task.h>

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <c10/core/StreamGuard.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/csrc/utils/pybind.h>

#include <pybind11/chrono.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <pthread.h>

namespace py = pybind11;

namespace torch_mydev {

namespace {

using c10d::OpType;
using GlooCall = std::function<c10::intrusive_ptr<c10d::Work>(std::vector<at::Tensor>& host_inputs,
                                                              std::vector<at::Tensor>& host_outputs)>;

std::exception_ptr backendError(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

// An operation's Work. It ends with its kernel (which reports its end, then
// an event recorded after it passes), or on the host if its launch was
// refused or failed. The future is completed once it has been taken and the
// operation has ended, by whichever of the two comes second: a Work whose
// future nobody takes costs no completion.
class CollectiveWork final : public c10d::Work {
 public:
  CollectiveWork(int rank, OpType type, const char* title, std::vector<at::Tensor> inputs,
                 std::vector<at::Tensor> outputs, c10::Device device, MydevStream stream)
      : Work(rank, type, title),
        profiled_(recordFunctionEndCallback_ != nullptr),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        stream_(std::move(stream)),
        device_(device) {
    // The event is created here, before a kernel could end and hand the Work
    // to another thread; recordEnd records it again after the kernel.
    end_.record(stream_);
  }

  bool isCompleted() override { return ended() && end_.query(); }

  bool isSuccess() const override { return ended() && end_.query() && !error(); }

  std::exception_ptr exception() const override { return ended() ? error() : nullptr; }

  // The host waits for the collective (gloo's errors surface here, as the
  // blocking call's); the caller's stream then has nothing left to wait for.
  bool wait(std::chrono::milliseconds timeout) override {
    if (timeout != kNoTimeout) {
      std::unique_lock<std::mutex> lock(state_mutex_);
      if (!ended_cv_.wait_for(lock, timeout, [this] { return ended_; }) && !end_.query()) {
        C10_THROW_ERROR(DistBackendError, "mccl: a collective timed out after " + std::to_string(timeout.count()) +
                                              " ms");
      }
    }
    // The runtime wakes the host when the stream passes the event, so a
    // waiter costs no thread of mccl's.
    settle();
    if (const std::exception_ptr failure = error()) {
      std::rethrow_exception(failure);
    }
    return true;
  }

  void synchronize() override { wait(kNoTimeout); }

  std::vector<at::Tensor> result() override { return outputs_; }

  // Does not wait (DDP's comm hooks take it right after the launch).
  // A future taken before a device fault dropped the kernel completes (with
  // the fault) when the Work is settled: at wait(), the backend's next
  // operation, or its shutdown.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    bool ended_already = false;
    c10::intrusive_ptr<c10::ivalue::Future> future;
    {
      // Made on demand: most Works are only waited for.
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (!future_) {
        future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(),
                                                           std::vector<c10::Device>{device_});
      }
      future = future_;
      future_wanted_ = true;
      ended_already = ended_;
    }
    if (!ended_already && end_.query()) {
      settle();  // a kernel that passed without ending: dropped by a fault
    }
    completeFutureIfDue();
    return future;
  }

  // Recorded on the stream right after the operation's kernel.
  void recordEnd() { end_.record(stream_); }

  const MydevStream& stream() const { return stream_; }

  bool profiled() const { return profiled_; }

  // Work queued on `stream` from now on waits for this operation.
  void orderBefore(const MydevStream& stream) const { end_.block(stream); }

  // Non-blocking: whether the operation's kernel is done (or was dropped):
  // the backend may let go of the Work, once it has settled it.
  bool passed() const { return end_.query(); }

  // The operation ends with its kernel, or, if a device fault dropped the
  // kernel before it ran, with that fault, not with a wait that never ends.
  // Then a taken future's callbacks may run here: never under mccl's locks.
  void settle() {
    std::exception_ptr fault;
    try {
      end_.synchronize();
    } catch (...) {
      fault = std::current_exception();
    }
    bool missed = false;
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      missed = !ended_;
    }
    if (missed) {
      endedOnHost(fault ? fault : backendError("mccl: the collective's kernel did not run"));
    }
  }

  // The end of the operation's transfer: on its stream's worker (a kernel),
  // or on gloo's thread (a host task). Returns whether a host thread must take
  // over (hostStep): the future was
  // taken (its callbacks, Python's too, must not run on a stream worker), or
  // a profiler range is open (its end callback carries thread-local state
  // whose release may need the GIL).
  bool transferEnded(std::exception_ptr failure) {
    bool future_wanted = false;
    if (!markEnded(failure, &future_wanted)) {
      return false;  // its launch failed after queueing it (the host ended it then)
    }
    if (!profiled_) {
      Work::finish(failure);
    }
    return future_wanted || profiled_;
  }

  void hostStep() {
    if (profiled_) {
      Work::finish(error());  // ends the Work's profiler range
    }
    completeFutureIfDue();
  }

  // An operation refused or lost at its launch, or whose kernel did not run:
  // ended on a host thread, where the future, if taken, is completed at once.
  void endedOnHost(std::exception_ptr failure) {
    bool future_wanted = false;
    if (!markEnded(failure, &future_wanted)) {
      return;
    }
    Work::finish(failure);
    completeFutureIfDue();
  }

 private:
  // Records the end, once: false if the operation had ended already.
  bool markEnded(std::exception_ptr failure, bool* future_wanted) {
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (ended_) {
        return false;
      }
      error_ = std::move(failure);
      ended_ = true;
      *future_wanted = future_wanted_;
    }
    ended_cv_.notify_all();
    return true;
  }

  bool ended() const {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return ended_;
  }

  std::exception_ptr error() const {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return error_;
  }

  // With the operation's stream current, the future records its completion
  // event there. The future runs its callbacks here; one that raises cannot undo
  // the completion, so it is reported, not propagated.
  void completeFutureIfDue() {
    std::exception_ptr failure;
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (!ended_ || !future_wanted_ || future_completed_) {
        return;
      }
      future_completed_ = true;
      failure = error_;
    }
    c10::StreamGuard on_stream(stream_.unwrap());
    try {
      if (failure) {
        future_->setError(failure);
      } else {
        future_->markCompleted(c10::IValue(outputs_));
      }
    } catch (const std::exception& error) {
      if (future_->completed()) {
        TORCH_WARN("mccl: a callback on a collective's future raised: ", error.what());
      } else {
        future_->setError(std::current_exception());  // markCompleted refused the value itself
      }
    }
  }

  const bool profiled_;
  std::vector<at::Tensor> inputs_;  // held, like the outputs, as long as the Work
  std::vector<at::Tensor> outputs_;
  MydevStream stream_;
  const c10::Device device_;
  // A collective is latency-bound below ~1 MB: a waiter that polled would
  // take a core from the threads (gloo's, the peers') it waits on.
  MydevEvent end_{mydevEventBlockingSync};
  mutable std::mutex state_mutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // guarded by state_mutex_; set once
  std::condition_variable ended_cv_;
  bool ended_ = false;
  bool future_wanted_ = false;
  bool future_completed_ = false;
  std::exception_ptr error_;
};

// Runs queued tasks in order on one thread, named (as NCCL's threads are) so
// that a user can tell it in a debugger or /proc.
class CommThread {
 public:
  explicit CommThread(const char* name) : thread_([this] { run(); }) { pthread_setname_np(thread_.native_handle(), name); }

  ~CommThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    thread_.join();
  }

  bool runsHere() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Once stopping, a task is refused (left to the caller): the thread
  // runs what was queued before, then ends.
  bool post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) {
        return false;
      }
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
    return true;
  }

  // For a thread that cannot join itself (the last reference to its backend
  // was dropped by one of its own tasks): it ends on its own, and this object,
  // which it still uses, is left to it.
  static void stopFromWithin(std::unique_ptr<CommThread> self) {
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->stopping_ = true;
    }
    self->thread_.detach();
    self.release();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) {
          return;
        }
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      try {
        task();
      } catch (const std::exception& error) {
        TORCH_WARN("mccl: ", error.what());
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

c10::Device deviceOfCollective(const std::vector<at::Tensor>& tensors, const char* name) {
  TORCH_CHECK(!tensors.empty(), "mccl: ", name, " got no tensors");
  const c10::Device device = tensors.front().device();
  for (const at::Tensor& tensor : tensors) {
    TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1, "mccl: ", name,
                " expects mydev tensors, got a tensor on ", tensor.device(),
                " (CPU tensors go to the gloo backend: init_process_group(backend=\"cpu:gloo,mydev:mccl\"))");
    TORCH_CHECK(tensor.device() == device, "mccl: ", name, " expects all tensors on one device, got ", device, " and ",
                tensor.device());
    TORCH_CHECK(tensor.layout() == c10::kStrided, "mccl: ", name, " supports only dense tensors");
  }
  return device;
}

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> flat;
  for (const auto& list : lists) {
    flat.insert(flat.end(), list.begin(), list.end());
  }
  return flat;
}

std::vector<size_t> listSizes(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<size_t> sizes;
  for (const auto& list : lists) {
    sizes.push_back(list.size());
  }
  return sizes;
}

// Flat tensors back into lists of the given sizes.
std::vector<std::vector<at::Tensor>> regroup(const std::vector<at::Tensor>& flat, const std::vector<size_t>& sizes) {
  std::vector<std::vector<at::Tensor>> lists;
  size_t next = 0;
  for (const size_t size : sizes) {
    lists.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(next),
                       flat.begin() + static_cast<std::ptrdiff_t>(next + size));
    next += size;
  }
  return lists;
}

// PREMUL_SUM's factor as the kernel will read it: on the host. A device
// factor is copied on the caller's thread (a copy from inside the comm
// stream's own kernel would wait for that kernel).
c10d::ReduceOp withHostFactor(const c10d::ReduceOp& op) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) {
    return op;
  }
  const auto* factor = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(factor != nullptr, "mccl: PREMUL_SUM without a factor");
  if (!factor->tensor_factor.defined() || factor->tensor_factor.device().is_cpu()) {
    return op;
  }
  // Copied and changed, not constructed: the two-argument constructor of
  // torch 2.13 drops the supplement it is given.
  c10d::ReduceOp on_host = op;
  on_host.supplement_ = c10::make_intrusive<c10d::PreMulSumSupplement>(factor->tensor_factor.to(c10::kCPU));
  return on_host;
}

template <typename Options>
Options withHostFactor(Options options) {
  options.reduceOp = withHostFactor(options.reduceOp);
  return options;
}

// mccl's options: c10d's own, made copyable from Python, since split_group
// deep-copies the parent's options for the new group (torch 2.13 binds a
// __deepcopy__ only for NCCL's).
struct MydevOptions final : c10d::Backend::Options {
  explicit MydevOptions(std::chrono::milliseconds timeout) : Options("mccl", timeout) {}
};

class ProcessGroupMydev final : public c10d::Backend {
 public:
  ProcessGroupMydev(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size, std::chrono::milliseconds timeout)
      : Backend(rank, size), gloo_(std::move(gloo)), timeout_(timeout) {}

  ~ProcessGroupMydev() override { stopThreads(); }

  // destroy_process_group: later collectives are refused, the queued ones
  // finish (each bounded by the timeout), then mccl's threads end.
  void shutdown() override {
    stopThreads();
    gloo_->shutdown();
  }

  // As shutdown, but the queued operations that have not reached gloo fail at
  // once instead of waiting for peers that may be gone. Gloo of torch 2.13 has
  // no abort of its own: one already inside gloo still runs to its timeout.
  void abort() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!broken_) {
        broken_ = shutDownError();
      }
    }
    stopThreads();
    gloo_->abort();
  }

  const std::string getBackendName() const override { return "mccl"; }

  c10::intrusive_ptr<Backend::Options> getBackendOptions() override {
    return c10::make_intrusive<MydevOptions>(timeout_);
  }

  // split_group (and a DeviceMesh built with device_id=): gloo splits its own
  // group, and the new mccl backend drives the part; ranks outside it get none.
  bool supportsSplitting() const override { return true; }

  c10::intrusive_ptr<Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                    const c10::intrusive_ptr<Backend::Options>& opts) override {
    // A key space of its own: the group's CPU gloo splits on the same store.
    auto own_store = c10::make_intrusive<c10d::PrefixStore>("mccl", store);
    // Not gloo's own options, which its split would rewrite for the part (and
    // so for this group): gloo takes its defaults, then the timeout, which
    // bounds a collective handed to gloo directly as a kernel's wait does.
    const c10::intrusive_ptr<Backend::Options> options = opts ? opts : getBackendOptions();
    c10::intrusive_ptr<Backend> gloo_part = gloo_->split(own_store, ranks, options);
    if (!gloo_part) {
      return nullptr;
    }
    const std::chrono::milliseconds timeout = options->timeout;
    gloo_part->setTimeout(timeout);
    return c10::make_intrusive<ProcessGroupMydev>(gloo_part, gloo_part->getRank(), gloo_part->getSize(), timeout);
  }

  // The count of collectives issued, which TORCH_DISTRIBUTED_DEBUG=DETAIL's
  // wrapper compares across ranks (with shapes, dtypes and ops) to report a
  // mismatched collective before it reaches gloo.
  // Sends and receives are not counted: ranks need not make the same ones.
  void setSequenceNumberForGroup() override { sequence_number_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return sequence_number_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    return inPlace(OpType::BROADCAST, "mccl:broadcast", tensors, [this, opts](auto& host, auto&) {
      return gloo_->broadcast(host, opts);
    });
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    return inPlace(OpType::ALLREDUCE, "mccl:all_reduce", tensors, [this, opts = withHostFactor(opts)](auto& host, auto&) {
      return gloo_->allreduce(host, scaledForGloo(opts, host, /*in_place=*/true));
    });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    return inPlace(OpType::ALLREDUCE_COALESCED, "mccl:all_reduce_coalesced", tensors, [this, opts = withHostFactor(opts)](auto& host, auto&) {
      return gloo_->allreduce_coalesced(host, scaledForGloo(opts, host, /*in_place=*/true));
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    return inPlace(OpType::REDUCE, "mccl:reduce", tensors, [this, opts = withHostFactor(opts)](auto& host, auto&) {
      return gloo_->reduce(host, scaledForGloo(opts, host, /*in_place=*/true));
    });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override {
    return collective(OpType::ALLGATHER, "mccl:all_gather", inputs, flatten(outputs),
                      [this, opts, sizes = listSizes(outputs)](auto& host_in, auto& host_out) {
                        // The lists hold host_out's tensors: gloo fills those.
                        auto lists = regroup(host_out, sizes);
                        return gloo_->allgather(lists, host_in, opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override {
    return collective(OpType::_ALLGATHER_BASE, "mccl:all_gather_into_tensor", {input}, {output},
                      [this, opts](auto& host_in, auto& host_out) {
                        return gloo_->_allgather_base(host_out[0], host_in[0], opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override {
    return collective(OpType::COALESCED, "mccl:all_gather_into_tensor_coalesced", inputs, outputs,
                      [this, opts](auto& host_in, auto& host_out) {
                        return gloo_->allgather_into_tensor_coalesced(host_out, host_in, opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override {
    return collective(OpType::GATHER, "mccl:gather", inputs, flatten(outputs),
                      [this, opts, sizes = listSizes(outputs)](auto& host_in, auto& host_out) {
                        auto lists = regroup(host_out, sizes);
                        return gloo_->gather(lists, host_in, opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    return collective(OpType::SCATTER, "mccl:scatter", flatten(inputs), outputs,
                      [this, opts, sizes = listSizes(inputs)](auto& host_in, auto& host_out) {
                        auto lists = regroup(host_in, sizes);
                        return gloo_->scatter(host_out, lists, opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    return collective(OpType::REDUCE_SCATTER, "mccl:reduce_scatter", flatten(inputs), outputs,
                      [this, opts = withHostFactor(opts), sizes = listSizes(inputs)](auto& host_in, auto& host_out) {
                        const c10d::ReduceScatterOptions gloo_opts = scaledForGloo(opts, host_in, /*in_place=*/false);
                        auto lists = regroup(host_in, sizes);
                        return gloo_->reduce_scatter(host_out, lists, gloo_opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override {
    return collective(OpType::_REDUCE_SCATTER_BASE, "mccl:reduce_scatter_tensor", {input}, {output},
                      [this, opts = withHostFactor(opts)](auto& host_in, auto& host_out) {
                        const c10d::ReduceScatterOptions gloo_opts = scaledForGloo(opts, host_in, /*in_place=*/false);
                        return gloo_->_reduce_scatter_base(host_out[0], host_in[0], gloo_opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override {
    return collective(OpType::COALESCED, "mccl:reduce_scatter_tensor_coalesced", inputs, outputs,
                      [this, opts = withHostFactor(opts)](auto& host_in, auto& host_out) {
                        const c10d::ReduceScatterOptions gloo_opts = scaledForGloo(opts, host_in, /*in_place=*/false);
                        return gloo_->reduce_scatter_tensor_coalesced(host_out, host_in, gloo_opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override {
    return collective(OpType::ALLTOALL_BASE, "mccl:all_to_all_single", {input}, {output},
                      [this, opts, output_splits, input_splits](auto& host_in, auto& host_out) mutable {
                        return gloo_->alltoall_base(host_out[0], host_in[0], output_splits, input_splits, opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override {
    return collective(OpType::ALLTOALL, "mccl:all_to_all", inputs, outputs,
                      [this, opts](auto& host_in, auto& host_out) { return gloo_->alltoall(host_out, host_in, opts); });
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override {
    return collective(OpType::SEND, "mccl:send", tensors, {}, [this, dst_rank, tag](auto& host_in, auto&) {
      return gloo_->send(host_in, dst_rank, tag);
    });
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override {
    return collective(OpType::RECV, "mccl:recv", {}, tensors, [this, src_rank, tag](auto&, auto& host_out) {
      return gloo_->recv(host_out, src_rank, tag);
    });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
    // A kernel on the comm stream, so ordered after every collective queued
    // before it, like NCCL's barrier; it has no tensors to wait for. Its
    // device, as NCCL's guess: the one given, else the last one used.
    c10::DeviceIndex device = last_device_.load();
    if (!opts.device_ids.empty()) {
      device = static_cast<c10::DeviceIndex>(opts.device_ids.front());
    } else if (opts.device && opts.device->type() == c10::DeviceType::PrivateUse1 && opts.device->has_index()) {
      device = opts.device->index();
    } else if (device < 0) {
      device = currentDevice();
    }
    return collective(OpType::BARRIER, "mccl:barrier", {}, {}, [this, opts](auto&, auto&) {
      return gloo_->barrier(opts);
    }, /*outputs_are_inputs=*/false, device);
  }

 private:
  c10::intrusive_ptr<c10d::Work> inPlace(OpType type, const char* title, std::vector<at::Tensor>& tensors,
                                         GlooCall call) {
    // The call gets the tensors as its inputs and as its outputs.
    return collective(type, title, tensors, tensors, std::move(call), /*outputs_are_inputs=*/true);
  }

  // PREMUL_SUM (as NCCL has it): each rank's input scaled, then summed. An
  // in-place collective scales its buffer, which the result overwrites; the
  // others scale copies, leaving the caller's input as it was.
  static c10d::ReduceOp scaleForPremulSum(const c10d::ReduceOp& op, std::vector<at::Tensor>& inputs,
                                          bool in_place) {
    if (op.op_ != c10d::ReduceOp::PREMUL_SUM) {
      return op;
    }
    const auto* factor = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
    TORCH_CHECK(factor != nullptr, "mccl: PREMUL_SUM without a factor");
    for (at::Tensor& input : inputs) {
      // A tensor factor is on the host already (withHostFactor).
      const at::Tensor scale = factor->tensor_factor.defined() ? factor->tensor_factor
                                                               : at::scalar_tensor(factor->double_factor);
      input = in_place ? input.mul_(scale) : input.mul(scale);
    }
    return c10d::ReduceOp(c10d::ReduceOp::SUM);
  }

  // Gloo's options for a reduction: PREMUL_SUM becomes the scaling (above) and a SUM.
  template <typename Options>
  static Options scaledForGloo(Options options, std::vector<at::Tensor>& inputs, bool in_place) {
    options.reduceOp = scaleForPremulSum(options.reduceOp, inputs, in_place);
    return options;
  }

  c10::intrusive_ptr<c10d::Work> collective(OpType type, const char* title, std::vector<at::Tensor> inputs,
                                            std::vector<at::Tensor> outputs, GlooCall call,
                                            bool outputs_are_inputs = false, c10::DeviceIndex barrier_device = -1) {
    std::vector<at::Tensor> all = inputs;
    all.insert(all.end(), outputs.begin(), outputs.end());
    const c10::Device device = type == OpType::BARRIER ? c10::Device(c10::DeviceType::PrivateUse1, barrier_device)
                                                       : deviceOfCollective(all, title);
    const bool is_send = type == OpType::SEND;
    const MydevStream caller = getCurrentMydevStream(device.index());
    const MydevStream stream = streamFor(device.index(), is_send);
    auto work = c10::make_intrusive<CollectiveWork>(rank_, type, title, inputs, outputs, device, stream);
    // The Works of finished operations are settled and released after the
    // lock, on this thread (a future's callback may launch another operation;
    // releasing a tensor may need the GIL).
    std::vector<c10::intrusive_ptr<CollectiveWork>> finished;
    try {
      launchInOrder(work, type, title, stream, caller, inputs, outputs, std::move(call), outputs_are_inputs, finished);
    } catch (...) {
      settle(finished);
      throw;
    }
    settle(finished);
    return work;
  }

  static void settle(const std::vector<c10::intrusive_ptr<CollectiveWork>>& works) {
    for (const c10::intrusive_ptr<CollectiveWork>& work : works) {
      work->settle();
    }
  }

  // Launches are ordered by launch_mutex_: the comm stream then calls gloo in
  // the order the collectives were issued, as gloo's tags need, even when
  // several threads issue them.
  void launchInOrder(const c10::intrusive_ptr<CollectiveWork>& work, OpType type, const char* title,
                     const MydevStream& stream, const MydevStream& caller, const std::vector<at::Tensor>& inputs,
                     const std::vector<at::Tensor>& outputs, GlooCall call, bool outputs_are_inputs,
                     std::vector<c10::intrusive_ptr<CollectiveWork>>& finished) {
    const bool is_send = type == OpType::SEND;
    std::lock_guard<std::mutex> launch_lock(launch_mutex_);
    if (closed_) {
      work->endedOnHost(shutDownError());
      return;
    }
    finished = takeFinishedWorks();
    // The inputs' producers, on the caller's stream, come first.
    inputs_ready_.record(caller);
    inputs_ready_.block(stream);
    orderAfterEarlierOperations(type, stream);
    // The caller may drop its tensors before the stream has used them.
    for (const auto* tensors : {&inputs, &outputs}) {
      if (tensors == &outputs && outputs_are_inputs) {
        break;
      }
      for (const at::Tensor& tensor : *tensors) {
        if (tensor.has_storage() && tensor.storage().data_ptr().get() != nullptr) {
          c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1).recordDataPtrOnStream(tensor.storage().data_ptr(),
                                                                                            stream.unwrap());
        }
      }
    }
    // Held before the launch: the kernel has the Work by pointer.
    in_flight_.push_back(work);
    try {
      if (!startOnHost(work, type, stream, inputs, outputs, call, outputs_are_inputs)) {
        launchOnStream(work, title, stream, inputs, outputs, std::move(call), outputs_are_inputs);
      }
    } catch (...) {
      // This rank may have skipped a collective the others make: as after a
      // failed one, the group is unusable.
      breakGroup(std::current_exception(), work);
      work->endedOnHost(std::current_exception());
      throw;
    }
    last_device_ = stream.unwrap().device_index();
    (is_send ? last_send_ : last_of_comm_stream_) = work;
    if (type != OpType::SEND && type != OpType::RECV) {
      ++sequence_number_;
      last_collective_ = work;
    }
  }

  // NCCL runs everything of a group on one stream; mccl runs sends on a
  // stream of their own, since a receive blocks the comm stream until its
  // peer sends, which it may do only after receiving (a ring exchange).
  // So: a collective waits for the sends before it, a send for the
  // collectives before it (never for a receive), and, across devices, each comm
  // stream for the other's last operation, so that gloo sees collectives in
  // the order they were issued.
  void orderAfterEarlierOperations(OpType type, const MydevStream& stream) {
    if (type == OpType::SEND) {
      if (last_collective_) {
        last_collective_->orderBefore(stream);
      }
      return;
    }
    if (type != OpType::RECV && last_send_) {
      last_send_->orderBefore(stream);
    }
    if (last_of_comm_stream_ && !(last_of_comm_stream_->stream() == stream)) {
      last_of_comm_stream_->orderBefore(stream);
    }
  }

  // An operation as a kernel on its stream, launched from the caller's
  // thread: gloo reads and writes the device memory in place, through the
  // CPU aliases every kernel gets of it (KernelMemory), so no copies (but for
  // a tensor that is not contiguous, which gloo cannot take) and no other
  // thread of mccl's on the way. A transport error is handed to the Work,
  // not raised as a device fault, and breaks the group.
  void launchOnStream(const c10::intrusive_ptr<CollectiveWork>& work, const char* title, const MydevStream& stream,
                      const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs, GlooCall call,
                      bool outputs_are_inputs) {
    std::vector<DeviceTensorRef> input_refs;
    std::vector<DeviceTensorRef> output_refs;
    for (const at::Tensor& input : inputs) {
      input_refs.push_back(describe(input));
    }
    if (!outputs_are_inputs) {
      for (const at::Tensor& output : outputs) {
        output_refs.push_back(describe(output));
      }
    }
    // The kernel gets the Work by pointer: the backend holds it until its end
    // event has passed (a Work's tensors must not be freed on a stream worker
    // or where the runtime retires a kernel). If the future was taken (or a
    // profiler range is open), the kernel hands the Work to the comm thread;
    // otherwise no thread of mccl's wakes: the runtime wakes the caller's waits.
    // Never run before the launch returns, even under deterministic mode:
    // gloo reads no ATen setting, and a send would wait for its peer.
    launchKernelReadingNoSettings(title, stream,
                 [this, work = work.get(), input_refs = std::move(input_refs), output_refs = std::move(output_refs),
                  call = std::move(call), outputs_are_inputs] {
                   std::exception_ptr failure = brokenError();
                   if (!failure) {
                     try {
                       KernelMemory memory;
                       std::vector<at::Tensor> host_in;
                       std::vector<at::Tensor> host_out;
                       for (const DeviceTensorRef& ref : input_refs) {
                         host_in.push_back(memory.map(ref));
                       }
                       for (const DeviceTensorRef& ref : output_refs) {
                         host_out.push_back(memory.map(ref));
                       }
                       std::vector<at::Tensor> gloo_in = contiguous(host_in);
                       std::vector<at::Tensor> gloo_out = outputs_are_inputs ? gloo_in : contiguous(host_out);
                       call(gloo_in, gloo_out)->wait(timeout_);
                       copyBack(gloo_out, outputs_are_inputs ? host_in : host_out);
                     } catch (...) {
                       failure = std::current_exception();
                       breakGroup(failure, c10::intrusive_ptr<CollectiveWork>::reclaim_copy(work));
                     }
                   }
                   transferEnded(work, failure);
                 });
    work->recordEnd();
  }

  // The comm thread is retired only after every operation ended (stopThreads).
  void transferEnded(CollectiveWork* work, std::exception_ptr failure) {
    if (work->transferEnded(failure)) {
      (void)postToCommThread([held = c10::intrusive_ptr<CollectiveWork>::reclaim_copy(work)] { held->hostStep(); });
    }
  }

  // A collective with nothing to wait for is handed to gloo from the caller's
  // thread, as a host task of its stream that gloo's thread ends: the stream
  // holds its place (later work, the end event and synchronizations wait for
  // it) with no worker woken to run it, which saves two sleeps and wake-ups
  // per collective (most of what mccl cost small collectives on a busy host).
  // The stream begins the task only if nothing is pending on it: no producer
  // of the inputs (the wait queued on it above), no earlier operation.
  // Only collectives whose gloo Work completes its future by itself are
  // handed over (gloo's reduce-scatter, for one, finishes only in wait());
  // they are also the ones a training step issues once its inputs are ready.
  // Profiled operations (a kernel gives the profiler its device row) and
  // tensors gloo cannot take as they are go through a kernel.
  // Returns false, having done nothing, where a kernel must run it.
  bool startOnHost(const c10::intrusive_ptr<CollectiveWork>& work, OpType type, const MydevStream& stream,
                   const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                   const GlooCall& call, bool outputs_are_inputs) {
    const bool future_completes = type == OpType::ALLREDUCE || type == OpType::BROADCAST ||
                                  type == OpType::ALLGATHER || type == OpType::_ALLGATHER_BASE;
    if (!future_completes || work->profiled() || !readableByGloo(inputs) || !readableByGloo(outputs) ||
        brokenError()) {
      return false;
    }
    mydevHostTask_t task = nullptr;
    if (mydevHostTaskBegin(stream.handle(), &task) != mydevSuccess) {
      return false;
    }
    std::exception_ptr failure;
    c10::intrusive_ptr<c10d::Work> transfer;
    try {
      std::vector<at::Tensor> host_in = hostAliases(task, inputs);
      std::vector<at::Tensor> host_out = outputs_are_inputs ? host_in : hostAliases(task, outputs);
      transfer = call(host_in, host_out);
      TORCH_CHECK(transfer, "mccl: gloo returned no Work");
    } catch (...) {
      failure = std::current_exception();
    }
    // Runs on gloo's thread, or here if gloo is done already: under no lock of
    // mccl's but launch_mutex_, which ending takes none of.
    // The Work ends first, as in a kernel. The task ends whatever happens:
    // left open, it would hold the stream, and everything after it, forever
    // (a Work that could not be ended then fails at its wait()).
    auto end = [this, work = work.get(), task](std::exception_ptr failure) {
      try {
        if (failure) {
          breakGroup(failure, c10::intrusive_ptr<CollectiveWork>::reclaim_copy(work));
        }
        transferEnded(work, failure);
      } catch (const std::exception& error) {
        TORCH_WARN("mccl: ending a collective failed: ", error.what());
      }
      (void)mydevHostTaskEnd(task);
    };
    if (!failure) {
      try {
        transfer->getFuture()->addCallback([end](c10::ivalue::Future& done) {
          end(done.hasError() ? done.exception_ptr() : nullptr);
        });
      } catch (...) {
        failure = std::current_exception();
      }
    }
    if (failure) {
      end(failure);
    }
    work->recordEnd();
    return true;
  }

  static bool readableByGloo(const std::vector<at::Tensor>& tensors) {
    return std::all_of(tensors.begin(), tensors.end(), [](const at::Tensor& tensor) {
      return tensor.layout() == c10::kStrided && tensor.is_contiguous() && !tensor.is_conj() && !tensor.is_neg() &&
             tensor.numel() > 0;
    });
  }

  // CPU tensors over the device memory, which the host task maps for gloo.
  static std::vector<at::Tensor> hostAliases(mydevHostTask_t task, const std::vector<at::Tensor>& tensors) {
    std::vector<at::Tensor> aliases;
    aliases.reserve(tensors.size());
    for (const at::Tensor& tensor : tensors) {
      void* host = nullptr;
      MYDEV_CHECK(mydevHostTaskMapPointer(task, tensor.data_ptr(), &host));
      aliases.push_back(at::from_blob(host, tensor.sizes(), tensor.strides(), tensor.options().device(c10::kCPU)));
    }
    return aliases;
  }

  // Gloo takes contiguous tensors only; a strided alias goes through a
  // contiguous host copy (inside the kernel, so host memory).
  static std::vector<at::Tensor> contiguous(const std::vector<at::Tensor>& tensors) {
    std::vector<at::Tensor> result;
    result.reserve(tensors.size());
    for (const at::Tensor& tensor : tensors) {
      result.push_back(tensor.contiguous());
    }
    return result;
  }

  static void copyBack(const std::vector<at::Tensor>& from, const std::vector<at::Tensor>& to) {
    for (size_t i = 0; i < to.size(); ++i) {
      if (!from[i].is_same(to[i])) {
        to[i].copy_(from[i]);
      }
    }
  }

  // Under launch_mutex_: the Works whose kernels are done, which the caller
  // releases once the lock is free (releasing a tensor may need the GIL).
  std::vector<c10::intrusive_ptr<CollectiveWork>> takeFinishedWorks() {
    std::vector<c10::intrusive_ptr<CollectiveWork>> finished;
    auto still_running = std::partition(in_flight_.begin(), in_flight_.end(),
                                        [](const c10::intrusive_ptr<CollectiveWork>& work) { return !work->passed(); });
    std::move(still_running, in_flight_.end(), std::back_inserter(finished));
    in_flight_.erase(still_running, in_flight_.end());
    return finished;
  }

  // After a failed collective (a dead peer, a timeout) gloo may still write
  // into its tensors, and the ranks no longer agree on what ran: as NCCL
  // aborts its communicator, the group fails every later collective, and the
  // failed one's tensors are kept so that their memory is never reused.
  void breakGroup(std::exception_ptr error, const c10::intrusive_ptr<CollectiveWork>& work) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_) {
      broken_ = error;
    }
    kept_after_failure_.push_back(work);
  }

  // What every operation after a failed one fails with (null while none failed).
  std::exception_ptr brokenError() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_) {
      return nullptr;
    }
    try {
      std::rethrow_exception(broken_);
    } catch (const std::exception& error) {
      return backendError(std::string("mccl: the group is unusable after an earlier collective failed: ") +
                          error.what());
    }
  }

  MydevStream streamFor(c10::DeviceIndex device, bool for_sends) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& streams = for_sends ? send_streams_ : comm_streams_;
    auto found = streams.find(device);
    if (found == streams.end()) {
      found = streams.emplace(device, getStreamFromPool(/*priority=*/-1, device)).first;
      // The stream's worker starts here, not on mccl's thread, whose name it would inherit.
      found->second.handle();
    }
    return found->second;
  }

  // Completes taken futures and ends profiler ranges, off the stream workers.
  // Starts the thread on first use; refuses once stopThreads has retired it.
  bool postToCommThread(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_thread_retired_) {
      return false;
    }
    if (!comm_thread_) {
      comm_thread_ = std::make_unique<CommThread>("mccl comm");
    }
    return comm_thread_->post(std::move(task));
  }

  static std::exception_ptr shutDownError() {
    return backendError("mccl: the process group was shut down or aborted");
  }

  void stopThreads() {
    // The queued tasks complete futures whose Python callbacks need the GIL,
    // which the caller (destroy_process_group, a dealloc) may hold.
    std::optional<py::gil_scoped_release> without_gil;
    if (Py_IsInitialized() && PyGILState_Check() != 0) {
      without_gil.emplace();
    }
    {
      std::lock_guard<std::mutex> lock(launch_mutex_);
      closed_ = true;
    }
    // Every operation launched ends first (each bounded by the timeout),
    // handing its Work to the comm thread if it must.
    std::vector<MydevStream> streams;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto* kind : {&comm_streams_, &send_streams_}) {
        for (const auto& entry : *kind) {
          streams.push_back(entry.second);
        }
      }
    }
    // Not checked: the kernels catch their own errors, and a destructor
    // calls this, which must not throw.
    for (const MydevStream& stream : streams) {
      (void)mydevStreamSynchronize(stream.handle());
    }
    std::vector<c10::intrusive_ptr<CollectiveWork>> finished;
    {
      std::lock_guard<std::mutex> lock(launch_mutex_);
      finished = takeFinishedWorks();
      last_send_.reset();
      last_collective_.reset();
      last_of_comm_stream_.reset();
    }
    settle(finished);
    finished.clear();
    std::unique_ptr<CommThread> comm;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      comm_thread_retired_ = true;
      comm = std::move(comm_thread_);
    }
    stop(std::move(comm));  // its queued tasks run first
  }

  static void stop(std::unique_ptr<CommThread> thread) {
    if (thread && thread->runsHere()) {
      CommThread::stopFromWithin(std::move(thread));
    }
    // Otherwise the destructor joins it.
  }

  c10::intrusive_ptr<c10d::Backend> gloo_;
  std::chrono::milliseconds timeout_;
  std::atomic<uint64_t> sequence_number_{0};
  std::atomic<c10::DeviceIndex> last_device_{-1};
  std::mutex launch_mutex_;
  // Under launch_mutex_:
  bool closed_ = false;
  MydevEvent inputs_ready_;  // recorded again for each operation
  std::vector<c10::intrusive_ptr<CollectiveWork>> in_flight_;
  c10::intrusive_ptr<CollectiveWork> last_send_;
  c10::intrusive_ptr<CollectiveWork> last_collective_;
  c10::intrusive_ptr<CollectiveWork> last_of_comm_stream_;  // a collective or a receive
  std::mutex mutex_;
  std::map<c10::DeviceIndex, MydevStream> comm_streams_;  // collectives and receives
  std::map<c10::DeviceIndex, MydevStream> send_streams_;
  std::unique_ptr<CommThread> comm_thread_;
  bool comm_thread_retired_ = false;
  std::exception_ptr broken_;
  std::vector<c10::intrusive_ptr<CollectiveWork>> kept_after_failure_;
};

}  // namespace

// The class is bound once torch.distributed is imported: its base,
// c10d.Backend, is a Python type only from then on.
void bindDistributed(py::module_& m) {
  m.def("_bind_distributed_backend", [m]() mutable {
    if (py::hasattr(m, "ProcessGroupMydev")) {
      return;
    }
    py::module_::import("torch.distributed");
    py::class_<MydevOptions, c10d::Backend::Options, c10::intrusive_ptr<MydevOptions>>(m, "ProcessGroupMydevOptions")
        .def("__deepcopy__", [](const MydevOptions& options, const py::dict& /*memo*/) {
          return c10::make_intrusive<MydevOptions>(options);
        });
    py::class_<ProcessGroupMydev, c10d::Backend, c10::intrusive_ptr<ProcessGroupMydev>>(m, "ProcessGroupMydev")
        .def(py::init([](const c10::intrusive_ptr<c10d::Backend>& gloo, int rank, int size,
                         std::chrono::milliseconds timeout) {
               return c10::make_intrusive<ProcessGroupMydev>(gloo, rank, size, timeout);
             }),
             py::arg("gloo"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
             py::call_guard<py::gil_scoped_release>())
        // What split_group copies for the new group, as ProcessGroupNCCL.options.
        .def_property_readonly("options", &ProcessGroupMydev::getBackendOptions);
  });
}

}  // namespace torch_mydev
