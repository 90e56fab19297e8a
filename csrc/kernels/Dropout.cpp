// native_dropout, which F.dropout takes on accelerators in training. Its CPU
// kernel draws the mask from the CPU generator; run through the generic
// fallback it would ignore torch.mydev.manual_seed. This kernel follows
// ATen's CPU formula with mydev operators, so the mask comes from bernoulli_
// on the device generator (Philox, in launch order).
//
// The cases around the formula are CUDA's, in its order: out of training a
// copy and an all-true mask; p = 1 zeros and an all-false mask, drawing
// nothing (the formula would multiply by a scale of zero, NaN where the input
// is infinite); an empty input a copy; then only CUDA's dtypes (float,
// double, half, bfloat16), others refused with the name of CUDA's kernel (the
// formula would accept integers and complex numbers, or fail casting float8).
//
// native_dropout_backward is ATen's CPU formula with mydev operators too: its
// fallback path would size the result with the Python Meta decomposition that
// torch._meta_registrations installs (~0.3 ms of host time per call, against
// two native multiplications). Its mask must be boolean, as on CUDA (the CPU
// takes any mask).
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;

std::tuple<Tensor, Tensor> nativeDropout(const Tensor& input, double p, std::optional<bool> train) {
  const auto mask_options = input.options().dtype(at::kBool);
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, mask_options)};
  }
  if (p == 1) {
    return {at::zeros_like(input), at::zeros_like(input, mask_options)};
  }
  if (input.numel() == 0) {
    return {input.clone(), at::empty_like(input, mask_options)};
  }
  const auto dtype = input.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(
      dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf || dtype == at::kBFloat16,
      "\"fused_dropout\" not implemented for '", dtype, "'");
  const double keep = 1. - p;
  const double scale = 1. / keep;
  Tensor mask = at::empty_like(input, mask_options);
  mask.bernoulli_(keep);
  Tensor output = input.mul(mask).mul_(scale);
  return {output, mask};
}

Tensor nativeDropoutBackward(const Tensor& grad, const Tensor& mask, double scale) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be Bool Scalar Type", mask.scalar_type());
  return grad * mask * scale;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", TORCH_FN(nativeDropout));
  m.impl("native_dropout_backward", TORCH_FN(nativeDropoutBackward));
}

}  // namespace torch_mydev::native
