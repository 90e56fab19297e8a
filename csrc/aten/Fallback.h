// The generic kernel tier (see Fallback.cpp), also callable by native kernels
// that only need to route an operator to ATen's CPU implementation.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <string>

namespace torch_mydev {

// Runs `op` (arguments on `stack`, results left there) on the device of its
// tensors, with ATen's CPU kernel over device memory. As the fallback, the
// call is counted and subject to the MYDEV_FALLBACK policy; a native kernel
// that is ATen's CPU kernel by design passes as_fallback = false.
void runCpuKernelOnDevice(const c10::OperatorHandle& op, torch::jit::Stack* stack, bool as_fallback);

// The fallback: runCpuKernelOnDevice(op, stack, true).
void runOnDevice(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The name torch::Library::impl takes for an aten operator (aten::add with
// overload "out" -> "add.out").
std::string atenImplName(const c10::OperatorName& name);

// Registers runOnDevice, by name, for the sparse operators that need it (see
// Fallback.cpp). Called once when torch_mydev._C is imported: after every
// static registration of the extension, so that mydev's own sparse kernels
// are known and kept.
void routeCpuSparseOperatorsToFallback();

}  // namespace torch_mydev
