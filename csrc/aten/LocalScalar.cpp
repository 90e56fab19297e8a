// _local_scalar_dense (Tensor.item()): the one element travels device to host
// through the runtime, after everything queued before it on the stream; the
// synchronization also reports any failed kernel, like .item() on CUDA.
#include "../core/Exception.h"
#include "../core/Stream.h"
#include "../core/SyncDebug.h"

#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace torch_mydev {

namespace {

c10::Scalar localScalarDense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  reportHostWait("aten::_local_scalar_dense (Tensor.item())");
  const MydevStream stream = getCurrentMydevStream(self.device().index());
  at::Tensor host = at::empty({}, self.options().device(c10::kCPU));
  MYDEV_CHECK(mydevMemcpyAsync(host.data_ptr(), self.data_ptr(), self.element_size(), mydevMemcpyDeviceToHost,
                               stream.handle()));
  stream.synchronize();
  // ATen's CPU kernel itself: host.item() would dispatch, and a profile would
  // show a second aten::item inside this one.
  return at::native::_local_scalar_dense_cpu(host);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("_local_scalar_dense", TORCH_FN(localScalarDense)); }

}  // namespace torch_mydev
