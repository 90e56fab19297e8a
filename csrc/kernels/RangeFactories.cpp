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

#include <ATen/CPUFunctions.h>
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

// size(meta_out) runs ATen's CPU function on the meta mirror; fill(out) on the worker.
template <typename Size, typename Fill>
Tensor& rangeFactoryOut(const char* name, Tensor& out, Size size, Fill fill) {
  NativeCall call(name, out);
  Tensor meta = at::empty_strided(out.sizes(), out.strides(), out.options().device(c10::kMeta));
  size(meta);
  if (meta.sizes() != out.sizes()) {
    out.resize_(meta.sizes());
  }
  call.launch([fill](Tensor out) { fill(out); }, out);
  return out;
}

Tensor& arangeOut(const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  return rangeFactoryOut(
      "aten::arange.start_out", out, [&](Tensor& meta) { at::native::arange_out(start, end, step, meta); },
      [start, end, step](Tensor& out) { at::cpu::arange_outf(start, end, step, out); });
}

Tensor& rangeOut(const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  return rangeFactoryOut(
      "aten::range.out", out, [&](Tensor& meta) { at::native::range_out(start, end, step, meta); },
      [start, end, step](Tensor& out) { at::cpu::range_outf(start, end, step, out); });
}

Tensor& linspaceOut(const Scalar& start, const Scalar& end, int64_t steps, Tensor& out) {
  return rangeFactoryOut(
      "aten::linspace.out", out, [&](Tensor& meta) { at::native::linspace_out(start, end, steps, meta); },
      [start, end, steps](Tensor& out) { at::cpu::linspace_outf(start, end, steps, out); });
}

Tensor& logspaceOut(const Scalar& start, const Scalar& end, int64_t steps, double base, Tensor& out) {
  return rangeFactoryOut(
      "aten::logspace.out", out, [&](Tensor& meta) { at::native::logspace_out(start, end, steps, base, meta); },
      [start, end, steps, base](Tensor& out) { at::cpu::logspace_outf(start, end, steps, base, out); });
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", TORCH_FN(arangeOut));
  m.impl("range.out", TORCH_FN(rangeOut));
  m.impl("linspace.out", TORCH_FN(linspaceOut));
  m.impl("logspace.out", TORCH_FN(logspaceOut));
}

}  // namespace torch_mydev::native
