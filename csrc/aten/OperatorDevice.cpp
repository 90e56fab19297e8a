#include "OperatorDevice.h"

#include "../core/Device.h"

#include <c10/util/Exception.h>

#include <string>

namespace torch_mydev {

c10::DeviceIndex OperatorDevice::resolve(const char* operator_name) const {
  TORCH_CHECK(!foreign_.has_value(), "Expected all tensors to be on the same device, but found at least two devices, ",
              device_.has_value() ? device_->str() : std::string("mydev"), " and ", foreign_->str(),
              "! (when checking arguments of ", operator_name, ")");
  return device_.has_value() ? resolveDevice(device_->index()) : currentDevice();
}

}  // namespace torch_mydev
