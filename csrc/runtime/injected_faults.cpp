// Faults injected on purpose (mydevInjectFault, MYDEV_INJECT_FAULT), so that a
// backend can test its error paths: a kernel that fails, a kernel that never
// finishes, a device that runs out of memory. Launches are counted on the
// launching thread, in launch order, so "the nth launch" is deterministic.
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <string>

#include "internal.h"

namespace mydev {
namespace {

struct Fault {
  int id;
  mydevFaultKind kind;
  std::string name;
  int remaining;  // launches or allocations to let pass before it fires
  bool fired;     // a kernel fault fires once; an out-of-memory fault stays
};

std::mutex g_mutex;
std::condition_variable g_removed;
std::vector<Fault> g_faults;  // guarded by g_mutex
std::atomic<int> g_installed{0};
int g_next_id = 1;

bool name_matches(const std::string& pattern, const char* name) {
  const size_t length = pattern.size();
  return strncmp(name, pattern.c_str(), length) == 0 && (name[length] == '\0' || name[length] == '.');
}

int install(mydevFaultKind kind, std::string name, int nth) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const int id = g_next_id++;
  g_faults.push_back(Fault{id, kind, std::move(name), nth - 1, false});
  g_installed.fetch_add(1, std::memory_order_relaxed);
  return id;
}

bool all_digits(const std::string& text) { return text.find_first_not_of("0123456789") == std::string::npos; }

// A count from 1 to 10^9 (strtol saturates longer digit strings beyond it).
bool parse_count(const std::string& digits, int* nth) {
  if (digits.empty() || !all_digits(digits)) return false;
  const long value = strtol(digits.c_str(), nullptr, 10);
  if (value < 1 || value > 1000000000) return false;
  *nth = static_cast<int>(value);
  return true;
}

// "<name>[:<nth>]": the count is the digits after the last ':' (names contain "::").
bool split_count(const std::string& spec, std::string* name, int* nth) {
  const size_t colon = spec.rfind(':');
  *name = spec;
  *nth = 1;
  if (colon == std::string::npos || colon + 1 == spec.size()) return !spec.empty();
  const std::string digits = spec.substr(colon + 1);
  if (!all_digits(digits)) return true;
  if (colon == 0 || spec[colon - 1] == ':') return false;
  if (!parse_count(digits, nth)) return false;
  *name = spec.substr(0, colon);
  return !name->empty();
}

bool parse_spec(const std::string& spec, mydevFaultKind* kind, std::string* name, int* nth) {
  if (spec == "oom" || spec.rfind("oom:", 0) == 0) {
    *kind = mydevFaultOutOfMemory;
    *name = "";
    *nth = 1;
    return spec.size() == 3 || parse_count(spec.substr(4), nth);
  }
  if (spec.rfind("hang:", 0) == 0) {
    *kind = mydevFaultKernelHang;
    return split_count(spec.substr(5), name, nth);
  }
  *kind = mydevFaultKernelFailure;
  return split_count(spec, name, nth);
}

}  // namespace

void tag_injected_fault(Task* task, const char* name) {
  if (g_installed.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Fault& fault : g_faults) {
    if (fault.kind == mydevFaultOutOfMemory || fault.fired || !name_matches(fault.name, name)) continue;
    if (fault.remaining > 0) {
      --fault.remaining;
      continue;
    }
    fault.fired = true;
    task->fault_kind = static_cast<uint8_t>(fault.kind);
    task->fault_id = static_cast<uint32_t>(fault.id);
    return;
  }
}

bool allocation_fault_fires() {
  if (g_installed.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Fault& fault : g_faults) {
    if (fault.kind != mydevFaultOutOfMemory) continue;
    if (fault.remaining > 0) {
      --fault.remaining;
      continue;
    }
    return true;
  }
  return false;
}

void hang_until_removed(uint32_t id) {
  std::unique_lock<std::mutex> lock(g_mutex);
  g_removed.wait(lock, [id] {
    for (const Fault& fault : g_faults) {
      if (fault.id == static_cast<int>(id)) return false;
    }
    return true;
  });
}

bool install_faults_from_environment(std::string* error) {
  const char* text = getenv("MYDEV_INJECT_FAULT");
  if (text == nullptr || *text == '\0') return true;
  const std::string specs = text;
  size_t begin = 0;
  while (begin <= specs.size()) {
    size_t end = specs.find(',', begin);
    if (end == std::string::npos) end = specs.size();
    const std::string spec = specs.substr(begin, end - begin);
    mydevFaultKind kind;
    std::string name;
    int nth;
    if (!parse_spec(spec, &kind, &name, &nth)) {
      *error = "invalid MYDEV_INJECT_FAULT='" + specs + "': '" + spec +
               "' is not <kernel>[:<nth>], hang:<kernel>[:<nth>] or oom[:<nth>]";
      return false;
    }
    install(kind, name, nth);
    begin = end + 1;
  }
  return true;
}

}  // namespace mydev

using namespace mydev;

extern "C" {

mydevError_t mydevInjectFault(mydevFaultKind kind, const char* name, int nth, int* id) {
  const char* api = "mydevInjectFault";
  if (mydevError_t error = enter(api)) return error;
  if (id == nullptr) return set_error(mydevErrorInvalidValue, "%s: id is NULL", api);
  if (kind != mydevFaultKernelFailure && kind != mydevFaultKernelHang && kind != mydevFaultOutOfMemory) {
    return set_error(mydevErrorInvalidValue, "%s: unknown fault kind %d", api, static_cast<int>(kind));
  }
  if (kind != mydevFaultOutOfMemory && (name == nullptr || *name == '\0')) {
    return set_error(mydevErrorInvalidValue, "%s: a kernel fault needs the kernel's name", api);
  }
  if (nth < 1) return set_error(mydevErrorInvalidValue, "%s: nth must be at least 1, got %d", api, nth);
  *id = install(kind, kind == mydevFaultOutOfMemory ? "" : name, nth);
  return mydevSuccess;
}

mydevError_t mydevRemoveFault(int id) {
  const char* api = "mydevRemoveFault";
  if (mydevError_t error = enter(api)) return error;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_faults.begin(); it != g_faults.end(); ++it) {
    if (it->id != id) continue;
    g_faults.erase(it);
    g_installed.fetch_sub(1, std::memory_order_relaxed);
    g_removed.notify_all();
    return mydevSuccess;
  }
  return set_error(mydevErrorInvalidValue, "%s: no injected fault has id %d", api, id);
}

}  // extern "C"
