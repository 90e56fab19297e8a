// mccl's entry points: each collective of c10d::Backend as a call into gloo
// on CPU tensors over the device memory (a GlooCall), which the launch
// (CollectiveLaunch.cpp) runs in order on the operation's stream; and the
// Python binding. What mccl is: ProcessGroupMydev.h.
#include "ProcessGroupMydev.h"

#include "../core/Device.h"
#include "../python/Gil.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/utils/pybind.h>

#include <pybind11/chrono.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace py = pybind11;

namespace torch_mydev {

namespace {

using c10d::OpType;

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

// One-dimensional views of contiguous tensors. The one-tensor collectives
// take any shapes of the right sizes, as NCCL's do (a (world size, n)
// output of an all-gather), where gloo wants the first dimension split.
std::vector<at::Tensor> flatViews(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    flat.push_back(tensor.view(-1));
  }
  return flat;
}

// The tensors' bytes, for collectives that only move data: gloo then moves
// any dtype (float8 included, which it has no type for, as NCCL moves float8
// as bytes), and the coalesced forms tensors of several dtypes (gloo packs a
// coalesced call into one buffer of the first tensor's dtype).
std::vector<at::Tensor> byteViews(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> bytes = flatViews(tensors);
  for (at::Tensor& flat : bytes) {
    flat = flat.view(at::kByte);
  }
  return bytes;
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

// A list all-to-all as gloo's all_to_all_single, which takes a size per peer
// (NCCL's list forms do; gloo's want one size): the inputs are sent from one
// buffer and the outputs received into another, which wait() copies out.
// So the Work ends only in its wait() (CallForm::ends_in_wait), where a
// failed transfer surfaces as such, not as a refused call.
class AllToAllThroughOneBuffer final : public c10d::Work {
 public:
  AllToAllThroughOneBuffer(c10d::Backend& gloo, std::vector<at::Tensor> outputs, const std::vector<at::Tensor>& inputs,
                           const c10d::AllToAllOptions& opts)
      : outputs_(std::move(outputs)) {
    std::vector<at::Tensor> flat_inputs;
    std::vector<int64_t> sent_splits;
    for (const at::Tensor& input : inputs) {
      flat_inputs.push_back(input.reshape(-1));
      sent_splits.push_back(input.numel());
    }
    int64_t received_count = 0;
    for (const at::Tensor& output : outputs_) {
      received_splits_.push_back(output.numel());
      received_count += output.numel();
    }
    at::Tensor sent = at::cat(flat_inputs);
    received_ = at::empty({received_count}, outputs_.front().options());
    // A copy: gloo takes the splits it is given.
    std::vector<int64_t> gloo_received_splits = received_splits_;
    transfer_ = gloo.alltoall_base(received_, sent, gloo_received_splits, sent_splits, opts);
  }

  bool wait(std::chrono::milliseconds timeout) override {
    transfer_->wait(timeout);
    const std::vector<at::Tensor> parts = received_.split_with_sizes(received_splits_);
    for (size_t peer = 0; peer < outputs_.size(); ++peer) {
      outputs_[peer].copy_(parts[peer].view(outputs_[peer].sizes()));
    }
    return true;
  }

 private:
  std::vector<at::Tensor> outputs_;
  std::vector<int64_t> received_splits_;
  at::Tensor received_;
  c10::intrusive_ptr<c10d::Work> transfer_;
};

// The list forms' tensors, as gloo's all_to_all_single sends them: one dtype.
void checkOneDtype(const char* name, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) {
  for (const auto* tensors : {&inputs, &outputs}) {
    for (const at::Tensor& tensor : *tensors) {
      TORCH_CHECK_TYPE(tensor.scalar_type() == inputs.front().scalar_type(), "mccl: ", name,
                       "'s tensors must have one dtype, got ", inputs.front().scalar_type(), " and ",
                       tensor.scalar_type());
    }
  }
}

// Gloo refuses these reductions only on its own thread, where a refusal
// cannot be told from a failed transfer and breaks the group (as NCCL, and
// torch's all_reduce for complex tensors, refuse them at the call).
void checkReduction(const char* name, const c10d::ReduceOp& op, const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& tensor : tensors) {
    const at::ScalarType dtype = tensor.scalar_type();
    switch (op.op_) {
      case c10d::ReduceOp::AVG:
        TORCH_CHECK_TYPE(at::isFloatingType(dtype) || at::isComplexType(dtype), "mccl: ", name,
                         " cannot average ", dtype, " tensors (gloo, its transport, divides in place)");
        break;
      case c10d::ReduceOp::PREMUL_SUM:
        TORCH_CHECK_TYPE(at::isFloatingType(dtype) || at::isComplexType(dtype), "mccl: ", name,
                         " with PREMUL_SUM scales by a real factor: ", dtype, " tensors cannot hold the products");
        break;
      case c10d::ReduceOp::BAND:
      case c10d::ReduceOp::BOR:
      case c10d::ReduceOp::BXOR:
        TORCH_CHECK_TYPE(at::isIntegralType(dtype, /*includeBool=*/true), "mccl: ", name,
                         ": bitwise reductions need integer or bool tensors, got ", dtype);
        break;
      case c10d::ReduceOp::MAX:
      case c10d::ReduceOp::MIN:
      case c10d::ReduceOp::PRODUCT:
        TORCH_CHECK_VALUE(!at::isComplexType(dtype), "mccl: ", name,
                          " supports only SUM, AVG and PREMUL_SUM of complex tensors, got ", dtype);
        break;
      default:
        break;
    }
  }
}

// all_to_all_single's splits of one tensor, which gloo too checks only on
// its own thread; none: equal parts.
void checkSplits(const at::Tensor& tensor, const std::vector<int64_t>& splits, int64_t ranks, const char* which) {
  TORCH_CHECK_VALUE(tensor.dim() > 0, "mccl: all_to_all_single's ", which, " needs a dimension to split");
  if (splits.empty()) {
    TORCH_CHECK_VALUE(tensor.size(0) % ranks == 0, "mccl: all_to_all_single's ", which, " of ", tensor.size(0),
                      " rows does not split equally across ", ranks, " ranks");
    return;
  }
  int64_t total = 0;
  for (const int64_t split : splits) {
    total += split;
  }
  TORCH_CHECK_VALUE(static_cast<int64_t>(splits.size()) == ranks && total == tensor.size(0), "mccl: all_to_all_single's ",
                    which, " splits ", c10::IntArrayRef(splits), " are not one per rank (", ranks, ") adding up to its ",
                    tensor.size(0), " rows");
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

// PREMUL_SUM (as NCCL has it): each rank's input scaled, then summed. An
// in-place collective scales its buffer, which the result overwrites; the
// others scale copies, leaving the caller's input as it was.
c10d::ReduceOp scaleForPremulSum(const c10d::ReduceOp& op, std::vector<at::Tensor>& inputs, bool in_place) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) {
    return op;
  }
  const auto* factor = dynamic_cast<const c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(factor != nullptr, "mccl: PREMUL_SUM without a factor");
  for (at::Tensor& input : inputs) {
    // A tensor factor is on the host already (withHostFactor).
    const at::Tensor scale = factor->tensor_factor.defined() ? factor->tensor_factor
                                                             : at::scalar_tensor(factor->double_factor);
    // A factor of one element but more dimensions than none would promote the product's dtype.
    input = in_place ? input.mul_(scale) : input.mul(scale).to(input.scalar_type());
  }
  return c10d::ReduceOp(c10d::ReduceOp::SUM);
}

// Gloo's options for a reduction: PREMUL_SUM becomes the scaling (above) and a SUM.
template <typename Options>
Options scaledForGloo(Options options, std::vector<at::Tensor>& inputs, bool in_place) {
  options.reduceOp = scaleForPremulSum(options.reduceOp, inputs, in_place);
  return options;
}

}  // namespace

// destroy_process_group: later collectives are refused, the queued ones
// finish (each bounded by the timeout), then mccl's threads end.
void ProcessGroupMydev::shutdown() {
  stopThreads();
  gloo_->shutdown();
}

// As shutdown, but the queued operations that have not reached gloo fail at
// once instead of waiting for peers that may be gone, and so does a send or
// receive waiting inside gloo. Gloo of torch 2.13 can abort nothing else: a
// collective already inside gloo still runs to its timeout.
void ProcessGroupMydev::abort() {
  // A launch holding launch_mutex_ (taken below) may need the GIL to release
  // a tensor.
  std::optional<py::gil_scoped_release> without_gil;
  if (holdsGil()) {
    without_gil.emplace();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_) {
      broken_ = shutDownError();
    }
  }
  // A send or receive waiting for its peer ends now, not at the timeout;
  // stopThreads then waits for the rest.
  std::vector<c10::intrusive_ptr<CollectiveWork>> in_flight;
  {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    in_flight = in_flight_;
  }
  for (const c10::intrusive_ptr<CollectiveWork>& work : in_flight) {
    work->abortTransfer();
  }
  stopThreads();
  gloo_->abort();
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupMydev::getBackendOptions() {
  return c10::make_intrusive<MydevOptions>(timeout_);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupMydev::split(
    const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
    const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  // A key space of its own: the group's CPU gloo splits on the same store.
  auto own_store = c10::make_intrusive<c10d::PrefixStore>("mccl", store);
  // Not gloo's own options, which its split would rewrite for the part (and
  // so for this group): gloo takes its defaults, then the timeout, which
  // bounds a collective handed to gloo directly as a kernel's wait does.
  const c10::intrusive_ptr<c10d::Backend::Options> options = opts ? opts : getBackendOptions();
  c10::intrusive_ptr<c10d::Backend> gloo_part = gloo_->split(own_store, ranks, options);
  if (!gloo_part) {
    return nullptr;
  }
  const std::chrono::milliseconds timeout = options->timeout;
  gloo_part->setTimeout(timeout);
  return c10::make_intrusive<ProcessGroupMydev>(gloo_part, gloo_part->getRank(), gloo_part->getSize(), timeout,
                                                check_collectives_);
}

void ProcessGroupMydev::startCoalescing() {
  std::lock_guard<std::mutex> lock(launch_mutex_);
  coalescing_ = true;
  last_coalesced_.reset();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::endCoalescing() {
  std::lock_guard<std::mutex> lock(launch_mutex_);
  TORCH_CHECK(coalescing_, "mccl: endCoalescing without startCoalescing");
  coalescing_ = false;
  return std::exchange(last_coalesced_, nullptr);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  CallRecord record = describeCall({"broadcast", nullptr, opts.rootRank}, {{tensors, Agreed::kShapes}});
  return inPlace(OpType::BROADCAST, "mccl:broadcast", std::move(record), tensors, [this, opts](auto& host, auto&) {
    std::vector<at::Tensor> bytes = byteViews(host);
    return gloo_->broadcast(bytes, opts);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  CallRecord record = describeCall({"all_reduce", &opts.reduceOp}, {{tensors, Agreed::kShapes}});
  checkReduction("all_reduce", opts.reduceOp, tensors);
  return inPlace(OpType::ALLREDUCE, "mccl:all_reduce", std::move(record), tensors,
                 [this, opts = withHostFactor(opts)](auto& host, auto&) {
                   return gloo_->allreduce(host, scaledForGloo(opts, host, /*in_place=*/true));
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                      const c10d::AllreduceCoalescedOptions& opts) {
  CallRecord record = describeCall({"all_reduce_coalesced", &opts.reduceOp}, {{tensors, Agreed::kShapes}});
  checkReduction("all_reduce_coalesced", opts.reduceOp, tensors);
  return inPlace(OpType::ALLREDUCE_COALESCED, "mccl:all_reduce_coalesced", std::move(record), tensors,
                 [this, opts = withHostFactor(opts)](auto& host, auto&) {
                   return gloo_->allreduce_coalesced(host, scaledForGloo(opts, host, /*in_place=*/true));
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::reduce(
    std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) {
  CallRecord record = describeCall({"reduce", &opts.reduceOp, opts.rootRank}, {{tensors, Agreed::kShapes}});
  checkReduction("reduce", opts.reduceOp, tensors);
  return inPlace(OpType::REDUCE, "mccl:reduce", std::move(record), tensors,
                 [this, opts = withHostFactor(opts)](auto& host, auto&) {
                   // Gloo reduces in every rank's buffer; NCCL leaves the
                   // other ranks' tensors as they were, so they lend gloo a copy.
                   std::vector<at::Tensor> reduced = host;
                   if (rank_ != opts.rootRank) {
                     for (at::Tensor& tensor : reduced) tensor = tensor.clone();
                   }
                   return gloo_->reduce(reduced, scaledForGloo(opts, reduced, /*in_place=*/true));
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllgatherOptions& opts) {
  std::vector<at::Tensor> flat_outputs = flatten(outputs);
  // Every rank gives the same outputs, its input's size among them.
  CallRecord record = describeCall({"all_gather"}, {{inputs, Agreed::kDtypes}, {flat_outputs, Agreed::kShapes}});
  const bool one_input = inputs.size() == 1 && outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_);
  if (one_input) {
    TORCH_CHECK_VALUE(inputs[0].numel() == outputs[0][rank_].numel(), "mccl: all_gather's input has ",
                      inputs[0].numel(), " elements, but its output for rank ", rank_, " has ",
                      outputs[0][rank_].numel());
  }
  // Decided from the outputs, which every rank gives alike, so that all take
  // the same path.
  if (one_input && std::any_of(flat_outputs.begin(), flat_outputs.end(), [&](const at::Tensor& output) {
        return output.sizes() != flat_outputs.front().sizes();
      })) {
    // Sizes that differ per rank, as NCCL takes them (gloo does not): each
    // rank's input sent to every rank.
    checkOneDtype("all_gather", inputs, flat_outputs);
    return collective(OpType::ALLGATHER, "mccl:all_gather", std::move(record), inputs, std::move(flat_outputs),
                      [this, opts](auto& host_in, auto& host_out) {
                        const std::vector<at::Tensor> sent(static_cast<size_t>(size_), host_in[0]);
                        return c10::make_intrusive<AllToAllThroughOneBuffer>(*gloo_, host_out, sent,
                                                                             c10d::AllToAllOptions{opts.timeout});
                      },
                      CallForm{/*outputs_are_inputs=*/false, /*ends_in_wait=*/true});
  }
  return collective(OpType::ALLGATHER, "mccl:all_gather", std::move(record), inputs, std::move(flat_outputs),
                    [this, opts, sizes = listSizes(outputs)](auto& host_in, auto& host_out) {
                      // The lists hold host_out's tensors: gloo fills those.
                      auto lists = regroup(host_out, sizes);
                      return gloo_->allgather(lists, host_in, opts);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::AllgatherOptions& opts) {
  std::vector<at::Tensor> inputs{input};
  std::vector<at::Tensor> outputs{output};
  CallRecord record =
      describeCall({"all_gather_into_tensor"}, {{inputs, Agreed::kCounts}, {outputs, Agreed::kCounts}});
  return collective(OpType::_ALLGATHER_BASE, "mccl:all_gather_into_tensor", std::move(record), inputs, outputs,
                    [this, opts](auto& host_in, auto& host_out) {
                      std::vector<at::Tensor> out_bytes = byteViews(host_out);
                      std::vector<at::Tensor> in_bytes = byteViews(host_in);
                      return gloo_->_allgather_base(out_bytes[0], in_bytes[0], opts);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                  std::vector<at::Tensor>& inputs,
                                                                                  const c10d::AllgatherOptions& opts) {
  CallRecord record = describeCall({"all_gather_into_tensor_coalesced"},
                                  {{inputs, Agreed::kCounts}, {outputs, Agreed::kCounts}});
  return collective(OpType::COALESCED, "mccl:all_gather_into_tensor_coalesced", std::move(record), inputs, outputs,
                    [this, opts](auto& host_in, auto& host_out) {
                      std::vector<at::Tensor> out_bytes = byteViews(host_out);
                      std::vector<at::Tensor> in_bytes = byteViews(host_in);
                      return gloo_->allgather_into_tensor_coalesced(out_bytes, in_bytes, opts);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) {
  CallRecord record = describeCall({"gather", nullptr, opts.rootRank}, {{inputs, Agreed::kShapes}});
  return collective(OpType::GATHER, "mccl:gather", std::move(record), inputs, flatten(outputs),
                    [this, opts, sizes = listSizes(outputs)](auto& host_in, auto& host_out) {
                      auto lists = regroup(host_out, sizes);
                      return gloo_->gather(lists, host_in, opts);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::scatter(std::vector<at::Tensor>& outputs,
                                                          std::vector<std::vector<at::Tensor>>& inputs,
                                                          const c10d::ScatterOptions& opts) {
  CallRecord record = describeCall({"scatter", nullptr, opts.rootRank}, {{outputs, Agreed::kShapes}});
  return collective(OpType::SCATTER, "mccl:scatter", std::move(record), flatten(inputs), outputs,
                    [this, opts, sizes = listSizes(inputs)](auto& host_in, auto& host_out) {
                      auto lists = regroup(host_in, sizes);
                      return gloo_->scatter(host_out, lists, opts);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                 std::vector<std::vector<at::Tensor>>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) {
  std::vector<at::Tensor> flat_inputs = flatten(inputs);
  CallRecord record = describeCall({"reduce_scatter", &opts.reduceOp},
                                  {{flat_inputs, Agreed::kShapes}, {outputs, Agreed::kShapes}});
  checkReduction("reduce_scatter", opts.reduceOp, flat_inputs);
  return collective(OpType::REDUCE_SCATTER, "mccl:reduce_scatter", std::move(record), std::move(flat_inputs),
                    outputs,
                    [this, opts = withHostFactor(opts), sizes = listSizes(inputs)](auto& host_in, auto& host_out) {
                      const c10d::ReduceScatterOptions gloo_opts = scaledForGloo(opts, host_in, /*in_place=*/false);
                      auto lists = regroup(host_in, sizes);
                      return gloo_->reduce_scatter(host_out, lists, gloo_opts);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                       const c10d::ReduceScatterOptions& opts) {
  std::vector<at::Tensor> inputs{input};
  std::vector<at::Tensor> outputs{output};
  CallRecord record = describeCall({"reduce_scatter_tensor", &opts.reduceOp},
                                  {{inputs, Agreed::kCounts}, {outputs, Agreed::kCounts}});
  checkReduction("reduce_scatter_tensor", opts.reduceOp, inputs);
  return collective(OpType::_REDUCE_SCATTER_BASE, "mccl:reduce_scatter_tensor", std::move(record), inputs,
                    outputs, [this, opts = withHostFactor(opts)](auto& host_in, auto& host_out) {
                      std::vector<at::Tensor> flat_in = flatViews(host_in);
                      const c10d::ReduceScatterOptions gloo_opts = scaledForGloo(opts, flat_in, /*in_place=*/false);
                      std::vector<at::Tensor> flat_out = flatViews(host_out);
                      return gloo_->_reduce_scatter_base(flat_out[0], flat_in[0], gloo_opts);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  CallRecord record = describeCall({"reduce_scatter_tensor_coalesced", &opts.reduceOp},
                                  {{inputs, Agreed::kCounts}, {outputs, Agreed::kCounts}});
  checkReduction("reduce_scatter_tensor_coalesced", opts.reduceOp, inputs);
  return collective(OpType::COALESCED, "mccl:reduce_scatter_tensor_coalesced", std::move(record), inputs, outputs,
                    [this, opts = withHostFactor(opts)](auto& host_in, auto& host_out) {
                      std::vector<at::Tensor> flat_in = flatViews(host_in);
                      std::vector<at::Tensor> flat_out = flatViews(host_out);
                      const c10d::ReduceScatterOptions gloo_opts = scaledForGloo(opts, flat_in, /*in_place=*/false);
                      return gloo_->reduce_scatter_tensor_coalesced(flat_out, flat_in, gloo_opts);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                std::vector<int64_t>& output_splits,
                                                                std::vector<int64_t>& input_splits,
                                                                const c10d::AllToAllOptions& opts) {
  std::vector<at::Tensor> inputs{input};
  std::vector<at::Tensor> outputs{output};
  // Each rank chooses its own sizes (the splits).
  CallRecord record = describeCall({"all_to_all_single"}, {{inputs, Agreed::kDtypes}, {outputs, Agreed::kDtypes}});
  checkSplits(input, input_splits, getSize(), "input");
  checkSplits(output, output_splits, getSize(), "output");
  return collective(OpType::ALLTOALL_BASE, "mccl:all_to_all_single", std::move(record), inputs, outputs,
                    [this, opts, output_splits, input_splits](auto& host_in, auto& host_out) mutable {
                      return gloo_->alltoall_base(host_out[0], host_in[0], output_splits, input_splits, opts);
                    });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::alltoall(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::AllToAllOptions& opts) {
  // Each rank chooses its own sizes.
  CallRecord record = describeCall({"all_to_all"}, {{inputs, Agreed::kDtypes}, {outputs, Agreed::kDtypes}});
  TORCH_CHECK_VALUE(inputs.size() == static_cast<size_t>(size_) && outputs.size() == static_cast<size_t>(size_),
                    "mccl: all_to_all takes a tensor per rank (", size_, "), got ", inputs.size(), " inputs and ",
                    outputs.size(), " outputs");
  checkOneDtype("all_to_all", inputs, outputs);
  return collective(OpType::ALLTOALL, "mccl:all_to_all", std::move(record), inputs, outputs,
                    [this, opts](auto& host_in, auto& host_out) {
                      return c10::make_intrusive<AllToAllThroughOneBuffer>(*gloo_, host_out, host_in, opts);
                    },
                    CallForm{/*outputs_are_inputs=*/false, /*ends_in_wait=*/true});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  // Not checked: a send pairs with one receive, not with the other ranks' calls.
  CallForm form;
  form.peer = dst_rank;
  return collective(
      OpType::SEND, "mccl:send", {}, tensors, {},
      [this, dst_rank, tag](auto& host_in, auto&) { return gloo_->send(host_in, dst_rank, tag); }, form);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  CallForm form;
  form.peer = src_rank;
  return collective(
      OpType::RECV, "mccl:recv", {}, {}, tensors,
      [this, src_rank, tag](auto&, auto& host_out) { return gloo_->recv(host_out, src_rank, tag); }, form);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::barrier(const c10d::BarrierOptions& opts) {
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
  return collective(OpType::BARRIER, "mccl:barrier", describeCall({"barrier"}, {}), {}, {}, [this, opts](auto&, auto&) {
    return gloo_->barrier(opts);
  }, CallForm{/*outputs_are_inputs=*/false, /*ends_in_wait=*/false, device});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMydev::inPlace(
    OpType type, const char* title, CallRecord record, std::vector<at::Tensor>& tensors, GlooCall call) {
  // The call gets the tensors as its inputs and as its outputs.
  return collective(type, title, std::move(record), tensors, tensors, std::move(call),
                    CallForm{/*outputs_are_inputs=*/true});
}

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
                         std::chrono::milliseconds timeout, bool check_collectives) {
               return c10::make_intrusive<ProcessGroupMydev>(gloo, rank, size, timeout, check_collectives);
             }),
             py::arg("gloo"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("check_collectives"),
             py::call_guard<py::gil_scoped_release>())
        // What split_group copies for the new group, as ProcessGroupNCCL.options.
        .def_property_readonly("options", &ProcessGroupMydev::getBackendOptions)
        // torch calls it on the ranks left out of a group split from a bound
        // default group, for NCCL, whose split needs every parent rank. Gloo's
        // split, which mccl's is, needs only the members.
        .def("perform_nocolor_split", [](ProcessGroupMydev& /*group*/, const c10::Device& /*device*/) {});
  });
}

}  // namespace torch_mydev
