#include "KernelWarnings.h"

#include <mutex>
#include <utility>
#include <vector>

namespace torch_mydev {

namespace {

std::mutex g_mutex;
std::vector<c10::Warning> g_pending;

class CollectingHandler final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_pending.push_back(warning);
  }
};

CollectingHandler g_collecting_handler;

}  // namespace

KernelWarningCollector::KernelWarningCollector() : previous_(c10::WarningUtils::get_warning_handler()) {
  c10::WarningUtils::set_warning_handler(&g_collecting_handler);
}

KernelWarningCollector::~KernelWarningCollector() { c10::WarningUtils::set_warning_handler(previous_); }

void reissueKernelWarnings() {
  std::vector<c10::Warning> pending;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_pending.empty()) {
      return;
    }
    pending.swap(g_pending);
  }
  for (const c10::Warning& warning : pending) {
    c10::warn(warning);
  }
}

}  // namespace torch_mydev
