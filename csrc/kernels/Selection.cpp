// Native kernels of selection operators that are not structured: where,
// index_select and embedding_dense_backward (embedding's forward and
// backward), masked_fill_, index_fill_, and relu (which ATen's CPU backend
// also computes as clamp_min). Shape and argument checks run on the calling
// thread, as on CPU, before the kernel is queued.
#include "NativeCall.h"

#include <ATen/CPUFunctions.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/empty.h>
#include <c10/core/WrapDimMinimal.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Scalar;
using at::Tensor;

Tensor relu(const Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  return at::clamp_min(self, 0);
}

Tensor& relu_(Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  return at::clamp_min_(self, 0);
}

at::DimVector whereShape(const Tensor& condition, const Tensor& self, const Tensor& other) {
  return at::infer_size_dimvector(condition.sizes(), at::infer_size_dimvector(self.sizes(), other.sizes()));
}

void queueWhere(NativeCall& call, const Tensor& condition, const Tensor& self, const Tensor& other,
                Tensor& out) {
  at::native::resize_output(out, whereShape(condition, self, other));
  call.launch([](const Tensor& condition, const Tensor& self, const Tensor& other,
                 Tensor out) { at::cpu::where_outf(condition, self, other, out); },
              condition, self, other, out);
}

Tensor& whereOut(const Tensor& condition, const Tensor& self, const Tensor& other, Tensor& out) {
  NativeCall call("aten::where.self_out", condition, self, other, out);
  queueWhere(call, condition, self, other, out);
  return out;
}

// The CPU's where allocates its result through a TensorIterator, whose output
// strides follow the inputs' layout (a permuted or channels_last input gives a
// permuted or channels_last result). The same iterator, built over the device
// tensors, gives the device result that geometry; it computes nothing.
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  NativeCall call("aten::where.self", condition, self, other);
  Tensor allocated_by_the_iterator;
  Tensor out = at::TensorIteratorConfig()
                   .check_all_same_dtype(false)
                   .check_all_same_device(false)
                   .declare_static_dtype_and_device(at::native::result_type(self, other),
                                                    c10::Device(c10::DeviceType::PrivateUse1, call.device()))
                   .add_output(allocated_by_the_iterator)
                   .add_const_input(condition)
                   .add_const_input(self)
                   .add_const_input(other)
                   .build()
                   .output();
  queueWhere(call, condition, self, other, out);
  return out;
}

at::DimVector indexSelectShape(const Tensor& self, int64_t& dim, const Tensor& index) {
  dim = c10::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.dim() > 0 || index.numel() <= 1, "index_select(): Index to scalar can have only 1 value, got ",
              index.numel(), " value(s)");
  at::DimVector shape(self.sizes());
  if (self.dim() > 0) {
    shape[dim] = index.numel();
  }
  return shape;
}

Tensor& indexSelectOut(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) {
  NativeCall call("aten::index_select.out", self, index, out);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_select(): self and result must have the same scalar "
              "type");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, index);
  at::native::resize_output(out, indexSelectShape(self, dim, index));
  call.addChoices(dim);
  call.launch([dim](const Tensor& self, const Tensor& index,
                    Tensor out) { at::cpu::index_select_outf(self, dim, index, out); },
              self, index, out);
  return out;
}

Tensor indexSelect(const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor out = at::empty({0}, self.options());
  return indexSelectOut(self, dim, index, out);
}

// The CPU kernel allocates its result, which HostResults places in the device output.
Tensor embeddingDenseBackward(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                              int64_t padding_idx, bool scale_grad_by_freq) {
  NativeCall call("aten::embedding_dense_backward", grad_output, indices);
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
              "embedding_backward: expected indices of dtype int32 or int64, got ", indices.scalar_type());
  Tensor grad_weight = at::empty({num_weights, grad_output.size(-1)}, grad_output.options());
  call.addChoices(padding_idx, scale_grad_by_freq);
  call.launch(
      [num_weights, padding_idx, scale_grad_by_freq](const Tensor& grad_output, const Tensor& indices,
                                                     const Tensor& grad_weight) {
        HostResults results(grad_weight);
        results.store(
            {at::cpu::embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)});
      },
      grad_output, indices, grad_weight);
  return grad_weight;
}

void checkMaskedFill(const Tensor& self, const Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.dtype());
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(at::infer_size_dimvector(self.sizes(), mask.sizes()) == self.sizes(),
              "masked_fill_: the mask of shape ", mask.sizes(), " cannot be broadcast to the tensor of shape ",
              self.sizes());
}

// The CPU kernel converts the value to self's dtype when it runs; a value that does not fit raises there ("value
// cannot be converted to type float without overflow").
// Other dtypes are left to the kernel (and its dtype check, DtypeSignatures.h).
void checkMaskedFillValue(const Tensor& self, const Scalar& value) {
  switch (self.scalar_type()) {
    case at::kBool: case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong:
    case at::kHalf: case at::kBFloat16: case at::kFloat: case at::kDouble:
    case at::kComplexHalf: case at::kComplexFloat: case at::kComplexDouble:
      AT_DISPATCH_V2(self.scalar_type(), "masked_fill", AT_WRAP([&] { (void)value.to<scalar_t>(); }), at::kComplexHalf,
                     at::kBool, at::kBFloat16, at::kHalf, AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX));
      break;
    default:
      break;
  }
}

Tensor& maskedFillScalar(Tensor& self, const Tensor& mask, const Scalar& value) {
  NativeCall call("aten::masked_fill_.Scalar", self, mask);
  checkMaskedFill(self, mask);
  checkMaskedFillValue(self, value);
  call.launch([](Tensor self, const Tensor& mask, const Scalar& value) { at::cpu::masked_fill_(self, mask, value); },
              self, mask, value);
  return self;
}

// As on the CPU and on CUDA, the value is read at the call (a device value waits for its stream).
Tensor& maskedFillTensor(Tensor& self, const Tensor& mask, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  TORCH_CHECK(value.device().is_cpu() || value.device() == self.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ", self.device(), " and ",
              value.device(), "!");
  return maskedFillScalar(self, mask, value.item());
}

// ATen's CPU checks of index_fill_, which its Meta kernel skips (a complex
// value for a real tensor would otherwise fail only on the stream).
void checkIndexFill(const Tensor& self, int64_t dim, const Tensor& index, bool complex_value) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "index_fill_(): Expected dtype int64 for index.");
  at::assert_no_overlap(self, index);
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing "
               "this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar");
  }
  TORCH_CHECK(self.is_complex() || !complex_value,
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK(index.dim() <= 1, "Index has to be a vector/scalar");
}

Tensor& indexFillScalar(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  NativeCall call("aten::index_fill_.int_Scalar", self, index);
  checkIndexFill(self, dim, index, value.isComplex());
  call.addChoices(dim);
  call.launch([dim](Tensor self, const Tensor& index,
                    const Scalar& value) { at::cpu::index_fill_(self, dim, index, value); },
              self, index, value);
  return self;
}

Tensor& indexFillTensor(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  NativeCall call("aten::index_fill_.int_Tensor", self, index, value);
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  checkIndexFill(self, dim, index, value.is_complex());
  call.addChoices(dim);
  call.launch([dim](Tensor self, const Tensor& index,
                    const Tensor& value) { at::cpu::index_fill_(self, dim, index, value); },
              self, index, value);
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("relu", TORCH_FN(relu));
  m.impl("relu_", TORCH_FN(relu_));
  m.impl("where.self", TORCH_FN(where));
  m.impl("where.self_out", TORCH_FN(whereOut));
  m.impl("index_select", TORCH_FN(indexSelect));
  m.impl("index_select.out", TORCH_FN(indexSelectOut));
  m.impl("embedding_dense_backward", TORCH_FN(embeddingDenseBackward));
  m.impl("masked_fill_.Scalar", TORCH_FN(maskedFillScalar));
  m.impl("masked_fill_.Tensor", TORCH_FN(maskedFillTensor));
  m.impl("index_fill_.int_Scalar", TORCH_FN(indexFillScalar));
  m.impl("index_fill_.int_Tensor", TORCH_FN(indexFillTensor));
}

}  // namespace torch_mydev::native
