// Turns a failing runtime call into a C++ exception that PyTorch maps to a
// Python exception: the message carries the runtime's own text (API call and
// device) plus the file:line of the glue code that made the call.
#pragma once

#include <mydev/runtime.h>

#include <c10/macros/Macros.h>

namespace torch_mydev {

[[noreturn]] void throwRuntimeError(mydevError_t error, const char* call, const char* file, int line);

}  // namespace torch_mydev

#define MYDEV_CHECK(EXPR)                                                        \
  do {                                                                           \
    const mydevError_t mydev_check_error_ = (EXPR);                              \
    if (C10_UNLIKELY(mydev_check_error_ != mydevSuccess)) {                      \
      ::torch_mydev::throwRuntimeError(mydev_check_error_, #EXPR, __FILE__, __LINE__); \
    }                                                                            \
  } while (0)
