#include "HostResults.h"

#include "../core/KernelWorkspaceAllocator.h"

#include <c10/util/Exception.h>

#include <utility>

namespace torch_mydev {

namespace {

bool storedInPlace(const at::Tensor& output, const at::Tensor& result) {
  return result.defined() && result.data_ptr() == output.data_ptr() && result.sizes() == output.sizes() &&
         result.strides() == output.strides() && result.scalar_type() == output.scalar_type() &&
         result.is_conj() == output.is_conj() && result.is_neg() == output.is_neg();
}

}  // namespace

// A dense tensor's memory starts at its data pointer and spans nbytes(); a
// CPU function allocates exactly that for a result of the same numel and dtype.
HostResults::HostResults(c10::ArrayRef<at::Tensor> outputs) : outputs_(outputs.begin(), outputs.end()) {
  for (const at::Tensor& output : outputs_) {
    if (output.defined() && output.nbytes() > 0 && output.is_non_overlapping_and_dense()) {
      const char* begin = static_cast<const char*>(output.data_ptr());
      offered_.push_back({begin, begin + output.nbytes()});
      offerKernelOutput(output.data_ptr(), output.nbytes());
    }
  }
}

HostResults::~HostResults() {
  if (!withdrawn_) {
    withdrawKernelOutputs();
  }
}

bool HostResults::occupiesAnOffer(const at::Tensor& result) const {
  if (!result.defined() || !result.has_storage() || result.storage().nbytes() == 0) {
    return false;
  }
  const char* begin = static_cast<const char*>(result.storage().data());
  const char* end = begin + result.storage().nbytes();
  for (const Span& span : offered_) {
    if (begin < span.end && span.begin < end) {
      return true;
    }
  }
  return false;
}

void HostResults::store(c10::ArrayRef<at::Tensor> results) {
  withdrawKernelOutputs();  // so that a result moved out below cannot take an offer
  withdrawn_ = true;
  TORCH_INTERNAL_ASSERT(results.size() == outputs_.size(), "mydev: ", results.size(), " results for ",
                        outputs_.size(), " outputs");
  c10::SmallVector<std::pair<at::Tensor, at::Tensor>, 3> copies;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const at::Tensor& output = outputs_[i];
    if (!output.defined() || storedInPlace(output, results[i])) {
      continue;
    }
    copies.emplace_back(output, occupiesAnOffer(results[i]) ? results[i].clone() : results[i]);
  }
  for (auto& [output, result] : copies) {
    output.copy_(result);
  }
}

}  // namespace torch_mydev
