// Native kernels of the matrix products and triangular masks (structured
// operators, StructuredOut.h). ATen's CPU kernels call the CPU BLAS.
#include "StructuredOut.h"

#include <ATen/CPUFunctions.h>
#include <ATen/ops/_addmm_activation_meta.h>
#include <ATen/ops/addmm_meta.h>
#include <ATen/ops/addmv_meta.h>
#include <ATen/ops/baddbmm_meta.h>
#include <ATen/ops/bmm_meta.h>
#include <ATen/ops/linalg_cross_meta.h>
#include <ATen/ops/mm_meta.h>
#include <ATen/ops/tril_meta.h>
#include <ATen/ops/triu_meta.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;
using TriangleOut = Tensor& (*)(const Tensor&, int64_t, Tensor&);

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  MYDEV_STRUCTURED(m, "mm", "mm.out", structured_mm, &at::cpu::mm_outf);
  MYDEV_STRUCTURED(m, "bmm", "bmm.out", structured_bmm, &at::cpu::bmm_outf);
  MYDEV_STRUCTURED(m, "addmm", "addmm.out", structured_addmm, &at::cpu::addmm_outf);
  MYDEV_STRUCTURED_OUT(m, "_addmm_activation.out", structured__addmm_activation, &at::cpu::_addmm_activation_outf);
  MYDEV_STRUCTURED_OUT(m, "addmv.out", structured_addmv, &at::cpu::addmv_outf);
  MYDEV_STRUCTURED_OUT(m, "baddbmm.out", structured_baddbmm, &at::cpu::baddbmm_outf);
  MYDEV_STRUCTURED_OUT(m, "linalg_cross.out", structured_linalg_cross, &at::cpu::linalg_cross_outf);
  MYDEV_STRUCTURED_OUT(m, "triu.out", structured_triu, static_cast<TriangleOut>(&at::cpu::triu_outf));
  MYDEV_STRUCTURED_OUT(m, "tril.out", structured_tril, static_cast<TriangleOut>(&at::cpu::tril_outf));
}

}  // namespace torch_mydev::native
