#include "internal.h"

namespace mydev {
namespace {

std::once_flag g_init_once;
// Both are leaked on purpose: stream workers keep running while static
// destructors run at exit, and must not find the runtime gone.
Runtime* g_runtime = nullptr;
const std::string* g_init_error = nullptr;
// Set once initialisation has run, whatever its outcome. Every API call checks
// it first: std::call_once itself costs a call and four thread-local accesses
// (libstdc++ passes the callable through TLS), ~0.03 us per kernel launch.
std::atomic<bool> g_initialized{false};

void initialize() {
  Config loaded;
  std::string error;
  if (!load_config(&loaded, &error) || !install_faults_from_environment(&error)) {
    g_init_error = new std::string(error);
    return;
  }
  auto* created = new Runtime;
  created->config = loaded;
  for (int index = 0; index < loaded.device_count; ++index) created->devices.emplace_back(new Device(index));
  install_fault_handler();
  install_fork_handler();
  g_runtime = created;
}

void initialize_once() {
  initialize();
  g_initialized.store(true, std::memory_order_release);
}

}  // namespace

mydevError_t enter(const char* api) {
  if (in_forked_child()) return forked_child_error();
  if (!g_initialized.load(std::memory_order_acquire)) std::call_once(g_init_once, initialize_once);
  if (g_init_error != nullptr) return set_error(mydevErrorInitialization, "%s: %s", api, g_init_error->c_str());
  return mydevSuccess;
}

Runtime& runtime() { return *g_runtime; }

}  // namespace mydev
