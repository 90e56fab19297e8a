// Native kernels of the neural-network operators that are structured: the
// negative log-likelihood loss, pooling, upsampling and padding, forward and
// backward (StructuredOut.h).
#include "StructuredOut.h"

#include <ATen/CPUFunctions.h>
#include <ATen/ops/adaptive_max_pool2d_backward_meta.h>
#include <ATen/ops/adaptive_max_pool2d_meta.h>
#include <ATen/ops/avg_pool2d_backward_meta.h>
#include <ATen/ops/avg_pool2d_meta.h>
#include <ATen/ops/avg_pool3d_backward_meta.h>
#include <ATen/ops/avg_pool3d_meta.h>
#include <ATen/ops/max_pool2d_with_indices_backward_meta.h>
#include <ATen/ops/max_pool2d_with_indices_meta.h>
#include <ATen/ops/nll_loss_backward_meta.h>
#include <ATen/ops/nll_loss_forward_meta.h>
#include <ATen/ops/reflection_pad1d_meta.h>
#include <ATen/ops/reflection_pad3d_meta.h>
#include <ATen/ops/replication_pad1d_meta.h>
#include <ATen/ops/replication_pad2d_meta.h>
#include <ATen/ops/replication_pad3d_meta.h>
#include <ATen/ops/upsample_bilinear2d_backward_meta.h>
#include <ATen/ops/upsample_bilinear2d_meta.h>
#include <ATen/ops/upsample_nearest1d_meta.h>
#include <ATen/ops/upsample_nearest2d_backward_meta.h>
#include <ATen/ops/upsample_nearest2d_meta.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;
using PadOut = Tensor& (*)(const Tensor&, at::IntArrayRef, Tensor&);

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  MYDEV_STRUCTURED_OUT(m, "nll_loss_forward.output", structured_nll_loss_forward, &at::cpu::nll_loss_forward_outf);
  MYDEV_STRUCTURED_OUT(m, "nll_loss_backward.grad_input", structured_nll_loss_backward,
                       &at::cpu::nll_loss_backward_outf);

  MYDEV_STRUCTURED_OUT(m, "max_pool2d_with_indices.out", structured_max_pool2d_with_indices,
                       &at::cpu::max_pool2d_with_indices_outf);
  MYDEV_STRUCTURED_OUT(m, "max_pool2d_with_indices_backward.grad_input", structured_max_pool2d_with_indices_backward,
                       &at::cpu::max_pool2d_with_indices_backward_outf);
  MYDEV_STRUCTURED_OUT(m, "avg_pool2d.out", structured_avg_pool2d, &at::cpu::avg_pool2d_outf);
  MYDEV_STRUCTURED_OUT(m, "avg_pool2d_backward.grad_input", structured_avg_pool2d_backward,
                       &at::cpu::avg_pool2d_backward_outf);
  MYDEV_STRUCTURED_OUT(m, "avg_pool3d.out", structured_avg_pool3d, &at::cpu::avg_pool3d_outf);
  MYDEV_STRUCTURED_OUT(m, "avg_pool3d_backward.grad_input", structured_avg_pool3d_backward,
                       &at::cpu::avg_pool3d_backward_outf);
  MYDEV_STRUCTURED_OUT(m, "adaptive_max_pool2d.out", structured_adaptive_max_pool2d,
                       &at::cpu::adaptive_max_pool2d_outf);
  MYDEV_STRUCTURED_OUT(m, "adaptive_max_pool2d_backward.grad_input", structured_adaptive_max_pool2d_backward,
                       &at::cpu::adaptive_max_pool2d_backward_outf);

  MYDEV_STRUCTURED_OUT(m, "upsample_nearest1d.out", structured_upsample_nearest1d, &at::cpu::upsample_nearest1d_outf);
  MYDEV_STRUCTURED_OUT(m, "upsample_nearest2d.out", structured_upsample_nearest2d, &at::cpu::upsample_nearest2d_outf);
  MYDEV_STRUCTURED_OUT(m, "upsample_nearest2d_backward.grad_input", structured_upsample_nearest2d_backward,
                       &at::cpu::upsample_nearest2d_backward_outf);
  MYDEV_STRUCTURED_OUT(m, "upsample_bilinear2d.out", structured_upsample_bilinear2d,
                       &at::cpu::upsample_bilinear2d_outf);
  MYDEV_STRUCTURED_OUT(m, "upsample_bilinear2d_backward.grad_input", structured_upsample_bilinear2d_backward,
                       &at::cpu::upsample_bilinear2d_backward_outf);

  MYDEV_STRUCTURED_OUT(m, "reflection_pad1d.out", structured_reflection_pad1d,
                       static_cast<PadOut>(&at::cpu::reflection_pad1d_outf));
  MYDEV_STRUCTURED_OUT(m, "reflection_pad3d.out", structured_reflection_pad3d,
                       static_cast<PadOut>(&at::cpu::reflection_pad3d_outf));
  MYDEV_STRUCTURED_OUT(m, "replication_pad1d.out", structured_replication_pad1d,
                       static_cast<PadOut>(&at::cpu::replication_pad1d_outf));
  MYDEV_STRUCTURED_OUT(m, "replication_pad2d.out", structured_replication_pad2d,
                       static_cast<PadOut>(&at::cpu::replication_pad2d_outf));
  MYDEV_STRUCTURED_OUT(m, "replication_pad3d.out", structured_replication_pad3d,
                       static_cast<PadOut>(&at::cpu::replication_pad3d_outf));
}

}  // namespace torch_mydev::native
