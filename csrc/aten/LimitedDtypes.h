// Dtypes that ATen's CPU kernels support only in part: the unsigned types
// wider than a byte, the sub-byte integers, the float8 and float4 types,
// complex32 and the bit types have kernels for copies, comparisons and a few
// arithmetic operators, and no kernel for most others. Where the CPU kernel is missing, the CPU raises at
// the call and so does CUDA (its dtype dispatch runs on the host). A kernel
// queued on a mydev stream would raise only at the next synchronization,
// naming an operator long past; so operators with a tensor of these dtypes
// run before their launch returns (launchKernel's `wait`, or the fallback's
// synchronous path), which costs nothing in programs that do not use them.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_mydev {

inline bool isLimitedDtype(c10::ScalarType dtype) {
  using c10::ScalarType;
  return dtype == ScalarType::ComplexHalf || c10::isFloat8Type(dtype) || dtype == ScalarType::Float4_e2m1fn_x2 ||
      c10::isBitsType(dtype) || c10::isBarebonesUnsignedType(dtype) ||
      (dtype >= ScalarType::Int1 && dtype <= ScalarType::Int7);
}

inline bool hasLimitedDtype(const at::Tensor& tensor) {
  return tensor.defined() && isLimitedDtype(tensor.scalar_type());
}

}  // namespace torch_mydev
