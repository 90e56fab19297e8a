// Native kernels for ATen's structured operators, from two pieces ATen already
// has: the operator's meta function (at::meta::structured_<op>) computes the
// output geometry on the calling thread, over the device tensors themselves,
// and its CPU out= function (at::cpu::<op>_outf) is the kernel body, queued on
// the stream over CPU aliases of device memory.
//
// MYDEV_STRUCTURED_OUT registers the out= overload alone: for a backend
// without its own functional and in-place kernels, ATen's
// CompositeExplicitAutogradNonFunctional kernels run the meta function,
// allocate the result (mydev's empty_strided) and call the out= overload.
// MYDEV_STRUCTURED and MYDEV_STRUCTURED_INPLACE also register the functional
// and in-place overloads of hot operators, which then skip that composite's
// extra dispatch and meta pass.
#pragma once

#include "NativeCall.h"
#include "ProbeArguments.h"

#include "../aten/Empty.h"

#include <ATen/TensorIterator.h>
#include <ATen/TensorMeta.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <array>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace torch_mydev::native {

// The meta class as a mydev wrapper: presupplied outputs (out= overloads)
// are resized, then restrided, as ATen's CPU out= kernels do; missing ones
// (functional overloads) are allocated on the device as the meta function
// describes them, as ATen's generated functional wrappers do for CUDA.
template <typename Meta, size_t NumOutputs>
class StructuredGeometry final : public Meta {
 public:
  explicit StructuredGeometry(std::array<at::Tensor, NumOutputs> presupplied = {}) : outputs(std::move(presupplied)) {}

  void set_output_strided(int64_t index, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) override {
    setOutput(index, sizes, strides, options);
  }

  void set_output_raw_strided(int64_t index, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) override {
    setOutput(index, sizes, strides, options);
  }

  const at::Tensor& maybe_get_output(int64_t index) override { return outputs[index]; }

  // Handles sharing the TensorImpls of the caller's out= tensors, or the new outputs.
  std::array<at::Tensor, NumOutputs> outputs;

 private:
  void setOutput(int64_t index, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options) {
    at::Tensor& out = outputs[index];
    if (!out.defined()) {
      if (options.device().type() == c10::DeviceType::PrivateUse1) {
        out = emptyOnDevice(sizes, strides, options);
      } else {
        out = strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
      }
    } else {
      TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ", options.dtype(), ", but got ",
                  out.dtype(), " instead");
      TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ", options.device(),
                  ", but got ", out.device(), " instead");
      if (at::native::resize_output(out, sizes)) {
        if (!strides.empty()) {
          out.as_strided_(sizes, strides);
        } else if (options.memory_format_opt().has_value()) {
          out.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
        }
      }
    }
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) {
      Meta::set_output_raw_strided(index, sizes, strides, options);
    }
  }
};

namespace detail {

// Meta functions take optional tensors and scalars by reference wrappers.
template <typename T>
const T& metaArgument(const T& value) {
  return value;
}

inline at::OptionalTensorRef metaArgument(const std::optional<at::Tensor>& tensor) {
  return tensor.has_value() ? at::OptionalTensorRef(*tensor) : at::OptionalTensorRef();
}

inline at::IOptTensorListRef metaArgument(const c10::List<std::optional<at::Tensor>>& tensors) {
  return at::IOptTensorListRef(tensors);
}

inline at::OptionalScalarRef metaArgument(const std::optional<at::Scalar>& scalar) {
  return scalar.has_value() ? at::OptionalScalarRef(&*scalar) : at::OptionalScalarRef();
}

// The conjugate/negative bits of the outputs, to restore after the CPU kernel
// (settleViewBits in DeviceTensorRef.h).
template <size_t First, typename Tuple, size_t... Out>
std::array<std::pair<bool, bool>, sizeof...(Out)> viewBitsOf(const Tuple& all, std::index_sequence<Out...>) {
  return {std::pair<bool, bool>{std::get<First + Out>(all).is_conj(), std::get<First + Out>(all).is_neg()}...};
}

template <size_t First, typename Bits, typename Tuple, size_t... Out>
void settleOutputs(const Bits& bits, const Tuple& used, std::index_sequence<Out...>) {
  (settleViewBits(std::get<First + Out>(used), bits[Out].first, bits[Out].second), ...);
}

template <typename T>
constexpr bool isOutput = std::is_same_v<T, at::Tensor&>;

template <typename... Args>
constexpr size_t countOutputs() {
  return (size_t{0} + ... + (isOutput<Args> ? 1 : 0));
}

// The dtype probe of a structured kernel (../aten/DtypeProbe.h): its meta
// function, then its CPU out= function, over stand-ins of `inputs`, with
// outputs of the presupplied ones' dtypes (or as the meta function makes them).
template <typename Meta, auto CpuOutf, size_t NumOutputs, typename... Inputs>
bool structuredKernelRuns(const std::array<at::Tensor, NumOutputs>& presupplied, const Inputs&... inputs) {
  return probeRuns([&] {
    std::tuple<typename ProbeArgument<std::decay_t<Inputs>>::Stored...> stand_ins(
        ProbeArgument<std::decay_t<Inputs>>::standIn(inputs)...);
    return std::apply(
        [&](const auto&... stand_in) {
          std::array<at::Tensor, NumOutputs> outputs;
          for (size_t i = 0; i < NumOutputs; ++i) {
            if (presupplied[i].defined()) {
              outputs[i] = probeOutput(presupplied[i], c10::DeviceType::CPU);
            }
          }
          StructuredGeometry<Meta, NumOutputs> geometry(std::move(outputs));
          geometry.meta(metaArgument(ProbeArgument<std::decay_t<Inputs>>::use(stand_in))...);
          for (const at::Tensor& output : geometry.outputs) {
            if (output.numel() > kMaxProbeElements) {
              return false;
            }
          }
          [&]<size_t... Out>(std::index_sequence<Out...>) {
            CpuOutf(ProbeArgument<std::decay_t<Inputs>>::use(stand_in)..., geometry.outputs[Out]...);
          }(std::make_index_sequence<NumOutputs>{});
          return true;
        },
        stand_ins);
  });
}

}  // namespace detail

// StructuredOut<Meta, &at::cpu::op_outf, Name>::call has the signature of the
// operator's out= overload (inputs, then outputs as Tensor&) and is what gets
// registered for PrivateUse1.
template <typename Meta, auto CpuOutf, const char* Name, typename Signature = decltype(CpuOutf)>
struct StructuredOut;

template <typename Meta, auto CpuOutf, const char* Name, typename Result, typename... Args>
struct StructuredOut<Meta, CpuOutf, Name, Result (*)(Args...)> {
  static constexpr size_t kOutputs = detail::countOutputs<Args...>();
  static constexpr size_t kInputs = sizeof...(Args) - kOutputs;

  static Result call(Args... args) {
    NativeCall native(Name, args...);
    auto all = std::forward_as_tuple(args...);
    computeGeometry(all, std::make_index_sequence<kInputs>{}, std::make_index_sequence<kOutputs>{});
    native.launchProbed(
        [&] { return probe(all, std::make_index_sequence<kInputs>{}, std::make_index_sequence<kOutputs>{}); },
        [bits = detail::viewBitsOf<kInputs>(all, std::make_index_sequence<kOutputs>{})](auto&&... used) {
          CpuOutf(used...);
          detail::settleOutputs<kInputs>(bits, std::forward_as_tuple(used...), std::make_index_sequence<kOutputs>{});
        },
        args...);
    return result(all, std::make_index_sequence<kOutputs>{});
  }

 private:
  template <typename Tuple, size_t... In, size_t... Out>
  static bool probe(Tuple& all, std::index_sequence<In...>, std::index_sequence<Out...>) {
    return detail::structuredKernelRuns<Meta, CpuOutf, kOutputs>({std::get<kInputs + Out>(all)...},
                                                                  std::get<In>(all)...);
  }

  template <typename Tuple, size_t... In, size_t... Out>
  static void computeGeometry(Tuple& all, std::index_sequence<In...>, std::index_sequence<Out...>) {
    StructuredGeometry<Meta, kOutputs> geometry({std::get<kInputs + Out>(all)...});
    geometry.meta(detail::metaArgument(std::get<In>(all))...);
  }

  template <typename Tuple, size_t... Out>
  static Result result(Tuple& all, std::index_sequence<Out...>) {
    if constexpr (kOutputs == 1) {
      return std::get<kInputs>(all);
    } else {
      return Result(std::get<kInputs + Out>(all)...);
    }
  }
};


namespace detail {

template <typename Tuple, size_t... I>
std::tuple<std::tuple_element_t<I, Tuple>...> leadingTypes(std::index_sequence<I...>);

template <size_t N>
using FunctionalResult = std::conditional_t<N == 1, at::Tensor, decltype(std::tuple_cat(std::array<at::Tensor, N>{}))>;

template <typename Meta, auto CpuOutf, const char* Name, size_t NumOutputs, typename Inputs>
struct FunctionalKernel;

template <typename Meta, auto CpuOutf, const char* Name, size_t NumOutputs, typename... Inputs>
struct FunctionalKernel<Meta, CpuOutf, Name, NumOutputs, std::tuple<Inputs...>> {
  static FunctionalResult<NumOutputs> call(Inputs... inputs) {
    NativeCall native(Name, inputs...);
    StructuredGeometry<Meta, NumOutputs> geometry;
    geometry.meta(metaArgument(inputs)...);
    return launchAndReturn(native, geometry.outputs, std::make_index_sequence<NumOutputs>{}, inputs...);
  }

 private:
  template <size_t... Out>
  static FunctionalResult<NumOutputs> launchAndReturn(NativeCall& native,
                                                      std::array<at::Tensor, NumOutputs>& outputs,
                                                      std::index_sequence<Out...>, Inputs... inputs) {
    native.launchProbed(
        [&] { return structuredKernelRuns<Meta, CpuOutf, NumOutputs>({}, inputs...); },
        [](auto&&... used) {
          CpuOutf(used...);
          (settleViewBits(std::get<sizeof...(Inputs) + Out>(std::forward_as_tuple(used...)), false, false), ...);
        },
        inputs..., outputs[Out]...);
    if constexpr (NumOutputs == 1) {
      return outputs[0];
    } else {
      return FunctionalResult<NumOutputs>(outputs[Out]...);
    }
  }
};

}  // namespace detail

// StructuredFunctional<Meta, &at::cpu::op_outf, Name>::call has the signature
// of the functional overload (the out= signature without its outputs). It
// runs the meta function once, where PyTorch's composite functional kernel
// would run it twice (once itself, once more in the out= kernel it calls), so
// the hottest operators register both overloads.
template <typename Meta, auto CpuOutf, const char* Name, typename Signature = decltype(CpuOutf)>
struct StructuredFunctional;

template <typename Meta, auto CpuOutf, const char* Name, typename Result, typename... Args>
struct StructuredFunctional<Meta, CpuOutf, Name, Result (*)(Args...)> {
  static constexpr size_t kOutputs = detail::countOutputs<Args...>();
  static constexpr size_t kInputs = sizeof...(Args) - kOutputs;
  using Inputs = decltype(detail::leadingTypes<std::tuple<Args...>>(std::make_index_sequence<kInputs>{}));
  using Kernel = detail::FunctionalKernel<Meta, CpuOutf, Name, kOutputs, Inputs>;
};

namespace detail {

template <typename Meta, auto CpuOutf, const char* Name, typename Others>
struct InplaceKernel;

template <typename Meta, auto CpuOutf, const char* Name, typename... Others>
struct InplaceKernel<Meta, CpuOutf, Name, std::tuple<Others...>> {
  static at::Tensor& call(at::Tensor& self, Others... others) {
    StructuredOut<Meta, CpuOutf, Name>::call(self, others..., self);
    return self;
  }
};

}  // namespace detail

// StructuredInplace<Meta, &at::cpu::op_outf, Name>::Kernel::call has the
// signature of the in-place overload (self as Tensor&, then the other inputs,
// deduced from the out= signature) and runs the out= kernel with self as its
// output. PyTorch's composite in-place kernel would run the meta function
// itself and then call the out= kernel, which runs it again. Only for
// TensorIterator metas: the iterator itself raises the CPU's errors for a self
// that cannot hold the result (a broadcast shape, a dtype it cannot be cast
// to), which other meta functions leave to the in-place wrapper.
template <typename Meta, auto CpuOutf, const char* Name, typename Signature = decltype(CpuOutf)>
struct StructuredInplace;

template <typename Meta, auto CpuOutf, const char* Name, typename Result, typename Self, typename... Rest>
struct StructuredInplace<Meta, CpuOutf, Name, Result (*)(Self, Rest...)> {
  static_assert(std::is_base_of_v<at::TensorIteratorBase, Meta>, "in-place forwarding needs a TensorIterator meta");
  static_assert(detail::countOutputs<Self, Rest...>() == 1, "in-place forwarding needs a single-output operator");
  // Rest is the other inputs, then the output.
  using Others = decltype(detail::leadingTypes<std::tuple<Rest...>>(std::make_index_sequence<sizeof...(Rest) - 1>{}));
  using Kernel = detail::InplaceKernel<Meta, CpuOutf, Name, Others>;
};

}  // namespace torch_mydev::native

// Registers the out= overload `schema` of a structured operator, given its
// meta class (at::meta::<meta_class>) and its CPU out= function (a pointer,
// cast to one signature where the name is overloaded).
#define MYDEV_STRUCTURED_OUT(library, schema, meta_class, cpu_outf)                                          \
  do {                                                                                                          \
    static constexpr char kKernelName[] = "aten::" schema;                                                     \
    (library).impl(schema, TORCH_FN((::torch_mydev::native::StructuredOut<at::meta::meta_class, cpu_outf,       \
                                                                            kKernelName>::call)));             \
  } while (0)

// Registers also the functional overload `functional_schema` (StructuredFunctional).
#define MYDEV_STRUCTURED(library, functional_schema, out_schema, meta_class, cpu_outf)                          \
  do {                                                                                                          \
    MYDEV_STRUCTURED_OUT(library, out_schema, meta_class, cpu_outf);                                            \
    static constexpr char kFunctionalName[] = "aten::" functional_schema;                                      \
    (library).impl(functional_schema,                                                                           \
                   TORCH_FN((::torch_mydev::native::StructuredFunctional<at::meta::meta_class, cpu_outf,        \
                                                                         kFunctionalName>::Kernel::call)));     \
  } while (0)

// Registers the in-place overload `inplace_schema` of a TensorIterator-based
// structured operator with one output (StructuredInplace).
#define MYDEV_STRUCTURED_INPLACE(library, inplace_schema, meta_class, cpu_outf)                                 \
  do {                                                                                                          \
    static constexpr char kInplaceName[] = "aten::" inplace_schema;                                            \
    (library).impl(inplace_schema,                                                                              \
                   TORCH_FN((::torch_mydev::native::StructuredInplace<at::meta::meta_class, cpu_outf,           \
                                                                      kInplaceName>::Kernel::call)));          \
  } while (0)
