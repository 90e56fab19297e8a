// torch.kaiser_window: ATen's composite factory fills the window through
// kaiser_window_stub, a DispatchStub it calls directly on the device tensors
// (no operator the fallback could catch), so the device needs the stub's
// PrivateUse1 slot. The slot queues ATen's CPU stub over the same tensors, on
// the stream.
#include "NativeCall.h"

#include <ATen/TensorIterator.h>
#include <ATen/native/UnaryOps.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;

void kaiserWindow(at::TensorIteratorBase& iter, int64_t window_length, double beta) {
  NativeCall call("aten::kaiser_window", iter.output(0), iter.input(0));
  call.launch(
      [](Tensor window, const Tensor& initial, int64_t window_length, double beta) {
        auto cpu_iter = at::TensorIterator::unary_op(window, initial);
        at::native::kaiser_window_stub(c10::DeviceType::CPU, cpu_iter, window_length, beta);
      },
      iter.output(0), iter.input(0), window_length, beta);
}

}  // namespace

}  // namespace torch_mydev::native

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(kaiser_window_stub, &torch_mydev::native::kaiserWindow)
}  // namespace at::native
