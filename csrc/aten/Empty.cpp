// Tensor creation: every mydev tensor's memory comes from the caching allocator
// on the requested device.
#include "Empty.h"

#include "../core/CachingAllocator.h"
#include "../core/Device.h"

#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/TensorFactories.h>
#include <c10/core/DefaultDtype.h>
#include <torch/library.h>

namespace torch_mydev {

namespace {

c10::DispatchKeySet mydevKeys() { return c10::DispatchKeySet(c10::DispatchKey::PrivateUse1); }

void checkTensorOptions(std::optional<c10::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK(layout.value_or(c10::kStrided) == c10::kStrided, "mydev only supports strided tensors, got layout ",
              *layout);
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned; mydev tensors cannot");
}

// As the CPU's empty factories do (its internal allocations stay unfilled).
at::Tensor filledIfDeterministic(at::Tensor created) {
  if (C10_UNLIKELY(fillsUninitializedMemory())) {
    at::native::fill_empty_deterministic_(created);
  }
  return created;
}

at::Tensor emptyMemoryFormat(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                             std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                             std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  checkTensorOptions(layout, pin_memory);
  return filledIfDeterministic(
      emptyOnDevice(size, {}, at::TensorOptions().dtype(dtype).device(device).memory_format(memory_format)));
}

at::Tensor emptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                        std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                        std::optional<bool> pin_memory) {
  checkTensorOptions(layout, pin_memory);
  return filledIfDeterministic(emptyOnDevice(size, stride, at::TensorOptions().dtype(dtype).device(device)));
}

}  // namespace

at::Tensor emptyOnDevice(c10::IntArrayRef sizes, c10::IntArrayRef strides, const at::TensorOptions& options) {
  const c10::Device device = options.device();
  ScopedDevice on_device(resolveDevice(device.type() == c10::DeviceType::PrivateUse1 ? device.index() : -1));
  const c10::ScalarType dtype = options.has_dtype() ? c10::typeMetaToScalarType(options.dtype())
                                                    : c10::get_default_dtype_as_scalartype();
  if (!strides.empty()) {
    return at::detail::empty_strided_generic(sizes, strides, cachingAllocator(), mydevKeys(), dtype);
  }
  return at::detail::empty_generic(sizes, cachingAllocator(), mydevKeys(), dtype, options.memory_format_opt());
}

bool fillsUninitializedMemory() {
  const at::Context& context = at::globalContext();
  return context.deterministicAlgorithms() && context.deterministicFillUninitializedMemory();
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(emptyMemoryFormat));
  m.impl("empty_strided", TORCH_FN(emptyStrided));
}

}  // namespace torch_mydev
