// Native kernels of the random sampling operators: the in-place samplers
// (uniform_, normal_, bernoulli_, random_, exponential_, log_normal_,
// cauchy_, geometric_) and the sampling operators with outputs (normal with
// tensor parameters, multinomial, randperm).
//
// Each call reserves its draws from the device generator on the calling thread
// (core/Generator.h) and queues a kernel that runs ATen's own CPU sampling code
// (ATen/native/DistributionTemplates.h, the templates ATen's CPU kernels are
// built from) over device memory with the Philox stream of that reservation
// (PhiloxGenerator.h). The numbers depend on the seed and the launch order
// only, as on CUDA; they are not the CPU's numbers (nor are CUDA's).
//
// The call is validated on the calling thread, so that bad parameters and
// unsupported dtypes raise there with the CPU's exception and message: the
// same sampling code runs first over a one-element host tensor of the
// argument's dtype (ATen's Meta kernels of these operators skip most of the
// CPU's checks). normal's check of a tensor std (>= 0), which reads the
// data, runs in the kernel and reports at the next synchronization, as a
// device-side assertion does on CUDA; multinomial's checks of its
// probabilities read a host copy at the call (checkMultinomialWeights).
#include "NativeCall.h"
#include "PhiloxGenerator.h"
#include "../core/SyncDebug.h"

#include <ATen/CPUFunctions.h>
#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorOperators.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/native/cpu/DistributionTemplates.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/topk.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace torch_mydev::native {

namespace {

using at::Generator;
using at::Tensor;
using OptionalGenerator = std::optional<Generator>;
namespace templates = at::native::templates;
namespace cpu = at::native::templates::cpu;
using Rng = PhiloxKernelGenerator;

// What validation draws from: a stream no device generator uses.
Generator probeGenerator() { return philoxKernelGenerator(PhiloxLaunch{0, 0}); }

// One element of value 1: a valid probability, standard deviation and mean,
// so that validation never fails on the probe's data. (The CPU samplers skip
// their dtype dispatch for empty tensors.)
Tensor hostProbe(const Tensor& tensor) { return at::ones({1}, tensor.options().device(c10::kCPU)); }

Tensor metaOfShape(const Tensor& tensor) { return at::empty(tensor.sizes(), tensor.options().device(c10::kMeta)); }

// sample(self, generator) runs ATen's sampling code: first over a host probe
// (validation), then on the stream over device memory with the launch's stream.
template <typename Sample>
Tensor& sampleInPlace(const char* name, Tensor& self, const OptionalGenerator& generator, Sample sample) {
  NativeCall call(name, self);
  // The probe has its own memory: the CPU's overlap check of the output is made here.
  at::assert_no_internal_overlap(self);
  Tensor probe = hostProbe(self);
  sample(probe, probeGenerator());
  call.launch([sample](Tensor self, PhiloxLaunch launch) { sample(self, philoxKernelGenerator(launch)); }, self,
              reservePhilox(generator, call.device()));
  return self;
}

Tensor& uniform(Tensor& self, double from, double to, OptionalGenerator generator) {
  return sampleInPlace("aten::uniform_", self, generator, [from, to](Tensor& self, const Generator& engine) {
    templates::uniform_impl_<cpu::UniformKernel, Rng>(self, from, to, engine);
  });
}

Tensor& normalInPlace(Tensor& self, double mean, double stddev, OptionalGenerator generator) {
  return sampleInPlace("aten::normal_", self, generator, [mean, stddev](Tensor& self, const Generator& engine) {
    templates::normal_impl_<cpu::NormalKernel, Rng>(self, mean, stddev, engine);
  });
}

Tensor& bernoulliFloat(Tensor& self, double p, OptionalGenerator generator) {
  return sampleInPlace("aten::bernoulli_.float", self, generator, [p](Tensor& self, const Generator& engine) {
    templates::bernoulli_impl_<cpu::BernoulliKernel, Rng>(self, p, engine);
  });
}

Tensor& bernoulliTensor(Tensor& self, const Tensor& p_anywhere, OptionalGenerator generator) {
  // As CUDA, probabilities on another device are copied to the output's.
  const Tensor p = p_anywhere.device() == self.device() ? p_anywhere : p_anywhere.to(self.device());
  NativeCall call("aten::bernoulli_.Tensor", self, p);
  // Raises the CPU's message when p does not expand to self's shape.
  const Tensor p_meta = metaOfShape(p);
  at::expand_inplace(metaOfShape(self), p_meta);
  at::assert_no_internal_overlap(self);
  at::assert_no_partial_overlap(self, p);
  Tensor probe = hostProbe(self);
  templates::bernoulli_impl_<cpu::BernoulliKernel, Rng>(probe, hostProbe(p), probeGenerator());
  call.launch(
      [](Tensor self, const Tensor& p, PhiloxLaunch launch) {
        templates::bernoulli_impl_<cpu::BernoulliKernel, Rng>(self, p, philoxKernelGenerator(launch));
      },
      self, p, reservePhilox(generator, call.device()));
  return self;
}

// As the CPU's bernoulli.out, `out` takes self's shape silently (a structured
// out= would warn about resizing it).
Tensor& bernoulliOut(const Tensor& self, OptionalGenerator generator, Tensor& out) {
  out.resize_(self.sizes());
  return bernoulliTensor(out, self, std::move(generator));
}

Tensor& randomFull(Tensor& self, OptionalGenerator generator) {
  return sampleInPlace("aten::random_", self, generator, [](Tensor& self, const Generator& engine) {
    templates::random_impl<cpu::RandomKernel, Rng>(self, engine);
  });
}

Tensor& randomTo(Tensor& self, int64_t to, OptionalGenerator generator) {
  return sampleInPlace("aten::random_.to", self, generator, [to](Tensor& self, const Generator& engine) {
    templates::random_from_to_impl<cpu::RandomFromToKernel, Rng>(self, 0, to, engine);
  });
}

Tensor& randomFrom(Tensor& self, int64_t from, std::optional<int64_t> to, OptionalGenerator generator) {
  return sampleInPlace("aten::random_.from", self, generator, [from, to](Tensor& self, const Generator& engine) {
    templates::random_from_to_impl<cpu::RandomFromToKernel, Rng>(self, from, to, engine);
  });
}

// CUDA's transformation keeps every draw at least eps / 2 / lambd before it
// rounds to the output dtype, eps that of the type it computes in (float for
// half, bfloat16 and float; double for double). The CPU's samples in double
// and rounds, so a half draw is 0 about once in 3e7 (and gumbel_softmax's
// -log of it infinite); in the other dtypes the bound moves draws of
// probability eps / 2.
Tensor& exponential(Tensor& self, double lambd, OptionalGenerator generator) {
  return sampleInPlace("aten::exponential_", self, generator, [lambd](Tensor& self, const Generator& engine) {
    templates::exponential_impl_<cpu::ExponentialKernel, Rng>(self, lambd, engine);
    const double eps = self.scalar_type() == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                          : std::numeric_limits<float>::epsilon();
    self.clamp_min_(eps / 2 / lambd);
  });
}

Tensor& logNormal(Tensor& self, double mean, double stddev, OptionalGenerator generator) {
  return sampleInPlace("aten::log_normal_", self, generator, [mean, stddev](Tensor& self, const Generator& engine) {
    templates::log_normal_impl_<cpu::LogNormalKernel, Rng>(self, mean, stddev, engine);
  });
}

Tensor& cauchy(Tensor& self, double median, double sigma, OptionalGenerator generator) {
  return sampleInPlace("aten::cauchy_", self, generator, [median, sigma](Tensor& self, const Generator& engine) {
    templates::cauchy_impl_<cpu::CauchyKernel, Rng>(self, median, sigma, engine);
  });
}

Tensor& geometric(Tensor& self, double p, OptionalGenerator generator) {
  return sampleInPlace("aten::geometric_", self, generator, [p](Tensor& self, const Generator& engine) {
    templates::geometric_impl_<cpu::GeometricKernel, Rng>(self, p, engine);
  });
}

// normal(mean, std) with tensor parameters. The functional output is
// contiguous, with the broadcast shape and the dtype of the tensor parameters,
// as on the CPU; an out= tensor takes the shape shape() gives after
// validation. Each variant passes sample(out, generator, tensor parameters...);
// a parameter given as a double is captured by the lambda.
template <typename... Parameters>
at::DimVector normalShape(const Parameters&... parameters) {
  at::DimVector shape;
  ((shape = at::infer_size_dimvector(shape, parameters.sizes())), ...);
  return shape;
}

// `out` is the out= tensor, or undefined for the functional overloads.
template <typename Sample, typename Shape, typename... Parameters>
Tensor normalWithTensors(const char* name, const OptionalGenerator& generator, Sample sample, Shape shape,
                         Tensor out, const Parameters&... parameters) {
  // CUDA's wrapper of normal refuses a host tensor, a 0-dim one included.
  OperatorDevice devices;
  (devices.addOnDevice(parameters), ...);
  devices.addOnDevice(out);
  devices.resolve(name);
  NativeCall call(name, parameters..., out);
  const Tensor& first = std::get<0>(std::tie(parameters...));
  Tensor probe = hostProbe(out.defined() ? out : first);
  sample(probe, probeGenerator(), hostProbe(parameters)...);
  if (out.defined()) {
    at::native::resize_output(out, shape());
    at::assert_no_internal_overlap(out);
    (at::assert_no_partial_overlap(out, parameters), ...);
  } else {
    out = at::empty(shape(), first.options());
  }
  call.launch([sample](Tensor out, PhiloxLaunch launch, const auto&... parameters) {
    sample(out, philoxKernelGenerator(launch), parameters...);
  }, out, reservePhilox(generator, call.device()), parameters...);
  return out;
}

Tensor normalTensorFloat(const Tensor& mean, double stddev, OptionalGenerator generator) {
  return normalWithTensors(
      "aten::normal.Tensor_float", generator,
      [stddev](Tensor& out, const Generator& engine, const Tensor& mean) {
        templates::normal_out_impl<cpu::NormalKernel, Rng>(out, mean, stddev, engine);
      },
      [&] { return normalShape(mean); }, Tensor(), mean);
}

Tensor& normalTensorFloatOut(const Tensor& mean, double stddev, OptionalGenerator generator, Tensor& out) {
  normalWithTensors(
      "aten::normal.Tensor_float_out", generator,
      [stddev](Tensor& out, const Generator& engine, const Tensor& mean) {
        templates::normal_out_impl<cpu::NormalKernel, Rng>(out, mean, stddev, engine);
      },
      // The CPU broadcasts the mean with the output's current shape.
      [&] { return at::infer_size_dimvector(mean.sizes(), out.sizes()); }, out, mean);
  return out;
}

Tensor normalFloatTensor(double mean, const Tensor& stddev, OptionalGenerator generator) {
  return normalWithTensors(
      "aten::normal.float_Tensor", generator,
      [mean](Tensor& out, const Generator& engine, const Tensor& stddev) {
        templates::normal_out_impl<cpu::NormalKernel, Rng>(out, mean, stddev, engine);
      },
      [&] { return normalShape(stddev); }, Tensor(), stddev);
}

Tensor& normalFloatTensorOut(double mean, const Tensor& stddev, OptionalGenerator generator, Tensor& out) {
  normalWithTensors(
      "aten::normal.float_Tensor_out", generator,
      [mean](Tensor& out, const Generator& engine, const Tensor& stddev) {
        templates::normal_out_impl<cpu::NormalKernel, Rng>(out, mean, stddev, engine);
      },
      [&] { return normalShape(stddev); }, out, stddev);
  return out;
}

Tensor normalTensorTensor(const Tensor& mean, const Tensor& stddev, OptionalGenerator generator) {
  return normalWithTensors(
      "aten::normal.Tensor_Tensor", generator,
      [](Tensor& out, const Generator& engine, const Tensor& mean, const Tensor& stddev) {
        templates::normal_out_impl<cpu::NormalKernel, Rng>(out, mean, stddev, engine);
      },
      [&] { return normalShape(mean, stddev); }, Tensor(), mean, stddev);
}

Tensor& normalTensorTensorOut(const Tensor& mean, const Tensor& stddev, OptionalGenerator generator, Tensor& out) {
  normalWithTensors(
      "aten::normal.Tensor_Tensor_out", generator,
      [](Tensor& out, const Generator& engine, const Tensor& mean, const Tensor& stddev) {
        templates::normal_out_impl<cpu::NormalKernel, Rng>(out, mean, stddev, engine);
      },
      [&] { return normalShape(mean, stddev); }, out, mean, stddev);
  return out;
}

// ATen's CPU checks, in its order.
void checkMultinomial(const Tensor& self, int64_t num_samples, bool replacement, const Tensor& out) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  TORCH_CHECK(out.scalar_type() == at::kLong, "multinomial expects Long tensor out, got: ", out.scalar_type());
  TORCH_CHECK(num_samples > 0, "cannot sample n_sample <= 0 samples");
  TORCH_CHECK(replacement || num_samples <= self.size(-1),
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  constexpr int64_t kFloat32MaxConsecutiveInt = int64_t{1} << 24;
  TORCH_CHECK(self.size(-1) <= kFloat32MaxConsecutiveInt, "number of categories cannot exceed 2^24");
}

// The CPU's checks of the weights themselves, which it makes at the call: on a host copy of them. Without
// replacement, or for one sample, ATen checks the whole tensor, and CUDA's call waits for the weights too (a wait
// sync-debug mode reports); with replacement, the CPU kernel checks each row's entries in order, where CUDA's kernel
// asserts on the device: mydev's wait for them is its own, for the CPU's error at the call, and is not reported.
void checkMultinomialWeights(const Tensor& self, int64_t num_samples, bool replacement) {
  std::optional<UnreportedHostWaits> checked_as_the_cpu_does;
  if (replacement && num_samples > 1) {
    checked_as_the_cpu_does.emplace();
  }
  const Tensor weights = self.to(c10::kCPU, at::kDouble).reshape({-1, self.size(-1)});
  if (!replacement || num_samples == 1) {
    TORCH_CHECK((weights.max() < INFINITY).item<bool>() && (weights.min() >= 0).item<bool>(),
                "probability tensor contains either `inf`, `nan` or element < 0");
    TORCH_CHECK(!(weights.sum(1) == 0).any().item<bool>(), "invalid multinomial distribution (sum of probabilities <= 0)");
    return;
  }
  const auto rows = weights.accessor<double, 2>();
  for (int64_t row = 0; row < weights.size(0); ++row) {
    double sum = 0;
    for (int64_t category = 0; category < weights.size(1); ++category) {
      const double weight = rows[row][category];
      TORCH_CHECK(weight >= 0, "invalid multinomial distribution (encountering probability entry < 0)");
      TORCH_CHECK(std::isfinite(weight), "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
      sum += weight;
    }
    TORCH_CHECK(sum > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
  }
}

at::DimVector multinomialShape(const Tensor& self, int64_t num_samples) {
  return self.dim() == 1 ? at::DimVector{num_samples} : at::DimVector{self.size(0), num_samples};
}

// On the worker, over host aliases of weights the call checked: ATen's algorithm (native/Distributions.cpp and its
// CPU kernel). Without replacement, or for one sample: the largest weight / Exp(1) keys. With replacement: a
// uniform draw per sample, searched in the row's cumulative weights.
void sampleMultinomial(const Tensor& self, int64_t num_samples, bool replacement, Tensor& out,
                       const Generator& engine) {
  const Tensor weights = self.to(at::kDouble).reshape({-1, self.size(-1)});
  Tensor result = out.view({weights.size(0), num_samples});
  if (!replacement || num_samples == 1) {
    Tensor keys = at::empty_like(weights);
    templates::exponential_impl_<cpu::ExponentialKernel, Rng>(keys, 1.0, engine);
    keys = weights / keys;
    Tensor largest_keys = at::empty({0}, keys.options());
    at::topk_out(largest_keys, result, keys, num_samples, -1);
    return;
  }
  const Tensor cumulative = weights.cumsum(1).contiguous();
  const double* sums = cumulative.const_data_ptr<double>();
  const int64_t categories = weights.size(1);
  auto values = result.accessor<int64_t, 2>();
  auto* rng = engine.get<PhiloxKernelGenerator>();
  at::uniform_real_distribution<double> uniform(0, 1);
  for (int64_t row = 0; row < weights.size(0); ++row) {
    const double* row_sums = sums + row * categories;
    for (int64_t sample = 0; sample < num_samples; ++sample) {
      const double target = uniform(rng) * row_sums[categories - 1];
      const double* found = std::upper_bound(row_sums, row_sums + categories, target);
      values[row][sample] = std::min<int64_t>(found - row_sums, categories - 1);
    }
  }
}

Tensor& multinomialOut(const Tensor& self, int64_t num_samples, bool replacement, OptionalGenerator generator,
                       Tensor& out) {
  NativeCall call("aten::multinomial.out", self, out);
  checkMultinomial(self, num_samples, replacement, out);
  at::native::resize_output(out, multinomialShape(self, num_samples));
  if (out.numel() == 0) {
    return out;  // no distributions: the CPU returns before drawing, or checking weights
  }
  checkMultinomialWeights(self, num_samples, replacement);
  call.launch([num_samples, replacement](const Tensor& self, Tensor out, PhiloxLaunch launch) {
    sampleMultinomial(self, num_samples, replacement, out, philoxKernelGenerator(launch));
  }, self, out, reservePhilox(generator, call.device()));
  return out;
}

Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement, OptionalGenerator generator) {
  Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return multinomialOut(self, num_samples, replacement, std::move(generator), out);
}

// Fisher-Yates over 0..n-1, as ATen's CPU randperm.
void samplePermutation(int64_t n, Tensor& out, const Generator& engine) {
  Tensor permutation = at::arange(n, out.options().dtype(at::kLong));
  int64_t* values = permutation.data_ptr<int64_t>();
  auto* rng = engine.get<PhiloxKernelGenerator>();
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t chosen = i + static_cast<int64_t>(rng->random64() % static_cast<uint64_t>(n - i));
    std::swap(values[i], values[chosen]);
  }
  out.copy_(permutation);
}

Tensor& randpermOut(int64_t n, OptionalGenerator generator, Tensor& out) {
  NativeCall call("aten::randperm.generator_out", out);
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  at::native::check_supported_max_int_with_precision(n, hostProbe(out));
  at::native::resize_output(out, {n});
  // The CPU's dtypes, and its message for the others.
  AT_DISPATCH_ALL_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, out.scalar_type(), "randperm", [] {});
  call.launch([n](Tensor out, PhiloxLaunch launch) { samplePermutation(n, out, philoxKernelGenerator(launch)); },
              out, reservePhilox(generator, call.device()));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("uniform_", TORCH_FN(uniform));
  m.impl("normal_", TORCH_FN(normalInPlace));
  m.impl("bernoulli_.float", TORCH_FN(bernoulliFloat));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulliTensor));
  m.impl("bernoulli.out", TORCH_FN(bernoulliOut));
  m.impl("random_", TORCH_FN(randomFull));
  m.impl("random_.to", TORCH_FN(randomTo));
  m.impl("random_.from", TORCH_FN(randomFrom));
  m.impl("exponential_", TORCH_FN(exponential));
  m.impl("log_normal_", TORCH_FN(logNormal));
  m.impl("cauchy_", TORCH_FN(cauchy));
  m.impl("geometric_", TORCH_FN(geometric));
  m.impl("normal.Tensor_float", TORCH_FN(normalTensorFloat));
  m.impl("normal.Tensor_float_out", TORCH_FN(normalTensorFloatOut));
  m.impl("normal.float_Tensor", TORCH_FN(normalFloatTensor));
  m.impl("normal.float_Tensor_out", TORCH_FN(normalFloatTensorOut));
  m.impl("normal.Tensor_Tensor", TORCH_FN(normalTensorTensor));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(normalTensorTensorOut));
  m.impl("multinomial", TORCH_FN(multinomial));
  m.impl("multinomial.out", TORCH_FN(multinomialOut));
  m.impl("randperm.generator_out", TORCH_FN(randpermOut));
}

}  // namespace torch_mydev::native
