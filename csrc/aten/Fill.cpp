// fill_ and zero_. fill_ converts its value on the host first, so an
// out-of-range value raises at the call like on CPU, not later on the stream.
#include "DeviceTensorRef.h"
#include "KernelLaunch.h"
#include "LimitedDtypes.h"

#include "../core/Stream.h"

#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace torch_mydev {

namespace {

at::Tensor& fillWithHostValue(at::Tensor& self, const at::Tensor& value) {
  launchKernel(
      "aten::fill_", getCurrentMydevStream(self.device().index()),
      [self_ref = describe(self), value] {
        KernelMemory memory;
        memory.map(self_ref).fill_(value);
      },
      /*wait=*/hasLimitedDtype(self));
  return self;
}

at::Tensor& fillScalar(at::Tensor& self, const c10::Scalar& value) {
  at::Tensor host_value = at::empty({}, self.options().device(c10::kCPU));
  host_value.fill_(value);
  if (self.numel() == 0) {
    return self;
  }
  return fillWithHostValue(self, host_value);
}

at::Tensor& fillTensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  if (value.device().is_cpu()) {
    return fillScalar(self, value.item());
  }
  TORCH_CHECK(value.device() == self.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
              self.device(), " and ", value.device(), "!");
  if (self.numel() == 0) {
    return self;
  }
  launchKernel(
      "aten::fill_", getCurrentMydevStream(self.device().index()),
      [self_ref = describe(self), value_ref = describe(value)] {
        KernelMemory memory;
        memory.map(self_ref).fill_(memory.map(value_ref));
      },
      /*wait=*/hasLimitedDtype(self));
  return self;
}

// ATen's CPU zero_, which also clears the dtypes that have no fill kernel (bit
// types, float4, sub-byte integers): torch.zeros works for them as on the CPU.
at::Tensor& zero(at::Tensor& self) {
  if (self.numel() == 0) {
    return self;
  }
  launchKernel("aten::zero_", getCurrentMydevStream(self.device().index()), [self_ref = describe(self)] {
    KernelMemory memory;
    memory.map(self_ref).zero_();
  });
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fill_.Scalar", TORCH_FN(fillScalar));
  m.impl("fill_.Tensor", TORCH_FN(fillTensor));
  m.impl("zero_", TORCH_FN(zero));
}

}  // namespace torch_mydev
