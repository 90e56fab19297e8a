#include "HostResults.h"

#include "../core/KernelWorkspaceAllocator.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <utility>

namespace torch_mydev {

namespace {

std::atomic<uint64_t> g_in_place{0};
std::atomic<uint64_t> g_copied{0};
std::atomic<uint64_t> g_moved{0};

bool storedInPlace(const at::Tensor& output, const at::Tensor& result) {
  return result.defined() && result.const_data_ptr() == output.const_data_ptr() && result.sizes() == output.sizes() &&
         result.strides() == output.strides() && result.scalar_type() == output.scalar_type() &&
         result.is_conj() == output.is_conj() && result.is_neg() == output.is_neg();
}

}  // namespace

HostResultCounts hostResultCounts() {
  return {g_in_place.load(std::memory_order_relaxed), g_copied.load(std::memory_order_relaxed),
          g_moved.load(std::memory_order_relaxed)};
}

// A dense tensor's memory starts at its data pointer and spans nbytes(); a
// CPU function allocates exactly that for a result of the same numel and dtype.
HostResults::HostResults(c10::ArrayRef<at::Tensor> outputs, c10::ArrayRef<bool> lend)
    : outputs_(outputs.begin(), outputs.end()) {
  TORCH_INTERNAL_ASSERT(lend.empty() || lend.size() == outputs.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const at::Tensor& output = outputs_[i];
    if ((lend.empty() || lend[i]) && output.defined() && output.nbytes() > 0 &&
        output.is_non_overlapping_and_dense()) {
      const char* begin = static_cast<const char*>(output.data_ptr());
      offered_.push_back({begin, begin + output.nbytes()});
      offerKernelOutput(output.data_ptr(), output.nbytes());
    }
  }
}

HostResults::~HostResults() { withdraw(); }

void HostResults::withdraw() {
  if (!withdrawn_) {
    withdrawKernelOutputs();
    withdrawn_ = true;
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
  withdraw();  // so that a result moved out below cannot take an offer
  TORCH_INTERNAL_ASSERT(results.size() == outputs_.size(), "mydev: ", results.size(), " results for ",
                        outputs_.size(), " outputs");
  c10::SmallVector<std::pair<at::Tensor, at::Tensor>, 3> copies;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const at::Tensor& output = outputs_[i];
    if (!output.defined()) {
      continue;
    }
    if (storedInPlace(output, results[i])) {
      g_in_place.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const bool moved = occupiesAnOffer(results[i]);
    g_moved.fetch_add(moved ? 1 : 0, std::memory_order_relaxed);
    copies.emplace_back(output, moved ? results[i].clone() : results[i]);
  }
  g_copied.fetch_add(copies.size(), std::memory_order_relaxed);
  for (auto& [output, result] : copies) {
    output.copy_(result);
  }
}

}  // namespace torch_mydev
