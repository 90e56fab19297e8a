// Native _foreach_ kernels for the pointwise steps of PyTorch's foreach
// optimizers: lerp, addcmul, addcdiv, sqrt, the arithmetic add, sub, mul and
// div, and clamp_min/clamp_max (= maximum/minimum), with a tensor list, a
// scalar or a scalar list (Adam/AdamW with or without amsgrad, SGD, RMSprop,
// Adagrad, clip_grad_norm_'s scaling), the structured unary operators, and
// clip_grad_norm_'s norms and zero_grad's zeroing.
//
// Every other _foreach_ operator runs the generic fallback (routed to it by
// name in Fallback.cpp), whose composite loop over meta mirrors validates the
// call and sizes the outputs. For these operators that loop is slow: once
// torch._meta_registrations is imported (by `import torch` itself), their
// per-tensor Meta kernels are Python decompositions, 40-150 us per tensor,
// so an AdamW step over 53 parameters spent ~20 ms of host time in meta
// passes. Here each tensor's geometry comes from the per-tensor operator's
// C++ structured meta function (the one ATen's CPU kernel runs, so the errors
// are the CPU's), and the whole list still runs as one kernel on the stream:
// the CPU out= function for every tensor, over CPU aliases of device memory.
#include "PointwiseSignatures.h"
#include "StructuredOut.h"

#include <ATen/CPUFunctions.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/ForeachUtils.h>
#include <ATen/ops/acos_meta.h>
#include <ATen/ops/add_meta.h>
#include <ATen/ops/addcdiv_meta.h>
#include <ATen/ops/addcmul_meta.h>
#include <ATen/ops/asin_meta.h>
#include <ATen/ops/atan_meta.h>
#include <ATen/ops/ceil_meta.h>
#include <ATen/ops/clamp_max_meta.h>
#include <ATen/ops/clamp_min_meta.h>
#include <ATen/ops/cos_meta.h>
#include <ATen/ops/cosh_meta.h>
#include <ATen/ops/div_meta.h>
#include <ATen/ops/erf_meta.h>
#include <ATen/ops/erfc_meta.h>
#include <ATen/ops/exp_meta.h>
#include <ATen/ops/expm1_meta.h>
#include <ATen/ops/floor_meta.h>
#include <ATen/ops/frac_meta.h>
#include <ATen/ops/lerp_meta.h>
#include <ATen/ops/linalg_vector_norm_meta.h>
#include <ATen/ops/lgamma_meta.h>
#include <ATen/ops/log_meta.h>
#include <ATen/ops/log10_meta.h>
#include <ATen/ops/log1p_meta.h>
#include <ATen/ops/log2_meta.h>
#include <ATen/ops/mul_meta.h>
#include <ATen/ops/neg_meta.h>
#include <ATen/ops/reciprocal_meta.h>
#include <ATen/ops/round_meta.h>
#include <ATen/ops/rsqrt_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/sign_meta.h>
#include <ATen/ops/sin_meta.h>
#include <ATen/ops/sinh_meta.h>
#include <ATen/ops/sqrt_meta.h>
#include <ATen/ops/sub_meta.h>
#include <ATen/ops/tan_meta.h>
#include <ATen/ops/tanh_meta.h>
#include <ATen/ops/trunc_meta.h>
#include <torch/library.h>

#include <utility>
#include <vector>

namespace torch_mydev::native {

namespace {

// Element i of a foreach argument: a list's i-th entry, or the one value
// every tensor of the list shares.
const at::Tensor& nth(at::TensorList list, size_t i) { return list[i]; }
const at::Tensor& nth(const UsedTensorList& list, size_t i) { return list.tensors[i]; }
const at::Scalar& nth(at::ArrayRef<at::Scalar> list, size_t i) { return list[i]; }
const at::Scalar& nth(const at::Scalar& shared, size_t) { return shared; }
const at::Tensor& nth(const at::Tensor& shared, size_t) { return shared; }
template <typename Shared>
const Shared& nth(const Shared& shared, size_t) {
  return shared;
}

// self[i] = op(self[i], others[i]...), as the CPU's slow foreach loop calls
// self[i].op_(others[i]...). No self is a conjugate or negative view: the
// Conjugate and Negative fallbacks refuse those in mutable tensor lists before
// the call reaches a backend.
template <typename Meta, auto CpuOutf, const char* Name>
struct ForeachInplace {
  template <typename... Others>
  static void run(at::TensorList self, const Others&... others) {
    NativeCall native(Name, self, others...);
    for (size_t i = 0; i < self.size(); ++i) {
      StructuredGeometry<Meta, 1> geometry({self[i]});
      geometry.meta(self[i], detail::metaArgument(nth(others, i))...);
    }
    native.launch(
        [](const auto& self_aliases, const auto&... other_aliases) {
          for (size_t i = 0; i < self_aliases.tensors.size(); ++i) {
            at::Tensor out = self_aliases.tensors[i];
            CpuOutf(out, nth(other_aliases, i)..., out);
          }
        },
        self, others...);
  }
};

// result[i] = op(self[i], others[i]...), as the CPU's slow foreach loop
// collects self[i].op(others[i]...).
template <typename Meta, auto CpuOutf, const char* Name>
struct ForeachFunctional {
  template <typename... Others>
  static std::vector<at::Tensor> run(at::TensorList self, const Others&... others) {
    NativeCall native(Name, self, others...);
    std::vector<at::Tensor> results;
    results.reserve(self.size());
    for (size_t i = 0; i < self.size(); ++i) {
      StructuredGeometry<Meta, 1> geometry;
      geometry.meta(self[i], detail::metaArgument(nth(others, i))...);
      results.push_back(std::move(geometry.outputs[0]));
    }
    native.launch(
        [](const auto& result_aliases, const auto& self_aliases, const auto&... other_aliases) {
          for (size_t i = 0; i < self_aliases.tensors.size(); ++i) {
            at::Tensor out = result_aliases.tensors[i];
            CpuOutf(self_aliases.tensors[i], nth(other_aliases, i)..., out);
          }
        },
        at::TensorList(results), self, others...);
    return results;
  }
};

using PointwiseOut = at::Tensor& (*)(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Scalar&,
                                     at::Tensor&);
using LerpScalarOut = at::Tensor& (*)(const at::Tensor&, const at::Tensor&, const at::Scalar&, at::Tensor&);
using LerpTensorOut = at::Tensor& (*)(const at::Tensor&, const at::Tensor&, const at::Tensor&, at::Tensor&);

constexpr char kAddcdiv[] = "aten::_foreach_addcdiv";
constexpr char kAddcmul[] = "aten::_foreach_addcmul";
constexpr char kLerp[] = "aten::_foreach_lerp";
constexpr char kAdd[] = "aten::_foreach_add";
constexpr char kSub[] = "aten::_foreach_sub";
constexpr char kMul[] = "aten::_foreach_mul";
constexpr char kDiv[] = "aten::_foreach_div";
constexpr char kClampMin[] = "aten::_foreach_clamp_min";
constexpr char kClampMax[] = "aten::_foreach_clamp_max";

template <typename Meta, PointwiseOut CpuOutf, const char* Name>
struct Pointwise {
  static void scalarInplace(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2,
                            const at::Scalar& value) {
    at::native::check_foreach_api_restrictions(self, tensor1, tensor2);
    ForeachInplace<Meta, CpuOutf, Name>::run(self, tensor1, tensor2, value);
  }

  static void scalarListInplace(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2,
                                at::ArrayRef<at::Scalar> scalars) {
    at::native::check_foreach_api_restrictions(self, tensor1, tensor2, scalars);
    ForeachInplace<Meta, CpuOutf, Name>::run(self, tensor1, tensor2, scalars);
  }

  static std::vector<at::Tensor> scalar(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2,
                                        const at::Scalar& value) {
    at::native::check_foreach_api_restrictions(self, tensor1, tensor2);
    return ForeachFunctional<Meta, CpuOutf, Name>::run(self, tensor1, tensor2, value);
  }

  static std::vector<at::Tensor> scalarList(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2,
                                            at::ArrayRef<at::Scalar> scalars) {
    at::native::check_foreach_api_restrictions(self, tensor1, tensor2, scalars);
    return ForeachFunctional<Meta, CpuOutf, Name>::run(self, tensor1, tensor2, scalars);
  }

  // The .Tensor overloads take the scalars packed in a 1-D tensor, which
  // must be on the CPU, as on CUDA: its values are read on the calling thread.
  static void tensorInplace(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2,
                            const at::Tensor& scalars) {
    scalarListInplace(self, tensor1, tensor2, at::native::convert_tensor_to_scalar_list(scalars, self.size()));
  }

  static std::vector<at::Tensor> tensor(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2,
                                        const at::Tensor& scalars) {
    return scalarList(self, tensor1, tensor2, at::native::convert_tensor_to_scalar_list(scalars, self.size()));
  }
};

using Addcdiv = Pointwise<at::meta::structured_addcdiv, &at::cpu::addcdiv_outf, kAddcdiv>;
using Addcmul = Pointwise<at::meta::structured_addcmul, &at::cpu::addcmul_outf, kAddcmul>;

constexpr LerpScalarOut kLerpScalarOut = &at::cpu::lerp_outf;
constexpr LerpTensorOut kLerpTensorOut = &at::cpu::lerp_outf;
using LerpScalarInplace = ForeachInplace<at::meta::structured_lerp_Scalar, kLerpScalarOut, kLerp>;
using LerpTensorInplace = ForeachInplace<at::meta::structured_lerp_Tensor, kLerpTensorOut, kLerp>;
using LerpScalarFunctional = ForeachFunctional<at::meta::structured_lerp_Scalar, kLerpScalarOut, kLerp>;
using LerpTensorFunctional = ForeachFunctional<at::meta::structured_lerp_Tensor, kLerpTensorOut, kLerp>;

void lerpScalarInplace(at::TensorList self, at::TensorList ends, const at::Scalar& weight) {
  at::native::check_foreach_api_restrictions(self, ends);
  LerpScalarInplace::run(self, ends, weight);
}

void lerpScalarListInplace(at::TensorList self, at::TensorList ends, at::ArrayRef<at::Scalar> weights) {
  at::native::check_foreach_api_restrictions(self, ends, weights);
  LerpScalarInplace::run(self, ends, weights);
}

void lerpListInplace(at::TensorList self, at::TensorList ends, at::TensorList weights) {
  at::native::check_foreach_api_restrictions(self, ends, weights);
  LerpTensorInplace::run(self, ends, weights);
}

std::vector<at::Tensor> lerpScalar(at::TensorList self, at::TensorList ends, const at::Scalar& weight) {
  at::native::check_foreach_api_restrictions(self, ends);
  return LerpScalarFunctional::run(self, ends, weight);
}

std::vector<at::Tensor> lerpScalarList(at::TensorList self, at::TensorList ends, at::ArrayRef<at::Scalar> weights) {
  at::native::check_foreach_api_restrictions(self, ends, weights);
  return LerpScalarFunctional::run(self, ends, weights);
}

std::vector<at::Tensor> lerpList(at::TensorList self, at::TensorList ends, at::TensorList weights) {
  at::native::check_foreach_api_restrictions(self, ends, weights);
  return LerpTensorFunctional::run(self, ends, weights);
}

// tensor.op(scalar) takes the scalar wrapped as a number tensor, which takes
// part in type promotion as a Python number does.
std::vector<at::Tensor> wrappedEach(at::ArrayRef<at::Scalar> scalars) {
  std::vector<at::Tensor> wrapped;
  wrapped.reserve(scalars.size());
  for (const at::Scalar& scalar : scalars) {
    wrapped.push_back(at::native::wrapped_scalar_tensor(scalar));
  }
  return wrapped;
}

// The .Tensor overloads take one 0-dim tensor for every self[i] (clip_grad_norm_
// scales by a device tensor, so that nothing waits for its value).
void checkSharedScalarTensor(const at::Tensor& scalar) {
  TORCH_CHECK(scalar.dim() == 0 && scalar.numel() == 1, "scalar tensor expected to be 0 dim but it has ", scalar.dim(),
              " dimensions and ", scalar.numel(), " elements.");
}

// self[i].op(other[i]) for mul and div, with other a tensor list, one scalar,
// a scalar list or one 0-dim tensor.
template <typename Meta, BinaryOut CpuOutf, const char* Name>
struct Binary {
  using Inplace = ForeachInplace<Meta, CpuOutf, Name>;
  using Functional = ForeachFunctional<Meta, CpuOutf, Name>;

  static void listInplace(at::TensorList self, at::TensorList other) {
    at::native::check_foreach_api_restrictions(self, other);
    Inplace::run(self, other);
  }
  static std::vector<at::Tensor> list(at::TensorList self, at::TensorList other) {
    at::native::check_foreach_api_restrictions(self, other);
    return Functional::run(self, other);
  }
  static void scalarInplace(at::TensorList self, const at::Scalar& scalar) {
    at::native::check_foreach_api_restrictions(self);
    Inplace::run(self, at::native::wrapped_scalar_tensor(scalar));
  }
  static std::vector<at::Tensor> scalar(at::TensorList self, const at::Scalar& scalar) {
    at::native::check_foreach_api_restrictions(self);
    return Functional::run(self, at::native::wrapped_scalar_tensor(scalar));
  }
  static void scalarListInplace(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
    at::native::check_foreach_api_restrictions(self, scalars);
    Inplace::run(self, at::TensorList(wrappedEach(scalars)));
  }
  static std::vector<at::Tensor> scalarList(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
    at::native::check_foreach_api_restrictions(self, scalars);
    return Functional::run(self, at::TensorList(wrappedEach(scalars)));
  }
  static void tensorInplace(at::TensorList self, const at::Tensor& other) {
    checkSharedScalarTensor(other);
    at::native::check_foreach_api_restrictions(self);
    Inplace::run(self, other);
  }
  static std::vector<at::Tensor> tensor(at::TensorList self, const at::Tensor& other) {
    checkSharedScalarTensor(other);
    at::native::check_foreach_api_restrictions(self);
    return Functional::run(self, other);
  }
};

// The same for add and sub, whose tensor-list form scales other by alpha
// (their scalar forms use alpha = 1).
template <typename Meta, BinaryAlphaOut CpuOutf, const char* Name>
struct BinaryAlpha {
  using Inplace = ForeachInplace<Meta, CpuOutf, Name>;
  using Functional = ForeachFunctional<Meta, CpuOutf, Name>;

  static void listInplace(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
    at::native::check_foreach_api_restrictions(self, other);
    Inplace::run(self, other, alpha);
  }
  static std::vector<at::Tensor> list(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
    at::native::check_foreach_api_restrictions(self, other);
    return Functional::run(self, other, alpha);
  }
  static void scalarInplace(at::TensorList self, const at::Scalar& scalar) {
    at::native::check_foreach_api_restrictions(self);
    Inplace::run(self, at::native::wrapped_scalar_tensor(scalar), at::Scalar(1));
  }
  static std::vector<at::Tensor> scalar(at::TensorList self, const at::Scalar& scalar) {
    at::native::check_foreach_api_restrictions(self);
    return Functional::run(self, at::native::wrapped_scalar_tensor(scalar), at::Scalar(1));
  }
  static void scalarListInplace(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
    at::native::check_foreach_api_restrictions(self, scalars);
    Inplace::run(self, at::TensorList(wrappedEach(scalars)), at::Scalar(1));
  }
  static std::vector<at::Tensor> scalarList(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
    at::native::check_foreach_api_restrictions(self, scalars);
    return Functional::run(self, at::TensorList(wrappedEach(scalars)), at::Scalar(1));
  }
  static void tensorInplace(at::TensorList self, const at::Tensor& other, const at::Scalar& alpha) {
    checkSharedScalarTensor(other);
    at::native::check_foreach_api_restrictions(self);
    Inplace::run(self, other, alpha);
  }
  static std::vector<at::Tensor> tensor(at::TensorList self, const at::Tensor& other, const at::Scalar& alpha) {
    checkSharedScalarTensor(other);
    at::native::check_foreach_api_restrictions(self);
    return Functional::run(self, other, alpha);
  }
};

// self[i].clamp_min(other[i]) and clamp_max, which are also the CPU's
// _foreach_maximum and _foreach_minimum. A scalar bound is passed as a Scalar
// (the operators have a Scalar overload of their own), not wrapped.
template <typename TensorMeta, BinaryOut TensorOutf, typename ScalarMeta, TensorScalarOut ScalarOutf, const char* Name>
struct Clamp {
  static void listInplace(at::TensorList self, at::TensorList other) {
    at::native::check_foreach_api_restrictions(self, other);
    ForeachInplace<TensorMeta, TensorOutf, Name>::run(self, other);
  }
  static std::vector<at::Tensor> list(at::TensorList self, at::TensorList other) {
    at::native::check_foreach_api_restrictions(self, other);
    return ForeachFunctional<TensorMeta, TensorOutf, Name>::run(self, other);
  }
  static void scalarInplace(at::TensorList self, const at::Scalar& scalar) {
    at::native::check_foreach_api_restrictions(self);
    ForeachInplace<ScalarMeta, ScalarOutf, Name>::run(self, scalar);
  }
  static std::vector<at::Tensor> scalar(at::TensorList self, const at::Scalar& scalar) {
    at::native::check_foreach_api_restrictions(self);
    return ForeachFunctional<ScalarMeta, ScalarOutf, Name>::run(self, scalar);
  }
  static void scalarListInplace(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
    at::native::check_foreach_api_restrictions(self, scalars);
    ForeachInplace<ScalarMeta, ScalarOutf, Name>::run(self, scalars);
  }
  static std::vector<at::Tensor> scalarList(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
    at::native::check_foreach_api_restrictions(self, scalars);
    return ForeachFunctional<ScalarMeta, ScalarOutf, Name>::run(self, scalars);
  }
};

using ClampMin = Clamp<at::meta::structured_clamp_min_Tensor, &at::cpu::clamp_min_outf, at::meta::structured_clamp_min,
                       &at::cpu::clamp_min_outf, kClampMin>;
using ClampMax = Clamp<at::meta::structured_clamp_max_Tensor, &at::cpu::clamp_max_outf, at::meta::structured_clamp_max,
                       &at::cpu::clamp_max_outf, kClampMax>;

using Add = BinaryAlpha<at::meta::structured_add_Tensor, &at::cpu::add_outf, kAdd>;
using Sub = BinaryAlpha<at::meta::structured_sub_Tensor, &at::cpu::sub_outf, kSub>;
using Mul = Binary<at::meta::structured_mul_Tensor, &at::cpu::mul_outf, kMul>;
using Div = Binary<at::meta::structured_div_Tensor, &at::cpu::div_outf, kDiv>;

// clip_grad_norm_'s per-tensor norms: linalg_vector_norm(self[i], ord,
// dtype=dtype) over all elements, a 0-dim tensor each, as the CPU's loop.
constexpr char kNorm[] = "aten::_foreach_norm";
using NormOut = at::Tensor& (*)(const at::Tensor&, const at::Scalar&, at::OptionalIntArrayRef, bool,
                                std::optional<at::ScalarType>, at::Tensor&);
constexpr NormOut kNormOut = &at::cpu::linalg_vector_norm_outf;

std::vector<at::Tensor> norm(at::TensorList self, const at::Scalar& ord, std::optional<at::ScalarType> dtype) {
  at::native::check_foreach_api_restrictions(self);
  return ForeachFunctional<at::meta::structured_linalg_vector_norm, kNormOut, kNorm>::run(
      self, ord, at::OptionalIntArrayRef(), false, dtype);
}

// zero_grad(set_to_none=False): every tensor of the list zeroed in one kernel.
void zero(at::TensorList self) {
  NativeCall native("aten::_foreach_zero_", self);
  native.launch(
      [](const auto& self_aliases) {
        for (const at::Tensor& tensor : self_aliases.tensors) {
          at::Tensor(tensor).zero_();
        }
      },
      self);
}

// self[i].op() and self[i].op_() for the structured unary operators.
template <typename Meta, UnaryOut CpuOutf, const char* Name>
struct Unary {
  static std::vector<at::Tensor> functional(at::TensorList self) {
    at::native::check_foreach_api_restrictions(self);
    return ForeachFunctional<Meta, CpuOutf, Name>::run(self);
  }
  static void inplace(at::TensorList self) {
    at::native::check_foreach_api_restrictions(self);
    ForeachInplace<Meta, CpuOutf, Name>::run(self);
  }
};

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  const auto impl = [&](const char* name, auto&& kernel) { m.impl(name, std::forward<decltype(kernel)>(kernel)); };
  impl("_foreach_addcdiv_.Scalar", TORCH_FN(Addcdiv::scalarInplace));
  impl("_foreach_addcdiv_.ScalarList", TORCH_FN(Addcdiv::scalarListInplace));
  impl("_foreach_addcdiv.Scalar", TORCH_FN(Addcdiv::scalar));
  impl("_foreach_addcdiv.ScalarList", TORCH_FN(Addcdiv::scalarList));
  impl("_foreach_addcdiv_.Tensor", TORCH_FN(Addcdiv::tensorInplace));
  impl("_foreach_addcdiv.Tensor", TORCH_FN(Addcdiv::tensor));
  impl("_foreach_addcmul_.Scalar", TORCH_FN(Addcmul::scalarInplace));
  impl("_foreach_addcmul_.ScalarList", TORCH_FN(Addcmul::scalarListInplace));
  impl("_foreach_addcmul.Scalar", TORCH_FN(Addcmul::scalar));
  impl("_foreach_addcmul.ScalarList", TORCH_FN(Addcmul::scalarList));
  impl("_foreach_addcmul_.Tensor", TORCH_FN(Addcmul::tensorInplace));
  impl("_foreach_addcmul.Tensor", TORCH_FN(Addcmul::tensor));
  impl("_foreach_lerp_.Scalar", TORCH_FN(lerpScalarInplace));
  impl("_foreach_lerp_.ScalarList", TORCH_FN(lerpScalarListInplace));
  impl("_foreach_lerp_.List", TORCH_FN(lerpListInplace));
  impl("_foreach_lerp.Scalar", TORCH_FN(lerpScalar));
  impl("_foreach_lerp.ScalarList", TORCH_FN(lerpScalarList));
  impl("_foreach_lerp.List", TORCH_FN(lerpList));
  impl("_foreach_add_.List", TORCH_FN(Add::listInplace));
  impl("_foreach_add.List", TORCH_FN(Add::list));
  impl("_foreach_add_.Scalar", TORCH_FN(Add::scalarInplace));
  impl("_foreach_add.Scalar", TORCH_FN(Add::scalar));
  impl("_foreach_add_.ScalarList", TORCH_FN(Add::scalarListInplace));
  impl("_foreach_add.ScalarList", TORCH_FN(Add::scalarList));
  impl("_foreach_add_.Tensor", TORCH_FN(Add::tensorInplace));
  impl("_foreach_add.Tensor", TORCH_FN(Add::tensor));
  impl("_foreach_sub_.List", TORCH_FN(Sub::listInplace));
  impl("_foreach_sub.List", TORCH_FN(Sub::list));
  impl("_foreach_sub_.Scalar", TORCH_FN(Sub::scalarInplace));
  impl("_foreach_sub.Scalar", TORCH_FN(Sub::scalar));
  impl("_foreach_sub_.ScalarList", TORCH_FN(Sub::scalarListInplace));
  impl("_foreach_sub.ScalarList", TORCH_FN(Sub::scalarList));
  impl("_foreach_mul_.List", TORCH_FN(Mul::listInplace));
  impl("_foreach_mul.List", TORCH_FN(Mul::list));
  impl("_foreach_mul_.Scalar", TORCH_FN(Mul::scalarInplace));
  impl("_foreach_mul.Scalar", TORCH_FN(Mul::scalar));
  impl("_foreach_mul_.ScalarList", TORCH_FN(Mul::scalarListInplace));
  impl("_foreach_mul.ScalarList", TORCH_FN(Mul::scalarList));
  impl("_foreach_mul_.Tensor", TORCH_FN(Mul::tensorInplace));
  impl("_foreach_mul.Tensor", TORCH_FN(Mul::tensor));
  impl("_foreach_div_.List", TORCH_FN(Div::listInplace));
  impl("_foreach_div.List", TORCH_FN(Div::list));
  impl("_foreach_div_.Scalar", TORCH_FN(Div::scalarInplace));
  impl("_foreach_div.Scalar", TORCH_FN(Div::scalar));
  impl("_foreach_div_.ScalarList", TORCH_FN(Div::scalarListInplace));
  impl("_foreach_div.ScalarList", TORCH_FN(Div::scalarList));
  impl("_foreach_div_.Tensor", TORCH_FN(Div::tensorInplace));
  impl("_foreach_div.Tensor", TORCH_FN(Div::tensor));
  impl("_foreach_norm.Scalar", TORCH_FN(norm));
  impl("_foreach_zero_", TORCH_FN(zero));
  impl("_foreach_clamp_min_.List", TORCH_FN(ClampMin::listInplace));
  impl("_foreach_clamp_min.List", TORCH_FN(ClampMin::list));
  impl("_foreach_clamp_min_.Scalar", TORCH_FN(ClampMin::scalarInplace));
  impl("_foreach_clamp_min.Scalar", TORCH_FN(ClampMin::scalar));
  impl("_foreach_clamp_min_.ScalarList", TORCH_FN(ClampMin::scalarListInplace));
  impl("_foreach_clamp_min.ScalarList", TORCH_FN(ClampMin::scalarList));
  impl("_foreach_maximum_.List", TORCH_FN(ClampMin::listInplace));
  impl("_foreach_maximum.List", TORCH_FN(ClampMin::list));
  impl("_foreach_maximum_.Scalar", TORCH_FN(ClampMin::scalarInplace));
  impl("_foreach_maximum.Scalar", TORCH_FN(ClampMin::scalar));
  impl("_foreach_maximum_.ScalarList", TORCH_FN(ClampMin::scalarListInplace));
  impl("_foreach_maximum.ScalarList", TORCH_FN(ClampMin::scalarList));
  impl("_foreach_clamp_max_.List", TORCH_FN(ClampMax::listInplace));
  impl("_foreach_clamp_max.List", TORCH_FN(ClampMax::list));
  impl("_foreach_clamp_max_.Scalar", TORCH_FN(ClampMax::scalarInplace));
  impl("_foreach_clamp_max.Scalar", TORCH_FN(ClampMax::scalar));
  impl("_foreach_clamp_max_.ScalarList", TORCH_FN(ClampMax::scalarListInplace));
  impl("_foreach_clamp_max.ScalarList", TORCH_FN(ClampMax::scalarList));
  impl("_foreach_minimum_.List", TORCH_FN(ClampMax::listInplace));
  impl("_foreach_minimum.List", TORCH_FN(ClampMax::list));
  impl("_foreach_minimum_.Scalar", TORCH_FN(ClampMax::scalarInplace));
  impl("_foreach_minimum.Scalar", TORCH_FN(ClampMax::scalar));
  impl("_foreach_minimum_.ScalarList", TORCH_FN(ClampMax::scalarListInplace));
  impl("_foreach_minimum.ScalarList", TORCH_FN(ClampMax::scalarList));
// _foreach_<op> and _foreach_<op>_ over the structured unary operator <op>.
#define MYDEV_FOREACH_UNARY(op)                                                                            \
  do {                                                                                                     \
    static constexpr char kName[] = "aten::_foreach_" #op;                                                 \
    using Kernels = Unary<at::meta::structured_##op, static_cast<UnaryOut>(&at::cpu::op##_outf), kName>;   \
    impl("_foreach_" #op, TORCH_FN(Kernels::functional));                                                  \
    impl("_foreach_" #op "_", TORCH_FN(Kernels::inplace));                                                 \
  } while (0)
  MYDEV_FOREACH_UNARY(acos);
  MYDEV_FOREACH_UNARY(asin);
  MYDEV_FOREACH_UNARY(atan);
  MYDEV_FOREACH_UNARY(ceil);
  MYDEV_FOREACH_UNARY(cos);
  MYDEV_FOREACH_UNARY(cosh);
  MYDEV_FOREACH_UNARY(erf);
  MYDEV_FOREACH_UNARY(erfc);
  MYDEV_FOREACH_UNARY(exp);
  MYDEV_FOREACH_UNARY(expm1);
  MYDEV_FOREACH_UNARY(floor);
  MYDEV_FOREACH_UNARY(frac);
  MYDEV_FOREACH_UNARY(lgamma);
  MYDEV_FOREACH_UNARY(log);
  MYDEV_FOREACH_UNARY(log10);
  MYDEV_FOREACH_UNARY(log1p);
  MYDEV_FOREACH_UNARY(log2);
  MYDEV_FOREACH_UNARY(neg);
  MYDEV_FOREACH_UNARY(reciprocal);
  MYDEV_FOREACH_UNARY(round);
  MYDEV_FOREACH_UNARY(rsqrt);
  MYDEV_FOREACH_UNARY(sigmoid);
  MYDEV_FOREACH_UNARY(sign);
  MYDEV_FOREACH_UNARY(sin);
  MYDEV_FOREACH_UNARY(sinh);
  MYDEV_FOREACH_UNARY(sqrt);
  MYDEV_FOREACH_UNARY(tan);
  MYDEV_FOREACH_UNARY(tanh);
  MYDEV_FOREACH_UNARY(trunc);
#undef MYDEV_FOREACH_UNARY
}

}  // namespace torch_mydev::native
