// The calling-thread half of a native kernel. Construction checks that the
// tensor arguments share one mydev device (CPU 0-dim scalars allowed, as on
// CUDA), makes that device current and picks its current stream; launch()
// then queues the kernel body on that stream, to run later on the stream's
// worker over CPU aliases of device memory (KernelArguments.h).
//
// Warnings raised on the calling thread between construction and launch (by
// the operator's meta function or checks) are the call's warnings: they are
// issued at launch (or when the call fails), and the kernel body drops its
// own copies of them, which ATen's CPU function raises again as it validates.
#pragma once

#include "KernelArguments.h"

#include "../aten/KernelLaunch.h"
#include "../aten/DtypeSignatures.h"
#include "../aten/HostResults.h"
#include "../aten/OperatorDevice.h"
#include "../core/Device.h"
#include "../core/KernelWarnings.h"
#include "../core/Stream.h"

#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace torch_mydev::native {

namespace detail {

// Visits every tensor an argument holds, with whether a CPU tensor is accepted
// there whatever its size (index lists, Tensor?[] in schemas, may hold CPU
// tensors, as on CUDA).
template <typename Visit>
void forEachTensorIn(const at::Tensor& tensor, Visit&& visit) {
  visit(tensor, false);
}

template <typename Visit>
void forEachTensorIn(const std::optional<at::Tensor>& tensor, Visit&& visit) {
  if (tensor.has_value()) {
    visit(*tensor, false);
  }
}

template <typename Visit>
void forEachTensorIn(at::TensorList tensors, Visit&& visit) {
  for (const at::Tensor& tensor : tensors) {
    visit(tensor, false);
  }
}

template <typename Visit>
void forEachTensorIn(const std::vector<at::Tensor>& tensors, Visit&& visit) {
  forEachTensorIn(at::TensorList(tensors), visit);
}

template <typename Visit>
void forEachTensorIn(const at::ITensorListRef& tensors, Visit&& visit) {
  for (const at::Tensor& tensor : tensors) {
    visit(tensor, false);
  }
}

template <typename Visit>
void forEachTensorIn(const c10::List<std::optional<at::Tensor>>& tensors, Visit&& visit) {
  for (const std::optional<at::Tensor>& tensor : tensors) {
    if (tensor.has_value()) {
      visit(*tensor, true);
    }
  }
}

template <typename T, typename Visit>
void forEachTensorIn(const T&, Visit&&) {}

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <>
struct IsOptional<at::OptionalIntArrayRef> : std::true_type {};

// Adds to a launch's signature what an argument tells about the CPU code its
// kernel runs (DtypeSignatures.h): a tensor's dtype and rank, a choice's value.
template <typename T>
void addToSignature(LaunchSignature& signature, const T& argument) {
  if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    signature.addChoice(static_cast<int64_t>(argument));
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    signature.addChoice(argument);
  } else if constexpr (std::is_same_v<T, at::Scalar>) {
    signature.add(argument);
  } else if constexpr (std::is_same_v<T, at::ArrayRef<at::Scalar>>) {
    signature.addChoice(static_cast<int64_t>(argument.size()));
    for (const at::Scalar& scalar : argument) {
      signature.add(scalar);
    }
  } else if constexpr (std::is_same_v<T, at::IntArrayRef> || std::is_same_v<T, std::vector<int64_t>>) {
    signature.addChoices(argument);
  } else if constexpr (IsOptional<T>::value) {
    if (argument.has_value()) {
      addToSignature(signature, *argument);
    } else {
      signature.addAbsent();
    }
  } else {
    forEachTensorIn(argument, [&](const at::Tensor& tensor, bool) { signature.add(tensor); });
  }
}

}  // namespace detail

class NativeCall {
 public:
  template <typename... Args>
  explicit NativeCall(const char* name, const Args&... args)
      : name_(name), device_(resolveDeviceOf(name, args...)), on_device_(device_),
        stream_(getCurrentMydevStream(device_)), caller_warnings_(c10::WarningUtils::get_warning_handler()) {
    c10::WarningUtils::set_warning_handler(&host_warnings_);
  }

  ~NativeCall() { issueHostWarnings(); }
  NativeCall(const NativeCall&) = delete;
  NativeCall& operator=(const NativeCall&) = delete;

  c10::DeviceIndex device() const { return device_; }
  const MydevStream& stream() const { return stream_; }

  // Queues body(KernelArgument<Args>::use(...)...) on the stream. The body
  // runs ATen's CPU kernel; its exceptions fail the kernel (KernelLaunch.h).
  // The first launch of each dtype signature is watched (DtypeSignatures.h).
  template <typename... Args, typename Body>
  void launch(Body body, const Args&... args) {
    launchSigned(noDtypeProbe, /*sized=*/false, std::move(body), args...);
  }

  // Adds to the launch's signature (DtypeSignatures.h) the arguments that the
  // body captures itself rather than taking them from launch(): each that may
  // pick the CPU code the body runs (a mode, a flag, a dim), or a refusal for
  // one value would be replayed for another.
  template <typename... Choices>
  void addChoices(const Choices&... choices) {
    (detail::addToSignature(captured_choices_, choices), ...);
  }

  // launch(), with `probe()` to vouch for a new dtype signature instead.
  template <typename Probe, typename Body, typename... Args>
  void launchProbed(const Probe& probe, Body body, const Args&... args) {
    launchSigned(probe, /*sized=*/true, std::move(body), args...);
  }

 private:
  template <typename Probe, typename Body, typename... Args>
  void launchSigned(const Probe& probe, bool sized, Body body, const Args&... args) {
    using Captured = CapturedArguments<std::index_sequence_for<Args...>, std::decay_t<Args>...>;
    struct Kernel {
      Body body;
      Captured captured;
      std::vector<std::string> issued;
      void operator()() const {
        IssuedWarningsDropped dropped(issued);
        KernelMemory memory;
        captured.call(body, memory);
      }
    };
    issueHostWarnings();
    LaunchSignature signature = captured_choices_;
    if (sized) {
      signature.countSizes();
    }
    (detail::addToSignature(signature, args), ...);
    // Every argument is captured once, in place, into the kernel's storage.
    launchCheckingDtypes(signature, probe, [&](KernelWatch* watch) {
      launchKernelBuiltBy(
          name_, stream_, [&] { return Kernel{body, Captured(args...), host_warnings_.messages()}; }, watch);
    });
  }

  template <typename... Args>
  static c10::DeviceIndex resolveDeviceOf(const char* name, const Args&... args) {
    reissueKernelWarnings();
    OperatorDevice device;
    (detail::forEachTensorIn(args, [&](const at::Tensor& tensor, bool accepts_host_tensor) {
       device.add(tensor, accepts_host_tensor);
     }),
     ...);
    return device.resolve(name);
  }

  void issueHostWarnings() {
    if (caller_warnings_ != nullptr) {
      c10::WarningUtils::set_warning_handler(caller_warnings_);
      caller_warnings_ = nullptr;
      host_warnings_.issue();
    }
  }

  const char* name_;
  c10::DeviceIndex device_;
  ScopedDevice on_device_;
  MydevStream stream_;
  RecordedWarnings host_warnings_;
  c10::WarningHandler* caller_warnings_;  // null once restored
  LaunchSignature captured_choices_{name_, name_};
};

}  // namespace torch_mydev::native
