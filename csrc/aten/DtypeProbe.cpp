#include "DtypeProbe.h"

#include <ATen/core/List.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DispatchKeySet.h>

#include <utility>
#include <vector>

namespace torch_mydev {

namespace {

bool probeCovers(const at::Tensor& tensor) {
  return tensor.layout() == c10::kStrided && !tensor.is_quantized() && !tensor.is_nested();
}

bool drawsRandomNumbers(const c10::OperatorHandle& op) {
  if (op.hasTag(at::Tag::nondeterministic_seeded)) {
    return true;
  }
  for (const c10::Argument& argument : op.schema().arguments()) {
    c10::TypePtr type = argument.type();
    if (const auto optional = type->cast<c10::OptionalType>()) {
      type = optional->getElementType();
    }
    if (type->kind() == c10::TypeKind::GeneratorType) {
      return true;
    }
  }
  return false;
}

// The probe's stack on `device`: each argument's stand-in. False if one has none.
bool standInStack(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args, c10::DeviceType device,
                  torch::jit::Stack& stack) {
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& value = args[i];
    const bool is_out = schema.arguments()[i].is_out();
    if (value.isTensor()) {
      const at::Tensor& tensor = value.toTensor();
      if (is_out && tensor.defined() && probeCovers(tensor)) {
        stack.emplace_back(probeOutput(tensor, device));
        continue;
      }
      std::optional<at::Tensor> stand_in = probeInput(tensor, device);
      if (!stand_in) {
        return false;
      }
      stack.emplace_back(std::move(*stand_in));
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& tensor : value.toTensorVector()) {
        std::optional<at::Tensor> stand_in = is_out ? std::optional(probeOutput(tensor, device))
                                                    : probeInput(tensor, device);
        if (!stand_in) {
          return false;
        }
        list.push_back(std::move(*stand_in));
      }
      stack.emplace_back(std::move(list));
    } else if (value.isList() && !value.toListRef().empty() &&
               value.toList().elementType()->kind() == c10::TypeKind::OptionalType) {
      c10::List<std::optional<at::Tensor>> list;
      for (const c10::IValue& element : value.toListRef()) {
        if (!element.isTensor()) {
          list.push_back(std::nullopt);
          continue;
        }
        std::optional<at::Tensor> stand_in = probeInput(element.toTensor(), device);
        if (!stand_in) {
          return false;
        }
        list.push_back(std::move(*stand_in));
      }
      stack.emplace_back(std::move(list));
    } else if (value.isStorage() || value.isStream() || value.isObject() || value.isCapsule()) {
      return false;  // it may hold device memory, or state the CPU kernel would change
    } else if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
      stack.emplace_back(c10::Device(device));
    } else {
      stack.push_back(value);
    }
  }
  return true;
}

bool allSmall(const c10::IValue& value) {
  if (value.isTensor()) {
    return !value.toTensor().defined() || value.toTensor().numel() <= kMaxProbeElements;
  }
  if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorVector()) {
      if (tensor.numel() > kMaxProbeElements) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::optional<at::Tensor> probeInput(const at::Tensor& tensor, c10::DeviceType device) {
  if (!tensor.defined()) {
    return tensor;
  }
  if (!probeCovers(tensor)) {
    return std::nullopt;
  }
  const std::vector<int64_t> ones(tensor.dim(), 1);
  const at::TensorOptions options = at::TensorOptions().dtype(tensor.scalar_type()).device(device);
  try {
    return device == c10::DeviceType::Meta ? at::empty(ones, options) : at::zeros(ones, options);
  } catch (const std::exception&) {
    return std::nullopt;  // a dtype without a fill (the bit and sub-byte types)
  }
}

at::Tensor probeOutput(const at::Tensor& tensor, c10::DeviceType device) {
  return at::empty({0}, at::TensorOptions().dtype(tensor.scalar_type()).device(device));
}

bool cpuKernelRunsForDtypes(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args) {
  if (drawsRandomNumbers(op)) {
    return false;
  }
  const c10::FunctionSchema& schema = op.schema();
  return probeRuns([&] {
    torch::jit::Stack meta;
    if (!standInStack(schema, args, c10::DeviceType::Meta, meta)) {
      return false;
    }
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
    for (const c10::IValue& result : meta) {
      if (!allSmall(result)) {
        return false;
      }
    }
    torch::jit::Stack cpu;
    if (!standInStack(schema, args, c10::DeviceType::CPU, cpu)) {
      return false;
    }
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &cpu);
    return true;
  });
}

}  // namespace torch_mydev
