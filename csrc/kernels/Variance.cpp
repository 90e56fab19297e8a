// Native kernels of var, std, var_mean and std_mean (correction overloads,
// which the other overloads call). ATen's CPU kernel warns when the
// correction leaves no degrees of freedom only as it computes; through the
// fallback that warning arrived at the next call. Here the dtype check and the
// warning happen at the call, the CPU kernel runs on the stream, and its own
// copies of the warning are dropped (NativeCall.h). The out= overloads go
// through the generic fallback.
#include "NativeCall.h"

#include <ATen/CPUFunctions.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <string>
#include <string_view>

namespace torch_mydev::native {

namespace {

using at::Tensor;
using OptionalScalar = std::optional<at::Scalar>;

// Checks the input and issues the degrees-of-freedom warning as ATen's CPU
// kernel does (twice for complex inputs: once per real component); returns
// the shape of the reduction's output.
at::DimVector checkVariance(const char* name, const Tensor& self, at::OptionalIntArrayRef dim,
                            const OptionalScalar& correction, bool keepdim) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              std::string_view(name).ends_with("_mean") ? name : "std and var",
              " only support floating point and complex dtypes");
  at::DimVector shape = at::native::shape_from_dim_mask(self, at::native::make_dim_mask(dim, self.dim()), keepdim);
  const int64_t outputs = c10::multiply_integers(shape);
  if (outputs > 0) {
    const double reduction_factor = static_cast<double>(self.numel()) / static_cast<double>(outputs);
    if (reduction_factor - correction.value_or(1).toDouble() <= 0) {
      for (int component = 0; component < (self.is_complex() ? 2 : 1); ++component) {
        TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                   "factor (input numel divided by output numel).");
      }
    }
  }
  return shape;
}

template <bool TakeSqrt>
Tensor variance(const Tensor& self, at::OptionalIntArrayRef dim, const OptionalScalar& correction, bool keepdim) {
  constexpr const char* kName = TakeSqrt ? "std" : "var";
  NativeCall call(TakeSqrt ? "aten::std.correction" : "aten::var.correction", self);
  const at::DimVector shape = checkVariance(kName, self, dim, correction, keepdim);
  Tensor out = at::empty(shape, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  call.addChoices(correction, keepdim);
  call.launch(
      [correction, keepdim](const Tensor& self, at::OptionalIntArrayRef dim, Tensor out) {
        if constexpr (TakeSqrt) {
          at::cpu::std_outf(self, dim, correction, keepdim, out);
        } else {
          at::cpu::var_outf(self, dim, correction, keepdim, out);
        }
      },
      self, dim, out);
  return out;
}

template <bool TakeSqrt>
std::tuple<Tensor, Tensor> varianceAndMean(const Tensor& self, at::OptionalIntArrayRef dim,
                                           const OptionalScalar& correction, bool keepdim) {
  constexpr const char* kName = TakeSqrt ? "std_mean" : "var_mean";
  NativeCall call(TakeSqrt ? "aten::std_mean.correction" : "aten::var_mean.correction", self);
  const at::DimVector shape = checkVariance(kName, self, dim, correction, keepdim);
  Tensor spread = at::empty(shape, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  Tensor mean = at::empty(shape, self.options());
  call.addChoices(correction, keepdim);
  call.launch(
      [correction, keepdim](const Tensor& self, at::OptionalIntArrayRef dim, const Tensor& spread,
                            const Tensor& mean) {
        HostResults results({spread, mean});
        auto [spread_result, mean_result] = TakeSqrt ? at::cpu::std_mean(self, dim, correction, keepdim)
                                                     : at::cpu::var_mean(self, dim, correction, keepdim);
        results.store({spread_result, mean_result});
      },
      self, dim, spread, mean);
  return {spread, mean};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("var.correction", TORCH_FN(variance<false>));
  m.impl("std.correction", TORCH_FN(variance<true>));
  m.impl("var_mean.correction", TORCH_FN(varianceAndMean<false>));
  m.impl("std_mean.correction", TORCH_FN(varianceAndMean<true>));
}

}  // namespace torch_mydev::native
