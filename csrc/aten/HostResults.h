// On the stream worker: the fresh device outputs of a CPU function that
// allocates its own results (no out= form: flash attention, the
// normalizations' backward, most of what the fallback runs). While a HostResults lives, each
// dense output's memory is offered to the function's allocations
// (offerKernelOutput), so a result usually lands in its own output; store()
// then copies only the results that did not.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace torch_mydev {

// Since the process started: results stored in place, and results copied
// (of which `moved` had taken an output's memory and were moved out first).
struct HostResultCounts {
  uint64_t in_place = 0;
  uint64_t copied = 0;
  uint64_t moved = 0;
};
HostResultCounts hostResultCounts();

// Which of a CPU function's allocations of each output's size becomes its
// result, for one set of arguments. oneDNN's convolution, for one, first
// allocates a reorder of its input and a blocked result, both often of the
// output's size, then the dense result: the third allocation of that size for
// a 64-to-64-channel layer, the second for others.
struct LoanPlan {
  // Per output: the allocation of its size it is offered to (1: the first),
  // 0: not offered. Empty until the first call.
  c10::SmallVector<int, 3> ordinals;
};

// Plans by a key the kernel computes from whatever decides its function's
// allocations (sizes, strides, dtypes, options). A kernel keeps one per
// worker thread, so no lock is taken.
class LoanPlans {
 public:
  LoanPlan& forKey(size_t key);

 private:
  std::unordered_map<size_t, LoanPlan> plans_;
};

class HostResults {
 public:
  // Undefined outputs (not requested) stay undefined; their results are
  // ignored. Each output is offered to the first allocation of its size (the
  // second output of a size to the second, and so on). `lend` (one flag per
  // output; empty: every output) leaves out the outputs a loan would not
  // help: where the function computes a result in another layout than the
  // device output's, it would be moved out (a copy more than without the loan).
  explicit HostResults(c10::ArrayRef<at::Tensor> outputs, c10::ArrayRef<bool> lend = {});
  // Offers each output to the allocation `plan` names, and at store() learns
  // which allocation became the result, for the next call with the same plan:
  // for functions that allocate scratch of an output's size before the result.
  HostResults(c10::ArrayRef<at::Tensor> outputs, LoanPlan& plan);
  ~HostResults();
  HostResults(const HostResults&) = delete;
  HostResults& operator=(const HostResults&) = delete;

  // The function's results, in the outputs' order. A result that landed in
  // another output's memory, or in its own with another layout, is moved out
  // before any copy could overwrite it.
  void store(c10::ArrayRef<at::Tensor> results);
  // Ends the offers before store(), for allocations the kernel makes in between.
  void withdraw();

 private:
  struct Span {
    const char* begin;
    const char* end;
  };
  c10::SmallVector<int, 3> firstOfEachSize(c10::ArrayRef<bool> lend) const;
  void offer(c10::ArrayRef<int> ordinals);
  bool occupiesAnOffer(const at::Tensor& result) const;
  void learn(c10::ArrayRef<at::Tensor> results);

  c10::SmallVector<at::Tensor, 3> outputs_;
  c10::SmallVector<Span, 3> offered_;
  LoanPlan* plan_ = nullptr;
  bool withdrawn_ = false;
};

}  // namespace torch_mydev
