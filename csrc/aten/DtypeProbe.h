// Dtype probes (DtypeSignatures.h): ATen's CPU code run on the calling thread
// over tiny stand-ins of an operator's arguments, to learn whether it has code
// for their dtypes without waiting for the kernel on the stream.
//
// A stand-in keeps a tensor's dtype and number of dimensions, each of size
// one, and is zero-filled: zero is a valid index into any dimension, and
// ATen's CPU code checks every other value it depends on (it serves user
// input), so a probe raises where its stand-ins do not fit — which proves
// nothing, and the launch is then watched — but never reads out of bounds.
// Code that draws random numbers is never probed: it would consume the CPU's
// generator.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <cstdint>
#include <optional>

namespace torch_mydev {

// The most elements a probe's output may have: a size argument (an
// upsampling's output_size, an arange's end) can make it as large as the real
// one, and then the probe would cost as much as the kernel.
constexpr int64_t kMaxProbeElements = int64_t{1} << 16;

// The stand-in of an input tensor on `device` (CPU, or Meta for the shape
// pass): zeros of its dtype, each dimension of size one. An undefined tensor
// stands for itself. nullopt for a tensor no probe covers (sparse, quantized,
// nested), or whose dtype cannot be zero-filled.
std::optional<at::Tensor> probeInput(const at::Tensor& tensor, c10::DeviceType device);

// The stand-in of an out= tensor: empty, of its dtype, for the code to resize.
at::Tensor probeOutput(const at::Tensor& tensor, c10::DeviceType device);

// Runs `code` with its warnings dropped and out of profiles (it is not the
// user's work); whether it returned.
template <typename Code>
bool probeRuns(Code&& code);

// Whether `op(self, other)`, an in-place operator of self with other (fill_,
// copy_), runs on CPU stand-ins of the two. False when it could not tell.
template <typename Op>
bool inPlaceRunsForDtypes(const at::Tensor& self, const at::Tensor& other, Op op);

// Whether ATen's CPU kernel of `op` runs for the dtypes of `args`: a Meta pass
// over stand-ins bounds the outputs' size, then the CPU kernel runs over
// zero-filled ones. False when it could not tell.
bool cpuKernelRunsForDtypes(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args);

namespace detail {

class DroppedWarnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

}  // namespace detail

template <typename Code>
bool probeRuns(Code&& code) {
  detail::DroppedWarnings dropped;
  c10::WarningUtils::WarningHandlerGuard guard(&dropped);
  at::DisableRecordFunctionGuard unprofiled;
  try {
    return code();
  } catch (const std::exception&) {
    return false;
  }
}

template <typename Op>
bool inPlaceRunsForDtypes(const at::Tensor& self, const at::Tensor& other, Op op) {
  return probeRuns([&] {
    const std::optional<at::Tensor> self_stand_in = probeInput(self, c10::DeviceType::CPU);
    const std::optional<at::Tensor> other_stand_in = probeInput(other, c10::DeviceType::CPU);
    if (!self_stand_in || !other_stand_in) {
      return false;
    }
    op(at::Tensor(*self_stand_in), *other_stand_in);
    return true;
  });
}

}  // namespace torch_mydev
