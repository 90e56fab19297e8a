// Checks that ATen's CPU kernel of an operator makes only when it runs, and
// that its Meta kernel skips: an argument string, a mask's dtype, an out=
// tensor that overlaps an input. Through the fallback the CPU kernel runs on
// the stream, so such bad input would raise at the next synchronization (or,
// for an overlap the kernel cannot see, not at all). The fallback runs these
// checks on the calling thread before anything else, with the CPU's messages.
#pragma once

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>

namespace torch_mydev {

void checkOnHost(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args);

}  // namespace torch_mydev
