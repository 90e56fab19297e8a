#include "PhiloxGenerator.h"

#include <c10/util/Exception.h>

namespace torch_mydev {

PhiloxKernelGenerator::PhiloxKernelGenerator(PhiloxLaunch launch)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::CPU), c10::DispatchKeySet(c10::DispatchKey::CPU)),
      launch_(launch),
      engine_(launch.seed, /*subsequence=*/launch.offset / 4, /*offset=*/0) {}

namespace {

[[noreturn]] void refuse(const char* what) {
  TORCH_CHECK(false, "a mydev kernel's Philox stream has no ", what,
              ": read or change the mydev generator's (seed, offset) instead");
}

}  // namespace

void PhiloxKernelGenerator::set_current_seed(uint64_t /*seed*/) { refuse("seed to set"); }
void PhiloxKernelGenerator::set_offset(uint64_t /*offset*/) { refuse("offset to set"); }
uint64_t PhiloxKernelGenerator::get_offset() const { return launch_.offset; }
uint64_t PhiloxKernelGenerator::current_seed() const { return launch_.seed; }
uint64_t PhiloxKernelGenerator::seed() { refuse("seed to draw"); }
void PhiloxKernelGenerator::set_state(const c10::TensorImpl& /*new_state*/) { refuse("state to set"); }
c10::intrusive_ptr<c10::TensorImpl> PhiloxKernelGenerator::get_state() const { refuse("state to read"); }

PhiloxKernelGenerator* PhiloxKernelGenerator::clone_impl() const {
  auto* copy = new PhiloxKernelGenerator(launch_);
  copy->engine_ = engine_;
  copy->next_float_normal_sample_ = next_float_normal_sample_;
  copy->next_double_normal_sample_ = next_double_normal_sample_;
  return copy;
}

}  // namespace torch_mydev
