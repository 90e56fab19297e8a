// How a native kernel's arguments travel from the calling thread to the
// stream worker. KernelArgument<T>::capture turns an ATen argument into a
// value the kernel closure may own (device tensors become DeviceTensorRefs,
// CPU tensors are copied, array views become vectors); ::use turns it back,
// on the worker, into the argument ATen's CPU kernel takes (device tensors
// become CPU tensors aliasing device memory).
#pragma once

#include "../aten/DeviceTensorRef.h"

#include <ATen/core/ATen_fwd.h>
#include <ATen/core/IListRef.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace torch_mydev::native {

// Plain values (Scalar, int64_t, bool, double, ScalarType, optionals of
// those, ...) are copied as they are.
template <typename T, typename = void>
struct KernelArgument {
  using Stored = std::decay_t<T>;
  static Stored capture(const T& value) { return value; }
  static const Stored& use(const Stored& stored, KernelMemory&) { return stored; }
};

template <>
struct KernelArgument<at::Tensor> {
  using Stored = CapturedTensor;
  static Stored capture(const at::Tensor& tensor) { return captureTensor(tensor); }
  static at::Tensor use(const Stored& stored, KernelMemory& memory) { return memory.use(stored); }
};

template <>
struct KernelArgument<std::optional<at::Tensor>> {
  using Stored = CapturedTensor;
  static Stored capture(const std::optional<at::Tensor>& tensor) {
    return tensor.has_value() ? captureTensor(*tensor) : CapturedTensor{};
  }
  static std::optional<at::Tensor> use(const Stored& stored, KernelMemory& memory) {
    if (!stored.defined) {
      return std::nullopt;
    }
    return memory.use(stored);
  }
};

template <>
struct KernelArgument<at::IntArrayRef> {
  using Stored = std::vector<int64_t>;
  static Stored capture(at::IntArrayRef values) { return values.vec(); }
  static at::IntArrayRef use(const Stored& stored, KernelMemory&) { return stored; }
};

template <>
struct KernelArgument<at::OptionalIntArrayRef> {
  using Stored = std::optional<std::vector<int64_t>>;
  static Stored capture(at::OptionalIntArrayRef values) {
    return values.has_value() ? Stored(values->vec()) : std::nullopt;
  }
  static at::OptionalIntArrayRef use(const Stored& stored, KernelMemory&) {
    return stored.has_value() ? at::OptionalIntArrayRef(*stored) : at::OptionalIntArrayRef();
  }
};

template <>
struct KernelArgument<at::ArrayRef<at::Scalar>> {
  using Stored = std::vector<at::Scalar>;
  static Stored capture(at::ArrayRef<at::Scalar> values) { return values.vec(); }
  static at::ArrayRef<at::Scalar> use(const Stored& stored, KernelMemory&) { return stored; }
};

template <>
struct KernelArgument<std::string_view> {
  using Stored = std::string;
  static Stored capture(std::string_view text) { return std::string(text); }
  static std::string_view use(const Stored& stored, KernelMemory&) { return stored; }
};

template <>
struct KernelArgument<std::optional<std::string_view>> {
  using Stored = std::optional<std::string>;
  static Stored capture(std::optional<std::string_view> text) {
    return text.has_value() ? Stored(std::string(*text)) : std::nullopt;
  }
  static std::optional<std::string_view> use(const Stored& stored, KernelMemory&) {
    return stored.has_value() ? std::optional<std::string_view>(*stored) : std::nullopt;
  }
};

// Tensor lists (TensorList and ITensorListRef) arrive on the worker as a
// vector whose lifetime spans the kernel call.
struct CapturedTensorList {
  std::vector<CapturedTensor> tensors;
};

struct UsedTensorList {
  std::vector<at::Tensor> tensors;
  operator at::TensorList() const { return tensors; }
  operator at::ITensorListRef() const { return at::ITensorListRef(at::TensorList(tensors)); }
};

template <typename List>
CapturedTensorList captureTensorList(const List& list) {
  CapturedTensorList captured;
  for (const at::Tensor& tensor : list) {
    captured.tensors.push_back(captureTensor(tensor));
  }
  return captured;
}

inline UsedTensorList useTensorList(const CapturedTensorList& captured, KernelMemory& memory) {
  UsedTensorList used;
  used.tensors.reserve(captured.tensors.size());
  for (const CapturedTensor& tensor : captured.tensors) {
    used.tensors.push_back(memory.use(tensor));
  }
  return used;
}

template <>
struct KernelArgument<at::TensorList> {
  using Stored = CapturedTensorList;
  static Stored capture(at::TensorList list) { return captureTensorList(list); }
  static UsedTensorList use(const Stored& stored, KernelMemory& memory) { return useTensorList(stored, memory); }
};

template <>
struct KernelArgument<at::ITensorListRef> {
  using Stored = CapturedTensorList;
  static Stored capture(const at::ITensorListRef& list) { return captureTensorList(list); }
  static UsedTensorList use(const Stored& stored, KernelMemory& memory) { return useTensorList(stored, memory); }
};

template <>
struct KernelArgument<c10::List<std::optional<at::Tensor>>> {
  using Stored = std::vector<CapturedTensor>;
  static Stored capture(const c10::List<std::optional<at::Tensor>>& list) {
    Stored captured;
    for (const std::optional<at::Tensor>& tensor : list) {
      captured.push_back(tensor.has_value() ? captureTensor(*tensor) : CapturedTensor{});
    }
    return captured;
  }
  static c10::List<std::optional<at::Tensor>> use(const Stored& stored, KernelMemory& memory) {
    c10::List<std::optional<at::Tensor>> list;
    for (const CapturedTensor& tensor : stored) {
      list.push_back(tensor.defined ? std::optional<at::Tensor>(memory.use(tensor)) : std::nullopt);
    }
    return list;
  }
};

// A launch's arguments as the kernel owns them. Each is captured straight
// into its own member (a tuple would move every captured value once more).
template <size_t Index, typename T>
struct CapturedArgument {
  explicit CapturedArgument(const T& value) : stored(KernelArgument<T>::capture(value)) {}
  typename KernelArgument<T>::Stored stored;
};

template <typename Indices, typename... Args>
struct CapturedArguments;

template <size_t... I, typename... Args>
struct CapturedArguments<std::index_sequence<I...>, Args...> : CapturedArgument<I, Args>... {
  explicit CapturedArguments(const Args&... args) : CapturedArgument<I, Args>(args)... {}

  // body(the CPU-side form of every argument), on the worker.
  template <typename Body>
  void call(const Body& body, KernelMemory& memory) const {
    body(KernelArgument<Args>::use(static_cast<const CapturedArgument<I, Args>&>(*this).stored, memory)...);
  }
};

}  // namespace torch_mydev::native
