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

// Whether user-visible uninitialised memory (torch.empty*, what resize_ adds)
// is to be filled, as the CPU and CUDA do: with
// torch.use_deterministic_algorithms(True) and
// torch.utils.deterministic.fill_uninitialized_memory (its default), it holds
// NaN (floating, complex) or the dtype's largest value instead of old bytes.
bool fillsUninitializedMemory();

}  // namespace torch_mydev
