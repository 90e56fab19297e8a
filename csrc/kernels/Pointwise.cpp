// Native kernels of the pointwise operators: unary math, binary arithmetic,
// comparisons, activations and their backward formulas. All are structured
// TensorIterator operators (StructuredOut.h), so the calling thread only runs
// the C++ meta function and the launch.
#include "PointwiseSignatures.h"
#include "StructuredOut.h"

#include <ATen/CPUFunctions.h>
#include <ATen/ops/acos_meta.h>
#include <ATen/ops/acosh_meta.h>
#include <ATen/ops/add_meta.h>
#include <ATen/ops/addcdiv_meta.h>
#include <ATen/ops/addcmul_meta.h>
#include <ATen/ops/asin_meta.h>
#include <ATen/ops/asinh_meta.h>
#include <ATen/ops/atan2_meta.h>
#include <ATen/ops/atan_meta.h>
#include <ATen/ops/atanh_meta.h>
#include <ATen/ops/bitwise_and_meta.h>
#include <ATen/ops/bitwise_left_shift_meta.h>
#include <ATen/ops/bitwise_not_meta.h>
#include <ATen/ops/bitwise_or_meta.h>
#include <ATen/ops/bitwise_right_shift_meta.h>
#include <ATen/ops/bitwise_xor_meta.h>
#include <ATen/ops/ceil_meta.h>
#include <ATen/ops/clamp_max_meta.h>
#include <ATen/ops/clamp_meta.h>
#include <ATen/ops/clamp_min_meta.h>
#include <ATen/ops/copysign_meta.h>
#include <ATen/ops/cos_meta.h>
#include <ATen/ops/cosh_meta.h>
#include <ATen/ops/digamma_meta.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/elu_backward_meta.h>
#include <ATen/ops/elu_meta.h>
#include <ATen/ops/eq_meta.h>
#include <ATen/ops/erf_meta.h>
#include <ATen/ops/erfc_meta.h>
#include <ATen/ops/erfinv_meta.h>
#include <ATen/ops/exp2_meta.h>
#include <ATen/ops/exp_meta.h>
#include <ATen/ops/expm1_meta.h>
#include <ATen/ops/floor_meta.h>
#include <ATen/ops/fmax_meta.h>
#include <ATen/ops/fmin_meta.h>
#include <ATen/ops/fmod_meta.h>
#include <ATen/ops/frac_meta.h>
#include <ATen/ops/gcd_meta.h>
#include <ATen/ops/ge_meta.h>
#include <ATen/ops/gelu_backward_meta.h>
#include <ATen/ops/gelu_meta.h>
#include <ATen/native/Gelu.h>
#include <ATen/ops/glu_meta.h>
#include <ATen/ops/gt_meta.h>
#include <ATen/ops/hardshrink_backward_meta.h>
#include <ATen/ops/hardshrink_meta.h>
#include <ATen/ops/hardsigmoid_backward_meta.h>
#include <ATen/ops/hardsigmoid_meta.h>
#include <ATen/ops/heaviside_meta.h>
#include <ATen/ops/hypot_meta.h>
#include <ATen/ops/i0_meta.h>
#include <ATen/ops/igamma_meta.h>
#include <ATen/ops/igammac_meta.h>
#include <ATen/ops/isneginf_meta.h>
#include <ATen/ops/isposinf_meta.h>
#include <ATen/ops/lcm_meta.h>
#include <ATen/ops/le_meta.h>
#include <ATen/ops/leaky_relu_backward_meta.h>
#include <ATen/ops/leaky_relu_meta.h>
#include <ATen/ops/lerp_meta.h>
#include <ATen/ops/lgamma_meta.h>
#include <ATen/ops/log10_meta.h>
#include <ATen/ops/log1p_meta.h>
#include <ATen/ops/log2_meta.h>
#include <ATen/ops/log_meta.h>
#include <ATen/ops/logaddexp2_meta.h>
#include <ATen/ops/logaddexp_meta.h>
#include <ATen/ops/logit_backward_meta.h>
#include <ATen/ops/lt_meta.h>
#include <ATen/ops/maximum_meta.h>
#include <ATen/ops/minimum_meta.h>
#include <ATen/ops/mish_meta.h>
#include <ATen/ops/mul_meta.h>
#include <ATen/ops/ne_meta.h>
#include <ATen/ops/neg_meta.h>
#include <ATen/ops/nextafter_meta.h>
#include <ATen/ops/polygamma_meta.h>
#include <ATen/ops/pow_meta.h>
#include <ATen/ops/reciprocal_meta.h>
#include <ATen/ops/remainder_meta.h>
#include <ATen/ops/round_meta.h>
#include <ATen/ops/rsqrt_meta.h>
#include <ATen/ops/sgn_meta.h>
#include <ATen/ops/sigmoid_backward_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/sign_meta.h>
#include <ATen/ops/signbit_meta.h>
#include <ATen/ops/silu_backward_meta.h>
#include <ATen/ops/silu_meta.h>
#include <ATen/ops/sin_meta.h>
#include <ATen/ops/sinc_meta.h>
#include <ATen/ops/sinh_meta.h>
#include <ATen/ops/softplus_backward_meta.h>
#include <ATen/ops/softplus_meta.h>
#include <ATen/ops/softshrink_backward_meta.h>
#include <ATen/ops/softshrink_meta.h>
#include <ATen/ops/special_airy_ai_meta.h>
#include <ATen/ops/special_bessel_j0_meta.h>
#include <ATen/ops/special_bessel_j1_meta.h>
#include <ATen/ops/special_bessel_y0_meta.h>
#include <ATen/ops/special_bessel_y1_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_t_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_u_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_v_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_w_meta.h>
#include <ATen/ops/special_entr_meta.h>
#include <ATen/ops/special_erfcx_meta.h>
#include <ATen/ops/special_hermite_polynomial_h_meta.h>
#include <ATen/ops/special_hermite_polynomial_he_meta.h>
#include <ATen/ops/special_i0e_meta.h>
#include <ATen/ops/special_i1_meta.h>
#include <ATen/ops/special_i1e_meta.h>
#include <ATen/ops/special_laguerre_polynomial_l_meta.h>
#include <ATen/ops/special_legendre_polynomial_p_meta.h>
#include <ATen/ops/special_log_ndtr_meta.h>
#include <ATen/ops/special_modified_bessel_i0_meta.h>
#include <ATen/ops/special_modified_bessel_i1_meta.h>
#include <ATen/ops/special_modified_bessel_k0_meta.h>
#include <ATen/ops/special_modified_bessel_k1_meta.h>
#include <ATen/ops/special_ndtri_meta.h>
#include <ATen/ops/special_scaled_modified_bessel_k0_meta.h>
#include <ATen/ops/special_scaled_modified_bessel_k1_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_t_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_u_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_v_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_w_meta.h>
#include <ATen/ops/special_spherical_bessel_j0_meta.h>
#include <ATen/ops/special_xlog1py_meta.h>
#include <ATen/ops/special_zeta_meta.h>
#include <ATen/ops/sqrt_meta.h>
#include <ATen/ops/sub_meta.h>
#include <ATen/ops/tan_meta.h>
#include <ATen/ops/tanh_backward_meta.h>
#include <ATen/ops/tanh_meta.h>
#include <ATen/ops/threshold_backward_meta.h>
#include <ATen/ops/threshold_meta.h>
#include <ATen/ops/trunc_meta.h>
#include <ATen/ops/xlogy_meta.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Scalar;
using at::Tensor;

// abs is not structured: its out= kernel writes a real result for a complex
// input (through a complex temporary). The checks and the output's geometry
// follow that kernel on the host: a TensorIterator over the device tensors,
// or, for a complex input into a real output, the cast check and resize it
// makes. The functional and in-place forms are ATen's composites over abs.out.
Tensor& absOut(const Tensor& self, Tensor& out) {
  NativeCall call("aten::abs.out", self, out);
  // The one dtype the CPU kernel rejects, at the call rather than on the stream.
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool, "\"abs_cpu\" not implemented for 'Bool'");
  if (self.is_complex() && !out.is_complex()) {
    const c10::ScalarType real_type = c10::toRealValueType(self.scalar_type());
    TORCH_CHECK(c10::canCast(real_type, out.scalar_type()), "result type ", real_type,
                " can't be cast to the desired output type ", out.scalar_type());
    at::native::resize_output(out, self.sizes());
  } else {
    at::TensorIterator::unary_op(out, self);
  }
  call.launch([](const Tensor& self, Tensor out) { at::cpu::abs_outf(self, out); }, self, out);
  return out;
}

// mish_backward is not structured (and without this kernel PrivateUse1 would
// take its composite decomposition, which rounds differently in half
// precision). TensorIterator computes the output geometry on the host, as in
// the CPU kernel; the CPU kernel's result is placed in it on the worker.
Tensor mishBackward(const Tensor& grad_output, const Tensor& self) {
  NativeCall call("aten::mish_backward", grad_output, self);
  Tensor unallocated;
  Tensor grad_input = at::TensorIterator::binary_op(unallocated, grad_output, self).output();
  call.launch(
      [](const Tensor& grad_output, const Tensor& self, const Tensor& grad_input) {
        HostResults results(grad_input);
        results.store({at::cpu::mish_backward(grad_output, self)});
      },
      grad_output, self, grad_input);
  return grad_input;
}

}  // namespace

#define MYDEV_UNARY(op) \
  MYDEV_STRUCTURED(m, #op, #op ".out", structured_##op, static_cast<UnaryOut>(&at::cpu::op##_outf))
#define MYDEV_BINARY(op, overload, meta_class) \
  MYDEV_STRUCTURED_OUT(m, #op "." overload, meta_class, static_cast<BinaryOut>(&at::cpu::op##_outf))
#define MYDEV_BINARY_FUNCTIONAL(op, functional_overload, overload, meta_class)                               \
  MYDEV_STRUCTURED(m, #op "." functional_overload, #op "." overload, meta_class,                                \
                   static_cast<BinaryOut>(&at::cpu::op##_outf))
#define MYDEV_TENSOR_SCALAR_FUNCTIONAL(op, functional_overload, overload, meta_class)                        \
  MYDEV_STRUCTURED(m, #op "." functional_overload, #op "." overload, meta_class,                                \
                   static_cast<TensorScalarOut>(&at::cpu::op##_outf))
#define MYDEV_TENSOR_SCALAR(op, overload, meta_class) \
  MYDEV_STRUCTURED_OUT(m, #op "." overload, meta_class, static_cast<TensorScalarOut>(&at::cpu::op##_outf))

namespace {

// gelu's CPU kernels parse `approximate` when they run and its meta functions do not: parsed at the call. The
// functional overloads are registered too: PyTorch's composite for them would dispatch to the out= one, which a
// profile shows as a second aten::gelu inside the first (and which would run the meta function twice).
constexpr char kGeluName[] = "aten::gelu.out";
constexpr char kGeluFunctionalName[] = "aten::gelu";
constexpr char kGeluBackwardName[] = "aten::gelu_backward.grad_input";
constexpr char kGeluBackwardFunctionalName[] = "aten::gelu_backward";

Tensor& geluOut(const Tensor& self, std::string_view approximate, Tensor& out) {
  at::native::get_gelutype_enum(approximate);
  return StructuredOut<at::meta::structured_gelu, &at::cpu::gelu_outf, kGeluName>::call(self, approximate, out);
}

Tensor gelu(const Tensor& self, std::string_view approximate) {
  at::native::get_gelutype_enum(approximate);
  return StructuredFunctional<at::meta::structured_gelu, &at::cpu::gelu_outf, kGeluFunctionalName>::Kernel::call(
      self, approximate);
}

Tensor& geluBackwardOut(const Tensor& grad_output, const Tensor& self, std::string_view approximate,
                        Tensor& grad_input) {
  at::native::get_gelutype_enum(approximate);
  return StructuredOut<at::meta::structured_gelu_backward, &at::cpu::gelu_backward_outf, kGeluBackwardName>::call(
      grad_output, self, approximate, grad_input);
}

Tensor geluBackward(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  at::native::get_gelutype_enum(approximate);
  return StructuredFunctional<at::meta::structured_gelu_backward, &at::cpu::gelu_backward_outf,
                              kGeluBackwardFunctionalName>::Kernel::call(grad_output, self, approximate);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  MYDEV_UNARY(acos);
  MYDEV_UNARY(acosh);
  MYDEV_UNARY(asin);
  MYDEV_UNARY(asinh);
  MYDEV_UNARY(atan);
  MYDEV_UNARY(atanh);
  MYDEV_UNARY(bitwise_not);
  MYDEV_UNARY(ceil);
  MYDEV_UNARY(cos);
  MYDEV_UNARY(cosh);
  MYDEV_UNARY(digamma);
  MYDEV_UNARY(erf);
  MYDEV_UNARY(erfc);
  MYDEV_UNARY(erfinv);
  MYDEV_UNARY(exp);
  MYDEV_UNARY(exp2);
  MYDEV_UNARY(expm1);
  MYDEV_UNARY(floor);
  MYDEV_UNARY(frac);
  MYDEV_UNARY(hardsigmoid);
  MYDEV_UNARY(i0);
  MYDEV_UNARY(isneginf);
  MYDEV_UNARY(isposinf);
  MYDEV_UNARY(lgamma);
  MYDEV_UNARY(log);
  MYDEV_UNARY(log10);
  MYDEV_UNARY(log1p);
  MYDEV_UNARY(log2);
  MYDEV_UNARY(mish);
  MYDEV_UNARY(neg);
  MYDEV_UNARY(reciprocal);
  MYDEV_UNARY(round);
  MYDEV_UNARY(rsqrt);
  MYDEV_UNARY(sgn);
  MYDEV_UNARY(sigmoid);
  MYDEV_UNARY(sign);
  MYDEV_UNARY(signbit);
  MYDEV_UNARY(silu);
  MYDEV_UNARY(sin);
  MYDEV_UNARY(sinc);
  MYDEV_UNARY(sinh);
  MYDEV_UNARY(sqrt);
  MYDEV_UNARY(tan);
  MYDEV_UNARY(tanh);
  MYDEV_UNARY(trunc);

  MYDEV_UNARY(special_entr);
  MYDEV_UNARY(special_ndtri);
  MYDEV_UNARY(special_log_ndtr);
  MYDEV_UNARY(special_erfcx);
  MYDEV_UNARY(special_i0e);
  MYDEV_UNARY(special_i1);
  MYDEV_UNARY(special_i1e);
  MYDEV_UNARY(special_airy_ai);
  MYDEV_UNARY(special_bessel_j0);
  MYDEV_UNARY(special_bessel_j1);
  MYDEV_UNARY(special_bessel_y0);
  MYDEV_UNARY(special_bessel_y1);
  MYDEV_UNARY(special_modified_bessel_i0);
  MYDEV_UNARY(special_modified_bessel_i1);
  MYDEV_UNARY(special_modified_bessel_k0);
  MYDEV_UNARY(special_modified_bessel_k1);
  MYDEV_UNARY(special_scaled_modified_bessel_k0);
  MYDEV_UNARY(special_scaled_modified_bessel_k1);
  MYDEV_UNARY(special_spherical_bessel_j0);
  MYDEV_BINARY(special_xlog1py, "out", structured_special_xlog1py);
  MYDEV_BINARY(special_zeta, "out", structured_special_zeta);
  MYDEV_BINARY(special_chebyshev_polynomial_t, "out", structured_special_chebyshev_polynomial_t);
  MYDEV_BINARY(special_chebyshev_polynomial_u, "out", structured_special_chebyshev_polynomial_u);
  MYDEV_BINARY(special_chebyshev_polynomial_v, "out", structured_special_chebyshev_polynomial_v);
  MYDEV_BINARY(special_chebyshev_polynomial_w, "out", structured_special_chebyshev_polynomial_w);
  MYDEV_BINARY(special_hermite_polynomial_h, "out", structured_special_hermite_polynomial_h);
  MYDEV_BINARY(special_hermite_polynomial_he, "out", structured_special_hermite_polynomial_he);
  MYDEV_BINARY(special_laguerre_polynomial_l, "out", structured_special_laguerre_polynomial_l);
  MYDEV_BINARY(special_legendre_polynomial_p, "out", structured_special_legendre_polynomial_p);
  MYDEV_BINARY(special_shifted_chebyshev_polynomial_t, "out", structured_special_shifted_chebyshev_polynomial_t);
  MYDEV_BINARY(special_shifted_chebyshev_polynomial_u, "out", structured_special_shifted_chebyshev_polynomial_u);
  MYDEV_BINARY(special_shifted_chebyshev_polynomial_v, "out", structured_special_shifted_chebyshev_polynomial_v);
  MYDEV_BINARY(special_shifted_chebyshev_polynomial_w, "out", structured_special_shifted_chebyshev_polynomial_w);
  MYDEV_BINARY(igamma, "out", structured_igamma);
  MYDEV_BINARY(igammac, "out", structured_igammac);
  MYDEV_STRUCTURED_OUT(m, "round.decimals_out", structured_round_decimals,
                       static_cast<Tensor& (*)(const Tensor&, int64_t, Tensor&)>(&at::cpu::round_outf));
  MYDEV_STRUCTURED_OUT(m, "polygamma.out", structured_polygamma, &at::cpu::polygamma_outf);
  MYDEV_STRUCTURED_OUT(m, "logit_backward.grad_input", structured_logit_backward, &at::cpu::logit_backward_outf);

  MYDEV_STRUCTURED(m, "add.Tensor", "add.out", structured_add_Tensor, static_cast<BinaryAlphaOut>(&at::cpu::add_outf));
  MYDEV_STRUCTURED(m, "sub.Tensor", "sub.out", structured_sub_Tensor, static_cast<BinaryAlphaOut>(&at::cpu::sub_outf));
  MYDEV_BINARY_FUNCTIONAL(mul, "Tensor", "out", structured_mul_Tensor);
  MYDEV_BINARY_FUNCTIONAL(div, "Tensor", "out", structured_div_Tensor);
  MYDEV_STRUCTURED_INPLACE(m, "add_.Tensor", structured_add_Tensor, static_cast<BinaryAlphaOut>(&at::cpu::add_outf));
  MYDEV_STRUCTURED_INPLACE(m, "sub_.Tensor", structured_sub_Tensor, static_cast<BinaryAlphaOut>(&at::cpu::sub_outf));
  MYDEV_STRUCTURED_INPLACE(m, "mul_.Tensor", structured_mul_Tensor, static_cast<BinaryOut>(&at::cpu::mul_outf));
  MYDEV_STRUCTURED_INPLACE(m, "div_.Tensor", structured_div_Tensor, static_cast<BinaryOut>(&at::cpu::div_outf));
  MYDEV_STRUCTURED_OUT(m, "div.out_mode", structured_div_Tensor_mode,
                       static_cast<Tensor& (*)(const Tensor&, const Tensor&, std::optional<std::string_view>, Tensor&)>(
                           &at::cpu::div_outf));
  MYDEV_BINARY(atan2, "out", structured_atan2);
  MYDEV_BINARY(bitwise_and, "Tensor_out", structured_bitwise_and_Tensor);
  MYDEV_BINARY(bitwise_or, "Tensor_out", structured_bitwise_or_Tensor);
  MYDEV_BINARY(bitwise_xor, "Tensor_out", structured_bitwise_xor_Tensor);
  MYDEV_BINARY(bitwise_left_shift, "Tensor_out", structured_bitwise_left_shift_Tensor);
  MYDEV_BINARY(bitwise_right_shift, "Tensor_out", structured_bitwise_right_shift_Tensor);
  MYDEV_BINARY(copysign, "out", structured_copysign_Tensor);
  MYDEV_BINARY(fmax, "out", structured_fmax);
  MYDEV_BINARY(fmin, "out", structured_fmin);
  MYDEV_BINARY(fmod, "Tensor_out", structured_fmod_Tensor);
  MYDEV_BINARY(gcd, "out", structured_gcd);
  MYDEV_BINARY(heaviside, "out", structured_heaviside);
  MYDEV_BINARY(hypot, "out", structured_hypot);
  MYDEV_BINARY(lcm, "out", structured_lcm);
  MYDEV_BINARY(logaddexp, "out", structured_logaddexp);
  MYDEV_BINARY(logaddexp2, "out", structured_logaddexp2);
  MYDEV_STRUCTURED(m, "maximum", "maximum.out", structured_maximum, static_cast<BinaryOut>(&at::cpu::maximum_outf));
  MYDEV_STRUCTURED(m, "minimum", "minimum.out", structured_minimum, static_cast<BinaryOut>(&at::cpu::minimum_outf));
  MYDEV_BINARY(nextafter, "out", structured_nextafter);
  MYDEV_BINARY(pow, "Tensor_Tensor_out", structured_pow_Tensor_Tensor);
  MYDEV_BINARY(remainder, "Tensor_out", structured_remainder_Tensor);
  MYDEV_BINARY(xlogy, "OutTensor", structured_xlogy_Tensor);
  MYDEV_BINARY(clamp_max, "Tensor_out", structured_clamp_max_Tensor);
  MYDEV_BINARY(clamp_min, "Tensor_out", structured_clamp_min_Tensor);
  MYDEV_BINARY_FUNCTIONAL(eq, "Tensor", "Tensor_out", structured_eq_Tensor);
  MYDEV_BINARY_FUNCTIONAL(ne, "Tensor", "Tensor_out", structured_ne_Tensor);
  MYDEV_BINARY_FUNCTIONAL(lt, "Tensor", "Tensor_out", structured_lt_Tensor);
  MYDEV_BINARY_FUNCTIONAL(le, "Tensor", "Tensor_out", structured_le_Tensor);
  MYDEV_BINARY_FUNCTIONAL(gt, "Tensor", "Tensor_out", structured_gt_Tensor);
  MYDEV_BINARY_FUNCTIONAL(ge, "Tensor", "Tensor_out", structured_ge_Tensor);
  MYDEV_TENSOR_SCALAR_FUNCTIONAL(eq, "Scalar", "Scalar_out", structured_eq_Scalar);
  MYDEV_TENSOR_SCALAR_FUNCTIONAL(ne, "Scalar", "Scalar_out", structured_ne_Scalar);
  MYDEV_TENSOR_SCALAR_FUNCTIONAL(lt, "Scalar", "Scalar_out", structured_lt_Scalar);
  MYDEV_TENSOR_SCALAR_FUNCTIONAL(le, "Scalar", "Scalar_out", structured_le_Scalar);
  MYDEV_TENSOR_SCALAR_FUNCTIONAL(gt, "Scalar", "Scalar_out", structured_gt_Scalar);
  MYDEV_TENSOR_SCALAR_FUNCTIONAL(ge, "Scalar", "Scalar_out", structured_ge_Scalar);
  MYDEV_TENSOR_SCALAR_FUNCTIONAL(pow, "Tensor_Scalar", "Tensor_Scalar_out", structured_pow_Tensor_Scalar);
  MYDEV_STRUCTURED(m, "clamp_max", "clamp_max.out", structured_clamp_max, static_cast<TensorScalarOut>(&at::cpu::clamp_max_outf));
  MYDEV_STRUCTURED(m, "clamp_min", "clamp_min.out", structured_clamp_min, static_cast<TensorScalarOut>(&at::cpu::clamp_min_outf));
  MYDEV_TENSOR_SCALAR(hardshrink, "out", structured_hardshrink);
  MYDEV_TENSOR_SCALAR(softshrink, "out", structured_softshrink);
  MYDEV_TENSOR_SCALAR(leaky_relu, "out", structured_leaky_relu);
  MYDEV_STRUCTURED_OUT(m, "pow.Scalar_out", structured_pow_Scalar,
                       static_cast<Tensor& (*)(const Scalar&, const Tensor&, Tensor&)>(&at::cpu::pow_outf));
  MYDEV_STRUCTURED_OUT(m, "clamp.out", structured_clamp,
                       static_cast<Tensor& (*)(const Tensor&, const std::optional<Scalar>&,
                                               const std::optional<Scalar>&, Tensor&)>(&at::cpu::clamp_outf));
  MYDEV_STRUCTURED_OUT(m, "clamp.Tensor_out", structured_clamp_Tensor,
                       static_cast<Tensor& (*)(const Tensor&, const std::optional<Tensor>&,
                                               const std::optional<Tensor>&, Tensor&)>(&at::cpu::clamp_outf));
  MYDEV_STRUCTURED_OUT(m, "lerp.Scalar_out", structured_lerp_Scalar,
                       static_cast<Tensor& (*)(const Tensor&, const Tensor&, const Scalar&, Tensor&)>(
                           &at::cpu::lerp_outf));
  MYDEV_STRUCTURED_OUT(m, "lerp.Tensor_out", structured_lerp_Tensor,
                       static_cast<Tensor& (*)(const Tensor&, const Tensor&, const Tensor&, Tensor&)>(
                           &at::cpu::lerp_outf));
  MYDEV_STRUCTURED_OUT(m, "addcmul.out", structured_addcmul, &at::cpu::addcmul_outf);
  MYDEV_STRUCTURED_OUT(m, "addcdiv.out", structured_addcdiv, &at::cpu::addcdiv_outf);
  MYDEV_STRUCTURED_OUT(m, "threshold.out", structured_threshold, &at::cpu::threshold_outf);
  MYDEV_STRUCTURED_OUT(m, "softplus.out", structured_softplus, &at::cpu::softplus_outf);
  MYDEV_STRUCTURED_OUT(m, "elu.out", structured_elu, &at::cpu::elu_outf);
  m.impl("gelu.out", TORCH_FN(geluOut));
  m.impl("gelu", TORCH_FN(gelu));
  MYDEV_STRUCTURED_OUT(m, "glu.out", structured_glu, &at::cpu::glu_outf);

  MYDEV_BINARY(sigmoid_backward, "grad_input", structured_sigmoid_backward);
  MYDEV_BINARY(tanh_backward, "grad_input", structured_tanh_backward);
  // The functional silu_backward must be registered too: PyTorch's composite
  // for it decomposes into sigmoid arithmetic, which rounds differently from
  // the CPU kernel in half precision.
  MYDEV_STRUCTURED(m, "silu_backward", "silu_backward.grad_input", structured_silu_backward,
                   static_cast<BinaryOut>(&at::cpu::silu_backward_outf));
  m.impl("mish_backward", TORCH_FN(mishBackward));
  m.impl("abs.out", TORCH_FN(absOut));
  MYDEV_BINARY(hardsigmoid_backward, "grad_input", structured_hardsigmoid_backward);
  MYDEV_STRUCTURED(m, "threshold_backward", "threshold_backward.grad_input", structured_threshold_backward,
                   &at::cpu::threshold_backward_outf);
  m.impl("gelu_backward.grad_input", TORCH_FN(geluBackwardOut));
  m.impl("gelu_backward", TORCH_FN(geluBackward));
  MYDEV_STRUCTURED_OUT(m, "leaky_relu_backward.grad_input", structured_leaky_relu_backward,
                       &at::cpu::leaky_relu_backward_outf);
  MYDEV_STRUCTURED_OUT(m, "softplus_backward.grad_input", structured_softplus_backward,
                       &at::cpu::softplus_backward_outf);
  MYDEV_STRUCTURED_OUT(m, "elu_backward.grad_input", structured_elu_backward, &at::cpu::elu_backward_outf);
  MYDEV_STRUCTURED_OUT(m, "hardshrink_backward.grad_input", structured_hardshrink_backward,
                       &at::cpu::hardshrink_backward_outf);
  MYDEV_STRUCTURED_OUT(m, "softshrink_backward.grad_input", structured_softshrink_backward,
                       &at::cpu::softshrink_backward_outf);
}

}  // namespace torch_mydev::native
