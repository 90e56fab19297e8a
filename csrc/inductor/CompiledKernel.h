// Launches the kernels that torch.compile generates for mydev. Inductor's C++
// code generator writes host code that reads and writes raw pointers; on mydev
// those pointers are device pointers, which host code must not touch. So a
// compiled kernel is queued on the current stream of its tensors' device like
// every eager kernel, and on the stream's worker its device pointers are
// translated into the addresses a running kernel may use
// (mydevKernelMapPointer) before the generated code runs.
//
// The generated code is reached through an entry point of one fixed C
// signature that torch_mydev/inductor adds to every kernel it compiles: it
// unpacks an array of 64-bit words (translated pointers, integers, and the
// bits of doubles) into the kernel's own parameters.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <string>

namespace torch_mydev {

using CompiledKernelEntry = void (*)(const uint64_t* arguments);

// How a kernel takes each argument, one character per argument as the code
// generator declares it: 'r' a pointer the kernel only reads (const T*), 'w' a
// pointer it writes, 'i' an integer, 'f' a floating-point value.
bool isCompiledKernelArgumentKind(char kind);

// One argument of a compiled kernel: a tensor whose data pointer it takes
// (kinds 'r' and 'w'), or a 64-bit value passed as is (an int64_t, or the bits
// of a double).
struct CompiledKernelArgument {
  const at::Tensor* tensor = nullptr;
  uint64_t value = 0;
};

// Queues `entry` on the current stream of the device that holds the tensor
// arguments and returns. Tensors must be mydev tensors of one device, except
// a 0-dim CPU tensor that the kernel only reads (Inductor passes CPU scalars
// to device kernels this way): its value is read now, as a kernel parameter.
void launchCompiledKernel(const std::string& name, CompiledKernelEntry entry, const std::string& kinds,
                          c10::ArrayRef<CompiledKernelArgument> arguments);

// The C interface that Inductor's C++ wrapper (torch._inductor.config.cpp_wrapper)
// calls, found through the capsule torch_mydev._C._inductor_launch_api. Tensor
// arguments are AtenTensorHandles, as the AOTI shim passes tensors (null for a
// value argument). Returns 0, or 1 with the error in last_error() of the
// calling thread.
struct InductorLaunchApi {
  int64_t version;
  int (*launch)(const char* name, CompiledKernelEntry entry, const char* kinds, void* const* tensors,
                const uint64_t* values);
  const char* (*last_error)();
};

constexpr int64_t kInductorLaunchApiVersion = 1;
const InductorLaunchApi* inductorLaunchApi();

}  // namespace torch_mydev
