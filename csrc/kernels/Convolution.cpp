// Convolution. For a backend that is not CPU, CUDA or MKLDNN, ATen's
// convolution checks the arguments, then lands in convolution_overrideable /
// convolution_backward_overrideable, whose default kernels only raise. mydev
// implements both: the output shapes come from ATen's own formulas
// (ConvUtils.h), the outputs are contiguous (what PyTorch's meta and fake
// kernels predict for an "overrideable" backend, so eager and torch.compile
// agree), and the kernel runs ATen's CPU convolution over device memory. The
// CPU convolution allocates its own results, after scratch of the same size
// (oneDNN's reorders): the kernel learns, per set of arguments, which
// allocation is the result and lends it the device output's memory (LoanPlan).
#include "NativeCall.h"

#include <ATen/native/ConvUtils.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty.h>
#include <c10/util/hash.h>
#include <torch/library.h>

#include <initializer_list>

namespace torch_mydev::native {

namespace {

using at::Tensor;

// What decides which allocations ATen's convolution makes: the backend it
// picks and oneDNN's formats follow from shapes, strides, dtypes and options.
size_t layoutKey(std::initializer_list<Tensor> tensors, at::IntArrayRef stride,
                 at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
                 int64_t groups) {
  size_t key = c10::get_hash(stride, padding, dilation, transposed, output_padding, groups);
  for (const Tensor& tensor : tensors) {
    key = c10::hash_combine(key, tensor.defined() ? c10::get_hash(tensor.sizes(), tensor.strides(),
                                                                    tensor.scalar_type())
                                                  : 0);
  }
  return key;
}

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                   at::IntArrayRef output_padding, int64_t groups) {
  NativeCall call("aten::convolution_overrideable", input, weight, bias);
  const std::vector<int64_t> shape =
      transposed ? at::native::conv_input_size(input.sizes(), weight.sizes(), padding, output_padding, stride,
                                               dilation, groups)
                 : at::native::conv_output_size(input.sizes(), weight.sizes(), padding, stride, dilation);
  Tensor output = at::empty(shape, input.options());
  call.addChoices(stride, padding, dilation, transposed, output_padding, groups);
  call.launch(
      [stride = stride.vec(), padding = padding.vec(), dilation = dilation.vec(), transposed,
       output_padding = output_padding.vec(), groups](const Tensor& input, const Tensor& weight,
                                                      const std::optional<Tensor>& bias, Tensor output) {
        thread_local LoanPlans plans;
        HostResults results(output, plans.forKey(layoutKey({input, weight, bias.value_or(Tensor())}, stride, padding,
                                                           dilation, transposed, output_padding, groups)));
        results.store(
            {at::convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)});
      },
      input, weight, bias, output);
  return output;
}

std::tuple<Tensor, Tensor, Tensor> convolutionBackward(const Tensor& grad_output, const Tensor& input,
                                                       const Tensor& weight, at::IntArrayRef stride,
                                                       at::IntArrayRef padding, at::IntArrayRef dilation,
                                                       bool transposed, at::IntArrayRef output_padding, int64_t groups,
                                                       std::array<bool, 3> output_mask) {
  NativeCall call("aten::convolution_backward_overrideable", grad_output, input, weight);
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  Tensor grad_input = output_mask[0] ? at::empty(input.sizes(), input.options()) : Tensor();
  Tensor grad_weight = output_mask[1] ? at::empty(weight.sizes(), weight.options()) : Tensor();
  Tensor grad_bias = output_mask[2] ? at::empty({out_channels}, grad_output.options()) : Tensor();
  call.addChoices(stride, padding, dilation, transposed, output_padding, groups);
  call.launch(
      [stride = stride.vec(), padding = padding.vec(), dilation = dilation.vec(), transposed,
       output_padding = output_padding.vec(), groups, output_mask,
       out_channels](const Tensor& grad_output, const Tensor& input, const Tensor& weight, Tensor grad_input,
                     Tensor grad_weight, Tensor grad_bias) {
        thread_local LoanPlans plans;
        const size_t key = c10::hash_combine(layoutKey({grad_output, input, weight}, stride, padding, dilation,
                                                       transposed, output_padding, groups),
                                             c10::get_hash(output_mask[0], output_mask[1], output_mask[2]));
        HostResults results({grad_input, grad_weight, grad_bias}, plans.forKey(key));
        const auto [input_result, weight_result, bias_result] = at::convolution_backward(
            grad_output, input, weight, output_mask[2] ? std::optional<at::IntArrayRef>(at::IntArrayRef(out_channels))
                                                       : std::nullopt,
            stride, padding, dilation, transposed, output_padding, groups, output_mask);
        results.store({input_result, weight_result, bias_result});
      },
      grad_output, input, weight, grad_input, grad_weight, grad_bias);
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolutionBackward));
}

}  // namespace torch_mydev::native
