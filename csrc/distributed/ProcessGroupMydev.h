// "mccl", mydev's c10d backend: PyTorch's collectives for mydev tensors, with
// NCCL's stream semantics, over gloo.
//
// Gloo is the transport (the wheel ships it inside libtorch, but not its
// headers): the Python creator builds a private ProcessGroupGloo on the store
// it is given, and this backend drives it through the c10d::Backend interface.
//
//   caller's thread: the operation's stream (per device, a high-priority
//     dedicated stream for collectives; for a send or a receive, one per peer
//     and direction) waits for an event on the current stream (the inputs'
//     producers) and for any operation in flight on another of mccl's streams
//     that shares memory with it; every tensor's
//     memory is marked as used on that stream (the caching allocator then
//     keeps it until the stream is done with it); the operation is launched
//     as a kernel there, gloo reading and writing device memory in place
//     through the kernel's CPU aliases of it (no copies); an event is
//     recorded after it; the Work is returned. Launches are serialized, so
//     gloo sees the collectives in the order they were issued, as its tags
//     require.
//     A collective with nothing to wait for (its inputs ready, the stream
//     idle) is handed to gloo from this thread instead, as a host task of the
//     stream (runtime/include/mydev/host_task.h), which gloo's thread ends:
//     no stream worker wakes for it.
//   Work.wait(): the host waits for that event (the runtime wakes it), as a
//     blocking NCCL wait does; the caller's stream then needs no wait.
//   getFuture(): completed when taken, as NCCL's is at the launch: its
//     events order its waiters after the operation, and its callbacks run
//     at once on the caller's thread (CollectiveWork.h).
//   comm thread (one per backend): ends profiler ranges, off the stream
//     workers.
//   checked collectives (on request): the kernel first compares, across
//     ranks, what each rank called (CollectiveCheck.cpp).
//
// The collectives' entry points are in ProcessGroupMydev.cpp; how an
// operation is ordered, launched and ended, in CollectiveLaunch.cpp.
#pragma once

#include "../core/Event.h"
#include "../core/Stream.h"
#include "CollectiveWork.h"
#include "CommThread.h"

#include <mydev/host_task.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace torch_mydev {

// An operation's call into gloo, given CPU tensors over the device memory.
using GlooCall = std::function<c10::intrusive_ptr<c10d::Work>(std::vector<at::Tensor>& host_inputs,
                                                              std::vector<at::Tensor>& host_outputs)>;

// How an operation's call into gloo is made (collective()).
struct CallForm {
  bool outputs_are_inputs = false;  // in place
  // The call's Work ends only in its wait() (which copies the results out),
  // with no future to end a host task: a kernel waits for it.
  bool ends_in_wait = false;
  c10::DeviceIndex barrier_device = -1;  // a barrier has no tensor to tell its device
  int peer = -1;                          // a send's or a receive's other rank
};

// Both classes are bound with pybind11, whose types are hidden: so are they.
#define MCCL_HIDDEN __attribute__((visibility("hidden")))

// mccl's options: c10d's own, made copyable from Python, since split_group
// deep-copies the parent's options for the new group (torch 2.13 binds a
// __deepcopy__ only for NCCL's).
struct MCCL_HIDDEN MydevOptions final : c10d::Backend::Options {
  explicit MydevOptions(std::chrono::milliseconds timeout) : Options("mccl", timeout) {}
};

// What every rank's call of a collective must agree on (CollectiveCheck.cpp):
// the call, and of its tensors as much as each rank may not choose alone.
struct AgreedCall {
  const char* name;
  const c10d::ReduceOp* reduction = nullptr;
  int64_t root = -1;
};
enum class Agreed { kDtypes, kCounts, kShapes };  // kCounts: dtypes and element counts
struct AgreedTensors {
  const std::vector<at::Tensor>& tensors;
  Agreed what;
};

class ProcessGroupMydev;

// What a checked call compares across ranks (CollectiveCheck.cpp): empty when
// collectives are not checked. The launch takes it. A call this rank refuses
// after describing it (bad arguments, raised at the call) drops it untaken:
// the call then still takes its place in the check, as a refusal, so that
// the other ranks report it instead of pairing their call with this rank's
// next one, and every rank stays in step.
class MCCL_HIDDEN CallRecord {
 public:
  CallRecord() = default;  // unchecked: sends, receives, a group that does not check
  CallRecord(ProcessGroupMydev* refuses_through, std::string text)
      : group_(refuses_through), text_(std::move(text)) {}
  CallRecord(CallRecord&& other) noexcept : group_(other.group_), text_(std::move(other.text_)) {
    other.group_ = nullptr;
    other.text_.clear();
  }
  CallRecord& operator=(CallRecord&&) = delete;
  ~CallRecord();

  std::string take() {
    group_ = nullptr;
    return std::move(text_);
  }

 private:
  ProcessGroupMydev* group_ = nullptr;
  std::string text_;
};

class MCCL_HIDDEN ProcessGroupMydev final : public c10d::Backend {
 public:
  ProcessGroupMydev(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size, std::chrono::milliseconds timeout,
                    bool check_collectives)
      : Backend(rank, size), gloo_(std::move(gloo)), timeout_(timeout), check_collectives_(check_collectives) {}

  // Gloo goes before the Works kept after a failure: an aborted receive's
  // buffer must outlive the connections that could still deliver into it.
  ~ProcessGroupMydev() override {
    stopThreads();
    gloo_.reset();
  }

  void shutdown() override;
  void abort() override;

  const std::string getBackendName() const override { return "mccl"; }
  c10::intrusive_ptr<Backend::Options> getBackendOptions() override;

  // _coalescing_manager(device=...): the collectives issued from
  // startCoalescing on (torch issues one coalesced form for the block) end in
  // the Work endCoalescing returns, null when there were none (as NCCL's).
  // Collectives run in order on the comm stream, so theirs is the last one's
  // (torch's coalescing block takes no sends or receives, which run on
  // streams of their own).
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  // split_group (and a DeviceMesh built with device_id=): gloo splits its own
  // group, and the new mccl backend drives the part; ranks outside it get none.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                    const c10::intrusive_ptr<Backend::Options>& opts) override;

  // The count of collectives issued, which TORCH_DISTRIBUTED_DEBUG=DETAIL's
  // wrapper compares across ranks (with shapes, dtypes and ops) to report a
  // mismatched collective before it reaches gloo.
  // Sends and receives are not counted: ranks need not make the same ones.
  void setSequenceNumberForGroup() override { sequence_number_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return sequence_number_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  // Entry points (ProcessGroupMydev.cpp) into the launch (CollectiveLaunch.cpp).
  c10::intrusive_ptr<c10d::Work> inPlace(c10d::OpType type, const char* title, CallRecord record,
                                         std::vector<at::Tensor>& tensors, GlooCall call);
  c10::intrusive_ptr<c10d::Work> collective(c10d::OpType type, const char* title, CallRecord record,
                                            std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs,
                                            GlooCall call, CallForm form = {});

  // The check, in CollectiveCheck.cpp: the record of a call, its exchange
  // with the other ranks', which returns the mismatch (null if every rank
  // made the same call), and the place in the check of a refused call.
  friend class CallRecord;
  CallRecord describeCall(const AgreedCall& call, std::initializer_list<AgreedTensors> tensors);
  std::exception_ptr compareAcrossRanks(const std::string& record);
  void takePlaceOfRefusedCall(std::string record) noexcept;

  // The launch, in CollectiveLaunch.cpp.
  static void settle(const std::vector<c10::intrusive_ptr<CollectiveWork>>& works);
  void launchInOrder(const c10::intrusive_ptr<CollectiveWork>& work, c10d::OpType type, const char* title,
                     CallRecord& record, const MydevStream& stream, const MydevStream& caller,
                     const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs, GlooCall call,
                     CallForm form,
                     std::vector<c10::intrusive_ptr<CollectiveWork>>& finished);
  void orderAfterEarlierOperations(const CollectiveWork& work, bool point_to_point);
  void launchOnStream(const c10::intrusive_ptr<CollectiveWork>& work, const char* title, std::string record,
                      const MydevStream& stream, const std::vector<at::Tensor>& inputs,
                      const std::vector<at::Tensor>& outputs, GlooCall call, bool outputs_are_inputs);
  bool startOnHost(const c10::intrusive_ptr<CollectiveWork>& work, c10d::OpType type, const MydevStream& stream,
                   const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                   const GlooCall& call, bool outputs_are_inputs);
  void transferEnded(CollectiveWork* work, std::exception_ptr failure);
  static bool readableByGloo(const std::vector<at::Tensor>& tensors);
  static std::vector<at::Tensor> hostAliases(mydevHostTask_t task, const std::vector<at::Tensor>& tensors);
  static std::vector<at::Tensor> contiguous(const std::vector<at::Tensor>& tensors);
  static void copyBack(const std::vector<at::Tensor>& from, const std::vector<at::Tensor>& to);
  std::vector<c10::intrusive_ptr<CollectiveWork>> takeFinishedWorks();
  void breakGroup(std::exception_ptr error, const c10::intrusive_ptr<CollectiveWork>& work);
  std::exception_ptr brokenError();
  MydevStream streamFor(c10::DeviceIndex device, c10d::OpType type, int peer);
  bool postToCommThread(std::function<void()> task);
  static std::exception_ptr shutDownError();
  void stopThreads();
  static void stop(std::unique_ptr<CommThread> thread);

  c10::intrusive_ptr<c10d::Backend> gloo_;
  std::chrono::milliseconds timeout_;
  const bool check_collectives_;
  std::atomic<uint64_t> sequence_number_{0};
  std::atomic<c10::DeviceIndex> last_device_{-1};
  std::mutex launch_mutex_;
  // Under launch_mutex_:
  bool closed_ = false;
  MydevEvent inputs_ready_;  // recorded again for each operation
  std::vector<c10::intrusive_ptr<CollectiveWork>> in_flight_;
  c10::intrusive_ptr<CollectiveWork> last_collective_;
  bool coalescing_ = false;
  c10::intrusive_ptr<CollectiveWork> last_coalesced_;
  std::mutex mutex_;
  std::map<c10::DeviceIndex, MydevStream> comm_streams_;  // collectives
  // Sends and receives: (device, peer, whether it sends).
  std::map<std::tuple<c10::DeviceIndex, int, bool>, MydevStream> peer_streams_;
  std::unique_ptr<CommThread> comm_thread_;
  bool comm_thread_retired_ = false;
  bool streams_retired_ = false;  // by stopThreads, which destroyed them
  std::exception_ptr broken_;
  std::vector<c10::intrusive_ptr<CollectiveWork>> kept_after_failure_;
};

}  // namespace torch_mydev
