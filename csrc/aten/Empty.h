// Tensor creation on mydev, callable without the dispatcher: kernels that
// allocate their outputs (StructuredOut.h) call it directly, which saves a
// dispatcher round trip per launch; the registered empty.memory_format and
// empty_strided kernels are thin wrappers over the same functions.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_mydev {

// A new tensor on options.device() (the current mydev device if it has no
// index); empty `strides` means contiguous in options' memory format.
at::Tensor emptyOnDevice(c10::IntArrayRef sizes, c10::IntArrayRef strides, const at::TensorOptions& options);

}  // namespace torch_mydev
