// The example of a vendor operator: mydev::fused_bias_gelu(input, bias)
// computes gelu(input + bias) (bias along the last dimension), the epilogue a
// vendor would fuse into one kernel. It has a kernel for mydev, one for the
// CPU (the reference tests compare against), and a Meta kernel for shape
// inference (FakeTensor, torch.compile). The autograd formulas of both
// operators, the backward one included (for double backward), are registered
// from Python (torch_mydev/ops/fused_bias_gelu.py) with
// torch.library.register_autograd.
#include "NativeCall.h"

#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/gelu_backward.h>
#include <torch/library.h>

#include <string>

namespace torch_mydev::native {

namespace {

using at::Tensor;

void checkArguments(const char* op, const Tensor& input, const Tensor& bias, std::string_view approximate) {
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), op, ": expected a floating point input, got ",
              input.scalar_type());
  TORCH_CHECK(bias.scalar_type() == input.scalar_type(), op, ": bias dtype ", bias.scalar_type(),
              " differs from input dtype ", input.scalar_type());
  TORCH_CHECK(input.dim() >= 1 && bias.dim() == 1 && bias.size(0) == input.size(-1), op,
              ": expected a 1-D bias of size input.size(-1), got input of shape ", input.sizes(),
              " and bias of shape ", bias.sizes());
  TORCH_CHECK(approximate == "none" || approximate == "tanh", op, ": approximate must be 'none' or 'tanh', got '",
              approximate, "'");
}

void checkBackwardArguments(const Tensor& grad_output, const Tensor& input, const Tensor& bias,
                            std::string_view approximate) {
  constexpr const char* op = "mydev::fused_bias_gelu_backward";
  checkArguments(op, input, bias, approximate);
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), op, ": grad_output dtype ",
              grad_output.scalar_type(), " differs from input dtype ", input.scalar_type());
  TORCH_CHECK(grad_output.sizes() == input.sizes(), op, ": expected grad_output of the input's shape ",
              input.sizes(), ", got ", grad_output.sizes());
}

// The computation, over CPU tensors (the CPU kernel, or device memory mapped
// on the stream worker), written into the output: the sum first, then gelu
// (or its gradient) in place over it, with no intermediate tensor.
void biasGelu(const Tensor& input, const Tensor& bias, std::string_view approximate, Tensor& out) {
  at::add_out(out, input, bias);
  at::gelu_(out, approximate);
}

void biasGeluBackward(const Tensor& grad_output, const Tensor& input, const Tensor& bias,
                      std::string_view approximate, Tensor& grad_input) {
  at::add_out(grad_input, input, bias);
  at::gelu_backward_out(grad_input, grad_output, grad_input, approximate);
}

Tensor fusedBiasGeluCpu(const Tensor& input, const Tensor& bias, std::string_view approximate) {
  checkArguments("mydev::fused_bias_gelu", input, bias, approximate);
  Tensor out = at::empty(input.sizes(), input.options());
  biasGelu(input, bias, approximate, out);
  return out;
}

Tensor fusedBiasGeluMydev(const Tensor& input, const Tensor& bias, std::string_view approximate) {
  NativeCall call("mydev::fused_bias_gelu", input, bias);
  checkArguments("mydev::fused_bias_gelu", input, bias, approximate);
  Tensor out = at::empty(input.sizes(), input.options());
  call.launch([](const Tensor& input, const Tensor& bias, std::string_view approximate,
                 Tensor out) { biasGelu(input, bias, approximate, out); },
              input, bias, approximate, out);
  return out;
}

Tensor fusedBiasGeluMeta(const Tensor& input, const Tensor& bias, std::string_view approximate) {
  checkArguments("mydev::fused_bias_gelu", input, bias, approximate);
  return at::empty(input.sizes(), input.options());
}

Tensor fusedBiasGeluBackwardCpu(const Tensor& grad_output, const Tensor& input, const Tensor& bias,
                                std::string_view approximate) {
  checkBackwardArguments(grad_output, input, bias, approximate);
  Tensor grad_input = at::empty(input.sizes(), input.options());
  biasGeluBackward(grad_output, input, bias, approximate, grad_input);
  return grad_input;
}

Tensor fusedBiasGeluBackwardMydev(const Tensor& grad_output, const Tensor& input, const Tensor& bias,
                                  std::string_view approximate) {
  NativeCall call("mydev::fused_bias_gelu_backward", grad_output, input, bias);
  checkBackwardArguments(grad_output, input, bias, approximate);
  Tensor grad_input = at::empty(input.sizes(), input.options());
  call.launch([](const Tensor& grad_output, const Tensor& input, const Tensor& bias, std::string_view approximate,
                 Tensor grad_input) { biasGeluBackward(grad_output, input, bias, approximate, grad_input); },
              grad_output, input, bias, approximate, grad_input);
  return grad_input;
}

Tensor fusedBiasGeluBackwardMeta(const Tensor& grad_output, const Tensor& input, const Tensor& bias,
                                 std::string_view approximate) {
  checkBackwardArguments(grad_output, input, bias, approximate);
  return at::empty(input.sizes(), input.options());
}

}  // namespace

TORCH_LIBRARY(mydev, m) {
  m.def("fused_bias_gelu(Tensor input, Tensor bias, str approximate='none') -> Tensor");
  m.def("fused_bias_gelu_backward(Tensor grad_output, Tensor input, Tensor bias, str approximate='none') -> Tensor");
}

TORCH_LIBRARY_IMPL(mydev, PrivateUse1, m) {
  m.impl("fused_bias_gelu", TORCH_FN(fusedBiasGeluMydev));
  m.impl("fused_bias_gelu_backward", TORCH_FN(fusedBiasGeluBackwardMydev));
}

TORCH_LIBRARY_IMPL(mydev, CPU, m) {
  m.impl("fused_bias_gelu", TORCH_FN(fusedBiasGeluCpu));
  m.impl("fused_bias_gelu_backward", TORCH_FN(fusedBiasGeluBackwardCpu));
}

TORCH_LIBRARY_IMPL(mydev, Meta, m) {
  m.impl("fused_bias_gelu", TORCH_FN(fusedBiasGeluMeta));
  m.impl("fused_bias_gelu_backward", TORCH_FN(fusedBiasGeluBackwardMeta));
}

}  // namespace torch_mydev::native
