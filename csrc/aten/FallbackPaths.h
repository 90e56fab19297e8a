// What the fallback's two paths share: the asynchronous one (Fallback.cpp)
// and the synchronous one (FallbackSynchronous.cpp) both hand an operator's
// arguments to ATen's CPU kernel through slots a kernel closure owns, and
// both build device tensors over device storages for its results.
#pragma once

#include "DeviceTensorRef.h"

#include "../core/Stream.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <string>
#include <vector>

namespace torch_mydev::fallback {

inline bool isMydev(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == c10::DeviceType::PrivateUse1;
}

template <typename F>
void forEachTensor(const c10::IValue& value, F&& visit) {
  if (value.isTensor()) {
    visit(value.toTensor());
  } else if (value.isList()) {
    for (const c10::IValue& element : value.toListRef()) {
      if (element.isTensor()) {
        visit(element.toTensor());
      }
    }
  }
}

// One argument of the CPU call, in a form a kernel closure may own.
struct ArgSlot {
  enum class Kind { Plain, Tensor, TensorList, OptionalTensorList } kind = Kind::Plain;
  c10::IValue plain;
  std::vector<CapturedTensor> tensors;
  bool mutated = false;
};

// The slots of a call's arguments: tensors captured, generators reserved in
// stream order, the device turned into the CPU.
std::vector<ArgSlot> argumentSlots(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args,
                                   c10::DeviceIndex device);

// The CPU kernel's arguments, on the worker: tensors alias device memory.
torch::jit::Stack cpuStack(const std::vector<ArgSlot>& slots, KernelMemory& memory, bool resizable_outputs);

// A device tensor with `geometry`'s sizes, strides and offset over `storage`.
at::Tensor deviceView(const c10::Storage& storage, const at::Tensor& geometry);

at::Tensor emptyDevice(const at::Tensor& like, c10::DeviceIndex device);

// The synchronous path (FallbackSynchronous.cpp): the caller waits for the
// CPU kernel, then adopts what it returned. `cuda_waits_too`: whether the
// wait is the operator's own (CUDA's host waits for it too), which sync-debug
// mode reports; mydev's other reasons to wait (a Meta kernel that cannot
// stand in for the CPU's) are not the user's to act on.
void runSynchronously(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::DeviceIndex device,
                      const MydevStream& stream, const std::string& name, bool cuda_waits_too);

}  // namespace torch_mydev::fallback
