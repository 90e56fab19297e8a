#include "SyncDebug.h"

#include <c10/util/Exception.h>

#include <atomic>

namespace torch_mydev {

namespace {

std::atomic<SyncDebugMode> g_mode{SyncDebugMode::Disabled};
thread_local bool t_unreported = false;

}  // namespace

void setSyncDebugMode(SyncDebugMode mode) { g_mode.store(mode, std::memory_order_relaxed); }

SyncDebugMode syncDebugMode() { return g_mode.load(std::memory_order_relaxed); }

UnreportedHostWaits::UnreportedHostWaits() : outer_(t_unreported) { t_unreported = true; }

UnreportedHostWaits::~UnreportedHostWaits() { t_unreported = outer_; }

void reportHostWait(const char* operation) {
  if (t_unreported) {
    return;
  }
  switch (g_mode.load(std::memory_order_relaxed)) {
    case SyncDebugMode::Disabled:
      return;
    case SyncDebugMode::Warn:
      TORCH_WARN("called a synchronizing mydev operation: ", operation);
      return;
    case SyncDebugMode::Error:
      TORCH_CHECK(false, "called a synchronizing mydev operation: ", operation);
  }
}

}  // namespace torch_mydev
