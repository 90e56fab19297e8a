// resize_ and the set_ family for mydev tensors.
#include "Resize.h"

#include "Empty.h"

#include "../core/CachingAllocator.h"
#include "../core/Device.h"
#include "../core/Exception.h"
#include "../core/Stream.h"

#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/ops/set_native.h>
#include <torch/library.h>

#include <algorithm>

namespace torch_mydev {

void resizeStorageBytes(const c10::Storage& storage, size_t new_bytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  const c10::DeviceIndex device = storage.device().index();
  ScopedDevice on_device(resolveDevice(device));
  c10::DataPtr new_data = cachingAllocator()->allocate(new_bytes);
  const size_t copy_bytes = std::min(impl->nbytes(), new_bytes);
  if (copy_bytes > 0 && impl->data() != nullptr) {
    const MydevStream stream = getCurrentMydevStream(device);
    MYDEV_CHECK(mydevMemcpyAsync(new_data.get(), impl->data(), copy_bytes, mydevMemcpyDeviceToDevice,
                                 stream.handle()));
    // The old block may belong to another stream's pool: keep it from reuse
    // until the copy that reads it has run.
    cachingAllocator()->recordStream(impl->data_ptr(), stream.unwrap());
  }
  impl->set_data_ptr_noswap(std::move(new_data));
  impl->set_nbytes(new_bytes);
}

void ensureStorageFits(const at::Tensor& tensor) {
  const size_t needed = at::detail::computeStorageNbytes(tensor.sizes(), tensor.strides(), tensor.dtype().itemsize(),
                                                         tensor.storage_offset());
  if (needed > tensor.storage().nbytes()) {
    resizeStorageBytes(tensor.storage(), needed);
  }
}

namespace {

const at::Tensor& resize(const at::Tensor& self, c10::IntArrayRef size,
                         std::optional<c10::MemoryFormat> memory_format) {
  at::detail::check_size_nonnegative(size);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  const int64_t old_storage_bytes =
      impl->unsafe_storage() ? static_cast<int64_t>(impl->unsafe_storage().nbytes()) : 0;
  if (self.sizes() != size || memory_format.has_value()) {
    impl->set_sizes_contiguous(size);
    if (memory_format.has_value()) {
      TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve, "Unsupported memory format ", *memory_format);
      impl->empty_tensor_restride(*memory_format);
    }
  }
  ensureStorageFits(self);
  if (C10_UNLIKELY(fillsUninitializedMemory())) {
    at::native::fill_resize_deterministic_(self, old_storage_bytes);
  }
  return self;
}

at::Tensor& setStorageView(at::Tensor& self, c10::Storage source, int64_t storage_offset, c10::IntArrayRef size,
                           c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_storage_offset(storage_offset);
  if (stride.data() != nullptr) {
    impl->set_sizes_and_strides(size, stride);
  } else {
    impl->set_sizes_contiguous(size);
  }
  ensureStorageFits(self);
  return self;
}

at::Tensor& setStorage(at::Tensor& self, c10::Storage source) {
  const size_t itemsize = self.dtype().itemsize();
  TORCH_CHECK(source.nbytes() % itemsize == 0, "Expected storage of size ", source.nbytes(),
              " bytes to be a multiple of the element size ", itemsize);
  const int64_t numel = static_cast<int64_t>(source.nbytes() / itemsize);
  return setStorageView(self, std::move(source), 0, {numel}, {});
}

at::Tensor& setEmpty(at::Tensor& self) {
  ScopedDevice on_device(resolveDevice(self.device().index()));
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, cachingAllocator(), /*resizable=*/true);
  return setStorageView(self, std::move(empty), 0, {0}, {});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("resize_", TORCH_FN(resize));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(setStorageView));
  m.impl("set_.source_Storage", TORCH_FN(setStorage));
  m.impl("set_.source_Tensor", TORCH_FN(at::native::set_tensor_));
  m.impl("set_", TORCH_FN(setEmpty));
}

}  // namespace torch_mydev
