#include "FallbackPolicy.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace torch_mydev {

namespace {

std::atomic<FallbackPolicy>& policySlot() {
  static std::atomic<FallbackPolicy> policy{[] {
    const char* text = std::getenv("MYDEV_FALLBACK");
    return text == nullptr || *text == '\0' ? FallbackPolicy::Allow : parseFallbackPolicy(text, "MYDEV_FALLBACK");
  }()};
  return policy;
}

struct FallbackRecord {
  uint64_t calls = 0;
  bool warned = false;
};

std::mutex records_mutex;
std::unordered_map<std::string, FallbackRecord>& records() {
  static std::unordered_map<std::string, FallbackRecord> table;
  return table;
}

}  // namespace

FallbackPolicy parseFallbackPolicy(const std::string& text, const char* source) {
  if (text == "allow") {
    return FallbackPolicy::Allow;
  }
  if (text == "warn") {
    return FallbackPolicy::Warn;
  }
  if (text == "error") {
    return FallbackPolicy::Error;
  }
  TORCH_CHECK_VALUE(false, source, " must be one of 'allow', 'warn' or 'error', got '", text, "'");
}

const char* fallbackPolicyName(FallbackPolicy policy) {
  switch (policy) {
    case FallbackPolicy::Allow:
      return "allow";
    case FallbackPolicy::Warn:
      return "warn";
    case FallbackPolicy::Error:
      return "error";
  }
  return "allow";
}

FallbackPolicy fallbackPolicy() { return policySlot().load(std::memory_order_relaxed); }

void setFallbackPolicy(FallbackPolicy policy) { policySlot().store(policy, std::memory_order_relaxed); }

void admitFallback(const std::string& op_name) {
  const FallbackPolicy policy = fallbackPolicy();
  TORCH_CHECK_NOT_IMPLEMENTED(policy != FallbackPolicy::Error, op_name,
                              " has no native mydev kernel, and MYDEV_FALLBACK=error forbids running it through the "
                              "generic fallback (ATen's CPU kernel over device memory)");
  bool warn = false;
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    FallbackRecord& record = records()[op_name];
    ++record.calls;
    if (policy == FallbackPolicy::Warn && !record.warned) {
      record.warned = true;
      warn = true;
    }
  }
  if (warn) {
    TORCH_WARN(op_name, " has no native mydev kernel and runs through the generic fallback (ATen's CPU kernel over "
               "device memory). Set MYDEV_FALLBACK=allow to silence this warning.");
  }
}

std::vector<std::pair<std::string, uint64_t>> fallbackCounts() {
  std::lock_guard<std::mutex> lock(records_mutex);
  std::vector<std::pair<std::string, uint64_t>> counts;
  for (const auto& [name, record] : records()) {
    if (record.calls > 0) {
      counts.emplace_back(name, record.calls);
    }
  }
  return counts;
}

void resetFallbackCounts() {
  std::lock_guard<std::mutex> lock(records_mutex);
  for (auto& [name, record] : records()) {
    record.calls = 0;
  }
}

}  // namespace torch_mydev
