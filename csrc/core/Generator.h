// The mydev random number generator: counter-based, as CUDA's, torch_npu's and
// XPU's are. Its state is a seed and an offset, (seed u64, offset u64), in
// CUDA's 16-byte layout, so code that reads or edits CUDA's state (DTensor's
// RNG tracker, torch.utils.checkpoint) works on mydev. A random kernel
// reserves its offsets on the host when it is launched (reserve), and draws
// from the Philox4x32-10 stream that (seed, offset) names when it runs
// (kernels/PhiloxGenerator.h): its numbers depend only on the seed and the
// launch order, never on which stream's worker runs first, and seeding or
// reading the state never waits for the device.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <optional>

namespace torch_mydev {

// What one kernel launch draws from.
struct PhiloxLaunch {
  uint64_t seed;
  uint64_t offset;
};

class MydevGeneratorImpl final : public c10::GeneratorImpl {
 public:
  MydevGeneratorImpl(c10::DeviceIndex device, uint64_t seed);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  // CUDA's graph-safe state: a generator that shares this one's (seed, offset), and adopting another's.
  void graphsafe_set_state(const c10::intrusive_ptr<c10::GeneratorImpl>& state) override;
  c10::intrusive_ptr<c10::GeneratorImpl> graphsafe_get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // Reserves `increment` offsets (rounded up to a multiple of 4, as CUDA's
  // philox_cuda_state does) for one launch; the caller holds mutex_.
  PhiloxLaunch reserve(uint64_t increment);

 private:
  struct State : c10::intrusive_ptr_target {
    uint64_t seed = 0;
    uint64_t offset = 0;
  };
  MydevGeneratorImpl(c10::DeviceIndex device, c10::intrusive_ptr<State> state);
  MydevGeneratorImpl* clone_impl() const override;

  c10::intrusive_ptr<State> state_;
};

const at::Generator& defaultGenerator(c10::DeviceIndex device);
at::Generator newGenerator(c10::DeviceIndex device);
// Reserves a launch's draws from the user's generator, or from the default
// generator of `device`; refuses a generator of another device type.
PhiloxLaunch reservePhilox(const std::optional<at::Generator>& generator, c10::DeviceIndex device,
                           uint64_t increment = 4);
// For the rarer random operators that mydev runs on ATen's CPU kernels (the
// fallback), which take a CPU generator: a fresh one, seeded from the Philox
// stream of one reservation, so that their numbers too depend only on the seed
// and the launch order.
at::Generator reserveCpuGenerator(const std::optional<at::Generator>& generator, c10::DeviceIndex device);

}  // namespace torch_mydev
