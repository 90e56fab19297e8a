// The generator a random kernel draws from on the stream: one Philox4x32-10
// stream, the one its launch's (seed, offset) names (core/Generator.h). Key =
// seed; the stream is the Philox subsequence offset / 4, so each launch, which
// advances the offset by 4, draws from a stream of its own, from its start.
//
// It is a CPU generator in the shape ATen's distribution templates
// (ATen/native/DistributionTemplates.h and its cpu/ twin) expect of their RNG
// type — random(), random64(), the cached normal samples, the mutex — so a
// kernel runs ATen's own CPU sampling code, with its checks, transformations
// and dtype dispatch, over this stream instead of the CPU's mt19937 engine.
// It has no state to save or set: the device generator does.
#pragma once

#include "../core/Generator.h"

#include <ATen/core/Generator.h>
#include <ATen/core/PhiloxRNGEngine.h>
#include <c10/core/GeneratorImpl.h>

#include <optional>

namespace torch_mydev {

class PhiloxKernelGenerator final : public c10::GeneratorImpl {
 public:
  explicit PhiloxKernelGenerator(PhiloxLaunch launch);

  static c10::DeviceType device_type() { return c10::DeviceType::CPU; }

  uint32_t random() { return engine_(); }
  uint64_t random64() {
    const uint64_t low = engine_();
    const uint64_t high = engine_();
    return (high << 32) | low;
  }
  std::optional<float> next_float_normal_sample() const { return next_float_normal_sample_; }
  std::optional<double> next_double_normal_sample() const { return next_double_normal_sample_; }
  void set_next_float_normal_sample(std::optional<float> sample) { next_float_normal_sample_ = sample; }
  void set_next_double_normal_sample(std::optional<double> sample) { next_double_normal_sample_ = sample; }

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

 private:
  PhiloxKernelGenerator* clone_impl() const override;

  PhiloxLaunch launch_;
  at::Philox4_32 engine_;
  std::optional<float> next_float_normal_sample_;
  std::optional<double> next_double_normal_sample_;
};

inline at::Generator philoxKernelGenerator(PhiloxLaunch launch) {
  return at::make_generator<PhiloxKernelGenerator>(launch);
}

}  // namespace torch_mydev
