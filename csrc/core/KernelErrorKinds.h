// The Python exception class of a kernel's failure. A kernel that fails on a
// stream worker surfaces later as a runtime error (mydevErrorLaunchFailure)
// whose message carries the kernel's message; this remembers which c10 error
// class the kernel raised (NotImplementedError for an unsupported dtype,
// IndexError, ...) so that the glue raises the same class as the CPU would.
#pragma once

#include <c10/util/Exception.h>

#include <string>

namespace torch_mydev {

enum class KernelErrorKind { Generic, NotImplemented, Value, Type, Index, LinAlg };

KernelErrorKind kernelErrorKindOf(const c10::Error& error);

// Called on the worker for a failing kernel, with the message it reports.
void rememberKernelErrorKind(const std::string& message, KernelErrorKind kind);

// The kind remembered for the kernel message contained in `runtime_message`
// (Generic if none), forgetting it.
KernelErrorKind takeKernelErrorKind(const std::string& runtime_message);

}  // namespace torch_mydev
