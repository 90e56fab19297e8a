// The generic kernel tier (see Fallback.cpp), also callable by native kernels
// that hand some inputs to ATen's CPU implementation (GridSampler.cpp).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torch_mydev {

// The fallback: runs `op` (arguments on `stack`, results left there) on the
// device of its tensors, with ATen's CPU kernel over device memory. Every
// call is counted and subject to the MYDEV_FALLBACK policy.
void runOnDevice(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Registers runOnDevice, by name, for the operators that would not reach the
// backend fallback (see Fallback.cpp). Called once when torch_mydev._C is
// imported: after every static registration of the extension, so that mydev's
// own kernels are known and kept.
void routeOperatorsToFallback();

}  // namespace torch_mydev
