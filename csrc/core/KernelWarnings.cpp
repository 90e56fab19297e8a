#include "KernelWarnings.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace torch_mydev {

namespace {

std::mutex g_mutex;
std::vector<c10::Warning> g_pending;
// Lets every operator call skip the mutex when no kernel has warned (the
// common case): checked on each call, set under the mutex.
std::atomic<bool> g_any_pending{false};

class CollectingHandler final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_pending.push_back(warning);
    g_any_pending.store(true, std::memory_order_release);
  }
};

CollectingHandler g_collecting_handler;

}  // namespace

KernelWarningCollector::KernelWarningCollector() : previous_(c10::WarningUtils::get_warning_handler()) {
  c10::WarningUtils::set_warning_handler(&g_collecting_handler);
}

KernelWarningCollector::~KernelWarningCollector() { c10::WarningUtils::set_warning_handler(previous_); }

void reissueKernelWarnings() {
  if (!g_any_pending.load(std::memory_order_acquire)) {
    return;
  }
  std::vector<c10::Warning> pending;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    pending.swap(g_pending);
    g_any_pending.store(false, std::memory_order_relaxed);
  }
  for (const c10::Warning& warning : pending) {
    c10::warn(warning);
  }
}

void RecordedWarnings::issue() const {
  for (const c10::Warning& warning : warnings_) {
    c10::warn(warning);
  }
}

std::vector<std::string> RecordedWarnings::messages() const {
  std::vector<std::string> messages;
  messages.reserve(warnings_.size());
  for (const c10::Warning& warning : warnings_) {
    messages.push_back(warning.msg());
  }
  return messages;
}

IssuedWarningsDropped::IssuedWarningsDropped(std::vector<std::string> issued)
    : issued_(std::move(issued)), next_(c10::WarningUtils::get_warning_handler()), installed_(!issued_.empty()) {
  if (installed_) {
    c10::WarningUtils::set_warning_handler(this);
  }
}

IssuedWarningsDropped::~IssuedWarningsDropped() {
  if (installed_) {
    c10::WarningUtils::set_warning_handler(next_);
  }
}

void IssuedWarningsDropped::process(const c10::Warning& warning) {
  auto match = std::find(issued_.begin(), issued_.end(), warning.msg());
  if (match != issued_.end()) {
    issued_.erase(match);
    return;
  }
  next_->process(warning);
}

}  // namespace torch_mydev
