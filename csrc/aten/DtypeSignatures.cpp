#include "DtypeSignatures.h"

#include <c10/util/Exception.h>
#include <c10/util/hash.h>

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace torch_mydev::detail {

namespace {

struct Key {
  const void* kernel;
  c10::SmallVector<int64_t, 8> parts;

  bool operator==(const Key& other) const { return kernel == other.kernel && parts == other.parts; }
};

struct KeyHash {
  size_t operator()(const Key& key) const {
    size_t hash = std::hash<const void*>()(key.kernel);
    for (const int64_t part : key.parts) {
      hash = c10::hash_combine(hash, std::hash<int64_t>()(part));
    }
    return hash;
  }
};

struct Registry {
  std::shared_mutex mutex;
  // nullopt: the kernel ran; a message: it had no code for these dtypes.
  std::unordered_map<Key, std::optional<std::string>, KeyHash> signatures;
};

Registry& registry() {
  static Registry* instance = new Registry();
  return *instance;
}

Key keyOf(const LaunchSignature& signature) { return Key{signature.kernel(), signature.parts()}; }

}  // namespace

SignatureState lookUpSignature(const LaunchSignature& signature, std::string* message) {
  Registry& known = registry();
  std::shared_lock<std::shared_mutex> lock(known.mutex);
  const auto found = known.signatures.find(keyOf(signature));
  if (found == known.signatures.end()) {
    return SignatureState::Unknown;
  }
  if (!found->second) {
    return SignatureState::Runs;
  }
  *message = *found->second;
  return SignatureState::LacksKernel;
}

void rememberSignature(const LaunchSignature& signature, const std::optional<std::string>& missing_kernel) {
  Registry& known = registry();
  std::unique_lock<std::shared_mutex> lock(known.mutex);
  known.signatures.insert_or_assign(keyOf(signature), missing_kernel);
}

namespace {
thread_local uint64_t errors_raised_by_first_launches = 0;
}  // namespace

void countErrorRaisedByFirstLaunch() { ++errors_raised_by_first_launches; }

}  // namespace torch_mydev::detail

namespace torch_mydev {

uint64_t errorsRaisedByFirstLaunches() { return detail::errors_raised_by_first_launches; }

}  // namespace torch_mydev
