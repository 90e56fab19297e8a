// PyTorch's _foreach_ operators (the optimizers' foreach=True steps,
// clip_grad_norm_, foreach arithmetic in user code) as one kernel launch per
// call for the whole tensor list. Their only kernels in ATen are the
// CompositeExplicitAutograd loops that CPU and every backend without its own
// share: on mydev that loop would launch one kernel per tensor and per
// arithmetic step. Here the call goes through the fallback's machinery as a
// native kernel (not counted as a fallback, not subject to MYDEV_FALLBACK):
// the composite loop runs once over meta mirrors on the calling thread, which
// validates the call and sizes the outputs, and once inside a single kernel on
// the stream, over CPU aliases of device memory. The optimizers' pointwise
// steps, whose per-tensor meta kernels are slow Python decompositions, have
// kernels of their own (ForeachPointwise.cpp).
#include "ForeachPointwise.h"

#include "../aten/Fallback.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>
#include <unordered_set>

namespace torch_mydev::native {

namespace {

void runForeach(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  runCpuKernelOnDevice(op, stack, /*as_fallback=*/false);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  const std::unordered_set<std::string> pointwise = registerPointwiseForeachKernels(m);
  const std::string prefix = "aten::_foreach_";
  for (const c10::OperatorName& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    const std::string impl_name = atenImplName(name);
    if (pointwise.count(impl_name) > 0) {
      continue;
    }
    m.impl(impl_name.c_str(), torch::CppFunction::makeFromBoxedFunction<&runForeach>());
  }
}

}  // namespace torch_mydev::native
