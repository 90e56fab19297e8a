// "mccl", mydev's c10d backend: PyTorch's collectives for mydev tensors, with
// NCCL's stream semantics, over gloo.
//
// Gloo is the transport (the wheel ships it inside libtorch, but not its
// headers): the Python creator builds a private ProcessGroupGloo on the store
// it is given, and this backend drives it through the c10d::Backend interface.
//
//   caller's thread: record an event on the current stream (the inputs'
//     producers), mark every tensor as used on the comm stream (the caching
//     allocator then keeps it until the comm stream is done with it), queue
//     the collective, return its Work.
//   comm thread (one per backend): the comm stream waits for the event; the
//     collective runs as a kernel on the comm stream, gloo reading and writing
//     device memory in place through the kernel's CPU aliases of it; the comm
//     thread waits for it, then completes the Work's future, recording an
//     event on the comm stream. Gloo is called by one thread at a time, in
//     the order the collectives were issued, as its tags require.
//   Work.wait() / future.wait(): the caller's current stream waits for that
//     event, as with NCCL; the host waits for the collective itself.
#include "../aten/DeviceTensorRef.h"
#include "../aten/KernelLaunch.h"
#include "../core/Device.h"
#include "../core/Event.h"
#include "../core/Exception.h"
#include "../core/Stream.h"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <c10/core/StreamGuard.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/csrc/utils/pybind.h>

#include <pybind11/chrono.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
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

class CollectiveWork final : public c10d::Work {
 public:
  CollectiveWork(int rank, OpType type, const char* title, std::vector<at::Tensor> outputs, c10::Device device)
      : Work(rank, type, title),
        outputs_(std::move(outputs)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(),
                                                         std::vector<c10::Device>{device})) {}

  bool isCompleted() override { return future_->completed(); }

  bool isSuccess() const override { return future_->completed() && !future_->hasError(); }

  std::exception_ptr exception() const override {
    return future_->completed() && future_->hasError() ? future_->exception_ptr() : nullptr;
  }

  // The host waits for the gloo part; the current stream for the copies back.
  bool wait(std::chrono::milliseconds timeout) override {
    if (timeout != kNoTimeout) {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!finished_cv_.wait_for(lock, timeout, [this] { return finished_; })) {
        C10_THROW_ERROR(DistBackendError, "mccl: a collective timed out after " + std::to_string(timeout.count()) +
                                              " ms");
      }
    }
    future_->wait();
    if (future_->hasError()) {
      std::rethrow_exception(future_->exception_ptr());
    }
    return true;
  }

  void synchronize() override { wait(kNoTimeout); }

  std::vector<at::Tensor> result() override { return outputs_; }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // On the comm thread, with the comm stream current: the future records its
  // completion event there. The future runs its callbacks here; one that
  // raises cannot undo the completion, so it is reported, not propagated.
  void finish() {
    try {
      future_->markCompleted(c10::IValue(outputs_));
    } catch (const std::exception& error) {
      TORCH_WARN("mccl: a callback on a collective's future raised: ", error.what());
    }
    Work::finish();  // ends the Work's profiler range
    notifyFinished();
  }

  void fail(std::exception_ptr error) {
    if (!future_->completed()) {
      try {
        future_->setError(error);
      } catch (const std::exception& callback_error) {
        TORCH_WARN("mccl: a callback on a collective's future raised: ", callback_error.what());
      }
    }
    Work::finish(error);
    notifyFinished();
  }

 private:
  void notifyFinished() {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    finished_cv_.notify_all();
  }

  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::mutex mutex_;
  std::condition_variable finished_cv_;
  bool finished_ = false;
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

  // Once stopping, a task is refused (the caller fails its Work): the thread
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

// Pinned host memory: the host allocator caches it, so a collective's staging
// costs no page faults, and copies to and from it are the runtime's fastest.
at::Tensor stagingBuffer(const at::Tensor& like) {
  return at::empty(like.sizes(), like.options().device(c10::kCPU).pinned_memory(true));
}

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
  // finish (each bounded by the timeout), then mccl's threads end. Gloo of
  // torch 2.13 has no abort of its own, so abort() does the same.
  void shutdown() override {
    stopThreads();
    gloo_->shutdown();
  }

  void abort() override {
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
    // so for this group): gloo takes its defaults, and mccl bounds each
    // collective with the timeout it is given.
    const c10::intrusive_ptr<Backend::Options> options = opts ? opts : getBackendOptions();
    c10::intrusive_ptr<Backend> gloo_part = gloo_->split(own_store, ranks, options);
    if (!gloo_part) {
      return nullptr;
    }
    const std::chrono::milliseconds timeout = options->timeout;
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
      c10d::AllreduceOptions gloo_opts = opts;
      gloo_opts.reduceOp = scaleForPremulSum(opts.reduceOp, host, /*in_place=*/true);
      return gloo_->allreduce(host, gloo_opts);
    });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    return inPlace(OpType::ALLREDUCE_COALESCED, "mccl:all_reduce_coalesced", tensors, [this, opts = withHostFactor(opts)](auto& host, auto&) {
      c10d::AllreduceCoalescedOptions gloo_opts = opts;
      gloo_opts.reduceOp = scaleForPremulSum(opts.reduceOp, host, /*in_place=*/true);
      return gloo_->allreduce_coalesced(host, gloo_opts);
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    return inPlace(OpType::REDUCE, "mccl:reduce", tensors, [this, opts = withHostFactor(opts)](auto& host, auto&) {
      c10d::ReduceOptions gloo_opts = opts;
      gloo_opts.reduceOp = scaleForPremulSum(opts.reduceOp, host, /*in_place=*/true);
      return gloo_->reduce(host, gloo_opts);
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
                        c10d::ReduceScatterOptions gloo_opts = opts;
                        gloo_opts.reduceOp = scaleForPremulSum(opts.reduceOp, host_in, /*in_place=*/false);
                        auto lists = regroup(host_in, sizes);
                        return gloo_->reduce_scatter(host_out, lists, gloo_opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override {
    return collective(OpType::_REDUCE_SCATTER_BASE, "mccl:reduce_scatter_tensor", {input}, {output},
                      [this, opts = withHostFactor(opts)](auto& host_in, auto& host_out) {
                        c10d::ReduceScatterOptions gloo_opts = opts;
                        gloo_opts.reduceOp = scaleForPremulSum(opts.reduceOp, host_in, /*in_place=*/false);
                        return gloo_->_reduce_scatter_base(host_out[0], host_in[0], gloo_opts);
                      });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override {
    return collective(OpType::COALESCED, "mccl:reduce_scatter_tensor_coalesced", inputs, outputs,
                      [this, opts = withHostFactor(opts)](auto& host_in, auto& host_out) {
                        c10d::ReduceScatterOptions gloo_opts = opts;
                        gloo_opts.reduceOp = scaleForPremulSum(opts.reduceOp, host_in, /*in_place=*/false);
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
    // Ordered after every collective queued before it, like NCCL's barrier.
    ++sequence_number_;
    auto work = c10::make_intrusive<CollectiveWork>(rank_, OpType::BARRIER, "mccl:barrier", std::vector<at::Tensor>{},
                                                    c10::Device(c10::DeviceType::PrivateUse1, currentDevice()));
    const MydevStream comm = commStream(currentDevice());
    postToCommThread(work, [this, work, opts, comm] {
      try {
        throwIfBroken();
        c10::StreamGuard on_comm(comm.unwrap());
        gloo_->barrier(opts)->wait(timeout_);
        work->finish();
      } catch (...) {
        work->fail(std::current_exception());
      }
    });
    return work;
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

  c10::intrusive_ptr<c10d::Work> collective(OpType type, const char* title, std::vector<at::Tensor> inputs,
                                            std::vector<at::Tensor> outputs, GlooCall call,
                                            bool outputs_are_inputs = false) {
    const bool point_to_point = type == OpType::SEND || type == OpType::RECV;
    if (!point_to_point) {
      ++sequence_number_;
    }
    std::vector<at::Tensor> all = inputs;
    all.insert(all.end(), outputs.begin(), outputs.end());
    const c10::Device device = deviceOfCollective(all, title);
    const MydevStream caller = getCurrentMydevStream(device.index());
    const MydevStream comm = commStream(device.index());
    auto inputs_ready = std::make_shared<MydevEvent>();
    inputs_ready->record(caller);
    // The caller may drop its tensors before the comm stream has used them.
    for (const at::Tensor& tensor : all) {
      if (tensor.has_storage() && tensor.storage().data_ptr().get() != nullptr) {
        c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1).recordDataPtrOnStream(tensor.storage().data_ptr(),
                                                                                          comm.unwrap());
      }
    }
    auto work = c10::make_intrusive<CollectiveWork>(rank_, type, title, outputs, device);
    postToCommThread(work, [this, work, comm, inputs_ready, title, point_to_point, inputs = std::move(inputs),
                            outputs = std::move(outputs), call = std::move(call), outputs_are_inputs] {
      try {
        throwIfBroken();
        c10::StreamGuard on_comm(comm.unwrap());
        inputs_ready->block(comm);
        if (point_to_point) {
          stagedPointToPoint(work, comm, inputs, outputs, call);
        } else {
          inPlaceOnTheCommStream(title, comm, inputs, outputs, call, outputs_are_inputs);
          work->finish();
        }
      } catch (...) {
        work->fail(std::current_exception());
      }
    });
    return work;
  }

  // A collective as a kernel on the comm stream: gloo reads and writes the
  // device memory in place, through the CPU aliases every kernel gets of it
  // (KernelMemory), so no copies; the comm thread waits for the kernel. A
  // transport error is handed back to the comm thread, not raised as a device
  // fault.
  void inPlaceOnTheCommStream(const char* title, const MydevStream& comm, const std::vector<at::Tensor>& inputs,
                              const std::vector<at::Tensor>& outputs, const GlooCall& call, bool outputs_are_inputs) {
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
    auto error = std::make_shared<std::exception_ptr>();
    launchKernel(title, comm,
                 [this, input_refs = std::move(input_refs), output_refs = std::move(output_refs), call, error,
                  outputs_are_inputs] {
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
                     if (outputs_are_inputs) {
                       host_out = host_in;
                     }
                     call(host_in, host_out)->wait(timeout_);
                   } catch (...) {
                     *error = std::current_exception();
                   }
                 });
    comm.synchronize();
    if (*error) {
      breakGroup(*error, inputs, outputs);
      std::rethrow_exception(*error);
    }
  }

  // After a failed collective (a dead peer, a timeout) gloo may still write
  // into its tensors, and the ranks no longer agree on what ran: as NCCL
  // aborts its communicator, the group fails every later collective, and the
  // failed one's tensors are kept so that their memory is never reused.
  void breakGroup(std::exception_ptr error, const std::vector<at::Tensor>& inputs,
                  const std::vector<at::Tensor>& outputs) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_) {
      broken_ = error;
    }
    kept_after_failure_.insert(kept_after_failure_.end(), inputs.begin(), inputs.end());
    kept_after_failure_.insert(kept_after_failure_.end(), outputs.begin(), outputs.end());
  }

  void throwIfBroken() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_) {
      return;
    }
    try {
      std::rethrow_exception(broken_);
    } catch (const std::exception& error) {
      C10_THROW_ERROR(DistBackendError,
                      std::string("mccl: the group is unusable after an earlier collective failed: ") + error.what());
    }
  }

  // A send or a receive completes only once its peer posts the other half,
  // which it may do after a send of its own: waiting for it on the comm
  // stream would deadlock two ranks that send to each other first (what
  // NCCL's group calls avoid). So it stages through pinned host memory, is
  // posted to gloo in order here, and completes on its own thread.
  void stagedPointToPoint(const c10::intrusive_ptr<CollectiveWork>& work, const MydevStream& comm,
                          const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                          const GlooCall& call) {
    std::vector<at::Tensor> host_in;
    for (const at::Tensor& input : inputs) {
      host_in.push_back(stagingBuffer(input).copy_(input));
    }
    std::vector<at::Tensor> host_out;
    for (const at::Tensor& output : outputs) {
      host_out.push_back(stagingBuffer(output));
    }
    c10::intrusive_ptr<c10d::Work> gloo_work = call(host_in, host_out);
    postToPointToPointThread(work, [this, work, comm, gloo_work, outputs, host_out, host_in] {
      try {
        c10::StreamGuard on_comm(comm.unwrap());
        gloo_work->wait(timeout_);
        for (size_t i = 0; i < outputs.size(); ++i) {
          outputs[i].copy_(host_out[i]);
        }
        work->finish();
      } catch (...) {
        work->fail(std::current_exception());
      }
    });
  }

  MydevStream commStream(c10::DeviceIndex device) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = comm_streams_.find(device);
    if (found == comm_streams_.end()) {
      found = comm_streams_.emplace(device, getStreamFromPool(/*priority=*/-1, device)).first;
      // The stream's worker starts here, not on mccl's thread, whose name it would inherit.
      found->second.handle();
    }
    return found->second;
  }

  // Queues a task for the comm thread (started on first use); after shutdown
  // the Work fails instead.
  void postToCommThread(const c10::intrusive_ptr<CollectiveWork>& work, std::function<void()> task) {
    post(comm_thread_, "mccl comm", /*refuse_when_closed=*/true, work, std::move(task));
  }

  // Called from comm-thread tasks, which may still run while stopThreads()
  // drains the comm thread: the point-to-point thread is stopped after it.
  void postToPointToPointThread(const c10::intrusive_ptr<CollectiveWork>& work, std::function<void()> task) {
    post(point_to_point_thread_, "mccl p2p", /*refuse_when_closed=*/false, work, std::move(task));
  }

  void post(std::unique_ptr<CommThread>& thread, const char* name, bool refuse_when_closed,
            const c10::intrusive_ptr<CollectiveWork>& work, std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!(refuse_when_closed && closed_)) {
      if (!thread) {
        thread = std::make_unique<CommThread>(name);
      }
      if (thread->post(std::move(task))) {
        return;
      }
    }
    work->fail(shutDownError());
  }

  static std::exception_ptr shutDownError() {
    try {
      C10_THROW_ERROR(DistBackendError, "mccl: the process group was shut down or aborted");
    } catch (...) {
      return std::current_exception();
    }
  }

  void stopThreads() {
    // The queued tasks complete futures whose Python callbacks need the GIL,
    // which the caller (destroy_process_group, a dealloc) may hold.
    std::optional<py::gil_scoped_release> without_gil;
    if (Py_IsInitialized() && PyGILState_Check() != 0) {
      without_gil.emplace();
    }
    std::unique_ptr<CommThread> comm;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
      comm = std::move(comm_thread_);
    }
    stop(std::move(comm));  // its queued tasks run first, and may post to the other thread
    std::unique_ptr<CommThread> point_to_point;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      point_to_point = std::move(point_to_point_thread_);
    }
    stop(std::move(point_to_point));
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
  std::mutex mutex_;
  std::map<c10::DeviceIndex, MydevStream> comm_streams_;
  std::unique_ptr<CommThread> comm_thread_;
  std::unique_ptr<CommThread> point_to_point_thread_;
  bool closed_ = false;
  std::exception_ptr broken_;
  std::vector<at::Tensor> kept_after_failure_;
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
