// Declarations shared by the runtime's translation units. Nothing here is part
// of the public contract (include/mydev/runtime.h).
#pragma once

#include <mydev/runtime.h>

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arena.h"
#include "stream.h"

namespace mydev {

constexpr int kMaxDevices = 16;
constexpr int kDefaultDeviceCount = 2;
constexpr size_t kDefaultDeviceMemory = size_t(4) << 30;

// ---- configuration (config.cpp) ---------------------------------------------
struct Config {
  int device_count = kDefaultDeviceCount;
  size_t device_memory = kDefaultDeviceMemory;
  bool launch_blocking = false;
};

// Each parser treats NULL or "" as "unset" (the default) and, on a bad value,
// returns false with a message naming the environment variable.
bool parse_device_count(const char* text, int* count, std::string* error);
bool parse_device_memory(const char* text, size_t* bytes, std::string* error);
bool parse_launch_blocking(const char* text, bool* enabled, std::string* error);
// Reads MYDEV_DEVICE_COUNT, MYDEV_DEVICE_MEMORY and MYDEV_LAUNCH_BLOCKING.
bool load_config(Config* config, std::string* error);

// ---- errors (errors.cpp) -----------------------------------------------------
// Stores the thread's last error message and returns `code`.
mydevError_t set_error(mydevError_t code, const char* format, ...) __attribute__((format(printf, 2, 3)));
// Same, for a message with static storage: allocates nothing.
mydevError_t set_static_error(mydevError_t code, const char* message);
// "512.00 MiB", "1.00 GiB", "300 bytes".
std::string format_bytes(size_t bytes);

// ---- global state (init.cpp, device.cpp) -------------------------------------
struct Device {
  explicit Device(int index) : index(index) {}
  const int index;
  std::mutex init_mutex;
  std::atomic<bool> ready{false};  // arena mapped and default stream running
  std::unique_ptr<Arena> arena;
  std::shared_ptr<mydevStream> default_stream;
  std::mutex streams_mutex;
  std::vector<std::shared_ptr<mydevStream>> streams;  // live streams, default included
  // The latest destroyed streams, kept: a handle used just after its stream
  // was destroyed (by a thread racing the destroying one) then finds a
  // stream that is not live and gets an error, not freed memory. Each keeps
  // its launch queue, names and argument ring (up to ~720 KiB), so only the
  // last kKeptDestroyedStreams are kept.
  static constexpr size_t kKeptDestroyedStreams = 8;
  std::deque<std::shared_ptr<mydevStream>> destroyed_streams;
};

struct Runtime {
  Config config;
  std::vector<std::unique_ptr<Device>> devices;
};

// Every API entry point starts here: refuses a forked child, then initialises
// the runtime once. `api` names the caller in error messages.
mydevError_t enter(const char* api);
Runtime& runtime();  // only after enter() succeeded
inline const Config& config() { return runtime().config; }
inline Device& device(int index) { return *runtime().devices[index]; }

int current_device();
mydevError_t check_device(const char* api, int index);
// Maps the device's arena and starts its default stream on first use.
mydevError_t ensure_device_ready(const char* api, int index);
// Waits until every stream of the device has drained what was queued so far.
void wait_device_idle(Device& device);
// Reports (and clears) one pending kernel error of the device's streams.
mydevError_t take_device_error(Device& device);

// ---- streams (stream.cpp) ---------------------------------------------------
// NULL means the current device's default stream.
mydevError_t resolve_stream(const char* api, mydevStream_t handle, mydevStream** stream);
// Returns mydevErrorLaunchFailure if a kernel queued at or before `seq` failed
// (or one whose results the stream waited for), unless a copy of that failure
// was reported already.
mydevError_t take_stream_error(mydevStream& stream, uint64_t seq);
// Adds a stream to its device's list so that device-wide waits see it.
void register_stream(const std::shared_ptr<mydevStream>& stream);

// ---- kernels (kernel.cpp) ----------------------------------------------------
// Runs fn(args) as a kernel of `device`; false (with the failure message) if it
// called mydevKernelFail or threw.
bool run_kernel(int device, const char* name, mydevKernelFn fn, void* args, std::string* failure);

// ---- activity tracing (activity.cpp) -----------------------------------------
// Whether launches are recorded now (mydevActivityEnable).
bool activity_recording();
// Marks `task` as recorded, with the calling thread's correlation id.
void tag_activity(Task* task, mydevActivityKind kind);
// The clock of activity records: the system clock, in ns since the epoch.
int64_t activity_clock_ns();
// The system id of the calling thread (gettid), as host profilers name threads.
uint64_t activity_thread_id();
// Keeps the record of a recorded task that ran from start_ns to end_ns,
// queued at launch_ns by thread launch_thread.
void record_activity(const Task& task, const char* name, int device, uint64_t stream_id, int64_t start_ns,
                     int64_t end_ns, int64_t launch_ns, uint64_t launch_thread);

// ---- injected faults (injected_faults.cpp) -----------------------------------
// Counts a launch of kernel `name` against the installed kernel faults and
// marks `task` with the one that fires, if any. Cheap when none is installed.
void tag_injected_fault(Task* task, const char* name);
// Counts a device allocation; true if an injected fault fails it.
bool allocation_fault_fires();
// On a stream worker: waits until fault `id` is removed.
void hang_until_removed(uint32_t id);
// Installs the faults MYDEV_INJECT_FAULT lists; false with a message if it is malformed.
bool install_faults_from_environment(std::string* error);

// ---- process-wide hooks (fault_handler.cpp, fork.cpp) ------------------------
void install_fault_handler();
void install_fork_handler();
bool in_forked_child();
// Called when a device is first used; from then on a forked child is refused.
void note_device_used();
mydevError_t forked_child_error();

}  // namespace mydev
