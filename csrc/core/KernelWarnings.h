// Warnings (TORCH_WARN) raised by kernels on stream workers. A worker thread
// has no Python warning handler, so c10 would print them to stderr and Python
// code could neither see nor filter them. Kernels collect them instead, and
// the next host thread that calls into the device (an operator or a
// synchronization) issues them again, where PyTorch turns them into Python
// warnings as it does for CPU operators.
#pragma once

#include <c10/util/Exception.h>

namespace torch_mydev {

// Collects the warnings of the current thread while alive (used around the
// body of a kernel on a stream worker).
class KernelWarningCollector {
 public:
  KernelWarningCollector();
  ~KernelWarningCollector();
  KernelWarningCollector(const KernelWarningCollector&) = delete;
  KernelWarningCollector& operator=(const KernelWarningCollector&) = delete;

 private:
  c10::WarningHandler* previous_;
};

// Issues every collected warning on the calling thread, oldest first.
void reissueKernelWarnings();

}  // namespace torch_mydev
