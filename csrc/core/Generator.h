// The mydev random number generator. Kernels of the simulated device are CPU
// kernels running over device memory, so the generator wraps a CPU mt19937
// engine (at::CPUGeneratorImpl) that those kernels draw from, while
// presenting itself to PyTorch as a generator of device mydev:N (so that
// torch.Generator(device="mydev"), seeding and get/set_rng_state work per device).
// Random kernels run asynchronously and draw from the engine when they run;
// the host-side accessors of the state wait for them (awaitQueuedDraws).
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_mydev {

class MydevGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit MydevGeneratorImpl(c10::DeviceIndex device, uint64_t seed);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // The CPU generator that device kernels use; kernels lock its mutex.
  const at::Generator& engine() const { return engine_; }

 private:
  MydevGeneratorImpl* clone_impl() const override;
  void awaitQueuedDraws() const;
  std::mutex& engineMutex() const { return engine_.unsafeGetGeneratorImpl()->mutex_; }

  at::Generator engine_;
};

const at::Generator& defaultGenerator(c10::DeviceIndex device);
at::Generator newGenerator(c10::DeviceIndex device);
// The engine a kernel on `device` should draw from for an optional user generator.
at::Generator kernelEngine(const std::optional<at::Generator>& generator, c10::DeviceIndex device);

}  // namespace torch_mydev
