#include <cxxabi.h>

#include <exception>

#include "internal.h"

namespace {

// Set on a stream worker while it runs a kernel: what mydevKernelFail and
// mydevKernelMapPointer need to know about the caller.
struct KernelContext {
  int device;
  const char* name;
  bool failed;
  std::string message;
};
thread_local KernelContext* t_kernel = nullptr;

void fail_running_kernel(const char* message) {
  if (t_kernel == nullptr || t_kernel->failed) return;
  t_kernel->failed = true;
  t_kernel->message = message != nullptr ? message : "(no message)";
}

// What a kernel launch's task records besides the kernel: its activity record
// while a profiler records, the fault injected into it.
mydev::Task launch_tags(const char* name) {
  mydev::Task tags;
  if (mydev::activity_recording()) mydev::tag_activity(&tags, mydevActivityKernel);
  mydev::tag_injected_fault(&tags, name);
  return tags;
}

// Ends a launch: in MYDEV_LAUNCH_BLOCKING mode it waits for the kernel and
// reports its failure, as CUDA_LAUNCH_BLOCKING does.
mydevError_t finish_launch(mydevStream& stream, uint64_t seq) {
  if (!mydev::config().launch_blocking) return mydevSuccess;
  stream.wait(seq);
  return mydev::take_stream_error(stream, seq);
}

}  // namespace

namespace mydev {

bool run_kernel(int device, const char* name, mydevKernelFn fn, void* args, std::string* failure) {
  KernelContext context{device, name, false, {}};
  t_kernel = &context;
  try {
    fn(args);
  } catch (const abi::__forced_unwind&) {
    // The thread is being ended (pthread_exit: CPython does it to a thread that waits for the GIL while the
    // interpreter finalizes): the unwinding must go on, or the process aborts.
    t_kernel = nullptr;
    throw;
  } catch (const std::exception& e) {
    fail_running_kernel(e.what());
  } catch (...) {
    fail_running_kernel("unknown C++ exception");
  }
  t_kernel = nullptr;
  if (!context.failed) return true;
  *failure = std::move(context.message);
  return false;
}

}  // namespace mydev

using namespace mydev;

extern "C" {

mydevError_t mydevLaunchKernel(const char* name, mydevKernelFn fn, void* args, mydevReleaseFn release,
                               mydevStream_t handle) {
  const char* api = "mydevLaunchKernel";
  mydevError_t error = enter(api);
  mydevStream* stream = nullptr;
  if (error == mydevSuccess && fn == nullptr) {
    error = set_error(mydevErrorInvalidValue, "%s: kernel '%s' has no function", api, name != nullptr ? name : "");
  }
  if (error == mydevSuccess) error = resolve_stream(api, handle, &stream);
  if (error != mydevSuccess) {
    if (release != nullptr) release(args);
    return error;
  }
  const char* label = name != nullptr ? name : "<unnamed>";
  Task task = launch_tags(label);
  task.fn = fn;
  task.args = args;
  task.release = release;
  return finish_launch(*stream, stream->submit(std::move(task), label));
}

mydevError_t mydevLaunchKernelWithArgs(const char* name, mydevKernelFn fn, size_t args_size,
                                       mydevArgsConstructFn construct, void* context, mydevReleaseFn release,
                                       mydevStream_t handle) {
  const char* api = "mydevLaunchKernelWithArgs";
  mydevError_t error = enter(api);
  mydevStream* stream = nullptr;
  if (error == mydevSuccess && (fn == nullptr || construct == nullptr)) {
    error = set_error(mydevErrorInvalidValue, "%s: kernel '%s' has no %s", api, name != nullptr ? name : "",
                      fn == nullptr ? "function" : "argument constructor");
  }
  if (error == mydevSuccess) error = resolve_stream(api, handle, &stream);
  if (error != mydevSuccess) return error;
  const char* label = name != nullptr ? name : "<unnamed>";
  const uint64_t seq = stream->submit_kernel(label, fn, args_size, construct, context, release, launch_tags(label));
  if (seq == 0) {
    return set_error(mydevErrorInvalidValue, "%s: kernel '%s': its argument constructor failed; nothing was queued",
                     api, label);
  }
  return finish_launch(*stream, seq);
}

void mydevKernelFail(const char* message) { fail_running_kernel(message); }

mydevError_t mydevKernelMapPointer(const void* dev_ptr, void** kernel_ptr) {
  const char* api = "mydevKernelMapPointer";
  if (mydevError_t error = enter(api)) return error;
  if (kernel_ptr == nullptr) return set_error(mydevErrorInvalidValue, "%s: kernel_ptr is NULL", api);
  if (t_kernel == nullptr) {
    return set_error(mydevErrorNotPermitted,
                     "%s: device memory can only be mapped by a running kernel (pointer %p, current device mydev:%d)",
                     api, dev_ptr, current_device());
  }
  size_t offset;
  const int device = find_device_of(dev_ptr, &offset);
  if (device < 0) {
    return set_error(mydevErrorInvalidDevicePointer, "%s: %p is not mydev device memory (kernel '%s' on mydev:%d)", api,
                     dev_ptr, t_kernel->name, t_kernel->device);
  }
  *kernel_ptr = host_address(device, offset);
  return mydevSuccess;
}

int mydevInKernel(void) { return t_kernel != nullptr ? 1 : 0; }

}  // extern "C"
