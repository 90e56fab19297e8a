// Native kernels of the matrix products and triangular masks: structured
// operators (StructuredOut.h), and addr by hand. ATen's CPU kernels call the
// CPU BLAS.
#include "StructuredOut.h"

#include <ATen/CPUFunctions.h>
#include <ATen/ops/_addmm_activation_meta.h>
#include <ATen/ops/addmm_meta.h>
#include <ATen/ops/addmv_meta.h>
#include <ATen/ops/baddbmm_meta.h>
#include <ATen/ops/bmm_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_cross_meta.h>
#include <ATen/ops/mm_meta.h>
#include <ATen/ops/tril_meta.h>
#include <ATen/ops/triu_meta.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;
using TriangleOut = Tensor& (*)(const Tensor&, int64_t, Tensor&);

// addr is not structured; without this kernel PrivateUse1 would take PyTorch's
// composite decomposition, which rounds differently in half precision.
Tensor& addrOut(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const at::Scalar& beta,
                const at::Scalar& alpha, Tensor& out) {
  NativeCall call("aten::addr.out", self, vec1, vec2, out);
  TORCH_CHECK(vec1.dim() == 1, "addr: Expected 1-D argument vec1, but got ", vec1.dim(), "-D");
  TORCH_CHECK(vec2.dim() == 1, "addr: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  at::native::resize_output(out, {vec1.size(0), vec2.size(0)});
  call.launch([](const Tensor& self, const Tensor& vec1, const Tensor& vec2, const at::Scalar& beta,
                 const at::Scalar& alpha, Tensor out) { at::cpu::addr_outf(self, vec1, vec2, beta, alpha, out); },
              self, vec1, vec2, beta, alpha, out);
  return out;
}

Tensor addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const at::Scalar& beta,
            const at::Scalar& alpha) {
  Tensor out = at::empty({0}, self.options());
  return addrOut(self, vec1, vec2, beta, alpha, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  MYDEV_STRUCTURED(m, "mm", "mm.out", structured_mm, &at::cpu::mm_outf);
  MYDEV_STRUCTURED(m, "bmm", "bmm.out", structured_bmm, &at::cpu::bmm_outf);
  MYDEV_STRUCTURED(m, "addmm", "addmm.out", structured_addmm, &at::cpu::addmm_outf);
  MYDEV_STRUCTURED_OUT(m, "_addmm_activation.out", structured__addmm_activation, &at::cpu::_addmm_activation_outf);
  MYDEV_STRUCTURED_OUT(m, "addmv.out", structured_addmv, &at::cpu::addmv_outf);
  MYDEV_STRUCTURED_OUT(m, "baddbmm.out", structured_baddbmm, &at::cpu::baddbmm_outf);
  MYDEV_STRUCTURED_OUT(m, "linalg_cross.out", structured_linalg_cross, &at::cpu::linalg_cross_outf);
  m.impl("addr", TORCH_FN(addr));
  m.impl("addr.out", TORCH_FN(addrOut));
  MYDEV_STRUCTURED_OUT(m, "triu.out", structured_triu, static_cast<TriangleOut>(&at::cpu::triu_outf));
  MYDEV_STRUCTURED_OUT(m, "tril.out", structured_tril, static_cast<TriangleOut>(&at::cpu::tril_outf));
}

}  // namespace torch_mydev::native
