// On the stream worker: the fresh device outputs of a CPU function that
// allocates its own results (no out= form: oneDNN's convolution, flash
// attention, most of what the fallback runs). While a HostResults lives, each
// dense output's memory is offered to the function's allocations
// (offerKernelOutput), so a result usually lands in its own output; store()
// then copies only the results that did not.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

namespace torch_mydev {

class HostResults {
 public:
  // Undefined outputs (not requested) stay undefined; their results are ignored.
  explicit HostResults(c10::ArrayRef<at::Tensor> outputs);
  ~HostResults();
  HostResults(const HostResults&) = delete;
  HostResults& operator=(const HostResults&) = delete;

  // The function's results, in the outputs' order. A result that landed in
  // another output's memory, or in its own with another layout, is moved out
  // before any copy could overwrite it.
  void store(c10::ArrayRef<at::Tensor> results);

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
