// A sparse tensor (COO, CSR, CSC, BSR, BSC) owns no storage of its own: it is
// a few strided member tensors plus layout metadata. The fallback runs sparse
// operators by taking device tensors apart into members, which it maps and
// adopts like any strided tensor, and assembling them again on the other side
// (on the stream worker as CPU aliases, on return as mydev tensors).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Layout.h>
#include <c10/util/SmallVector.h>

#include <vector>

namespace torch_mydev {

bool isSparseLayout(c10::Layout layout);

// What a sparse tensor is beyond its members.
struct SparseGeometry {
  c10::Layout layout = c10::kSparse;
  c10::SmallVector<int64_t, 5> sizes;
  int64_t sparse_dim = 0;  // COO only; compressed layouts derive it from the members
  int64_t dense_dim = 0;
  bool coalesced = false;  // COO only
  c10::ScalarType dtype = c10::ScalarType::Undefined;
};

SparseGeometry sparseGeometry(const at::Tensor& sparse);

// COO: {indices, values}; compressed layouts: {compressed indices, plain indices, values}.
std::vector<at::Tensor> sparseMembers(const at::Tensor& sparse);

// A new sparse tensor over `members`, on their device.
at::Tensor assembleSparse(const SparseGeometry& geometry, const std::vector<at::Tensor>& members);

// Points an existing sparse tensor at new members (a sparse in-place or out=
// operator ran on an alias of it).
void replaceSparseMembers(const at::Tensor& target, const SparseGeometry& geometry,
                          const std::vector<at::Tensor>& members);

}  // namespace torch_mydev
