// The _foreach_ overloads with native kernels of their own
// (ForeachPointwise.cpp); Foreach.cpp routes every other one.
#pragma once

#include <string>
#include <unordered_set>

namespace torch_mydev::native {

// Names as torch::Library::impl takes them ("_foreach_lerp_.Scalar").
const std::unordered_set<std::string>& pointwiseForeachOverloads();

}  // namespace torch_mydev::native
