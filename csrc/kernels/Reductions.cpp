// Native kernels of the reductions, scans and the softmax family (structured
// operators, StructuredOut.h).
#include "StructuredOut.h"

#include <ATen/CPUFunctions.h>
#include <ATen/ops/_log_softmax_backward_data_meta.h>
#include <ATen/ops/_log_softmax_meta.h>
#include <ATen/ops/_softmax_backward_data_meta.h>
#include <ATen/ops/_softmax_meta.h>
#include <ATen/ops/all_meta.h>
#include <ATen/ops/amax_meta.h>
#include <ATen/ops/amin_meta.h>
#include <ATen/ops/aminmax_meta.h>
#include <ATen/ops/any_meta.h>
#include <ATen/ops/argmax_meta.h>
#include <ATen/ops/argmin_meta.h>
#include <ATen/ops/cumprod_meta.h>
#include <ATen/ops/cumsum_meta.h>
#include <ATen/ops/linalg_vector_norm_meta.h>
#include <ATen/ops/max_meta.h>
#include <ATen/ops/mean_meta.h>
#include <ATen/ops/min_meta.h>
#include <ATen/ops/norm_meta.h>
#include <ATen/ops/prod_meta.h>
#include <ATen/ops/sum_meta.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;
using MinMaxDimOut = std::tuple<Tensor&, Tensor&> (*)(const Tensor&, int64_t, bool, Tensor&, Tensor&);
using AllAnyDimOut = Tensor& (*)(const Tensor&, int64_t, bool, Tensor&);
using AllAnyDimsOut = Tensor& (*)(const Tensor&, at::OptionalIntArrayRef, bool, Tensor&);
using AllAnyOut = Tensor& (*)(const Tensor&, Tensor&);
using NormOut = Tensor& (*)(const Tensor&, const std::optional<at::Scalar>&, at::IntArrayRef, bool, Tensor&);
using NormDtypeOut = Tensor& (*)(const Tensor&, const std::optional<at::Scalar>&, at::IntArrayRef, bool,
                                 at::ScalarType, Tensor&);

constexpr char kAminmaxOut[] = "aten::aminmax.out";
using AminmaxKernel = StructuredOut<at::meta::structured_aminmax, &at::cpu::aminmax_outf, kAminmaxOut>;

// aminmax's meta function accepts complex inputs, which the CPU kernel's dtype
// dispatch refuses as it runs: refused here, at the call, with its message.
std::tuple<Tensor&, Tensor&> aminmaxOut(const Tensor& self, std::optional<int64_t> dim, bool keepdim, Tensor& min,
                                        Tensor& max) {
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"aminmax_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  return AminmaxKernel::call(self, dim, keepdim, min, max);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  MYDEV_STRUCTURED(m, "sum.dim_IntList", "sum.IntList_out", structured_sum_dim_IntList, &at::cpu::sum_outf);
  MYDEV_STRUCTURED(m, "mean.dim", "mean.out", structured_mean_dim, &at::cpu::mean_outf);
  MYDEV_STRUCTURED_OUT(m, "prod.int_out", structured_prod_dim_int, &at::cpu::prod_outf);
  MYDEV_STRUCTURED(m, "amax", "amax.out", structured_amax, &at::cpu::amax_outf);
  MYDEV_STRUCTURED_OUT(m, "amin.out", structured_amin, &at::cpu::amin_outf);
  m.impl("aminmax.out", TORCH_FN(aminmaxOut));
  MYDEV_STRUCTURED_OUT(m, "argmax.out", structured_argmax, &at::cpu::argmax_outf);
  MYDEV_STRUCTURED_OUT(m, "argmin.out", structured_argmin, &at::cpu::argmin_outf);
  MYDEV_STRUCTURED_OUT(m, "max.dim_max", structured_max_dim, static_cast<MinMaxDimOut>(&at::cpu::max_outf));
  MYDEV_STRUCTURED_OUT(m, "min.dim_min", structured_min_dim, static_cast<MinMaxDimOut>(&at::cpu::min_outf));
  MYDEV_STRUCTURED_OUT(m, "all.out", structured_all_dim, static_cast<AllAnyDimOut>(&at::cpu::all_outf));
  MYDEV_STRUCTURED_OUT(m, "any.out", structured_any_dim, static_cast<AllAnyDimOut>(&at::cpu::any_outf));
  MYDEV_STRUCTURED_OUT(m, "all.dims_out", structured_all_dims, static_cast<AllAnyDimsOut>(&at::cpu::all_outf));
  MYDEV_STRUCTURED_OUT(m, "any.dims_out", structured_any_dims, static_cast<AllAnyDimsOut>(&at::cpu::any_outf));
  MYDEV_STRUCTURED_OUT(m, "all.all_out", structured_all, static_cast<AllAnyOut>(&at::cpu::all_outf));
  MYDEV_STRUCTURED_OUT(m, "any.all_out", structured_any, static_cast<AllAnyOut>(&at::cpu::any_outf));
  MYDEV_STRUCTURED_OUT(m, "norm.out", structured_norm_ScalarOpt_dim, static_cast<NormOut>(&at::cpu::norm_outf));
  MYDEV_STRUCTURED_OUT(m, "norm.dtype_out", structured_norm_ScalarOpt_dim_dtype,
                       static_cast<NormDtypeOut>(&at::cpu::norm_outf));
  MYDEV_STRUCTURED_OUT(m, "linalg_vector_norm.out", structured_linalg_vector_norm, &at::cpu::linalg_vector_norm_outf);
  MYDEV_STRUCTURED_OUT(m, "cumsum.out", structured_cumsum, &at::cpu::cumsum_outf);
  MYDEV_STRUCTURED_OUT(m, "cumprod.out", structured_cumprod, &at::cpu::cumprod_outf);

  MYDEV_STRUCTURED(m, "_softmax", "_softmax.out", structured__softmax, &at::cpu::_softmax_outf);
  MYDEV_STRUCTURED(m, "_log_softmax", "_log_softmax.out", structured__log_softmax, &at::cpu::_log_softmax_outf);
  MYDEV_STRUCTURED_OUT(m, "_softmax_backward_data.out", structured__softmax_backward_data,
                       &at::cpu::_softmax_backward_data_outf);
  MYDEV_STRUCTURED_OUT(m, "_log_softmax_backward_data.out", structured__log_softmax_backward_data,
                       &at::cpu::_log_softmax_backward_data_outf);
}

}  // namespace torch_mydev::native
