// Dtype errors at the call. ATen's CPU kernels dispatch on dtypes when they
// run; a dtype a kernel has no code for ("bitwise_and_cpu" not implemented for
// 'Float', softmax of an integer tensor, half-precision cholesky) raises
// NotImplementedError there. On mydev the kernel runs on a stream, after the
// call returned, so the error would surface at the next synchronization,
// naming an operator long past; the CPU and CUDA (whose dispatch runs on the
// host) raise it at the call.
//
// So each signature is vouched for once per process, at its first launch. A
// signature stands for the CPU code a kernel runs: the kernel, the dtype and
// rank of each tensor (and a dtype= argument), and the value of each argument
// that may pick other code — a mode string (scatter_reduce's "sum" runs, its
// "mean" has no bool code), a flag (convolution's `transposed`), a dim
// (softmax over the last dim runs other code than over the first), a scalar
// (pow by 0 is a fill, by 1 a copy, by 2 a kernel without unsigned code). An
// integer of magnitude kLargeChoice or more counts as "large" whatever its
// value, and so does a real number that is not a small multiple of 1/2: they
// are sizes, counts or factors, which pick no code, and would otherwise make
// every new value a new signature. Where a probe vouches for signatures (it
// costs no wait), a tensor's order of magnitude of size counts too, which
// approximates the size thresholds past which some CPU kernels take another
// path with another dispatch name (bmm of bools: "bmm" below 400 products,
// "addmm_impl_cpu_" above); a kernel without a probe would wait for every new
// size, and leaves it out.
//
// - A probe, where the kernel has one, runs the same CPU code on the calling
//   thread over tiny stand-ins of the arguments (DtypeProbe.h: every tensor
//   zero-filled, each dimension of size one). If it runs, so will the kernel:
//   the launch is asynchronous like any other. A probe that fails proves
//   nothing (its stand-ins may be what the code refuses), so:
// - otherwise the launch is watched (KernelLaunch.h): the call waits for that
//   kernel alone, and what it raises is raised at the call, as the CPU kernel
//   raised it. A NotImplementedError is remembered: later launches of that
//   signature raise it at the call and queue nothing. Another error (two
//   operands of different dtypes, an index out of range) may not hold for
//   other arguments of the same dtypes, so the signature stays unproven and
//   its next launch is probed, and if need be watched, again. A signature
//   whose watched kernel ran is remembered as running.
//
// A watched launch with an empty tensor teaches nothing (many kernels return
// before their dtype dispatch when there is nothing to compute).
#pragma once

#include "KernelLaunch.h"

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>
#include <c10/util/llvmMathExtras.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

namespace torch_mydev {

class LaunchSignature {
 public:
  // `kernel` identifies the operator for as long as the process runs (a string
  // literal, an operator's schema); `name` is the kernel name its launch uses.
  LaunchSignature(const void* kernel, const char* name) : kernel_(kernel), name_(name) {}

  // From here on, a tensor's order of magnitude of size counts (see above):
  // for launches a probe vouches for.
  void countSizes() { sized_ = true; }

  static constexpr int64_t kLargeChoice = 64;

  void add(const at::Tensor& tensor) {
    if (!tensor.defined()) {
      parts_.push_back(part(Part::Tensor, static_cast<int64_t>(c10::ScalarType::Undefined) << 16));
      return;
    }
    const int64_t numel = tensor.numel();
    const auto magnitude =
        sized_ ? static_cast<int64_t>(64 - c10::llvm::countLeadingZeros(static_cast<uint64_t>(numel))) : 0;
    parts_.push_back(
        part(Part::Tensor, static_cast<int64_t>(tensor.scalar_type()) << 16 | tensor.dim() << 8 | magnitude));
    teaches_ = teaches_ && numel != 0;
  }
  // A Scalar argument: its kind and its value.
  void add(const c10::Scalar& scalar) {
    add(scalar.type());
    if (scalar.isComplex()) {
      addRealChoice(scalar.toComplexDouble().real());
      addRealChoice(scalar.toComplexDouble().imag());
    } else if (scalar.isFloatingPoint()) {
      addRealChoice(scalar.toDouble());
    } else {
      addChoice(scalar.toLong());
    }
  }
  void add(c10::ScalarType dtype) { parts_.push_back(part(Part::Dtype, static_cast<int64_t>(dtype))); }
  void addChoice(int64_t value) {
    const bool large = value >= kLargeChoice || value <= -kLargeChoice;
    parts_.push_back(large ? part(Part::LargeInteger, 0) : part(Part::Integer, value + kLargeChoice));
  }
  // A list of choices: its length, then each value.
  void addChoices(c10::ArrayRef<int64_t> values) {
    addChoice(static_cast<int64_t>(values.size()));
    for (const int64_t value : values) {
      addChoice(value);
    }
  }
  void addRealChoice(double value) {
    const double halves = value * 2;
    const bool small = std::abs(halves) < kLargeChoice && halves == std::trunc(halves);
    parts_.push_back(small ? part(Part::Real, static_cast<int64_t>(halves) + kLargeChoice) : part(Part::LargeReal, 0));
  }
  void addChoice(std::string_view value) {
    parts_.push_back(part(Part::String, static_cast<int64_t>(std::hash<std::string_view>()(value))));
  }
  // An optional argument left out.
  void addAbsent() { parts_.push_back(part(Part::Absent, 0)); }

  const void* kernel() const { return kernel_; }
  const char* name() const { return name_; }
  const c10::SmallVector<int64_t, 8>& parts() const { return parts_; }
  bool teaches() const { return teaches_; }

 private:
  enum class Part : int64_t { Tensor = 1, Dtype, Integer, LargeInteger, Real, LargeReal, String, Absent };
  // The kind in the top byte, so that a part of one kind never equals one of another.
  static int64_t part(Part kind, int64_t value) {
    return static_cast<int64_t>(kind) << 56 | (value & ((int64_t{1} << 56) - 1));
  }

  const void* kernel_;
  const char* name_;
  bool sized_ = false;
  c10::SmallVector<int64_t, 8> parts_;
  bool teaches_ = true;
};

namespace detail {

enum class SignatureState { Unknown, Runs, LacksKernel };
// The state of a signature, with the remembered message of one that lacks a kernel.
SignatureState lookUpSignature(const LaunchSignature& signature, std::string* message);
// `missing_kernel`: the kernel's message if it had no code for these dtypes, else nullopt.
void rememberSignature(const LaunchSignature& signature, const std::optional<std::string>& missing_kernel);
void countErrorRaisedByFirstLaunch();

}  // namespace detail

// How many errors of kernels (other than missing dtypes) this thread's calls
// raised only because the launch was the first of its signature, which waits
// for its kernel: once a valid call proved the signature, the same error is
// reported at the next synchronization. The conformance kit counts these as
// late (torch_mydev/conformance/error_runner.py).
uint64_t errorsRaisedByFirstLaunches();

// Launches with launch(KernelWatch*), which passes the watch (null: none) to
// the kernel launch. `probe()` tells whether the kernel runs for these dtypes
// (see above); it is only called for a signature not vouched for yet.
template <typename Probe, typename Launch>
void launchCheckingDtypes(const LaunchSignature& signature, Probe&& probe, Launch&& launch) {
  std::string missing;
  switch (detail::lookUpSignature(signature, &missing)) {
    case detail::SignatureState::LacksKernel:
      TORCH_CHECK_NOT_IMPLEMENTED(false, missing);
    case detail::SignatureState::Runs:
      launch(nullptr);
      return;
    case detail::SignatureState::Unknown:
      break;
  }
  if (probe()) {
    detail::rememberSignature(signature, std::nullopt);
    launch(nullptr);
    return;
  }
  KernelWatch watch;
  launch(&watch);
  const std::exception_ptr error = watch.wait();
  if (!error) {
    if (signature.teaches()) {
      detail::rememberSignature(signature, std::nullopt);
    }
    return;
  }
  try {
    std::rethrow_exception(error);
  } catch (const c10::NotImplementedError& missing_kernel) {
    if (signature.teaches()) {
      detail::rememberSignature(signature, missing_kernel.msg());
    }
    throw;
  } catch (...) {
    // A signature that does not teach (an empty tensor in it) is watched at every launch: its errors stay at the call.
    if (signature.teaches()) {
      detail::countErrorRaisedByFirstLaunch();
    }
    throw;
  }
}

// For kernels without a probe.
inline bool noDtypeProbe() { return false; }

}  // namespace torch_mydev
