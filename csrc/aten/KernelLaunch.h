// Queues a C++ callable as a kernel on a mydev stream. The callable runs later
// on the stream's worker thread; an exception it throws fails the kernel, and
// the error surfaces at the next synchronizing call (naming the kernel), as a
// device-side error would on CUDA, with the Python exception class the kernel
// raised (KernelErrorKinds.h). Its warnings are issued again on the next
// host thread that uses the device (KernelWarnings.h). Captures must own
// everything they use: describe device tensors with DeviceTensorRef, never
// capture an at::Tensor of the device (its destructor could need the GIL on
// the worker).
#pragma once

#include "../core/Exception.h"
#include "../core/KernelErrorKinds.h"
#include "../core/KernelWarnings.h"
#include "../core/Stream.h"

#include <ATen/Context.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

namespace torch_mydev {

// Calls the runtime's host-wait callbacks (mydevSetHostWaitCallbacks) around
// a wait of the glue's own, the second one whatever ends the wait.
class HostWait {
 public:
  HostWait() {
    MYDEV_CHECK(mydevGetHostWaitCallbacks(&before_, &after_));
    if (before_ != nullptr) {
      before_();
    }
  }
  ~HostWait() {
    if (after_ != nullptr) {
      after_();
    }
  }
  HostWait(const HostWait&) = delete;
  HostWait& operator=(const HostWait&) = delete;

 private:
  mydevHostWaitCallback before_ = nullptr;
  mydevHostWaitCallback after_ = nullptr;
};

// A launch its caller watches: the caller waits for this kernel (and the
// stream's work before it), and whatever the kernel raises is handed to the
// caller, to raise at the call, instead of failing the kernel
// (DtypeSignatures.h).
class KernelWatch {
 public:
  KernelWatch() = default;
  KernelWatch(const KernelWatch&) = delete;
  KernelWatch& operator=(const KernelWatch&) = delete;

  // As the kernel is queued.
  void watchOn(mydevStream_t stream) { stream_ = stream; }

  // On the worker, once the kernel is over; the watch may be gone as soon as this returns.
  void finish(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::move(error);
    done_ = true;
    finished_.notify_all();
  }

  // Waits for the kernel; what it raised, if anything. A kernel the runtime
  // fails without running it (an injected fault) never finishes its watch:
  // once its stream has run out of work, the stream's failure is raised
  // instead (an earlier kernel's, if that came first). A failure reported
  // while the kernel may still run is raised only after it ran, as the
  // kernel finishes this watch, which lives on the caller's stack.
  std::exception_ptr wait() {
    std::exception_ptr stream_failure;
    std::unique_lock<std::mutex> lock(mutex_);
    // A wait of the glue's own, with the runtime's host-wait callbacks around it (PythonKernel.cpp).
    std::optional<HostWait> waiting;
    if (!done_) {
      waiting.emplace();
    }
    while (!finished_.wait_for(lock, std::chrono::milliseconds(20), [this] { return done_; })) {
      lock.unlock();
      const mydevError_t status = mydevStreamQuery(stream_);
      lock.lock();
      if (status == mydevErrorNotReady || done_) {
        continue;
      }
      if (status != mydevSuccess) {
        try {
          MYDEV_CHECK(status);
        } catch (const c10::Error&) {
          stream_failure = std::current_exception();
        }
        continue;  // the stream may still run this kernel
      }
      break;  // the stream ran dry without running this kernel
    }
    lock.unlock();
    waiting.reset();
    if (stream_failure) {
      std::rethrow_exception(stream_failure);
    }
    TORCH_CHECK(done_, "mydev: a kernel did not run: its stream's failure was reported to another caller");
    return error_;
  }

 private:
  mydevStream_t stream_ = nullptr;
  std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  std::exception_ptr error_;
};

namespace detail {

template <typename F>
struct KernelClosure {
  F body;
  bool grad_enabled;
  KernelWatch* watch;
};

// Fails the running kernel on its stream with what it raised.
inline void failKernel(const std::exception& e) {
  if (const auto* error = dynamic_cast<const c10::Error*>(&e)) {
    rememberKernelErrorKind(error->what_without_backtrace(), kernelErrorKindOf(*error));
    mydevKernelFail(error->what_without_backtrace());
  } else {
    mydevKernelFail(e.what());
  }
}

// A kernel runs as a backend kernel runs on the calling thread: below
// autograd, and in the caller's grad mode. ATen code that builds tensors
// inside a kernel (the CPU sparse kernels, among others) asserts that
// autograd is excluded from dispatch; CPU kernels that read whether an input
// may need a gradient (GradMode and requires_grad: linalg_pinv, svd, ...)
// must find what they would on the CPU, where a backward pass runs with grad
// mode off.
template <typename F>
void runKernelClosure(void* args) {
  KernelWarningCollector warnings;
  auto* closure = static_cast<KernelClosure<F>*>(args);
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  c10::AutoGradMode grad_mode(closure->grad_enabled);
  std::exception_ptr error;
  // The watch is finished however the kernel ends, a forced unwind included.
  struct FinishWatch {
    KernelWatch* watch;
    std::exception_ptr& error;
    ~FinishWatch() {
      if (watch != nullptr) {
        watch->finish(std::move(error));
      }
    }
  } finish_watch{closure->watch, error};
  try {
    closure->body();
  } catch (const std::exception& e) {
    if (closure->watch != nullptr) {
      error = std::current_exception();
    } else {
      failKernel(e);
    }
  }
}

template <typename F>
void destroyKernelClosure(void* args) {
  static_cast<KernelClosure<F>*>(args)->~KernelClosure<F>();
}

template <typename Make>
void queueKernelBuiltBy(const char* name, const MydevStream& stream, Make& make, KernelWatch* watch) {
  using Body = decltype(make());
  using Closure = KernelClosure<Body>;
  static_assert(alignof(Closure) <= 64, "the launch queue aligns kernel arguments to 64 bytes");
  struct Builder {
    Make& make;
    bool grad_enabled;
    KernelWatch* watch;
  } builder{make, c10::GradMode::is_enabled(), watch};
  if (watch != nullptr) {
    watch->watchOn(stream.handle());
  }
  const auto construct = [](void* context, void* args) -> int {
    auto* from = static_cast<Builder*>(context);
    new (args) Closure{from->make(), from->grad_enabled, from->watch};
    return 0;
  };
  MYDEV_CHECK(mydevLaunchKernelWithArgs(name, &runKernelClosure<Body>, sizeof(Closure), construct, &builder,
                                        &destroyKernelClosure<Body>, stream.handle()));
}

}  // namespace detail

// ATen's CPU kernels read torch.use_deterministic_algorithms' process-wide
// flag when they run, which for a queued kernel could be after the program
// changed it. While the flag is on, kernels therefore run before the launch
// returns (a kernel queued while it is off and run after it was turned on
// takes a deterministic path, which is a valid result).
//
// launchKernelBuiltBy takes a function returning the callable instead, and
// builds the callable where the launch keeps it, in the stream's launch queue
// (mydevLaunchKernelWithArgs): a native launch captures its arguments straight
// into the kernel's storage, with no move of them after and no allocation.
// `make` runs while the stream's launch queue is locked, so it must not use
// the stream (no launch, no synchronization). An exception it throws leaves
// the launch through the runtime, with nothing queued: catching it here
// instead cost ~0.07 us per launch (the closure was no longer built inline).
// A `watch`, if given, must be waited for before it goes.
template <typename Make>
void launchKernelBuiltBy(const char* name, const MydevStream& stream, Make make, KernelWatch* watch = nullptr) {
  detail::queueKernelBuiltBy(name, stream, make, watch);
  if (at::globalContext().deterministicAlgorithms()) {
    stream.synchronize();
  }
}

// For a kernel that reads no ATen setting while it runs (mccl's operations,
// which wait for their peers: run before the launch returns, two ranks that
// both send first would wait for each other).
template <typename F>
void launchKernelReadingNoSettings(const char* name, const MydevStream& stream, F&& body) {
  auto make = [&]() -> std::decay_t<F> { return std::forward<F>(body); };
  detail::queueKernelBuiltBy(name, stream, make, nullptr);
}

template <typename F>
void launchKernel(const char* name, const MydevStream& stream, F&& body, KernelWatch* watch = nullptr) {
  launchKernelBuiltBy(name, stream, [&]() -> std::decay_t<F> { return std::forward<F>(body); }, watch);
}

}  // namespace torch_mydev
