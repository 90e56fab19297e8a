// Automatic mixed precision on mydev: the AutocastPrivateUse1 dispatch key.
//
// Under `torch.autocast("mydev")` every operator on a mydev tensor passes
// through this key first. The operators listed here get ATen's autocast
// wrappers with CUDA's policy (mydev stands in for a GPU, so matmuls and
// convolutions run in the autocast dtype, float16 by default, and the
// numerically touchy operators in float32); every other operator falls through
// to the next key unchanged. ATen keeps the policy lists in
// ATen/autocast_mode.h so that backends share them instead of copying them.
//
// PyTorch registers the fallthrough for its own devices' autocast keys only;
// without ours, no operator lacking an autocast kernel could run inside a
// mydev autocast region.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace torch_mydev::amp {

namespace {

// ATen's list of operators that redispatch with another signature spells these
// types unqualified, as inside namespace at.
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

// ATen's own refusal (binary_cross_entropy_banned) is file-local to its
// autocast_mode.cpp, so backends write theirs.
Tensor binaryCrossEntropyRefused(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t) {
  TORCH_CHECK(
      false,
      "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast on mydev, as on CUDA: "
      "a float16 sigmoid output rounds to 0 or 1 and its log overflows. Combine the sigmoid and the loss in "
      "torch.nn.functional.binary_cross_entropy_with_logits or torch.nn.BCEWithLogitsLoss, which are safe to "
      "autocast, or run the loss outside the autocast region.");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define MYDEV_AUTOCAST_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define MYDEV_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define MYDEV_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define MYDEV_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(MYDEV_AUTOCAST_LOWER_PRECISION_FP)
  AT_FORALL_FP32(MYDEV_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(MYDEV_AUTOCAST_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(MYDEV_AUTOCAST_PROMOTE)
#undef MYDEV_AUTOCAST_LOWER_PRECISION_FP
#undef MYDEV_AUTOCAST_FP32
#undef MYDEV_AUTOCAST_FP32_SET_OPT_DTYPE
#undef MYDEV_AUTOCAST_PROMOTE
  m.impl("binary_cross_entropy", TORCH_FN(binaryCrossEntropyRefused));
}

}  // namespace

}  // namespace torch_mydev::amp
