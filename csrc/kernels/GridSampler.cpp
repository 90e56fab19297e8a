// grid_sampler_2d and its backward on bfloat16 and half inputs too large for
// ATen's vectorized CPU kernel.
//
// That kernel gathers input elements with offsets of the input's element size,
// int16 for 2-byte dtypes. ATen (2.13) checks that the offsets fit only for
// float32 (int32 offsets, with a scalar fallback kernel beyond). For bfloat16
// and half, an input plane reaching past 32,767 elements makes it read outside
// the input: on the CPU the result holds whatever memory it hit (NaNs that
// change between processes; the conformance kit's 2x3x345x456 sample), on
// mydev the read can leave device memory and fault the stream worker, which
// would lose the process. Such calls run here in float32, whose own check
// applies, and round the results to the input's dtype. Every other call runs
// ATen's CPU kernel through the generic fallback, as before.
#include "../aten/Fallback.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/grid_sampler_2d_backward_ops.h>
#include <ATen/ops/grid_sampler_2d_ops.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

namespace torch_mydev::native {

namespace {

using at::Tensor;

// The widest vector ATen's CPU kernels are built for (AVX-512) holds 32
// two-byte lanes; the kernel's grid gathers span that many grid elements.
constexpr int64_t kWidestTwoByteVector = 32;

bool gathersPastInt16(const Tensor& input, const Tensor& grid) {
  if (input.scalar_type() != at::kBFloat16 && input.scalar_type() != at::kHalf) {
    return false;
  }
  if (input.dim() != 4 || grid.dim() != 4 || input.numel() == 0 || grid.numel() == 0) {
    return false;  // ATen's shape checks report these
  }
  const int64_t input_reach = (input.size(2) - 1) * input.stride(2) + (input.size(3) - 1) * input.stride(3);
  // The backward kernel scatters into a contiguous grad_input plane.
  const int64_t plane_reach = input.size(2) * input.size(3) - 1;
  const int64_t grid_reach = grid.stride(2) * (kWidestTwoByteVector - 1);
  return std::max({input_reach, plane_reach, grid_reach}) > std::numeric_limits<int16_t>::max();
}

Tensor toFloat(const Tensor& tensor) { return tensor.defined() ? tensor.to(at::kFloat) : tensor; }

Tensor toDtypeOf(const Tensor& result, const Tensor& like) {
  return result.defined() ? result.to(like.scalar_type()) : result;
}

// grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)
void gridSampler2d(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  constexpr size_t kArguments = 5;
  const Tensor input = torch::jit::peek(*stack, 0, kArguments).toTensor();
  const Tensor grid = torch::jit::peek(*stack, 1, kArguments).toTensor();
  if (!gathersPastInt16(input, grid)) {
    runOnDevice(op, stack);
    return;
  }
  const int64_t interpolation = torch::jit::peek(*stack, 2, kArguments).toInt();
  const int64_t padding = torch::jit::peek(*stack, 3, kArguments).toInt();
  const bool align_corners = torch::jit::peek(*stack, 4, kArguments).toBool();
  torch::jit::drop(*stack, kArguments);
  const Tensor output =
      at::_ops::grid_sampler_2d::call(toFloat(input), toFloat(grid), interpolation, padding, align_corners);
  torch::jit::push(*stack, toDtypeOf(output, input));
}

// grid_sampler_2d_backward(grad_output, input, grid, interpolation_mode,
// padding_mode, align_corners, output_mask)
void gridSampler2dBackward(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  constexpr size_t kArguments = 7;
  const Tensor input = torch::jit::peek(*stack, 1, kArguments).toTensor();
  const Tensor grid = torch::jit::peek(*stack, 2, kArguments).toTensor();
  if (!gathersPastInt16(input, grid)) {
    runOnDevice(op, stack);
    return;
  }
  const Tensor grad_output = torch::jit::peek(*stack, 0, kArguments).toTensor();
  const int64_t interpolation = torch::jit::peek(*stack, 3, kArguments).toInt();
  const int64_t padding = torch::jit::peek(*stack, 4, kArguments).toInt();
  const bool align_corners = torch::jit::peek(*stack, 5, kArguments).toBool();
  const c10::List<bool> mask = torch::jit::peek(*stack, 6, kArguments).toBoolList();
  const std::array<bool, 2> output_mask{mask.get(0), mask.get(1)};
  torch::jit::drop(*stack, kArguments);
  const auto [grad_input, grad_grid] = at::_ops::grid_sampler_2d_backward::call(
      toFloat(grad_output), toFloat(input), toFloat(grid), interpolation, padding, align_corners, output_mask);
  torch::jit::push(*stack, toDtypeOf(grad_input, input), toDtypeOf(grad_grid, grid));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", torch::CppFunction::makeFromBoxedFunction<&gridSampler2d>());
  m.impl("grid_sampler_2d_backward", torch::CppFunction::makeFromBoxedFunction<&gridSampler2dBackward>());
}

}  // namespace torch_mydev::native
