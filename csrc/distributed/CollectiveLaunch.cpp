// How an mccl operation runs: ordered after the operations before it and
// after its inputs' producers, then launched on its stream as a kernel, or
// handed to gloo at once as a host task of the stream; how it ends, how a
// failure breaks the group, and how the backend's threads stop.
#include "ProcessGroupMydev.h"

#include "../aten/DeviceTensorRef.h"
#include "../aten/KernelLaunch.h"
#include "../core/Exception.h"
#include "../python/Gil.h"

#include <ATen/MemoryOverlap.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <iterator>
#include <optional>

namespace py = pybind11;

namespace torch_mydev {

namespace {

using c10d::OpType;

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

// Copying a result into a tensor whose elements share memory fails after the
// transfer succeeded, which breaks the group; refused at the call, as NCCL
// refuses tensors that are not contiguous.
void checkWritable(const std::vector<at::Tensor>& outputs, const char* name) {
  for (const at::Tensor& output : outputs) {
    TORCH_CHECK(at::has_internal_overlap(output) != at::MemOverlap::Yes, "mccl: ", name,
                " cannot write into a tensor whose elements share memory (an expanded tensor): pass a contiguous one");
  }
}

// Gloo computes in these dtypes (and in complex ones, as pairs of reals,
// but for gather, which torch 2.13's gloo does not view as reals); it
// refuses others only once its thread runs the collective, where the
// refusal cannot be told from a failed transfer, which breaks the group.
// Refused here, at the call, they leave the group usable. Sends, receives,
// broadcasts and all_gather_into_tensor move bytes, of any dtype.
void checkGlooDtypes(const std::vector<at::Tensor>& tensors, OpType type) {
  if (c10d::isP2POp(type) || type == OpType::BROADCAST || type == OpType::_ALLGATHER_BASE) {
    return;
  }
  for (const at::Tensor& tensor : tensors) {
    TORCH_CHECK_TYPE(!(type == OpType::GATHER && tensor.is_complex()),
                     "Input tensor data type is not supported for mccl process group: ", tensor.scalar_type(),
                     " (gloo, its transport, does not gather complex tensors)");
    switch (tensor.scalar_type()) {
      case at::kFloat:
      case at::kDouble:
      case at::kHalf:
      case at::kBFloat16:
      case at::kChar:
      case at::kByte:
      case at::kBool:
      case at::kInt:
      case at::kLong:
      case at::kComplexFloat:
      case at::kComplexDouble:
        break;
      default:
        TORCH_CHECK_TYPE(false, "Input tensor data type is not supported for mccl process group: ",
                         tensor.scalar_type());
    }
  }
}

// refusedByGloo (below): which operations' refusals leave the group usable.
// Not gather's and scatter's (gloo checks their lists on the root only), nor
// sends' and receives' (gloo starts their I/O inside the call).
bool refusalLeavesGroupUsable(OpType type) {
  switch (type) {
    case OpType::SEND:
    case OpType::RECV:
    case OpType::RECVANYSOURCE:
    case OpType::GATHER:
    case OpType::SCATTER:
      return false;
    default:
      return true;
  }
}

bool glooFutureCompletes(OpType type) {
  switch (type) {
    case OpType::ALLREDUCE:
    case OpType::BROADCAST:
    case OpType::REDUCE:
    case OpType::ALLGATHER:
    case OpType::_ALLGATHER_BASE:
    case OpType::GATHER:
    case OpType::SCATTER:
    case OpType::ALLTOALL_BASE:
    case OpType::BARRIER:
      return true;
    default:
      return false;
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::collective(
    OpType type, const char* title, CallRecord record, std::vector<at::Tensor> inputs,
    std::vector<at::Tensor> outputs, GlooCall call, CallForm form) {
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  const c10::Device device = type == OpType::BARRIER ? c10::Device(c10::DeviceType::PrivateUse1, form.barrier_device)
                                                     : deviceOfCollective(all, title);
  checkWritable(outputs, title);
  checkGlooDtypes(all, type);
  const MydevStream caller = getCurrentMydevStream(device.index());
  const MydevStream stream = streamFor(device.index(), type, form.peer);
  auto work = c10::make_intrusive<CollectiveWork>(rank_, type, title, inputs, outputs, device, stream);
  // The Works of finished operations are settled and released after the
  // lock, on this thread (releasing a tensor may need the GIL).
  std::vector<c10::intrusive_ptr<CollectiveWork>> finished;
  try {
    launchInOrder(work, type, title, record, stream, caller, inputs, outputs, std::move(call), form,
                  finished);
  } catch (...) {
    settle(finished);
    throw;
  }
  settle(finished);
  return work;
}

void ProcessGroupMydev::settle(const std::vector<c10::intrusive_ptr<CollectiveWork>>& works) {
  for (const c10::intrusive_ptr<CollectiveWork>& work : works) {
    work->settle();
  }
}

// Launches are ordered by launch_mutex_: the comm stream then calls gloo in
// the order the collectives were issued, as gloo's tags need, even when
// several threads issue them.
void ProcessGroupMydev::launchInOrder(
    const c10::intrusive_ptr<CollectiveWork>& work, OpType type, const char* title, CallRecord& call_record,
    const MydevStream& stream, const MydevStream& caller, const std::vector<at::Tensor>& inputs,
    const std::vector<at::Tensor>& outputs, GlooCall call, CallForm form,
    std::vector<c10::intrusive_ptr<CollectiveWork>>& finished) {
  const bool outputs_are_inputs = form.outputs_are_inputs;
  const bool point_to_point = c10d::isP2POp(type);
  std::lock_guard<std::mutex> launch_lock(launch_mutex_);
  if (coalescing_) {
    last_coalesced_ = work;  // its failure too, should the group be closed or broken
  }
  if (closed_) {
    (void)call_record.take();  // not refused: every later call fails alike
    work->endedOnHost(shutDownError());
    return;
  }
  // Ended here, not by a kernel that would find the group broken: a future
  // taken right after the launch (DDP's) then carries the failure.
  if (std::exception_ptr broken = brokenError()) {
    (void)call_record.take();
    work->endedOnHost(broken);
    return;
  }
  finished = takeFinishedWorks();
  // The inputs' producers, on the caller's stream, come first.
  inputs_ready_.record(caller);
  inputs_ready_.block(stream);
  orderAfterEarlierOperations(*work, point_to_point);
  // Every tensor's memory is marked as used on the stream. The Work holds the
  // tensors (in_flight_) until the stream is past the operation, but not their
  // memory: a storage resized to nothing (as FSDP frees one) or a tensor set_
  // to other memory would hand the block back to the caller's stream while
  // the collective may still write it.
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
  // From here on a failure breaks the group instead of refusing the call.
  std::string record = call_record.take();
  // Held before the launch: the kernel has the Work by pointer.
  in_flight_.push_back(work);
  try {
    // A checked collective runs as a kernel, which compares it across ranks first.
    if (!record.empty()) {
      record = "#" + std::to_string(sequence_number_.load()) + " " + record;
      launchOnStream(work, title, std::move(record), stream, inputs, outputs, std::move(call),
                     outputs_are_inputs);
    } else if (form.ends_in_wait || !startOnHost(work, type, stream, inputs, outputs, call, outputs_are_inputs)) {
      launchOnStream(work, title, {}, stream, inputs, outputs, std::move(call), outputs_are_inputs);
    }
  } catch (...) {
    // This rank may have skipped a collective the others make: as after a
    // failed one, the group is unusable.
    breakGroup(std::current_exception(), work);
    work->endedOnHost(std::current_exception());
    throw;
  }
  last_device_ = stream.unwrap().device_index();
  if (!point_to_point) {
    ++sequence_number_;
    last_collective_ = work;
  }
}

// Collectives run in the order they were issued on their device's comm
// stream, and, across devices, each comm stream waits for the other's last
// collective, so that gloo sees them in issue order. Sends and receives run,
// as NCCL's unbatched ones, on streams of their own per peer, so that a
// receive waiting for its peer holds up neither the collectives issued after
// it (which the peer may make before it sends) nor the operations with other
// peers. Unlike NCCL's, a peer's sends and receives have a stream each, so
// that a ring exchange issued in either order cannot deadlock. Where an
// operation in flight on another stream writes memory the new one touches,
// or reads memory it writes, the new one waits for it: NCCL would race there
// (a collective on a tensor an irecv nobody waited for is filling), mccl
// gives the numbers of the order the calls were made in.
void ProcessGroupMydev::orderAfterEarlierOperations(const CollectiveWork& work, bool point_to_point) {
  const MydevStream& stream = work.stream();
  if (!point_to_point && last_collective_ && !(last_collective_->stream() == stream)) {
    last_collective_->orderBefore(stream);
  }
  for (const c10::intrusive_ptr<CollectiveWork>& earlier : in_flight_) {
    if (!(earlier->stream() == stream) && earlier->mustPrecede(work)) {
      earlier->orderBefore(stream);
    }
  }
}

// An operation as a kernel on its stream, launched from the caller's
// thread: gloo reads and writes the device memory in place, through the
// CPU aliases every kernel gets of it (KernelMemory), so no copies (but for
// a tensor that is not contiguous, which gloo cannot take) and no other
// thread of mccl's on the way. A transport error is handed to the Work,
// not raised as a device fault, and breaks the group.
void ProcessGroupMydev::launchOnStream(
    const c10::intrusive_ptr<CollectiveWork>& work, const char* title, std::string record,
    const MydevStream& stream, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
    GlooCall call, bool outputs_are_inputs) {
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
  // or where the runtime retires a kernel). If a profiler range is open, the
  // kernel hands the Work to the comm thread; otherwise no thread of mccl's
  // wakes: the runtime wakes the caller's waits.
  // Never run before the launch returns, even under deterministic mode:
  // gloo reads no ATen setting, and a send would wait for its peer.
  launchKernelReadingNoSettings(title, stream,
               [this, work = work.get(), record = std::move(record), input_refs = std::move(input_refs),
                output_refs = std::move(output_refs), call = std::move(call), outputs_are_inputs] {
                 std::exception_ptr failure = brokenError();
                 if (!failure) {
                   KernelMemory memory;
                   std::vector<at::Tensor> host_in;
                   std::vector<at::Tensor> host_out;
                   std::vector<at::Tensor> gloo_in;
                   std::vector<at::Tensor> gloo_out;
                   c10::intrusive_ptr<c10d::Work> transfer;
                   bool refused = false;
                   try {
                     // Every rank found the mismatch and skips the collective alike.
                     if (std::exception_ptr mismatch = record.empty() ? nullptr : compareAcrossRanks(record)) {
                       refused = true;
                       std::rethrow_exception(mismatch);
                     }
                     for (const DeviceTensorRef& ref : input_refs) {
                       host_in.push_back(memory.map(ref));
                     }
                     for (const DeviceTensorRef& ref : output_refs) {
                       host_out.push_back(memory.map(ref));
                     }
                     gloo_in = contiguous(host_in);
                     gloo_out = outputs_are_inputs ? gloo_in : contiguous(host_out);
                     refused = refusalLeavesGroupUsable(work->retrieveOpType());
                     transfer = call(gloo_in, gloo_out);
                     refused = false;
                     TORCH_CHECK(transfer, "mccl: gloo returned no Work");
                     work->holdTransfer(transfer);
                     // An aborted send or receive returns false. Its peer may
                     // still deliver into gloo's buffer, which gloo's
                     // connections reach only by a weak pointer: the Work,
                     // which the broken group keeps, keeps the buffer.
                     if (!transfer->wait(timeout_)) {
                       std::rethrow_exception(shutDownError());
                     }
                     work->holdTransfer(nullptr);
                     copyBack(gloo_out, outputs_are_inputs ? host_in : host_out);
                   } catch (...) {
                     failure = std::current_exception();
                     if (!refused) {
                       breakGroup(failure, c10::intrusive_ptr<CollectiveWork>::reclaim_copy(work));
                     }
                   }
                 }
                 transferEnded(work, failure);
               });
  work->recordEnd();
}

// The comm thread is retired only after every operation ended (stopThreads).
void ProcessGroupMydev::transferEnded(CollectiveWork* work, std::exception_ptr failure) {
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
// handed over (gloo of torch 2.13: not reduce-scatter, whose Work finishes
// only in wait() and has no future, nor sends and receives).
// Profiled operations (a kernel gives the profiler its device row) and
// tensors gloo cannot take as they are go through a kernel, as do (decided
// by launchInOrder) checked collectives and calls whose Work ends only in
// its wait() (CallForm::ends_in_wait).
// Returns false, having done nothing, where a kernel must run it.
bool ProcessGroupMydev::startOnHost(
    const c10::intrusive_ptr<CollectiveWork>& work, OpType type, const MydevStream& stream,
    const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs, const GlooCall& call,
    bool outputs_are_inputs) {
  if (!glooFutureCompletes(type) || work->profiled() || !readableByGloo(inputs) || !readableByGloo(outputs) ||
      brokenError()) {
    return false;
  }
  mydevHostTask_t task = nullptr;
  if (mydevHostTaskBegin(stream.handle(), &task) != mydevSuccess) {
    return false;
  }
  // Runs on gloo's thread, or here if gloo is done already or refused the
  // call: under no lock of mccl's but launch_mutex_, which ending takes none
  // of. The Work ends first, as in a kernel. The task ends whatever happens:
  // left open, it would hold the stream, and everything after it, forever
  // (a Work that could not be ended then fails at its wait()).
  auto end = [this, work = work.get(), task](std::exception_ptr failure, bool breaks_group) {
    try {
      if (failure && breaks_group) {
        breakGroup(failure, c10::intrusive_ptr<CollectiveWork>::reclaim_copy(work));
      }
      transferEnded(work, failure);
    } catch (const std::exception& error) {
      TORCH_WARN("mccl: ending a collective failed: ", error.what());
    }
    (void)mydevHostTaskEnd(task);
  };
  c10::intrusive_ptr<c10d::Work> transfer;
  bool refused = false;
  try {
    std::vector<at::Tensor> host_in = hostAliases(task, inputs);
    std::vector<at::Tensor> host_out = outputs_are_inputs ? host_in : hostAliases(task, outputs);
    refused = refusalLeavesGroupUsable(type);
    transfer = call(host_in, host_out);
    refused = false;
    TORCH_CHECK(transfer, "mccl: gloo returned no Work");
  } catch (...) {
    end(std::current_exception(), /*breaks_group=*/!refused);
    work->recordEnd();
    return true;
  }
  try {
    transfer->getFuture()->addCallback([end](c10::ivalue::Future& done) {
      end(done.hasError() ? done.exception_ptr() : nullptr, /*breaks_group=*/true);
    });
  } catch (...) {
    end(std::current_exception(), /*breaks_group=*/true);
  }
  work->recordEnd();
  return true;
}

bool ProcessGroupMydev::readableByGloo(const std::vector<at::Tensor>& tensors) {
  return std::all_of(tensors.begin(), tensors.end(), [](const at::Tensor& tensor) {
    return tensor.layout() == c10::kStrided && tensor.is_contiguous() && !tensor.is_conj() && !tensor.is_neg() &&
           tensor.numel() > 0;
  });
}

// CPU tensors over the device memory, which the host task maps for gloo.
std::vector<at::Tensor> ProcessGroupMydev::hostAliases(mydevHostTask_t task, const std::vector<at::Tensor>& tensors) {
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
std::vector<at::Tensor> ProcessGroupMydev::contiguous(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> result;
  result.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    result.push_back(tensor.contiguous());
  }
  return result;
}

void ProcessGroupMydev::copyBack(const std::vector<at::Tensor>& from, const std::vector<at::Tensor>& to) {
  for (size_t i = 0; i < to.size(); ++i) {
    if (!from[i].is_same(to[i])) {
      to[i].copy_(from[i]);
    }
  }
}

// Under launch_mutex_: the Works whose kernels are done, which the caller
// releases once the lock is free (releasing a tensor may need the GIL).
std::vector<c10::intrusive_ptr<CollectiveWork>> ProcessGroupMydev::takeFinishedWorks() {
  std::vector<c10::intrusive_ptr<CollectiveWork>> finished;
  auto still_running = std::partition(in_flight_.begin(), in_flight_.end(),
                                      [](const c10::intrusive_ptr<CollectiveWork>& work) { return !work->passed(); });
  std::move(still_running, in_flight_.end(), std::back_inserter(finished));
  in_flight_.erase(still_running, in_flight_.end());
  return finished;
}

// refusedByGloo: a collective gloo refuses when it is called (tensors of
// the wrong sizes) has sent and received nothing, and gloo's own group stays
// usable after it, as it does for CPU tensors: it fails alone, and does not
// break the group. Every rank that made the same call refused it alike (a
// refusal on one rank only would leave the ranks' collectives paired
// differently, as with gloo itself). Anything else that fails (mapping the
// memory, a copy, the transfer) breaks the group.
//
// After a failed collective (a dead peer, a timeout) gloo may still write
// into its tensors, and the ranks no longer agree on what ran: as NCCL
// aborts its communicator, the group fails every later collective, and the
// failed one's tensors are kept so that their memory is never reused.
void ProcessGroupMydev::breakGroup(std::exception_ptr error, const c10::intrusive_ptr<CollectiveWork>& work) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!broken_) {
    broken_ = error;
  }
  kept_after_failure_.push_back(work);
}

// What every operation after a failed one fails with (null while none failed).
std::exception_ptr ProcessGroupMydev::brokenError() {
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

// Dedicated streams, not the pool's, so that destroy_process_group ends
// their workers (stopThreads). An operation issued once they are gone ends
// at its launch; the default stream holds its end event.
MydevStream ProcessGroupMydev::streamFor(c10::DeviceIndex device, OpType type, int peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (streams_retired_) {
    return getDefaultMydevStream(device);
  }
  const auto made_on_first_use = [device](auto& streams, const auto& key) {
    auto found = streams.find(key);
    if (found == streams.end()) {
      found = streams.emplace(key, createDedicatedStream(/*priority=*/-1, device)).first;
    }
    return found->second;
  };
  if (c10d::isP2POp(type)) {
    return made_on_first_use(peer_streams_, std::make_tuple(device, peer, type == OpType::SEND));
  }
  return made_on_first_use(comm_streams_, device);
}

// Ends profiler ranges, off the stream workers.
// Starts the thread on first use; refuses once stopThreads has retired it.
bool ProcessGroupMydev::postToCommThread(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_thread_retired_) {
    return false;
  }
  if (!comm_thread_) {
    comm_thread_ = std::make_unique<CommThread>("mccl comm");
  }
  return comm_thread_->post(std::move(task));
}

std::exception_ptr ProcessGroupMydev::shutDownError() {
  return backendError("mccl: the process group was shut down or aborted");
}

void ProcessGroupMydev::stopThreads() {
  // The queued tasks end profiler ranges, whose release may need the GIL,
  // which the caller (destroy_process_group, a dealloc) may hold.
  std::optional<py::gil_scoped_release> without_gil;
  if (holdsGil()) {
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
    streams_retired_ = true;
    for (const auto& entry : comm_streams_) {
      streams.push_back(entry.second);
    }
    for (const auto& entry : peer_streams_) {
      streams.push_back(entry.second);
    }
    comm_streams_.clear();
    peer_streams_.clear();
  }
  // The kernels catch their own errors; what a stream still reports is a
  // failure passed from a caller's stream (a kernel that produced an input),
  // handed on as a warning: a destructor calls this, which must not throw.
  for (const MydevStream& stream : streams) {
    if (mydevStreamSynchronize(stream.handle()) != mydevSuccess) {
      TORCH_WARN("mccl: ", mydevGetLastErrorMessage());
    }
  }
  std::vector<c10::intrusive_ptr<CollectiveWork>> finished;
  {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    finished = takeFinishedWorks();
    last_collective_.reset();
  }
  settle(finished);
  finished.clear();
  for (const MydevStream& stream : streams) {
    try {
      destroyDedicatedStream(stream);
    } catch (const std::exception& error) {
      TORCH_WARN("mccl: ending a comm stream failed: ", error.what());
    }
  }
  std::unique_ptr<CommThread> comm;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    comm_thread_retired_ = true;
    comm = std::move(comm_thread_);
  }
  stop(std::move(comm));  // its queued tasks run first
}

void ProcessGroupMydev::stop(std::unique_ptr<CommThread> thread) {
  if (thread && thread->runsHere()) {
    CommThread::stopFromWithin(std::move(thread));
  }
  // Otherwise the destructor joins it.
}

}  // namespace torch_mydev
