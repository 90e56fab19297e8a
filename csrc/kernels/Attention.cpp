// Scaled dot-product attention. ATen asks a backend's _fused_sdp_choice_stub
// which SDPA implementation to use; without one, mydev would always take the
// math decomposition, while the CPU reference takes its fused flash kernel for
// most inputs (numbers differ in the last bits, and the math path is slower).
// mydev answers like the CPU does for the same inputs, mapping "flash" to the
// backend-neutral "overrideable" implementation, which runs ATen's CPU flash
// kernels (forward and backward) over device memory. Dropout inside attention
// takes the math path, as on the CPU (whose flash kernel refuses it), so it
// draws from mydev's generator.
#include "NativeCall.h"

#include <ATen/SDPBackend.h>
#include <ATen/TensorOperators.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward_cpu_dispatch.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_cpu_dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <torch/library.h>

#include <algorithm>
#include <array>

namespace torch_mydev::native {

namespace {

using at::Tensor;

// The CPU's choice honours torch.nn.attention.sdpa_kernel, raising where no
// enabled backend can run the inputs, and takes the math path for dropout and
// for a mask that needs a gradient, which its flash kernel refuses.
int64_t chooseAttention(const Tensor& query, const Tensor& key, const Tensor& value,
                        const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                        std::optional<double> scale, bool enable_gqa) {
  const int64_t cpu_choice = at::native::_fused_sdp_choice_stub(c10::DeviceType::CPU, query, key, value, attn_mask,
                                                                dropout_p, is_causal, scale, enable_gqa);
  return cpu_choice == static_cast<int64_t>(at::SDPBackend::flash_attention)
      ? static_cast<int64_t>(at::SDPBackend::overrideable)
      : cpu_choice;
}

// The layout the Meta kernel gives the output (torch/_meta_registrations.py, alloc_with_matching_layout): the
// query's dimension order, or the query's layout itself when the shapes agree. torch.compile checks that an eager
// kernel returns the strides its Meta kernel predicted.
Tensor emptyWithQueryLayout(const Tensor& query, at::IntArrayRef shape) {
  if (query.sizes() == shape) {
    return at::empty_like(query);
  }
  std::array<int64_t, 4> order{0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return query.stride(a) > query.stride(b); });
  std::array<int64_t, 4> strides{};
  int64_t stride = 1;
  for (auto dim = order.rbegin(); dim != order.rend(); ++dim) {
    strides[*dim] = stride;
    stride *= shape[*dim];
  }
  return at::empty_strided(shape, strides, query.options());
}

// ATen's CPU flash kernels allocate their output and gradients as
// (batch, length, heads, dim) buffers transposed to (batch, heads, length,
// dim), and logsumexp likewise from (batch, length, heads): a device output
// laid out the same way can be lent to its result (HostResults); any other
// would see the result moved out and copied.
bool inFlashLayout(const Tensor& output) { return output.transpose(1, 2).is_contiguous(); }

using FusedAttentionResult =
    std::tuple<Tensor, Tensor, Tensor, Tensor, c10::SymInt, c10::SymInt, Tensor, Tensor, Tensor>;

FusedAttentionResult fusedAttention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_bias, double dropout_p, bool is_causal,
                                    bool return_debug_mask, std::optional<double> scale) {
  NativeCall call("aten::_scaled_dot_product_fused_attention_overrideable", query, key, value, attn_bias);
  TORCH_CHECK(dropout_p == 0.0 && !return_debug_mask,
              "mydev's fused attention runs without dropout and debug mask (the SDPA choice sends those to the "
              "math implementation)");
  TORCH_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4,
              "mydev's fused attention expects 4-D query, key and value, got ", query.dim(), "-D, ", key.dim(),
              "-D and ", value.dim(), "-D");
  const int64_t batch = query.size(0);
  const int64_t heads = query.size(1);
  const int64_t query_length = query.size(2);
  const int64_t key_length = key.size(2);
  Tensor output = emptyWithQueryLayout(query, {batch, heads, query_length, value.size(3)});
  const auto accumulate = at::isReducedFloatingType(query.scalar_type()) ? at::kFloat : query.scalar_type();
  Tensor logsumexp = at::empty({batch, heads, query_length}, query.options().dtype(accumulate));
  call.addChoices(is_causal, scale);
  call.launch(
      [is_causal, scale](const Tensor& query, const Tensor& key, const Tensor& value,
                         const std::optional<Tensor>& attn_bias, const Tensor& output, const Tensor& logsumexp) {
        HostResults results({output, logsumexp}, {inFlashLayout(output), false});
        const auto [out, lse] =
            at::cpu::_scaled_dot_product_flash_attention_for_cpu(query, key, value, 0.0, is_causal, attn_bias, scale);
        results.store({out, lse});
      },
      query, key, value, attn_bias, output, logsumexp);
  // As the Meta kernel returns them: no cumulative sequence lengths or debug mask, 0-dim seed and offset.
  const auto seed_options = query.options().dtype(at::kLong);
  return {output, logsumexp, Tensor(), Tensor(), query_length, key_length,
          at::empty({}, seed_options), at::empty({}, seed_options), Tensor()};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> fusedAttentionBackward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_bias,
    std::array<bool, 4> grad_input_mask, const Tensor& out, const Tensor& logsumexp, const Tensor& /*cum_seq_q*/,
    const Tensor& /*cum_seq_k*/, int64_t /*max_q*/, int64_t /*max_k*/, double dropout_p, bool is_causal,
    const Tensor& /*philox_seed*/, const Tensor& /*philox_offset*/, std::optional<double> scale) {
  NativeCall call("aten::_scaled_dot_product_fused_attention_overrideable_backward", grad_out, query, key, value,
                  attn_bias, out, logsumexp);
  TORCH_CHECK(!grad_input_mask[3], "mydev's fused attention does not compute the gradient of attn_mask (the SDPA "
              "choice sends masks that require grad to the math implementation)");
  // Laid out as the Meta kernel predicts: like the inputs.
  Tensor grad_query = at::empty_like(query);
  Tensor grad_key = at::empty_like(key);
  Tensor grad_value = at::empty_like(value);
  const std::optional<Tensor> mask = attn_bias.defined() ? std::optional<Tensor>(attn_bias) : std::nullopt;
  call.addChoices(is_causal, scale);
  call.launch(
      [dropout_p, is_causal, scale](const Tensor& grad_out, const Tensor& query, const Tensor& key,
                                    const Tensor& value, const Tensor& out, const Tensor& logsumexp,
                                    const std::optional<Tensor>& mask, const Tensor& grad_query,
                                    const Tensor& grad_key, const Tensor& grad_value) {
        HostResults results({grad_query, grad_key, grad_value},
                            {inFlashLayout(grad_query), inFlashLayout(grad_key), inFlashLayout(grad_value)});
        const auto [dq, dk, dv] = at::cpu::_scaled_dot_product_flash_attention_for_cpu_backward(
            grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, mask, scale);
        results.store({dq, dk, dv});
      },
      grad_out, query, key, value, out, logsumexp, mask, grad_query, grad_key, grad_value);
  return {grad_query, grad_key, grad_value, Tensor()};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fusedAttention));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(fusedAttentionBackward));
}

}  // namespace torch_mydev::native

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_mydev::native::chooseAttention)
}  // namespace at::native
