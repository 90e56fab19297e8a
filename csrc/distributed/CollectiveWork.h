// The Work of an mccl operation: how it ends (with its kernel or host task,
// or on the host when its launch fails), how a waiter learns of it, and when
// its future completes.
#pragma once

#include "../core/Event.h"
#include "../core/Stream.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/StreamGuard.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

namespace torch_mydev {

// A DistBackendError, as the exception_ptr a Work or a future carries.
inline std::exception_ptr backendError(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

// An operation's Work. It ends with its kernel (which reports its end, then
// an event recorded after it passes), or on the host if its launch was
// refused or failed. Its future is completed when it is taken, as NCCL's is
// at the launch (below).
class CollectiveWork final : public c10d::Work {
 public:
  CollectiveWork(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> inputs,
                 std::vector<at::Tensor> outputs, c10::Device device, MydevStream stream)
      // A title makes c10d's Work open a profiler range, and allocate one
      // whether or not anything records it: only when something could.
      : Work(rank, type, at::hasCallbacks() ? title : nullptr),
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
    const std::exception_ptr inputs_failure = waitForEnd();
    if (const std::exception_ptr failure = error()) {
      std::rethrow_exception(failure);
    }
    if (inputs_failure) {
      std::rethrow_exception(inputs_failure);
    }
    return true;
  }

  void synchronize() override { wait(kNoTimeout); }

  std::vector<at::Tensor> result() override { return outputs_; }

  // Does not wait (DDP's comm hooks take it right after the launch). The
  // future is completed here, as NCCL's is at the launch, with the
  // operation's stream current: the events it records there order whoever
  // waits for it (future.wait(), a callback's streams) after the operation,
  // and the host waits for nothing. So its callbacks run at once, on this
  // thread, in the order the program takes the futures, the same on every
  // rank: a callback that launches a collective (PowerSGD's hook) launches it
  // in the same place on each, and may wait for that collective's future
  // (ending on another thread, callbacks ran in whatever order the
  // collectives ended, and a callback waiting there would wait forever). A
  // failure of the operation that comes after is not the future's: wait()
  // reports it, and the group's next operation raises, its future too.
  // The events cover the inputs' memory as well as the outputs' (a send has
  // no output, and its input must not be written before it is sent); an
  // operation with no tensor at all (a barrier) has nothing to record them
  // for, so its future is completed once it has ended.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    {
      // Made on demand: most Works are only waited for.
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (future_) {
        return future_;
      }
    }
    std::vector<c10::ivalue::Future::WeakStorage> storages;
    for (const auto* tensors : {&inputs_, &outputs_}) {
      for (const at::Tensor& tensor : *tensors) {
        if (tensor.has_storage()) {
          storages.push_back(tensor.storage().getWeakStorageImpl());
        }
      }
    }
    if (storages.empty()) {
      settle();
    }
    auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(),
                                                           std::vector<c10::Device>{device_});
    // Completed before it is published, so that no thread gets it uncompleted.
    if (const std::exception_ptr failure = error()) {
      future->setError(failure);
    } else {
      c10::StreamGuard on_stream(stream_.unwrap());
      future->markCompleted(c10::IValue(outputs_), std::move(storages));
    }
    std::lock_guard<std::mutex> lock(state_mutex_);
    if (!future_) {
      future_ = std::move(future);
    }
    return future_;
  }

  // Recorded on the stream right after the operation's kernel.
  void recordEnd() { end_.record(stream_); }

  // Gloo's Work for the operation while its kernel waits for it (null once
  // the wait is over), so that abort() can end a send or a receive that
  // would otherwise wait for its peer until the timeout (gloo of torch 2.13
  // can abort only those). A transfer handed over after abortTransfer() is
  // aborted at once.
  void holdTransfer(c10::intrusive_ptr<c10d::Work> transfer) {
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      transfer_ = std::move(transfer);
      if (!aborting_ || !transfer_) {
        return;
      }
    }
    abortTransfer();
  }

  void abortTransfer() {
    c10::intrusive_ptr<c10d::Work> transfer;
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      aborting_ = true;
      transfer = transfer_;
    }
    if (!transfer) {
      return;
    }
    try {
      transfer->abort();
    } catch (const std::exception&) {
      // A collective's Work, which gloo cannot abort: it ends by itself or at the timeout.
    }
  }

  const MydevStream& stream() const { return stream_; }

  bool profiled() const { return profiled_; }

  // Work queued on `stream` from now on waits for this operation.
  void orderBefore(const MydevStream& stream) const { end_.block(stream); }

  // Whether `later` must wait for this operation: it touches memory this one
  // writes, or writes memory this one reads. Tensors are compared by the
  // memory they span, so that disjoint slices of one buffer (a ring exchange
  // through it) do not wait for each other.
  bool mustPrecede(const CollectiveWork& later) const {
    return overlap(outputs_, later.inputs_) || overlap(outputs_, later.outputs_) || overlap(inputs_, later.outputs_);
  }

  // Non-blocking: whether the operation's kernel is done (or was dropped):
  // the backend may let go of the Work, once it has settled it.
  bool passed() const { return end_.query(); }

  // The operation ends with its kernel, or, if a device fault dropped the
  // kernel before it ran, with that fault, not with a wait that never ends.
  // For a Work whose kernel is done (passed()); one whose kernel ran leaves
  // the stream's failures alone: one passed to the comm stream from the
  // caller's (a kernel that produced the inputs failed) is the caller's to
  // report at its next synchronization.
  void settle() {
    if (!ended()) {
      (void)waitForEnd();
    }
  }

  // The end of the operation's transfer: on its stream's worker (a kernel),
  // or on gloo's thread (a host task). Returns whether a host thread must take
  // over (hostStep): a profiler range is open (its end callback carries
  // thread-local state whose release may need the GIL).
  bool transferEnded(std::exception_ptr failure) {
    if (!markEnded(failure)) {
      return false;  // its launch failed after queueing it (the host ended it then)
    }
    if (!profiled_) {
      Work::finish(failure);
    }
    return profiled_;
  }

  void hostStep() { Work::finish(error()); }  // ends the Work's profiler range

  // An operation refused or lost at its launch, or whose kernel did not run:
  // ended on a host thread.
  void endedOnHost(std::exception_ptr failure) {
    if (markEnded(failure)) {
      Work::finish(failure);
    }
  }

 private:
  // Waits until the stream has passed the operation. A kernel dropped by a
  // device fault ends the operation with that fault. A failure the stream
  // reports although the kernel ran is not the operation's: it came with the
  // inputs (a kernel on the caller's stream that produced them failed, and
  // the comm stream waited for it), and is returned for the caller, as
  // CUDA's sticky error would fail the caller's next call.
  std::exception_ptr waitForEnd() {
    std::exception_ptr fault;
    try {
      end_.synchronize();
    } catch (...) {
      fault = std::current_exception();
    }
    if (!ended()) {
      endedOnHost(fault ? fault : backendError("mccl: the collective's kernel did not run"));
      return nullptr;
    }
    return fault;
  }

  // Records the end, once: false if the operation had ended already.
  bool markEnded(std::exception_ptr failure) {
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (ended_) {
        return false;
      }
      error_ = std::move(failure);
      ended_ = true;
    }
    ended_cv_.notify_all();
    return true;
  }

  bool ended() const {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return ended_;
  }

  // Views of one storage only; where ATen finds it too hard to tell (a
  // strided view), they count as overlapping.
  static bool overlap(const std::vector<at::Tensor>& some, const std::vector<at::Tensor>& others) {
    for (const at::Tensor& one : some) {
      for (const at::Tensor& other : others) {
        if (one.has_storage() && other.has_storage() && one.storage().is_alias_of(other.storage()) &&
            at::get_overlap_status(one, other) != at::MemOverlapStatus::No) {
          return true;
        }
      }
    }
    return false;
  }

  std::exception_ptr error() const {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return error_;
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
  c10::intrusive_ptr<c10d::Work> transfer_;          // guarded by state_mutex_
  bool aborting_ = false;                            // guarded by state_mutex_
  std::condition_variable ended_cv_;
  bool ended_ = false;
  std::exception_ptr error_;
};

}  // namespace torch_mydev
