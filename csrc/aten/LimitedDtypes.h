// Dtypes that ATen's CPU kernels support only in part: the unsigned types
// wider than a byte, the float8 and float4 types, complex32 and the bit types
// have kernels for copies, comparisons and a few arithmetic operators, and no
// kernel for most others. Where the CPU kernel is missing, the CPU raises at
// the call and so does CUDA (its dtype dispatch runs on the host). A kernel
// queued on a mydev stream would raise only at the next synchronization,
// naming an operator long past; so operators with a tensor of these dtypes
// run before their launch returns, which costs nothing in programs that do
// not use them.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_mydev {

inline bool isLimitedDtype(c10::ScalarType dtype) {
  // Past BFloat16 the enumeration holds these types (bits, float8, UInt16 and
  // wider, the sub-byte integers, float4) and two quantized ones, which a
  // mydev tensor cannot have.
  return dtype == c10::ScalarType::ComplexHalf || dtype > c10::ScalarType::BFloat16;
}

inline bool hasLimitedDtype(const at::Tensor& tensor) {
  return tensor.defined() && isLimitedDtype(tensor.scalar_type());
}

}  // namespace torch_mydev
