// Native kernel of index_put_ (tensor[indices] = values, and index_put_ with
// accumulate), reached through PyTorch's composite index_put_ as
// _index_put_impl_.
//
// ATen's Meta kernel of _index_put_impl_ checks nothing, and the CPU kernel
// checks the indexing result's shape only as it runs; on the stream that
// would make a shape error arrive late. The checks run here, on the calling
// thread, with the CPU's messages and exception types: index count, index
// dtypes, masks against the tensor's shape, indices broadcasting together,
// values broadcasting to the indexing result, matching dtypes. Boolean and
// uint8 masks become long indices here too (nonzero is data-dependent, so this
// waits for the device, as it does on CUDA), so the kernel receives long
// indices only. A single mask with a one-element CPU value is a masked_fill_,
// as in ATen.
#include "NativeCall.h"

#include <ATen/CPUFunctions.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/TensorAdvancedIndexingUtils.h>
#include <torch/library.h>

#include <sstream>

namespace torch_mydev::native {

namespace {

using at::Tensor;
using IndexList = c10::List<std::optional<Tensor>>;

std::string definedShapes(const std::vector<Tensor>& indices) {
  std::ostringstream shapes;
  bool first = true;
  for (const Tensor& index : indices) {
    if (index.defined()) {
      shapes << (first ? "" : ", ") << index.sizes();
      first = false;
    }
  }
  return shapes.str();
}

// The shape of self[indices] for long (or int) indices, undefined for ':'.
// The defined indices broadcast together; if they are adjacent the broadcast
// shape replaces their dimensions in place, otherwise it leads, followed by
// the dimensions not indexed.
at::DimVector indexingResultShape(const Tensor& self, std::vector<Tensor> indices) {
  at::DimVector broadcast;
  bool any_defined = false;
  try {
    for (const Tensor& index : indices) {
      if (index.defined()) {
        broadcast = any_defined ? at::infer_size_dimvector(broadcast, index.sizes()) : at::DimVector(index.sizes());
        any_defined = true;
      }
    }
  } catch (const std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      definedShapes(indices));
  }
  if (!any_defined) {
    return at::DimVector(self.sizes());
  }
  indices.resize(static_cast<size_t>(self.dim()));
  at::DimVector shape;
  if (at::native::hasContiguousSubspace(indices)) {
    size_t d = 0;
    while (!indices[d].defined()) {
      shape.push_back(self.size(static_cast<int64_t>(d++)));
    }
    shape.append(broadcast.begin(), broadcast.end());
    while (d < indices.size() && indices[d].defined()) {
      ++d;
    }
    for (; d < indices.size(); ++d) {
      shape.push_back(self.size(static_cast<int64_t>(d)));
    }
  } else {
    shape = broadcast;
    for (size_t d = 0; d < indices.size(); ++d) {
      if (!indices[d].defined()) {
        shape.push_back(self.size(static_cast<int64_t>(d)));
      }
    }
  }
  return shape;
}

Tensor& indexPut(Tensor& self, const IndexList& indices, const Tensor& values, bool accumulate, bool unsafe) {
  NativeCall call("aten::_index_put_impl_", self, indices, values);
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before performing "
               "this operation. This also applies to advanced indexing e.g. tensor[indices] = tensor");
  }
  if (!accumulate) {
    auto [fill, mask] = at::native::canDispatchToMaskedFill(self, indices, values);
    if (fill) {
      return self.masked_fill_(mask, values.item());
    }
  }
  at::assert_no_overlap(self, values);
  for (const std::optional<Tensor>& index : indices) {
    if (index.has_value()) {
      at::assert_no_overlap(self, *index);
    }
  }
  at::native::checkIndexTensorTypes(indices, /*allow_int=*/true);
  std::vector<Tensor> expanded = at::native::expandTensors(self, indices, /*ensure_same_device=*/true);
  const at::DimVector result_shape = indexingResultShape(self, expanded);
  TORCH_CHECK(at::is_expandable_to(values.sizes(), result_shape), "shape mismatch: value tensor of shape ",
              values.sizes(), " cannot be broadcast to indexing result of shape ", c10::IntArrayRef(result_shape));
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), "Index put requires the source and destination dtypes "
              "match, got ", self.scalar_type(), " for the destination and ", values.scalar_type(), " for the source.");
  IndexList long_indices;
  for (const Tensor& index : expanded) {
    long_indices.push_back(index.defined() ? std::optional<Tensor>(index) : std::nullopt);
  }
  call.addChoices(accumulate, unsafe);
  call.launch([accumulate, unsafe](Tensor self, const IndexList& indices, const Tensor& values) {
    at::cpu::_index_put_impl_(self, indices, values, accumulate, unsafe);
  }, self, long_indices, values);
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("_index_put_impl_", TORCH_FN(indexPut)); }

}  // namespace torch_mydev::native
