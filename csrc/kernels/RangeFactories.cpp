// Native kernels of the range factories: arange, range, linspace and
// logspace (their out= forms, which the functional factories call).
//
// ATen's CPU functions for these operators also serve as their Meta kernels:
// on a meta tensor they check the arguments, warn, and size the output, then
// stop before writing. Called directly on a meta mirror of the output, they
// validate the call and give its geometry on the calling thread with the
// CPU's own code; the device output is resized to match, and the CPU function
// fills it on the stream.
#include "NativeCall.h"

#include <ATen/ops/arange_native.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/linspace_native.h>
#include <ATen/ops/logspace_native.h>
#include <ATen/ops/range_native.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Scalar;
using at::Tensor;

// cpuFunction(out) is ATen's CPU function of the factory: on the calling
// thread over a meta mirror of the output (checks and geometry), then on the
// worker over the device output (values).
template <typename CpuFunction>
Tensor& rangeFactoryOut(const char* name, Tensor& out, CpuFunction cpuFunction) {
  NativeCall call(name, out);
  Tensor meta = at::empty_strided(out.sizes(), out.strides(), out.options().device(c10::kMeta));
  cpuFunction(meta);
  if (meta.sizes() != out.sizes()) {
    out.resize_(meta.sizes());
  }
  call.launch([cpuFunction](Tensor out) { cpuFunction(out); }, out);
  return out;
}

Tensor& arangeOut(const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  return rangeFactoryOut("aten::arange.start_out", out,
                         [start, end, step](Tensor& out) { at::native::arange_out(start, end, step, out); });
}

Tensor& rangeOut(const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  return rangeFactoryOut("aten::range.out", out,
                         [start, end, step](Tensor& out) { at::native::range_out(start, end, step, out); });
}

Tensor& linspaceOut(const Scalar& start, const Scalar& end, int64_t steps, Tensor& out) {
  return rangeFactoryOut("aten::linspace.out", out,
                         [start, end, steps](Tensor& out) { at::native::linspace_out(start, end, steps, out); });
}

Tensor& logspaceOut(const Scalar& start, const Scalar& end, int64_t steps, double base, Tensor& out) {
  return rangeFactoryOut("aten::logspace.out", out, [start, end, steps, base](Tensor& out) {
    at::native::logspace_out(start, end, steps, base, out);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", TORCH_FN(arangeOut));
  m.impl("range.out", TORCH_FN(rangeOut));
  m.impl("linspace.out", TORCH_FN(linspaceOut));
  m.impl("logspace.out", TORCH_FN(logspaceOut));
}

}  // namespace torch_mydev::native
