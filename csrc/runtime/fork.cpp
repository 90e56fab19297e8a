#include <pthread.h>

#include "internal.h"

namespace {

constexpr const char* kForkedChildMessage =
    "mydev: the runtime was initialised in the parent process and cannot be used in a forked child; use the 'spawn' "
    "start method";

// Set in the child only: the stream workers did not survive the fork, the
// runtime's locks may be held by threads that no longer exist, and the arenas
// are shared with the parent. Nothing in the runtime may be touched after that.
std::atomic<bool> g_forked_child{false};
// Only a device that was used (arena mapped, worker threads started) makes the
// child unusable: like CUDA, counting devices or reading the configuration in
// the parent does not.
std::atomic<bool> g_device_used{false};

void on_fork_child() {
  if (g_device_used.load(std::memory_order_relaxed)) g_forked_child.store(true, std::memory_order_relaxed);
}

}  // namespace

namespace mydev {

// Registered only once the runtime is initialised, so the child of a process
// that never used mydev can still initialise its own runtime.
void install_fork_handler() { pthread_atfork(nullptr, nullptr, on_fork_child); }

void note_device_used() { g_device_used.store(true, std::memory_order_relaxed); }

bool in_forked_child() { return g_forked_child.load(std::memory_order_relaxed); }

mydevError_t forked_child_error() { return set_static_error(mydevErrorForkedChild, kForkedChildMessage); }

}  // namespace mydev
