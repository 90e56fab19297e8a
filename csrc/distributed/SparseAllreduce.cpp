// all_reduce of sparse mydev tensors (c10d::allreduce_ for SparsePrivateUse1).
//
// mccl reduces dense device memory only. torch registers c10d's operators
// for SparseCPU and SparseCUDA but not for a PrivateUse1 device's sparse key,
// so without this kernel the call reached the generic fallback, which ran
// gloo's sparse all_reduce on host copies and returned its result without
// writing it back: the tensor stayed as it was, silently. Here the group's
// CPU backend (gloo, which reduces sparse CPU tensors: concatenating every
// rank's indices and values, then coalescing) reduces host copies, and the
// result replaces each tensor's indices and values, as gloo does in place for
// CPU tensors. NCCL refuses sparse tensors; a group without a CPU backend
// refuses them here too, naming what to do instead.
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/SparseTensorUtils.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/library.h>

#include <chrono>
#include <tuple>
#include <vector>

namespace torch_mydev {

namespace {

std::tuple<std::vector<at::Tensor>, c10::intrusive_ptr<c10d::Work>> allreduceSparse(
    at::TensorList tensors, const c10::intrusive_ptr<c10d::ProcessGroup>& process_group,
    const c10::intrusive_ptr<c10d::ReduceOp>& reduce_op, const std::optional<at::Tensor>& sparse_indices,
    bool async_op, int64_t timeout) {
  TORCH_CHECK(process_group->hasBackendForDeviceType(c10::DeviceType::CPU),
              "mccl: all_reduce of sparse mydev tensors runs on the group's CPU backend (gloo reduces sparse "
              "tensors; mccl, as NCCL, reduces dense ones), and this group has none: create it with "
              "backend=\"cpu:gloo,mydev:mccl\", or reduce dense tensors (Tensor.to_dense())");
  for (const at::Tensor& tensor : tensors) {
    TORCH_CHECK(tensor.layout() == c10::kSparse, "mccl: all_reduce of sparse tensors takes COO tensors, got ",
                tensor.layout());
  }
  std::vector<at::Tensor> host;
  host.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    host.push_back(tensor.to(at::kCPU));
  }
  c10d::AllreduceOptions options;
  options.reduceOp = *reduce_op;
  options.timeout = std::chrono::milliseconds(timeout);
  options.asyncOp = async_op;
  options.sparseIndices = sparse_indices;
  c10::intrusive_ptr<c10d::Work> work = process_group->getBackend(c10::DeviceType::CPU)->allreduce(host, options);
  // The device tensors take the result before the call returns, so a later
  // wait() has nothing left to do.
  work->wait();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& reduced = host[i];
    const at::Tensor& target = tensors[i];
    at::sparse::get_sparse_impl(target)->set_indices_and_values_unsafe(reduced._indices().to(target.device()),
                                                                        reduced._values().to(target.device()));
    at::sparse::get_sparse_impl(target)->set_coalesced(reduced.is_coalesced());
    target.unsafeGetTensorImpl()->bump_version();  // as gloo's in-place copy_ into a CPU tensor
  }
  return {tensors.vec(), work};
}

}  // namespace

TORCH_LIBRARY_IMPL(c10d, SparsePrivateUse1, m) { m.impl("allreduce_", allreduceSparse); }

}  // namespace torch_mydev
