// fill_ and zero_. fill_ converts its value on the host first, so an
// out-of-range value raises at the call like on CPU, not later on the stream.
#include "DeviceTensorRef.h"
#include "DtypeProbe.h"
#include "DtypeSignatures.h"
#include "KernelLaunch.h"

#include "../core/Exception.h"
#include "../core/Stream.h"

#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace torch_mydev {

namespace {

const char* const kFill = "aten::fill_";

// A fill launch, whose dtypes are vouched for by a fill of stand-ins (DtypeSignatures.h).
template <typename Body>
void launchFill(const at::Tensor& self, const at::Tensor& value, Body body) {
  LaunchSignature signature(kFill, kFill);
  signature.add(self);
  signature.add(value);
  const auto probe = [&] {
    return inPlaceRunsForDtypes(self, value, [](at::Tensor stand_in, const at::Tensor& fill) { stand_in.fill_(fill); });
  };
  launchCheckingDtypes(signature, probe, [&](KernelWatch* watch) {
    launchKernel(kFill, getCurrentMydevStream(self.device().index()), std::move(body), watch);
  });
}

at::Tensor& fillWithHostValue(at::Tensor& self, const at::Tensor& value) {
  launchFill(self, value, [self_ref = describe(self), value] {
    KernelMemory memory;
    memory.map(self_ref).fill_(value);
  });
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
  launchFill(self, value, [self_ref = describe(self), value_ref = describe(value)] {
    KernelMemory memory;
    memory.map(self_ref).fill_(memory.map(value_ref));
  });
  return self;
}

// A dense tensor is cleared by a memset of its bytes, as a runtime does it
// fastest; others by ATen's CPU zero_, which also clears the dtypes that have
// no fill kernel (bit types, float4, sub-byte integers).
at::Tensor& zero(at::Tensor& self) {
  if (self.numel() == 0) {
    return self;
  }
  if (self.is_non_overlapping_and_dense()) {
    MYDEV_CHECK(mydevMemsetAsync(self.data_ptr(), 0, self.nbytes(),
                                 getCurrentMydevStream(self.device().index()).handle()));
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
