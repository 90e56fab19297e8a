// Native kernels of layer, batch and group normalization. These operators are not
// structured, so their output geometry is written out here, following ATen's
// CPU functions; the computation is ATen's CPU kernel writing straight into
// the device outputs: the LayerNormKernel DispatchStub's CPU entry (setup.py
// explains the build flags that calling a DispatchStub needs) and the CPU
// batch_norm out= kernel. Batch norm's backward and group norm have no CPU
// out= kernels: their CPU results are copied into the device outputs on the
// worker. (Without these kernels group norm would run PyTorch's composite
// decomposition, whose rounding differs from the CPU kernel in half precision.)
#include "NativeCall.h"

#include <ATen/CPUFunctions.h>
#include <ATen/native/cpu/mixed_data_type.h>
#include <ATen/native/layer_norm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/irange.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;

Tensor definedOrEmpty(const std::optional<Tensor>& tensor) { return tensor.has_value() ? *tensor : Tensor(); }

Tensor contiguousOrUndefined(const Tensor& tensor) { return tensor.defined() ? tensor.contiguous() : tensor; }

std::tuple<Tensor, Tensor, Tensor> nativeLayerNorm(const Tensor& input, at::IntArrayRef normalized_shape,
                                                   const std::optional<Tensor>& weight_opt,
                                                   const std::optional<Tensor>& bias_opt, double eps) {
  NativeCall call("aten::native_layer_norm", input, weight_opt, bias_opt);
  const Tensor weight = definedOrEmpty(weight_opt);
  const Tensor bias = definedOrEmpty(bias_opt);
  const bool mixed_type = at::native::is_mixed_type(input, weight, bias);
  if (mixed_type) {
    at::native::check_mixed_data_type(input, weight, bias);
  }
  const auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);

  const size_t axis = input.dim() - normalized_shape.size();
  at::DimVector stat_shape(input.sizes().begin(), input.sizes().begin() + axis);
  stat_shape.resize(input.dim(), 1);
  const auto stat_options = input.options().dtype(at::native::param_scalar_type(input, mixed_type));
  Tensor output = at::empty(input.sizes(), input.options());
  Tensor mean = at::empty(stat_shape, stat_options);
  Tensor rstd = at::empty(stat_shape, stat_options);
  if (M > 0) {
    call.launch(
        [M = M, N = N, eps](const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor y, Tensor mean,
                            Tensor rstd) {
          at::native::LayerNormKernel(c10::DeviceType::CPU, x.contiguous(), contiguousOrUndefined(gamma),
                                      contiguousOrUndefined(beta), M, N, eps, &y, &mean, &rstd);
        },
        input, weight, bias, output, mean, rstd);
  }
  return {output, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> nativeLayerNormBackward(
    const Tensor& grad_out, const Tensor& input, at::IntArrayRef normalized_shape, const Tensor& mean,
    const Tensor& rstd, const std::optional<Tensor>& weight_opt, const std::optional<Tensor>& bias_opt,
    std::array<bool, 3> grad_input_mask) {
  NativeCall call("aten::native_layer_norm_backward", grad_out, input, mean, rstd, weight_opt, bias_opt);
  const Tensor weight = definedOrEmpty(weight_opt);
  const Tensor bias = definedOrEmpty(bias_opt);
  const auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);
  const auto contiguous = at::MemoryFormat::Contiguous;
  Tensor grad_input;
  Tensor grad_weight;
  Tensor grad_bias;
  if (grad_input_mask[0]) {
    grad_input = at::empty(input.sizes(), input.options());
  }
  if (grad_input_mask[1]) {
    grad_weight = M > 0 ? at::empty_like(weight, contiguous) : at::zeros_like(weight, contiguous);
  }
  if (grad_input_mask[2]) {
    grad_bias = M > 0 ? at::empty_like(bias, contiguous) : at::zeros_like(bias, contiguous);
  }
  if (M > 0 && N > 0) {
    call.launch(
        [M = M, N = N](const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gamma,
                       Tensor dx, Tensor dgamma, Tensor dbeta) {
          at::native::LayerNormBackwardKernel(c10::DeviceType::CPU, dy.contiguous(), x.contiguous(), mean, rstd,
                                              contiguousOrUndefined(gamma), M, N, &dx, &dgamma, &dbeta);
        },
        grad_out, input, mean, rstd, weight, grad_input, grad_weight, grad_bias);
  }
  return {grad_input, grad_weight, grad_bias};
}

// Statistics are saved only in training mode; in evaluation ATen's CPU kernel
// returns empty ones.
std::tuple<Tensor, Tensor, Tensor> nativeBatchNorm(const Tensor& input, const std::optional<Tensor>& weight,
                                                   const std::optional<Tensor>& bias,
                                                   const std::optional<Tensor>& running_mean,
                                                   const std::optional<Tensor>& running_var, bool training,
                                                   double momentum, double eps) {
  NativeCall call("aten::native_batch_norm", input, weight, bias, running_mean, running_var);
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected input with at least 2 dimensions, got ", input.dim());
  const bool mixed_type = at::native::is_mixed_type(input, definedOrEmpty(weight), definedOrEmpty(bias),
                                                    definedOrEmpty(running_mean), definedOrEmpty(running_var));
  const auto stat_options = input.options().dtype(mixed_type ? at::kFloat : input.scalar_type());
  Tensor output = at::empty_like(input, input.suggest_memory_format());
  Tensor save_mean = at::empty({training ? input.size(1) : 0}, stat_options);
  Tensor save_invstd = at::empty({training ? input.size(1) : 0}, stat_options);
  call.addChoices(training);
  call.launch(
      [training, momentum, eps](const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                                const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                                Tensor out, Tensor save_mean, Tensor save_invstd) {
        at::cpu::native_batch_norm_outf(x, weight, bias, running_mean, running_var, training, momentum, eps, out,
                                        save_mean, save_invstd);
      },
      input, weight, bias, running_mean, running_var, output, save_mean, save_invstd);
  return {output, save_mean, save_invstd};
}

std::tuple<Tensor, Tensor, Tensor> nativeBatchNormBackward(
    const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_invstd, bool training, double eps,
    std::array<bool, 3> output_mask) {
  NativeCall call("aten::native_batch_norm_backward", grad_out, input, weight, running_mean, running_var, save_mean,
                  save_invstd);
  const bool mixed_type = at::native::is_mixed_type(input, definedOrEmpty(weight), definedOrEmpty(running_mean),
                                                    definedOrEmpty(running_var));
  const auto parameter_options = input.options().dtype(mixed_type ? at::kFloat : input.scalar_type());
  Tensor grad_input = output_mask[0] ? at::empty_like(input, input.suggest_memory_format()) : Tensor();
  Tensor grad_weight = output_mask[1] ? at::empty({input.size(1)}, parameter_options) : Tensor();
  Tensor grad_bias = output_mask[2] ? at::empty({input.size(1)}, parameter_options) : Tensor();
  call.addChoices(training);
  call.launch(
      [training, eps, output_mask](const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& running_mean,
                                   const std::optional<Tensor>& running_var, const std::optional<Tensor>& save_mean,
                                   const std::optional<Tensor>& save_invstd, Tensor grad_input, Tensor grad_weight,
                                   Tensor grad_bias) {
        HostResults results({grad_input, grad_weight, grad_bias});
        const auto [input_result, weight_result, bias_result] =
            at::cpu::native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                                                save_invstd, training, eps, output_mask);
        results.store({input_result, weight_result, bias_result});
      },
      grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, grad_input, grad_weight, grad_bias);
  return {grad_input, grad_weight, grad_bias};
}

std::tuple<Tensor, Tensor, Tensor> nativeGroupNorm(const Tensor& input, const std::optional<Tensor>& weight,
                                                   const std::optional<Tensor>& bias, int64_t N, int64_t C,
                                                   int64_t HxW, int64_t group, double eps) {
  NativeCall call("aten::native_group_norm", input, weight, bias);
  TORCH_CHECK(group > 0 && C % group == 0, "native_group_norm: expected the number of channels (", C,
              ") to be divisible by the number of groups (", group, ")");
  TORCH_CHECK(input.numel() == N * C * HxW, "native_group_norm: expected input with N * C * HxW = ", N * C * HxW,
              " elements, got ", input.numel());
  const bool mixed_type = at::native::is_mixed_type(input, definedOrEmpty(weight), definedOrEmpty(bias));
  const auto stat_options = input.options().dtype(at::native::param_scalar_type(input, mixed_type));
  Tensor output = at::empty_like(input, input.suggest_memory_format());
  Tensor mean = at::empty({N, group}, stat_options);
  Tensor rstd = at::empty({N, group}, stat_options);
  call.addChoices(group);
  call.launch(
      [N, C, HxW, group, eps](const Tensor& input, const std::optional<Tensor>& weight,
                              const std::optional<Tensor>& bias, const Tensor& output, const Tensor& mean,
                              const Tensor& rstd) {
        HostResults results({output, mean, rstd});
        const auto [y, m, r] = at::cpu::native_group_norm(input, weight, bias, N, C, HxW, group, eps);
        results.store({y, m, r});
      },
      input, weight, bias, output, mean, rstd);
  return {output, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> nativeGroupNormBackward(const Tensor& grad_out, const Tensor& input,
                                                           const Tensor& mean, const Tensor& rstd,
                                                           const std::optional<Tensor>& weight, int64_t N, int64_t C,
                                                           int64_t HxW, int64_t group,
                                                           std::array<bool, 3> output_mask) {
  NativeCall call("aten::native_group_norm_backward", grad_out, input, mean, rstd, weight);
  const auto parameter_options = weight.has_value() && weight->defined() ? weight->options() : input.options();
  Tensor grad_input = output_mask[0] ? at::empty_like(input, input.suggest_memory_format()) : Tensor();
  Tensor grad_weight = output_mask[1] ? at::empty({C}, parameter_options) : Tensor();
  Tensor grad_bias = output_mask[2] ? at::empty({C}, parameter_options) : Tensor();
  call.addChoices(group);
  call.launch(
      [N, C, HxW, group, output_mask](const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                      const Tensor& rstd, const std::optional<Tensor>& weight,
                                      const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias) {
        HostResults results({grad_input, grad_weight, grad_bias});
        const auto [dx, dgamma, dbeta] =
            at::cpu::native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask);
        results.store({dx, dgamma, dbeta});
      },
      grad_out, input, mean, rstd, weight, grad_input, grad_weight, grad_bias);
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_layer_norm", TORCH_FN(nativeLayerNorm));
  m.impl("native_layer_norm_backward", TORCH_FN(nativeLayerNormBackward));
  m.impl("native_batch_norm", TORCH_FN(nativeBatchNorm));
  m.impl("native_batch_norm_backward", TORCH_FN(nativeBatchNormBackward));
  m.impl("native_group_norm", TORCH_FN(nativeGroupNorm));
  m.impl("native_group_norm_backward", TORCH_FN(nativeGroupNormBackward));
}

}  // namespace torch_mydev::native
