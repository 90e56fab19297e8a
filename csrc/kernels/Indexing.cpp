// Native kernels of gathering, scattering, advanced indexing, concatenation,
// sorting and selection (structured operators, StructuredOut.h).
#include "StructuredOut.h"

#include <ATen/CPUFunctions.h>
#include <ATen/ops/cat_meta.h>
#include <ATen/ops/gather_meta.h>
#include <ATen/ops/index_add_meta.h>
#include <ATen/ops/index_copy_meta.h>
#include <ATen/ops/index_meta.h>
#include <ATen/ops/index_reduce_meta.h>
#include <ATen/ops/scatter_add_meta.h>
#include <ATen/ops/scatter_meta.h>
#include <ATen/ops/scatter_reduce_meta.h>
#include <ATen/ops/sort_meta.h>
#include <ATen/ops/topk_meta.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Scalar;
using at::Tensor;
using ScatterSrcOut = Tensor& (*)(const Tensor&, int64_t, const Tensor&, const Tensor&, Tensor&);
using ScatterValueOut = Tensor& (*)(const Tensor&, int64_t, const Tensor&, const Scalar&, Tensor&);
using ScatterReduceOut = Tensor& (*)(const Tensor&, int64_t, const Tensor&, const Tensor&, std::string_view, Tensor&);
using ScatterValueReduceOut = Tensor& (*)(const Tensor&, int64_t, const Tensor&, const Scalar&, std::string_view,
                                          Tensor&);
using SortStableOut = std::tuple<Tensor&, Tensor&> (*)(const Tensor&, std::optional<bool>, int64_t, bool, Tensor&,
                                                       Tensor&);
using TopkOut = std::tuple<Tensor&, Tensor&> (*)(const Tensor&, int64_t, int64_t, bool, bool, Tensor&, Tensor&);

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  MYDEV_STRUCTURED_OUT(m, "gather.out", structured_gather, &at::cpu::gather_outf);
  MYDEV_STRUCTURED_OUT(m, "scatter.src_out", structured_scatter_src, static_cast<ScatterSrcOut>(&at::cpu::scatter_outf));
  MYDEV_STRUCTURED_OUT(m, "scatter.value_out", structured_scatter_value,
                       static_cast<ScatterValueOut>(&at::cpu::scatter_outf));
  MYDEV_STRUCTURED_OUT(m, "scatter.reduce_out", structured_scatter_reduce,
                       static_cast<ScatterReduceOut>(&at::cpu::scatter_outf));
  MYDEV_STRUCTURED_OUT(m, "scatter.value_reduce_out", structured_scatter_value_reduce,
                       static_cast<ScatterValueReduceOut>(&at::cpu::scatter_outf));
  MYDEV_STRUCTURED_OUT(m, "scatter_add.out", structured_scatter_add, &at::cpu::scatter_add_outf);
  MYDEV_STRUCTURED_OUT(m, "scatter_reduce.two_out", structured_scatter_reduce_two, &at::cpu::scatter_reduce_outf);
  MYDEV_STRUCTURED_OUT(m, "index_add.out", structured_index_add, &at::cpu::index_add_outf);
  MYDEV_STRUCTURED_OUT(m, "index_copy.out", structured_index_copy, &at::cpu::index_copy_outf);
  MYDEV_STRUCTURED_OUT(m, "index_reduce.out", structured_index_reduce, &at::cpu::index_reduce_outf);
  MYDEV_STRUCTURED(m, "index.Tensor", "index.Tensor_out", structured_index_Tensor, &at::cpu::index_outf);
  MYDEV_STRUCTURED_OUT(m, "cat.out", structured_cat, &at::cpu::cat_outf);
  MYDEV_STRUCTURED_OUT(m, "sort.values_stable", structured_sort_stable, static_cast<SortStableOut>(&at::cpu::sort_outf));
  MYDEV_STRUCTURED_OUT(m, "topk.values", structured_topk, static_cast<TopkOut>(&at::cpu::topk_outf));
}

}  // namespace torch_mydev::native
