#include "SparseMembers.h"

#include <ATen/SparseCsrTensorImpl.h>
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_sparse_compressed_tensor_unsafe.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>

namespace torch_mydev {

bool isSparseLayout(c10::Layout layout) {
  switch (layout) {
    case c10::kSparse:
    case c10::kSparseCsr:
    case c10::kSparseCsc:
    case c10::kSparseBsr:
    case c10::kSparseBsc:
      return true;
    default:
      return false;
  }
}

SparseGeometry sparseGeometry(const at::Tensor& sparse) {
  SparseGeometry geometry;
  geometry.layout = sparse.layout();
  geometry.sizes.assign(sparse.sizes().begin(), sparse.sizes().end());
  geometry.dtype = sparse.scalar_type();
  if (geometry.layout == c10::kSparse) {
    geometry.sparse_dim = sparse.sparse_dim();
    geometry.dense_dim = sparse.dense_dim();
    geometry.coalesced = sparse.is_coalesced();
  }
  return geometry;
}

std::vector<at::Tensor> sparseMembers(const at::Tensor& sparse) {
  if (sparse.layout() == c10::kSparse) {
    const at::SparseTensorImpl* impl = at::sparse::get_sparse_impl(sparse);
    return {impl->indices(), impl->values()};
  }
  const at::SparseCsrTensorImpl* impl = at::sparse_csr::get_sparse_csr_impl(sparse);
  return {impl->compressed_indices(), impl->plain_indices(), impl->values()};
}

at::Tensor assembleSparse(const SparseGeometry& geometry, const std::vector<at::Tensor>& members) {
  const at::Tensor& values = members.back();
  const c10::TensorOptions options = values.options().dtype(geometry.dtype).layout(geometry.layout);
  if (geometry.layout == c10::kSparse) {
    return at::_sparse_coo_tensor_with_dims_and_tensors(geometry.sparse_dim, geometry.dense_dim, geometry.sizes,
                                                        members[0], values, options, geometry.coalesced);
  }
  return at::_sparse_compressed_tensor_unsafe(members[0], members[1], values, geometry.sizes, options);
}

void replaceSparseMembers(const at::Tensor& target, const SparseGeometry& geometry,
                          const std::vector<at::Tensor>& members) {
  if (geometry.layout == c10::kSparse) {
    at::SparseTensorImpl* impl = at::sparse::get_sparse_impl(target);
    impl->raw_resize_(geometry.sparse_dim, geometry.dense_dim, geometry.sizes);
    impl->set_indices_and_values_unsafe(members[0], members[1]);
    impl->set_coalesced(geometry.coalesced);
    return;
  }
  at::sparse_csr::get_sparse_csr_impl(target)->set_member_tensors(members[0], members[1], members[2],
                                                                  c10::IntArrayRef(geometry.sizes));
}

}  // namespace torch_mydev
