// Which mydev device an operator runs on, decided from its tensor arguments.
// Shared by the generic fallback and the native kernels so that both refuse
// mixed devices with the same message CUDA gives.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <optional>

namespace torch_mydev {

class OperatorDevice {
 public:
  // A tensor argument. CPU tensors are accepted where CUDA accepts them: 0-dim
  // scalars anywhere, and any CPU tensor where `accepts_host_tensor` (index
  // lists, Tensor?[] in schemas).
  void add(const at::Tensor& tensor, bool accepts_host_tensor = false) {
    if (!tensor.defined()) {
      return;
    }
    const bool host_accepted = tensor.device().is_cpu() && (tensor.dim() == 0 || accepts_host_tensor);
    addChecked(tensor, host_accepted);
  }

  // A tensor that must be on the device, even a 0-dim one: one the operator
  // writes (an out= or in-place argument), or any argument of an operator
  // whose CUDA wrapper checks every device (not a TensorIterator operator).
  void addOnDevice(const at::Tensor& tensor) {
    if (tensor.defined()) {
      addChecked(tensor, /*host_accepted=*/false);
    }
  }

  // A device argument (factory operators); the first mydev one wins.
  void add(const c10::Device& device) {
    if (device.type() == c10::DeviceType::PrivateUse1 && !device_.has_value()) {
      device_ = device;
    }
  }

  // The device to run on (the current one when no argument names one); throws
  // if the arguments live on two devices.
  c10::DeviceIndex resolve(const char* operator_name) const;

 private:
  void addChecked(const at::Tensor& tensor, bool host_accepted) {
    if (tensor.device().type() == c10::DeviceType::PrivateUse1) {
      if (!device_.has_value()) {
        device_ = tensor.device();
      } else if (*device_ != tensor.device() && !foreign_.has_value()) {
        foreign_ = tensor.device();
      }
    } else if (!host_accepted && !foreign_.has_value()) {
      foreign_ = tensor.device();
    }
  }

  std::optional<c10::Device> device_;
  std::optional<c10::Device> foreign_;
};

}  // namespace torch_mydev
