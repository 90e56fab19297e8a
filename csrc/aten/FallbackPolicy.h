// What happens when an operator has no native mydev kernel and reaches the
// generic fallback: counted always, and then allowed silently, warned about
// once per operator, or refused, as MYDEV_FALLBACK (allow|warn|error) or
// torch_mydev.ops.set_fallback_policy says. `error` lets CI prove that a
// workload runs on native kernels only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torch_mydev {

enum class FallbackPolicy { Allow, Warn, Error };

FallbackPolicy fallbackPolicy();
void setFallbackPolicy(FallbackPolicy policy);
// Parses "allow", "warn" or "error"; throws a clear error for anything else.
FallbackPolicy parseFallbackPolicy(const std::string& text, const char* source);
const char* fallbackPolicyName(FallbackPolicy policy);

// Counts one call of `op_name` through the fallback and applies the policy:
// throws NotImplementedError under `error`, warns on the first call under `warn`.
void admitFallback(const std::string& op_name);

// How often each operator went through the fallback since the last reset.
std::vector<std::pair<std::string, uint64_t>> fallbackCounts();
void resetFallbackCounts();

}  // namespace torch_mydev
