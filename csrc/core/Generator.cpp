#include "Generator.h"

#include "Device.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/PhiloxRNGEngine.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <mutex>
#include <vector>

namespace torch_mydev {

namespace {

constexpr size_t kStateBytes = 2 * sizeof(uint64_t);

}  // namespace

MydevGeneratorImpl::MydevGeneratorImpl(c10::DeviceIndex device, uint64_t seed)
    : MydevGeneratorImpl(device, c10::make_intrusive<State>()) {
  state_->seed = seed;
}

MydevGeneratorImpl::MydevGeneratorImpl(c10::DeviceIndex device, c10::intrusive_ptr<State> state)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      state_(std::move(state)) {}

void MydevGeneratorImpl::set_current_seed(uint64_t seed) {
  state_->seed = seed;
  state_->offset = 0;
}

void MydevGeneratorImpl::set_offset(uint64_t offset) {
  TORCH_CHECK(offset % 4 == 0, "offset must be a multiple of 4, as each Philox draw consumes 4 offsets; got ", offset);
  state_->offset = offset;
}

uint64_t MydevGeneratorImpl::get_offset() const { return state_->offset; }

uint64_t MydevGeneratorImpl::current_seed() const { return state_->seed; }

uint64_t MydevGeneratorImpl::seed() {
  const uint64_t random = c10::detail::getNonDeterministicRandom(true);
  set_current_seed(random);
  return random;
}

// As CUDA's: a uint8 tensor of 16 bytes, the seed then the offset (native byte order).
c10::intrusive_ptr<c10::TensorImpl> MydevGeneratorImpl::get_state() const {
  auto state = at::detail::empty_cpu({static_cast<int64_t>(kStateBytes)}, c10::ScalarType::Byte, std::nullopt,
                                     std::nullopt, std::nullopt, std::nullopt);
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &state_->seed, sizeof(uint64_t));
  std::memcpy(bytes + sizeof(uint64_t), &state_->offset, sizeof(uint64_t));
  return state.getIntrusivePtr();
}

void MydevGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  at::detail::check_rng_state(new_state);
  // As CUDA's, a state of the seed alone sets the offset to 0.
  const auto size = static_cast<size_t>(new_state.numel());
  TORCH_CHECK(size == kStateBytes || size == sizeof(uint64_t),
              "RNG state is wrong size: a mydev generator's state is 16 bytes, (seed, offset) as CUDA's, or 8 bytes "
              "of seed; got ", size, " bytes");
  uint64_t seed = 0;
  uint64_t offset = 0;
  const auto* bytes = new_state.data_dtype_initialized<uint8_t>();
  std::memcpy(&seed, bytes, sizeof(uint64_t));
  if (size == kStateBytes) {
    std::memcpy(&offset, bytes + sizeof(uint64_t), sizeof(uint64_t));
  }
  TORCH_CHECK(offset % 4 == 0, "RNG state's offset must be a multiple of 4; got ", offset);
  state_->seed = seed;
  state_->offset = offset;
}

void MydevGeneratorImpl::graphsafe_set_state(const c10::intrusive_ptr<c10::GeneratorImpl>& state) {
  auto* other = dynamic_cast<MydevGeneratorImpl*>(state.get());
  TORCH_CHECK(other != nullptr, "Expected a mydev generator's graph-safe state, got a generator of ",
              state->device());
  state_ = other->state_;
}

c10::intrusive_ptr<c10::GeneratorImpl> MydevGeneratorImpl::graphsafe_get_state() const {
  return c10::intrusive_ptr<MydevGeneratorImpl>::reclaim(new MydevGeneratorImpl(device().index(), state_));
}

PhiloxLaunch MydevGeneratorImpl::reserve(uint64_t increment) {
  const PhiloxLaunch launch{state_->seed, state_->offset};
  state_->offset += ((increment + 3) / 4) * 4;
  return launch;
}

MydevGeneratorImpl* MydevGeneratorImpl::clone_impl() const {
  auto* copy = new MydevGeneratorImpl(device().index(), state_->seed);
  copy->state_->offset = state_->offset;
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

PhiloxLaunch reservePhilox(const std::optional<at::Generator>& generator, c10::DeviceIndex device,
                           uint64_t increment) {
  const at::Generator& chosen =
      generator.has_value() && generator->defined() ? *generator : defaultGenerator(device);
  auto* impl = dynamic_cast<MydevGeneratorImpl*>(chosen.unsafeGetGeneratorImpl());
  // ATen's check_generator message, which tests match.
  TORCH_CHECK(impl != nullptr, "Expected a '", c10::DeviceType::PrivateUse1, "' device type for generator but found '",
              chosen.device().type(), "'");
  std::lock_guard<std::mutex> lock(impl->mutex_);
  return impl->reserve(increment);
}

}  // namespace torch_mydev

namespace torch_mydev {

// The CPU generator's mt19937 keeps 32 bits of a seed: seeded from each
// launch's stream, launches would share one of 2^32 states, and two of them
// drew the same numbers after some 10^5 launches (the birthday bound). Its
// whole state (624 words) is filled from the launch's Philox stream instead.
at::Generator reserveCpuGenerator(const std::optional<at::Generator>& generator, c10::DeviceIndex device) {
  const PhiloxLaunch launch = reservePhilox(generator, device);
  at::Philox4_32 stream(launch.seed, launch.offset / 4, 0);
  at::mt19937_data_pod state;
  state.seed_ = launch.seed;
  state.seeded_ = true;
  for (uint32_t& word : state.state_) {
    word = stream();
  }
  state.left_ = 1;  // the first draw twists the state, as after seeding
  state.next_ = 0;
  at::mt19937 engine;
  engine.set_data(state);
  at::Generator cpu = at::make_generator<at::CPUGeneratorImpl>(launch.seed);
  cpu.get<at::CPUGeneratorImpl>()->set_engine(engine);
  return cpu;
}

}  // namespace torch_mydev
