// The fused LSTM and GRU cells. ATen's nn.LSTM / nn.GRU call
// _thnn_fused_lstm_cell / _thnn_fused_gru_cell (and their backward operators)
// for every accelerator other than the CPU, and ATen only has CUDA kernels for
// them. mydev implements them by composing its own native pointwise kernels,
// with the formulas of ATen's CUDA kernels. The workspace holds what the
// backward needs; its layout is private to these two files' forward/backward
// pairs: LSTM [input, forget, cell, output gates] after activation, GRU
// [reset, input, new gates, hx, hidden new-gate part].
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;

Tensor withBias(const Tensor& gates, const std::optional<Tensor>& bias) {
  return bias.has_value() && bias->defined() ? gates + *bias : gates;
}

void checkGates(const char* op, const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& state,
                int64_t gate_count) {
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.sizes() == hidden_gates.sizes(), op,
              ": input_gates and hidden_gates must be 2-D and of the same shape, got ", input_gates.sizes(), " and ",
              hidden_gates.sizes());
  TORCH_CHECK(state.dim() == 2 && state.size(0) == input_gates.size(0) &&
                  state.size(1) * gate_count == input_gates.size(1),
              op, ": expected a state of shape [", input_gates.size(0), ", ", input_gates.size(1) / gate_count,
              "], got ", state.sizes());
}

std::tuple<Tensor, Tensor, Tensor> lstmCell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx,
                                            const std::optional<Tensor>& input_bias,
                                            const std::optional<Tensor>& hidden_bias) {
  checkGates("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, 4);
  const Tensor gates = withBias(input_gates, input_bias) + withBias(hidden_gates, hidden_bias);
  const auto chunks = gates.chunk(4, 1);
  const Tensor in_gate = chunks[0].sigmoid();
  const Tensor forget_gate = chunks[1].sigmoid();
  const Tensor cell_gate = chunks[2].tanh();
  const Tensor out_gate = chunks[3].sigmoid();
  Tensor cy = forget_gate * cx + in_gate * cell_gate;
  Tensor hy = out_gate * cy.tanh();
  Tensor workspace = at::cat({in_gate, forget_gate, cell_gate, out_gate}, 1);
  return {hy, cy, workspace};
}

std::tuple<Tensor, Tensor, Tensor> lstmCellBackward(const std::optional<Tensor>& grad_hy_opt,
                                                    const std::optional<Tensor>& grad_cy_opt, const Tensor& cx,
                                                    const Tensor& cy, const Tensor& workspace, bool has_bias) {
  const auto gates = workspace.chunk(4, 1);
  const Tensor& in_gate = gates[0];
  const Tensor& forget_gate = gates[1];
  const Tensor& cell_gate = gates[2];
  const Tensor& out_gate = gates[3];
  const Tensor grad_hy = grad_hy_opt.has_value() && grad_hy_opt->defined() ? *grad_hy_opt : at::zeros_like(cx);
  const Tensor tanh_cy = cy.tanh();
  Tensor grad_c = grad_hy * out_gate * (1 - tanh_cy * tanh_cy);
  if (grad_cy_opt.has_value() && grad_cy_opt->defined()) {
    grad_c = grad_c + *grad_cy_opt;
  }
  const Tensor grad_in = grad_c * cell_gate * (1 - in_gate) * in_gate;
  const Tensor grad_forget = grad_c * cx * (1 - forget_gate) * forget_gate;
  const Tensor grad_cell = grad_c * in_gate * (1 - cell_gate * cell_gate);
  const Tensor grad_out = grad_hy * tanh_cy * (1 - out_gate) * out_gate;
  Tensor grad_gates = at::cat({grad_in, grad_forget, grad_cell, grad_out}, 1);
  Tensor grad_cx = grad_c * forget_gate;
  Tensor grad_bias = has_bias ? grad_gates.sum(0) : Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

std::tuple<Tensor, Tensor> gruCell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx,
                                   const std::optional<Tensor>& input_bias, const std::optional<Tensor>& hidden_bias) {
  checkGates("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, 3);
  const auto input_chunks = withBias(input_gates, input_bias).chunk(3, 1);
  const auto hidden_chunks = withBias(hidden_gates, hidden_bias).chunk(3, 1);
  const Tensor reset_gate = (input_chunks[0] + hidden_chunks[0]).sigmoid();
  const Tensor input_gate = (input_chunks[1] + hidden_chunks[1]).sigmoid();
  const Tensor new_gate = (input_chunks[2] + reset_gate * hidden_chunks[2]).tanh();
  Tensor hy = new_gate + input_gate * (hx - new_gate);
  Tensor workspace = at::cat({reset_gate, input_gate, new_gate, hx, hidden_chunks[2]}, 1);
  return {hy, workspace};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> gruCellBackward(const Tensor& grad_hy, const Tensor& workspace,
                                                                   bool has_bias) {
  const auto saved = workspace.chunk(5, 1);
  const Tensor& reset_gate = saved[0];
  const Tensor& input_gate = saved[1];
  const Tensor& new_gate = saved[2];
  const Tensor& hx = saved[3];
  const Tensor& hidden_new = saved[4];
  const Tensor grad_input_gate = grad_hy * (hx - new_gate) * (1 - input_gate) * input_gate;
  Tensor grad_hx = grad_hy * input_gate;
  const Tensor grad_new = grad_hy * (1 - input_gate) * (1 - new_gate * new_gate);
  const Tensor grad_hidden_new = grad_new * reset_gate;
  const Tensor grad_reset = grad_new * hidden_new * (1 - reset_gate) * reset_gate;
  Tensor grad_input_gates = at::cat({grad_reset, grad_input_gate, grad_new}, 1);
  Tensor grad_hidden_gates = at::cat({grad_reset, grad_input_gate, grad_hidden_new}, 1);
  Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : Tensor();
  Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : Tensor();
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(lstmCell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(lstmCellBackward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(gruCell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(gruCellBackward));
}

}  // namespace torch_mydev::native
