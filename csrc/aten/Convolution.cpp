// Convolution. For a backend that is not CPU/CUDA/MKLDNN, ATen's convolution
// lands in convolution_overrideable / convolution_backward_overrideable, whose
// default kernels only raise. mydev routes both to the device-independent
// convolution operators, run by the generic tier (ATen's CPU convolution over
// device memory).
#include "Fallback.h"

#include <torch/library.h>

namespace torch_mydev {

namespace {

c10::IValue intList(c10::IntArrayRef values) { return c10::IValue(values.vec()); }

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                       c10::IntArrayRef output_padding, int64_t groups) {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution", "");
  torch::jit::Stack stack{input,      weight,     bias, intList(stride), intList(padding), intList(dilation),
                          transposed, intList(output_padding), groups};
  runOnDevice(op, &stack);
  return stack[0].toTensor();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolutionBackward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution_backward", "");
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  c10::IValue bias_sizes = output_mask[2] ? intList({out_channels}) : c10::IValue();
  c10::List<bool> mask({output_mask[0], output_mask[1], output_mask[2]});
  torch::jit::Stack stack{grad_output, input,          weight, bias_sizes, intList(stride), intList(padding),
                          intList(dilation), transposed, intList(output_padding), groups, mask};
  runOnDevice(op, &stack);
  return {stack[0].toTensor(), stack[1].toTensor(), stack[2].toTensor()};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolutionBackward));
}

}  // namespace torch_mydev
