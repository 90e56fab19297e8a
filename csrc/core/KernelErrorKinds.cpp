#include "KernelErrorKinds.h"

#include <deque>
#include <mutex>
#include <utility>

namespace torch_mydev {

namespace {

// Streams keep one pending failure each, so a handful of entries suffices;
// the bound keeps failures that are never reported from piling up.
constexpr size_t kRemembered = 64;

std::mutex g_mutex;
std::deque<std::pair<std::string, KernelErrorKind>> g_kinds;

}  // namespace

KernelErrorKind kernelErrorKindOf(const c10::Error& error) {
  if (dynamic_cast<const c10::NotImplementedError*>(&error) != nullptr) {
    return KernelErrorKind::NotImplemented;
  }
  if (dynamic_cast<const c10::ValueError*>(&error) != nullptr) {
    return KernelErrorKind::Value;
  }
  if (dynamic_cast<const c10::TypeError*>(&error) != nullptr) {
    return KernelErrorKind::Type;
  }
  if (dynamic_cast<const c10::IndexError*>(&error) != nullptr) {
    return KernelErrorKind::Index;
  }
  if (dynamic_cast<const c10::LinAlgError*>(&error) != nullptr) {
    return KernelErrorKind::LinAlg;
  }
  return KernelErrorKind::Generic;
}

void rememberKernelErrorKind(const std::string& message, KernelErrorKind kind) {
  if (kind == KernelErrorKind::Generic || message.empty()) {
    return;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_kinds.size() == kRemembered) {
    g_kinds.pop_front();
  }
  g_kinds.emplace_back(message, kind);
}

KernelErrorKind takeKernelErrorKind(const std::string& runtime_message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_kinds.begin(); it != g_kinds.end(); ++it) {
    if (runtime_message.find(it->first) != std::string::npos) {
      const KernelErrorKind kind = it->second;
      g_kinds.erase(it);
      return kind;
    }
  }
  return KernelErrorKind::Generic;
}

}  // namespace torch_mydev
