#include "internal.h"

namespace mydev {
namespace {

std::once_flag g_init_once;
// Both are leaked on purpose: stream workers keep running while static
// destructors run at exit, and must not find the runtime gone.
Runtime* g_runtime = nullptr;
const std::string* g_init_error = nullptr;

void initialize() {
  Config loaded;
  std::string error;
  if (!load_config(&loaded, &error)) {
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

}  // namespace

mydevError_t enter(const char* api) {
  if (in_forked_child()) return forked_child_error();
  std::call_once(g_init_once, initialize);
  if (g_init_error != nullptr) return set_error(mydevErrorInitialization, "%s: %s", api, g_init_error->c_str());
  return mydevSuccess;
}

Runtime& runtime() { return *g_runtime; }

}  // namespace mydev
