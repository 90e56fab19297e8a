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

// Whether a result in `output`'s memory would be exactly the output.
bool sameLayout(const at::Tensor& output, const at::Tensor& result) {
  return result.defined() && result.sizes() == output.sizes() && result.strides() == output.strides() &&
         result.scalar_type() == output.scalar_type() && result.is_conj() == output.is_conj() &&
         result.is_neg() == output.is_neg();
}

bool storedInPlace(const at::Tensor& output, const at::Tensor& result) {
  return sameLayout(output, result) && result.const_data_ptr() == output.const_data_ptr();
}

// A dense tensor's memory starts at its data pointer and spans nbytes(); a
// CPU function allocates exactly that for a result of the same numel and dtype.
bool lendable(const at::Tensor& output) {
  return output.defined() && output.nbytes() > 0 && output.is_non_overlapping_and_dense();
}

// Plans are kept for this many argument sets per thread; past that (shapes that
// vary without end) they are forgotten and learned again.
constexpr size_t kMaxLoanPlans = 256;

}  // namespace

LoanPlan& LoanPlans::forKey(size_t key) {
  if (plans_.size() >= kMaxLoanPlans && plans_.find(key) == plans_.end()) {
    plans_.clear();
  }
  return plans_[key];
}

HostResultCounts hostResultCounts() {
  return {g_in_place.load(std::memory_order_relaxed), g_copied.load(std::memory_order_relaxed),
          g_moved.load(std::memory_order_relaxed)};
}

HostResults::HostResults(c10::ArrayRef<at::Tensor> outputs, c10::ArrayRef<bool> lend)
    : outputs_(outputs.begin(), outputs.end()) {
  TORCH_INTERNAL_ASSERT(lend.empty() || lend.size() == outputs.size());
  offer(firstOfEachSize(lend));
}

HostResults::HostResults(c10::ArrayRef<at::Tensor> outputs, LoanPlan& plan)
    : outputs_(outputs.begin(), outputs.end()), plan_(&plan) {
  if (plan.ordinals.size() != outputs_.size()) {
    plan.ordinals = firstOfEachSize({});
  }
  offer(plan.ordinals);
}

// Each output to the first allocation of its size; the second output of a
// size to the second allocation of that size, and so on.
c10::SmallVector<int, 3> HostResults::firstOfEachSize(c10::ArrayRef<bool> lend) const {
  c10::SmallVector<int, 3> ordinals(outputs_.size(), 0);
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (!lendable(outputs_[i]) || (!lend.empty() && !lend[i])) {
      continue;
    }
    ordinals[i] = 1;
    for (size_t earlier = 0; earlier < i; ++earlier) {
      ordinals[i] += ordinals[earlier] > 0 && outputs_[earlier].nbytes() == outputs_[i].nbytes() ? 1 : 0;
    }
  }
  return ordinals;
}

void HostResults::offer(c10::ArrayRef<int> ordinals) {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const at::Tensor& output = outputs_[i];
    if (ordinals[i] > 0 && lendable(output)) {
      const char* begin = static_cast<const char*>(output.data_ptr());
      offered_.push_back({begin, begin + output.nbytes()});
      offerKernelOutput(output.data_ptr(), output.nbytes(), ordinals[i]);
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

// For each result not stored in place: the allocation it was, when in its
// output's memory it would have been the output; otherwise (another layout,
// a view of a larger block) no loan helps it.
void HostResults::learn(c10::ArrayRef<at::Tensor> results) {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const at::Tensor& output = outputs_[i];
    const at::Tensor& result = results[i];
    if (!output.defined() || storedInPlace(output, result)) {
      continue;
    }
    const bool could_be_in_place = sameLayout(output, result) && result.has_storage() &&
                                   result.storage().nbytes() == output.nbytes() &&
                                   result.const_data_ptr() == result.storage().data();
    plan_->ordinals[i] = could_be_in_place ? kernelAllocationOrdinal(result.const_data_ptr(), output.nbytes()) : 0;
  }
}

void HostResults::store(c10::ArrayRef<at::Tensor> results) {
  TORCH_INTERNAL_ASSERT(results.size() == outputs_.size(), "mydev: ", results.size(), " results for ",
                        outputs_.size(), " outputs");
  if (plan_ != nullptr && !withdrawn_) {
    learn(results);
  }
  withdraw();  // so that a result moved out below cannot take an offer
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
