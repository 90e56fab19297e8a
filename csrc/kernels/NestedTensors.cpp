// Strided nested tensors on mydev: the NestedTensorPrivateUse1 key.
//
// ATen writes its nested kernels over the nested tensor's buffer with at:: ops
// and reads only the sizes, strides and offsets, which live on the CPU; most
// serve NestedTensorCPU, NestedTensorCUDA and NestedTensorHPU alike
// (native_functions.yaml). So mydev takes every kernel the CPU has for
// NestedTensorCPU by redispatching to it: the dense ops inside dispatch on the
// buffer and run mydev's own kernels, on its streams, asynchronously where
// those are. Replaced here, as CUDA and XPU replace them with their own:
// - the CPU kernels that loop over the buffer's data on the host (a sum over
//   the last dimension and its backward; attention's bias transform of a
//   nested qkv), which would read device memory from the host;
// - layer norm, whose CPU kernel calls a DispatchStub that has no mydev entry;
// - pinning, which only a CPU nested tensor has.
// The dense-key operators that build nested tensors take ATen's generic CPU
// functions for PrivateUse1, past the fallback, which cannot describe a
// nested output.
#include <ATen/ATen.h>
#include <ATen/NestedTensorImpl.h>
#include <ATen/native/nested/NestedTensorMath.h>
#include <ATen/native/nested/NestedTensorUtils.h>
#include <ATen/ops/_nested_from_padded_native.h>
#include <ATen/ops/_nested_tensor_from_mask_native.h>
#include <ATen/ops/_nested_view_from_buffer_native.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/accumulate.h>
#include <torch/library.h>

#include <set>
#include <string>

namespace torch_mydev {

namespace {

void redispatchToNestedCpu(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/, torch::jit::Stack* stack) {
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::NestedTensorCPU), stack);
}

// The sizes of a nested tensor's components, one row each, with the last column replaced.
at::Tensor sizesWithLastDimension(const at::Tensor& nested, int64_t last) {
  at::Tensor sizes = at::native::get_nested_tensor_impl(nested)->get_nested_sizes().clone();
  if (sizes.numel() > 0) {
    sizes.select(1, -1).fill_(last);
  }
  return sizes;
}

at::Tensor sumLastDimension(const at::Tensor& self, at::OptionalIntArrayRef opt_dims, bool keepdim,
                            std::optional<at::ScalarType> dtype) {
  const auto dims = opt_dims.value_or(at::IntArrayRef{});
  TORCH_CHECK(dims.size() == 1, "NestedTensor only allows reduction of a single dimension for now.");
  const int64_t dim = at::maybe_wrap_dim(dims[0], self.dim());
  TORCH_CHECK(dim == self.dim() - 1, "NestedTensor can only be reduced across the last dimension for now ",
              "got dimension ", dim, " instead.");
  TORCH_CHECK(keepdim, "NestedTensor always requires keepdim=True for now.");
  TORCH_CHECK(!dtype, "NestedTensor does not support dtype argument for now.");
  const auto* impl = at::native::get_nested_tensor_impl(self);
  TORCH_CHECK(at::native::nested_tensor_impl_is_contiguous(impl),
              "NestedTensor does not support reductions when the input is noncontiguous for now.");
  // The CPU kernel's dtypes, and its message for the others (bool, complex).
  AT_DISPATCH_ALL_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, self.scalar_type(), "nested_sum_dim_cpu",
                             [] {});
  if (impl->size(0) == 0) {
    return self;  // as the CPU's
  }
  const at::Tensor sizes = sizesWithLastDimension(self, 1);
  if (self.numel() == 0) {
    // Nothing to pad (to_padded_tensor refuses): each sum is of no elements.
    return at::native::wrap_buffer(at::zeros({sizes.prod(-1).sum().item<int64_t>()}, self.options()), sizes);
  }
  // Padding with zeros adds nothing to a sum, and is cut off again. The sum
  // keeps the input's dtype, as the CPU's does.
  const at::Tensor sums = self.to_padded_tensor(0).sum(-1, /*keepdim=*/true, self.scalar_type());
  return at::_nested_from_padded(sums, sizes);
}

at::Tensor sumLastDimensionBackward(const at::Tensor& grad, const at::Tensor& self, at::OptionalIntArrayRef opt_dims,
                                    bool keepdim) {
  TORCH_CHECK(opt_dims.has_value() && opt_dims->size() == 1 && keepdim,
              "NestedTensor sum backward supports one dimension, kept");
  if (self.numel() == 0) {
    return at::zeros_like(self);
  }
  const at::Tensor self_sizes = at::native::get_nested_tensor_impl(self)->get_nested_sizes();
  std::vector<int64_t> padded_shape{self_sizes.size(0)};
  if (self_sizes.size(0) > 0) {
    const at::Tensor largest = std::get<0>(self_sizes.max(0));
    for (int64_t i = 0; i < largest.numel(); ++i) {
      padded_shape.push_back(largest[i].item<int64_t>());
    }
  }
  const at::Tensor expanded = grad.to_padded_tensor(0).expand(padded_shape).contiguous();
  return at::_nested_from_padded(expanded, self_sizes);
}

// Attention's projection of a nested qkv: the dense kernel on its padded form,
// which CPU's kernel also computes (on the host).
std::tuple<at::Tensor, at::Tensor, at::Tensor> transformBiasRescaleQkv(const at::Tensor& qkv,
                                                                       const at::Tensor& qkv_bias, int64_t num_heads) {
  return at::_transform_bias_rescale_qkv(qkv.to_padded_tensor(0), qkv_bias, num_heads);
}

// ATen's checks divide the elements by the normalized shape's (the CPU's
// nested layer norm dies of SIGFPE on a last dimension of 0).
void checkNormalizedShapeHasElements(at::IntArrayRef shape) {
  TORCH_CHECK(c10::multiply_integers(shape) > 0,
              "layer_norm of a nested tensor needs a normalized_shape with elements, got ", shape);
}

std::optional<at::Tensor> flat(const std::optional<at::Tensor>& tensor) {
  return tensor && tensor->defined() ? std::optional<at::Tensor>(tensor->reshape({-1})) : std::nullopt;
}

// Layer norm of a contiguous nested tensor over its last, regular
// dimensions: the dense kernel over its buffer seen as M rows of N, after the
// CPU's own checks of the shapes (which keep a ragged dimension out).
std::tuple<at::Tensor, at::Tensor, at::Tensor> layerNorm(const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
                                                          const std::optional<at::Tensor>& weight,
                                                          const std::optional<at::Tensor>& bias, double eps) {
  TORCH_CHECK_VALUE(weight && weight->defined() && bias && bias->defined(),
                    "NestedTensor layer_norm requires weight and bias");  // as the CPU's and CUDA's
  const auto* impl = at::native::get_nested_tensor_impl(input);
  TORCH_CHECK(at::native::nested_tensor_impl_is_contiguous(impl), "NestedTensor must be contiguous for layer_norm");
  const auto shape = C10_AS_INTARRAYREF_SLOW(normalized_shape);
  checkNormalizedShapeHasElements(shape);
  const auto [rows, features] = at::native::_check_nested_layer_norm_inputs(
      *impl, shape, weight.value_or(at::Tensor()), bias.value_or(at::Tensor()));
  auto [output, mean, rstd] =
      at::native_layer_norm(impl->get_buffer().view({rows, features}), {features}, flat(weight), flat(bias), eps);
  // One statistic per row, as the CPU's nested kernel shapes them.
  return {at::native::wrap_buffer(output.view({-1}), impl->get_nested_sizes().clone()), mean.view({rows}),
          rstd.view({rows})};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layerNormBackward(
    const at::Tensor& grad_out, const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
    const at::Tensor& mean, const at::Tensor& rstd, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, std::array<bool, 3> output_mask) {
  const auto* impl = at::native::get_nested_tensor_impl(input);
  const auto shape = C10_AS_INTARRAYREF_SLOW(normalized_shape);
  checkNormalizedShapeHasElements(shape);
  const auto [rows, features] = at::native::_check_nested_layer_norm_inputs(
      *impl, shape, weight.value_or(at::Tensor()), bias.value_or(at::Tensor()));
  const at::Tensor grad_rows = at::native::get_buffer(grad_out.contiguous()).view({rows, features});
  auto [grad_input, grad_weight, grad_bias] = at::native_layer_norm_backward(
      grad_rows, impl->get_buffer().view({rows, features}), {features}, mean.view({rows, 1}), rstd.view({rows, 1}),
      flat(weight), flat(bias), output_mask);
  if (grad_input.defined()) {
    grad_input = at::native::wrap_buffer(grad_input.view({-1}), impl->get_nested_sizes().clone());
  }
  if (grad_weight.defined() && weight && weight->defined()) {
    grad_weight = grad_weight.view(weight->sizes());
  }
  if (grad_bias.defined() && bias && bias->defined()) {
    grad_bias = grad_bias.view(bias->sizes());
  }
  return {grad_input, grad_weight, grad_bias};
}

// A nested tensor's sizes, strides and offsets live on the host, where ATen's
// generic constructors read them: on the device they would be read from
// device memory (a fault that ends the process).
void checkOnHost(const at::Tensor& metadata, const char* what, const char* op) {
  TORCH_CHECK(metadata.is_cpu(), op, ": the nested ", what, " must be a CPU tensor (a nested tensor's metadata ",
              "lives on the host), got one on ", metadata.device());
}

at::Tensor nestedFromPadded(const at::Tensor& padded, const at::Tensor& sizes, bool fuse_transform_0213) {
  checkOnHost(sizes, "sizes", "_nested_from_padded");
  return at::native::nested_from_padded_generic(padded, sizes, fuse_transform_0213);
}

at::Tensor nestedViewFromBuffer(const at::Tensor& buffer, const at::Tensor& sizes, const at::Tensor& strides,
                                const at::Tensor& offsets) {
  checkOnHost(sizes, "sizes", "_nested_view_from_buffer");
  checkOnHost(strides, "strides", "_nested_view_from_buffer");
  checkOnHost(offsets, "offsets", "_nested_view_from_buffer");
  return at::native::_nested_view_from_buffer(buffer, sizes, strides, offsets);
}

// Registered by name at load, for every operator the CPU has a nested kernel
// for (ATen's registrations are complete by then), except those above.
struct RegisterNestedKernels {
  RegisterNestedKernels() {
    static const std::set<std::string> kReplaced{
        "aten::sum.dim_IntList",        "aten::_nested_sum_backward",        "aten::_transform_bias_rescale_qkv",
        "aten::native_layer_norm",      "aten::native_layer_norm_backward",  "aten::_pin_memory",
    };
    static torch::Library library(torch::Library::IMPL, "aten", c10::DispatchKey::NestedTensorPrivateUse1, __FILE__,
                                  __LINE__);
    for (const c10::OperatorName& operator_name :
         c10::Dispatcher::singleton().getRegistrationsForDispatchKey(c10::DispatchKey::NestedTensorCPU)) {
      const std::string name = c10::toString(operator_name);
      if (name.rfind("aten::", 0) == 0 && kReplaced.count(name) == 0) {
        library.impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&redispatchToNestedCpu>());
      }
    }
  }
} register_nested_kernels;

}  // namespace

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("sum.dim_IntList", TORCH_FN(sumLastDimension));
  m.impl("_nested_sum_backward", TORCH_FN(sumLastDimensionBackward));
  m.impl("_transform_bias_rescale_qkv", TORCH_FN(transformBiasRescaleQkv));
  m.impl("native_layer_norm", TORCH_FN(layerNorm));
  m.impl("native_layer_norm_backward", TORCH_FN(layerNormBackward));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_nested_tensor_from_mask", TORCH_FN(at::native::NestedTensor_nested_tensor_from_mask));
  m.impl("_nested_from_padded", TORCH_FN(nestedFromPadded));
  m.impl("_nested_view_from_buffer", TORCH_FN(nestedViewFromBuffer));
}

}  // namespace torch_mydev
