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

#include <cstdint>

namespace torch_mydev {

// Since the process started: results stored in place, and results copied
// (of which `moved` had taken an output's memory and were moved out first).
struct HostResultCounts {
  uint64_t in_place = 0;
  uint64_t copied = 0;
  uint64_t moved = 0;
};
HostResultCounts hostResultCounts();

class HostResults {
 public:
  // Undefined outputs (not requested) stay undefined; their results are
  // ignored. `lend` (one flag per output; empty: every output) leaves out the
  // outputs a loan would not help: where the function computes a result in
  // another layout than the device output's, it would be moved out (a copy
  // more than without the loan); where it allocates scratch of the same size
  // first, the scratch takes the loan (oneDNN's convolution computes into a
  // blocked buffer, then reorders it into a dense result allocated last).
  explicit HostResults(c10::ArrayRef<at::Tensor> outputs, c10::ArrayRef<bool> lend = {});
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
  bool occupiesAnOffer(const at::Tensor& result) const;

  c10::SmallVector<at::Tensor, 3> outputs_;
  c10::SmallVector<Span, 3> offered_;
  bool withdrawn_ = false;
};

}  // namespace torch_mydev
