// Warnings (TORCH_WARN) raised by kernels on stream workers. A worker thread
// has no Python warning handler, so c10 would print them to stderr and Python
// code could neither see nor filter them. Kernels collect them instead, and
// the next host thread that calls into the device (an operator or a
// synchronization) issues them again, where PyTorch turns them into Python
// warnings as it does for CPU operators.
#pragma once

#include <c10/util/Exception.h>

#include <string>
#include <vector>

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

// A kernel's host half often raises the warnings its CPU kernel raises again
// on the worker (ATen's CPU functions validate and warn before they compute:
// uint8 indices are deprecated, ...). The host half records its warnings, to
// issue them at the call, and the kernel drops its copies of them.
class RecordedWarnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override { warnings_.push_back(warning); }
  // Issues the recorded warnings through the calling thread's handler.
  void issue() const;
  std::vector<std::string> messages() const;

 private:
  std::vector<c10::Warning> warnings_;
};

// On the worker, while alive: passes on every warning but one copy of each
// message in `issued` (installed only when there is something to drop).
class IssuedWarningsDropped final : public c10::WarningHandler {
 public:
  explicit IssuedWarningsDropped(std::vector<std::string> issued);
  ~IssuedWarningsDropped() override;
  IssuedWarningsDropped(const IssuedWarningsDropped&) = delete;
  IssuedWarningsDropped& operator=(const IssuedWarningsDropped&) = delete;
  void process(const c10::Warning& warning) override;

 private:
  std::vector<std::string> issued_;
  c10::WarningHandler* next_;
  bool installed_;
};

}  // namespace torch_mydev
