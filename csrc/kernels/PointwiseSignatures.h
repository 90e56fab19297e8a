// The signatures of ATen's pointwise CPU out= functions, for picking one
// overload of an overloaded at::cpu::<op>_outf by its type (Pointwise.cpp,
// ForeachPointwise.cpp).
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_mydev::native {

using UnaryOut = at::Tensor& (*)(const at::Tensor&, at::Tensor&);
using BinaryOut = at::Tensor& (*)(const at::Tensor&, const at::Tensor&, at::Tensor&);
using TensorScalarOut = at::Tensor& (*)(const at::Tensor&, const at::Scalar&, at::Tensor&);
using BinaryAlphaOut = at::Tensor& (*)(const at::Tensor&, const at::Tensor&, const at::Scalar&, at::Tensor&);

}  // namespace torch_mydev::native
