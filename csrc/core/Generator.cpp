#include "Generator.h"

#include "Device.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>

#include <memory>
#include <mutex>
#include <vector>

namespace torch_mydev {

// Random kernels draw from the engine on the stream worker, in stream order,
// when they run. Reading or replacing the engine's state from the host must
// first let every queued kernel of the device draw, so that the host sees
// (and changes) the state in program order, as CUDA's launch-time offsets do.
void MydevGeneratorImpl::awaitQueuedDraws() const { synchronizeDevice(device().index()); }

MydevGeneratorImpl::MydevGeneratorImpl(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      engine_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

void MydevGeneratorImpl::set_current_seed(uint64_t seed) {
  awaitQueuedDraws();
  std::lock_guard<std::mutex> lock(engineMutex());
  engine_.unsafeGetGeneratorImpl()->set_current_seed(seed);
}

void MydevGeneratorImpl::set_offset(uint64_t offset) {
  awaitQueuedDraws();
  std::lock_guard<std::mutex> lock(engineMutex());
  engine_.unsafeGetGeneratorImpl()->set_offset(offset);
}

uint64_t MydevGeneratorImpl::get_offset() const {
  awaitQueuedDraws();
  std::lock_guard<std::mutex> lock(engineMutex());
  return engine_.unsafeGetGeneratorImpl()->get_offset();
}

uint64_t MydevGeneratorImpl::current_seed() const {
  std::lock_guard<std::mutex> lock(engineMutex());
  return engine_.unsafeGetGeneratorImpl()->current_seed();
}

uint64_t MydevGeneratorImpl::seed() {
  awaitQueuedDraws();
  std::lock_guard<std::mutex> lock(engineMutex());
  return engine_.unsafeGetGeneratorImpl()->seed();
}

void MydevGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  awaitQueuedDraws();
  std::lock_guard<std::mutex> lock(engineMutex());
  engine_.unsafeGetGeneratorImpl()->set_state(new_state);
}

c10::intrusive_ptr<c10::TensorImpl> MydevGeneratorImpl::get_state() const {
  awaitQueuedDraws();
  std::lock_guard<std::mutex> lock(engineMutex());
  return engine_.unsafeGetGeneratorImpl()->get_state();
}

MydevGeneratorImpl* MydevGeneratorImpl::clone_impl() const {
  awaitQueuedDraws();
  std::lock_guard<std::mutex> lock(engineMutex());
  auto* copy = new MydevGeneratorImpl(device().index(), 0);
  copy->engine_ = engine_.clone();
  return copy;
}

const at::Generator& defaultGenerator(c10::DeviceIndex device) {
  static std::once_flag once;
  static std::vector<at::Generator>* generators = nullptr;
  std::call_once(once, [] {
    generators = new std::vector<at::Generator>();
    for (c10::DeviceIndex i = 0; i < deviceCount(); ++i) {
      generators->push_back(at::make_generator<MydevGeneratorImpl>(i, c10::default_rng_seed_val));
    }
  });
  return generators->at(static_cast<size_t>(resolveDevice(device)));
}

at::Generator newGenerator(c10::DeviceIndex device) {
  return at::make_generator<MydevGeneratorImpl>(resolveDevice(device), c10::default_rng_seed_val);
}

at::Generator kernelEngine(const std::optional<at::Generator>& generator, c10::DeviceIndex device) {
  const at::Generator& chosen =
      generator.has_value() && generator->defined() ? *generator : defaultGenerator(device);
  auto* impl = dynamic_cast<MydevGeneratorImpl*>(chosen.unsafeGetGeneratorImpl());
  TORCH_CHECK(impl != nullptr, "Expected a mydev generator for an operation on mydev:", static_cast<int>(device),
              ", but got a generator of device ", chosen.device());
  return impl->engine();
}

}  // namespace torch_mydev
