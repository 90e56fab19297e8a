// Native kernels of mode. ATen implements its out= form as a composite that
// refuses every device but CPU, CUDA and XPU; here that composite runs on the
// stream over CPU aliases of the device outputs, so ATen's CPU mode writes
// them directly. The checks, the empty reduction dimension's among them, run
// at the call, and the outputs have their final shape before the launch.
#include "NativeCall.h"

#include <ATen/CompositeExplicitAutogradFunctions.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/ops/empty.h>
#include <c10/core/WrapDimMinimal.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Tensor;

std::tuple<Tensor&, Tensor&> modeOut(const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                                     Tensor& indices) {
  NativeCall call("aten::mode.values", self, values, indices);
  TORCH_CHECK(self.layout() == c10::kStrided, "mode only supports strided layout, got: ", self.layout());
  TORCH_CHECK(self.scalar_type() == values.scalar_type(), "mode(): expected scalar type ", self.scalar_type(),
              " but got ", values.scalar_type(), " for values");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "mode(): expected scalar type Long but got ",
              indices.scalar_type(), " for indices");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  at::native::zero_numel_check_dims(self, dim, "mode()");
  at::DimVector shape(self.sizes());
  if (self.dim() > 0) {
    if (keepdim) {
      shape[dim] = 1;
    } else {
      shape.erase(shape.begin() + dim);
    }
  }
  at::native::resize_output(values, shape);
  at::native::resize_output(indices, shape);
  call.addChoices(dim, keepdim);
  call.launch(
      [dim, keepdim](const Tensor& self, Tensor values, Tensor indices) {
        at::compositeexplicitautograd::mode_outf(self, dim, keepdim, values, indices);
      },
      self, values, indices);
  return {values, indices};
}

std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim, bool keepdim) {
  Tensor values = at::empty({0}, self.options());
  Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  modeOut(self, dim, keepdim, values, indices);
  return {values, indices};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mode", TORCH_FN(mode));
  m.impl("mode.values", TORCH_FN(modeOut));
}

}  // namespace torch_mydev::native
