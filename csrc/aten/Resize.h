// Growing device storages. ATen's CPU resize path copies the old bytes with a
// host memcpy, which must never touch device memory; here the new memory comes
// from the mydev allocator and the old bytes move with a stream-ordered
// device-to-device copy.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

namespace torch_mydev {

void resizeStorageBytes(const c10::Storage& storage, size_t new_bytes);
// Grows the tensor's storage if its view no longer fits.
void ensureStorageFits(const at::Tensor& tensor);

}  // namespace torch_mydev
