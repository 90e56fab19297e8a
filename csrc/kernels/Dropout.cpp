// native_dropout, which F.dropout takes on accelerators in training. Its CPU
// kernel draws the mask from the CPU generator; run through the generic
// fallback it would ignore torch.mydev.manual_seed. This kernel follows
// ATen's CPU formula with mydev operators, so the mask comes from bernoulli_
// on the device generator (Philox, in launch order). Complex inputs are
// refused as CUDA's fused kernel refuses them (F.dropout on the CPU takes
// another path, whose bernoulli_ refuses them too): the formula would
// silently accept them. p = 1 returns zeros and an all-false mask without
// drawing, as CUDA's kernel does: the formula would multiply by a scale of
// zero (NaN where the input is infinite) and spend Philox offsets.
//
// native_dropout_backward is ATen's CPU formula with mydev operators too: its
// fallback path would size the result with the Python Meta decomposition that
// torch._meta_registrations installs (~0.3 ms of host time per call, against
// two native multiplications).
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;

std::tuple<Tensor, Tensor> nativeDropout(const Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK_NOT_IMPLEMENTED(!input.is_complex(), "\"fused_dropout\" not implemented for '", input.scalar_type(),
                              "'");
  if (input.numel() == 0) {
    return {input, at::empty_like(input)};
  }
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  if (p == 1) {
    return {at::zeros_like(input), at::zeros_like(input, input.options().dtype(at::kBool))};
  }
  const double keep = 1. - p;
  const double scale = 1. / keep;
  Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  mask.bernoulli_(keep);
  Tensor output = input.mul(mask).mul_(scale);
  return {output, mask};
}

Tensor nativeDropoutBackward(const Tensor& grad, const Tensor& mask, double scale) { return grad * mask * scale; }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", TORCH_FN(nativeDropout));
  m.impl("native_dropout_backward", TORCH_FN(nativeDropoutBackward));
}

}  // namespace torch_mydev::native
