// The _foreach_ overloads with native kernels of their own
// (ForeachPointwise.cpp); Foreach.cpp routes every other one.
#pragma once

#include <torch/library.h>

#include <string>
#include <unordered_set>

namespace torch_mydev::native {

// Registers the kernels on `m` (the aten PrivateUse1 library) and returns
// their names as torch::Library::impl takes them ("_foreach_lerp_.Scalar").
std::unordered_set<std::string> registerPointwiseForeachKernels(torch::Library& m);

}  // namespace torch_mydev::native
