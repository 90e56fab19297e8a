// How a native kernel's inputs become the stand-ins of a dtype probe
// (../aten/DtypeProbe.h), as KernelArguments.h makes them the kernel's:
// ProbeArgument<T>::standIn builds a value the probe owns (tensors become
// tiny zero-filled CPU tensors of their dtype), ::use turns it into the
// argument ATen's CPU function takes. Values other than tensors are used as
// they are.
#pragma once

#include "../aten/DtypeProbe.h"

#include <ATen/core/IListRef.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>

#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace torch_mydev::native {

namespace detail {

inline at::Tensor cpuStandIn(const at::Tensor& tensor) {
  std::optional<at::Tensor> stand_in = probeInput(tensor, c10::DeviceType::CPU);
  if (!stand_in) {
    throw std::invalid_argument("no probe stand-in for this tensor");  // the probe cannot tell
  }
  return *stand_in;
}

}  // namespace detail

template <typename T, typename = void>
struct ProbeArgument {
  using Stored = T;
  static const T& standIn(const T& value) { return value; }
  static const T& use(const Stored& stored) { return stored; }
};

template <>
struct ProbeArgument<at::Tensor> {
  using Stored = at::Tensor;
  static Stored standIn(const at::Tensor& tensor) { return detail::cpuStandIn(tensor); }
  static const at::Tensor& use(const Stored& stored) { return stored; }
};

template <>
struct ProbeArgument<std::optional<at::Tensor>> {
  using Stored = std::optional<at::Tensor>;
  static Stored standIn(const std::optional<at::Tensor>& tensor) {
    return tensor.has_value() ? Stored(detail::cpuStandIn(*tensor)) : std::nullopt;
  }
  static const Stored& use(const Stored& stored) { return stored; }
};

struct StandInList {
  std::vector<at::Tensor> tensors;
  operator at::TensorList() const { return tensors; }
  operator at::ITensorListRef() const { return at::ITensorListRef(at::TensorList(tensors)); }
};

template <typename List>
StandInList standInList(const List& list) {
  StandInList stand_ins;
  for (const at::Tensor& tensor : list) {
    stand_ins.tensors.push_back(detail::cpuStandIn(tensor));
  }
  return stand_ins;
}

template <>
struct ProbeArgument<at::TensorList> {
  using Stored = StandInList;
  static Stored standIn(at::TensorList list) { return standInList(list); }
  static at::TensorList use(const Stored& stored) { return stored; }
};

template <>
struct ProbeArgument<at::ITensorListRef> {
  using Stored = StandInList;
  static Stored standIn(const at::ITensorListRef& list) { return standInList(list); }
  static at::ITensorListRef use(const Stored& stored) { return stored; }
};

template <>
struct ProbeArgument<c10::List<std::optional<at::Tensor>>> {
  using Stored = c10::List<std::optional<at::Tensor>>;
  static Stored standIn(const c10::List<std::optional<at::Tensor>>& list) {
    Stored stand_ins;
    for (const std::optional<at::Tensor>& tensor : list) {
      stand_ins.push_back(tensor.has_value() ? std::optional(detail::cpuStandIn(*tensor)) : std::nullopt);
    }
    return stand_ins;
  }
  static const Stored& use(const Stored& stored) { return stored; }
};

}  // namespace torch_mydev::native
