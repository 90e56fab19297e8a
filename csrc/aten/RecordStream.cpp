// Tensor.record_stream(s): tells the caching allocator that the tensor's memory
// is used on stream s, so that after the tensor is freed the memory is not
// reused until the work queued on s so far has finished.
#include "../core/CachingAllocator.h"

#include <torch/library.h>

namespace torch_mydev {

namespace {

void recordStream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "record_stream: expected a mydev stream, got ",
              stream);
  cachingAllocator()->recordStream(self.storage().data_ptr(), stream);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", TORCH_FN(recordStream)); }

}  // namespace torch_mydev
