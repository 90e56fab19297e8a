// Native kernels of the regression losses: mse_loss and smooth_l1_loss, and
// their backward.
//
// Both forward operators are structured, but their CPU out= kernel cannot
// serve a mydev functional call (StructuredOut.h) as other structured kernels
// do: it runs the meta function on the given output, which first resizes the
// 0-dim result of a reducing loss to the unreduced shape (a resize an alias of
// device memory cannot take) and warns that a non-empty output was resized.
// The functional forms therefore take their geometry from the meta function on
// the calling thread, as the CPU's functional kernel does, and the stream runs
// the CPU out= kernel only where the output already has the right shape
// (reduction='none'); a reduced loss runs the CPU functional kernel and copies
// its one element into the device output. Through the generic fallback, their
// Meta pass ran torch._meta_registrations' Python decompositions (~0.6 ms of
// host time per mse_loss call). The CPU kernels choose their dtype with
// AT_DISPATCH, which raises for a dtype they were not compiled for; the same
// macro over an empty body raises that error here, at the call.
#include "StructuredOut.h"

#include <ATen/Dispatch.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mse_loss_backward_cpu_dispatch.h>
#include <ATen/ops/mse_loss_cpu_dispatch.h>
#include <ATen/ops/mse_loss_meta.h>
#include <ATen/ops/smooth_l1_loss_backward_cpu_dispatch.h>
#include <ATen/ops/smooth_l1_loss_cpu_dispatch.h>
#include <ATen/ops/smooth_l1_loss_meta.h>
#include <torch/library.h>


namespace torch_mydev::native {

namespace {

using at::Tensor;

constexpr char kMseLoss[] = "aten::mse_loss";
constexpr char kMseLossBackward[] = "aten::mse_loss_backward";
constexpr char kSmoothL1Loss[] = "aten::smooth_l1_loss";
constexpr char kSmoothL1LossBackward[] = "aten::smooth_l1_loss_backward";

Tensor mseLoss(const Tensor& input, const Tensor& target, int64_t reduction) {
  NativeCall native(kMseLoss, input, target);
  StructuredGeometry<at::meta::structured_mse_loss, 1> geometry;
  geometry.meta(input, target, reduction);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, geometry.common_dtype(), "mse_cpu", [] {});
  Tensor& output = geometry.outputs[0];
  native.addChoices(reduction);
  native.launch(
      [reduction](const Tensor& input, const Tensor& target, const Tensor& output) {
        if (reduction == at::Reduction::None) {
          Tensor out = output;
          at::cpu::mse_loss_outf(input, target, reduction, out);
        } else {
          HostResults results(output);
          results.store({at::cpu::mse_loss(input, target, reduction)});
        }
      },
      input, target, output);
  return output;
}

Tensor smoothL1Loss(const Tensor& input, const Tensor& target, int64_t reduction, double beta) {
  NativeCall native(kSmoothL1Loss, input, target);
  StructuredGeometry<at::meta::structured_smooth_l1_loss, 1> geometry;
  geometry.meta(input, target, reduction, beta);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, geometry.common_dtype(), "smooth_l1_cpu", [] {});
  Tensor& output = geometry.outputs[0];
  native.addChoices(reduction);
  native.launch(
      [reduction, beta](const Tensor& input, const Tensor& target, const Tensor& output) {
        if (reduction == at::Reduction::None) {
          Tensor out = output;
          at::cpu::smooth_l1_loss_outf(input, target, reduction, beta, out);
        } else {
          HostResults results(output);
          results.store({at::cpu::smooth_l1_loss(input, target, reduction, beta)});
        }
      },
      input, target, output);
  return output;
}

// ATen's CPU backward kernels of both losses check and size grad_input with
// this iterator (promoting the arguments to a common dtype), then convert the
// scale (`factor`, divided by the element count for a mean) to the
// computation dtype, which fails for an integer one when the scale is
// infinite (a mean over no elements). AT_DISPATCH raises the CPU kernel's
// error, named `kCpuKernel`, for a dtype it lacks. Done here over the device
// tensors, so the CPU's errors arise at the call and grad_input has its final
// shape before the launch.
template <const char* kCpuKernel>
void prepareLossBackward(const Tensor& grad_output, const Tensor& input, const Tensor& target, int64_t reduction,
                         double factor, const Tensor& grad_input) {
  const double norm = reduction == at::Reduction::Mean ? factor / static_cast<double>(input.numel()) : factor;
  const at::TensorIterator iter = at::TensorIteratorConfig()
                                      .add_output(grad_input)
                                      .add_const_input(input)
                                      .add_const_input(target)
                                      .add_const_input(grad_output)
                                      .promote_inputs_to_common_dtype(true)
                                      .cast_common_dtype_to_outputs(true)
                                      .enforce_safe_casting_to_output(true)
                                      .build();
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, iter.dtype(0), kCpuKernel,
                             [norm] { (void)at::Scalar(norm).to<scalar_t>(); });
}

constexpr char kMseBackwardCpu[] = "mse_backward_cpu_out";
constexpr char kSmoothL1BackwardCpu[] = "smooth_l1_backward_cpu_out";

Tensor& mseLossBackwardOut(const Tensor& grad_output, const Tensor& input, const Tensor& target, int64_t reduction,
                           Tensor& grad_input) {
  NativeCall native(kMseLossBackward, grad_output, input, target, grad_input);
  prepareLossBackward<kMseBackwardCpu>(grad_output, input, target, reduction, 2., grad_input);
  native.addChoices(reduction);
  native.launch(
      [reduction](const Tensor& grad_output, const Tensor& input, const Tensor& target, const Tensor& grad_input) {
        Tensor out = grad_input;
        at::cpu::mse_loss_backward_outf(grad_output, input, target, reduction, out);
      },
      grad_output, input, target, grad_input);
  return grad_input;
}

// The CPU's functional backward fills a contiguous tensor shaped like input
// (zeros_like, every element then written) through the out= kernel.
Tensor mseLossBackward(const Tensor& grad_output, const Tensor& input, const Tensor& target, int64_t reduction) {
  Tensor grad_input = at::empty_like(input, at::MemoryFormat::Contiguous);
  return mseLossBackwardOut(grad_output, input, target, reduction, grad_input);
}

// The functional form is composite (zeros_like, then this). ATen's CPU kernel
// computes half and bfloat16 in float.
Tensor& smoothL1LossBackwardOut(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                                int64_t reduction, double beta, Tensor& grad_input) {
  NativeCall native(kSmoothL1LossBackward, grad_output, input, target, grad_input);
  prepareLossBackward<kSmoothL1BackwardCpu>(grad_output, input, target, reduction, 1., grad_input);
  native.addChoices(reduction);
  native.launch(
      [reduction, beta](const Tensor& grad_output, const Tensor& input, const Tensor& target,
                        const Tensor& grad_input) {
        Tensor out = grad_input;
        at::cpu::smooth_l1_loss_backward_outf(grad_output, input, target, reduction, beta, out);
      },
      grad_output, input, target, grad_input);
  return grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mse_loss", TORCH_FN(mseLoss));
  m.impl("mse_loss_backward", TORCH_FN(mseLossBackward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mseLossBackwardOut));
  m.impl("smooth_l1_loss", TORCH_FN(smoothL1Loss));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(smoothL1LossBackwardOut));
}

}  // namespace torch_mydev::native
