// Native kernels of the random sampling operators: the in-place samplers
// (uniform_, normal_, bernoulli_, random_, exponential_, log_normal_,
// cauchy_, geometric_) and the sampling operators with outputs (normal with
// tensor parameters, multinomial, randperm).
//
// The kernel is queued on the stream and runs ATen's CPU kernel over device
// memory with the generator's CPU engine, so a seed gives the same numbers as
// on the CPU. Draws happen in stream order when the kernel runs; the
// generator's host-side accessors wait for them (core/Generator.cpp).
//
// The call is validated on the calling thread, so that bad parameters and
// unsupported dtypes raise there with the CPU's exception and message: the
// same CPU function runs first over one-element host tensors of the arguments'
// dtypes with a scratch generator (ATen's Meta kernels of these operators
// skip most of the CPU's checks).
// Checks that read the data (normal's tensor std >= 0, multinomial's
// probabilities) run in the kernel and report at the next synchronization,
// as device-side assertions do on CUDA.
#include "NativeCall.h"

#include "../core/Generator.h"

#include <ATen/CPUFunctions.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace torch_mydev::native {

namespace {

using at::Generator;
using at::Tensor;
using OptionalGenerator = std::optional<Generator>;

// Draws made while validating on host probes come from here, never
// from a device generator.
const Generator& scratchGenerator() {
  static const Generator generator = at::make_generator<at::CPUGeneratorImpl>(0);
  return generator;
}

// One element of value 1: a valid probability, standard deviation and mean,
// so that validation never fails on the probe's data. (The CPU samplers skip
// their dtype dispatch for empty tensors.)
Tensor hostProbe(const Tensor& tensor) { return at::ones({1}, tensor.options().device(c10::kCPU)); }

Tensor metaOfShape(const Tensor& tensor) { return at::empty(tensor.sizes(), tensor.options().device(c10::kMeta)); }

// sample(self, generator) runs ATen's CPU sampler: first over a host probe
// (validation), then on the stream over device memory.
template <typename Sample>
Tensor& sampleInPlace(const char* name, Tensor& self, const OptionalGenerator& generator, Sample sample) {
  NativeCall call(name, self);
  Tensor probe = hostProbe(self);
  sample(probe, scratchGenerator());
  call.launch([sample](Tensor self, const Generator& engine) { sample(self, engine); }, self,
              kernelEngine(generator, call.device()));
  return self;
}

Tensor& uniform(Tensor& self, double from, double to, OptionalGenerator generator) {
  return sampleInPlace("aten::uniform_", self, generator, [from, to](Tensor& self, const Generator& engine) {
    at::cpu::uniform_(self, from, to, engine);
  });
}

Tensor& normalInPlace(Tensor& self, double mean, double stddev, OptionalGenerator generator) {
  return sampleInPlace("aten::normal_", self, generator, [mean, stddev](Tensor& self, const Generator& engine) {
    at::cpu::normal_(self, mean, stddev, engine);
  });
}

Tensor& bernoulliFloat(Tensor& self, double p, OptionalGenerator generator) {
  return sampleInPlace("aten::bernoulli_.float", self, generator,
                       [p](Tensor& self, const Generator& engine) { at::cpu::bernoulli_(self, p, engine); });
}

Tensor& bernoulliTensor(Tensor& self, const Tensor& p, OptionalGenerator generator) {
  NativeCall call("aten::bernoulli_.Tensor", self, p);
  // Raises the CPU's message when p does not expand to self's shape.
  const Tensor p_meta = metaOfShape(p);
  at::expand_inplace(metaOfShape(self), p_meta);
  Tensor probe = hostProbe(self);
  at::cpu::bernoulli_(probe, hostProbe(p), scratchGenerator());
  call.launch([](Tensor self, const Tensor& p, const Generator& engine) { at::cpu::bernoulli_(self, p, engine); },
              self, p, kernelEngine(generator, call.device()));
  return self;
}

Tensor& randomFull(Tensor& self, OptionalGenerator generator) {
  return sampleInPlace(
      "aten::random_", self, generator,
      [](Tensor& self, const Generator& engine) { at::cpu::random_(self, engine); });
}

Tensor& randomTo(Tensor& self, int64_t to, OptionalGenerator generator) {
  return sampleInPlace(
      "aten::random_.to", self, generator,
      [to](Tensor& self, const Generator& engine) { at::cpu::random_(self, to, engine); });
}

Tensor& randomFrom(Tensor& self, int64_t from, std::optional<int64_t> to, OptionalGenerator generator) {
  return sampleInPlace(
      "aten::random_.from", self, generator,
      [from, to](Tensor& self, const Generator& engine) { at::cpu::random_(self, from, to, engine); });
}

Tensor& exponential(Tensor& self, double lambd, OptionalGenerator generator) {
  return sampleInPlace(
      "aten::exponential_", self, generator,
      [lambd](Tensor& self, const Generator& engine) { at::cpu::exponential_(self, lambd, engine); });
}

Tensor& logNormal(Tensor& self, double mean, double stddev, OptionalGenerator generator) {
  return sampleInPlace(
      "aten::log_normal_", self, generator,
      [mean, stddev](Tensor& self, const Generator& engine) { at::cpu::log_normal_(self, mean, stddev, engine); });
}

Tensor& cauchy(Tensor& self, double median, double sigma, OptionalGenerator generator) {
  return sampleInPlace(
      "aten::cauchy_", self, generator,
      [median, sigma](Tensor& self, const Generator& engine) { at::cpu::cauchy_(self, median, sigma, engine); });
}

Tensor& geometric(Tensor& self, double p, OptionalGenerator generator) {
  return sampleInPlace(
      "aten::geometric_", self, generator,
      [p](Tensor& self, const Generator& engine) { at::cpu::geometric_(self, p, engine); });
}

// normal(mean, std) with tensor parameters. The functional output is
// contiguous, with the broadcast shape and the dtype of the tensor parameters,
// as on the CPU; an out= tensor takes the shape shape() gives after
// validation. Each variant passes sample(generator, out, tensor parameters...);
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
  NativeCall call(name, parameters..., out);
  const Tensor& first = std::get<0>(std::tie(parameters...));
  Tensor probe = hostProbe(out.defined() ? out : first);
  sample(scratchGenerator(), probe, hostProbe(parameters)...);
  if (out.defined()) {
    at::native::resize_output(out, shape());
  } else {
    out = at::empty(shape(), first.options());
  }
  call.launch([sample](Tensor out, const Generator& engine, const auto&... parameters) {
    sample(engine, out, parameters...);
  }, out, kernelEngine(generator, call.device()), parameters...);
  return out;
}

Tensor normalTensorFloat(const Tensor& mean, double stddev, OptionalGenerator generator) {
  return normalWithTensors(
      "aten::normal.Tensor_float", generator,
      [stddev](const Generator& engine, Tensor& out, const Tensor& mean) {
        at::cpu::normal_outf(mean, stddev, engine, out);
      },
      [&] { return normalShape(mean); }, Tensor(), mean);
}

Tensor& normalTensorFloatOut(const Tensor& mean, double stddev, OptionalGenerator generator, Tensor& out) {
  normalWithTensors(
      "aten::normal.Tensor_float_out", generator,
      [stddev](const Generator& engine, Tensor& out, const Tensor& mean) {
        at::cpu::normal_outf(mean, stddev, engine, out);
      },
      // The CPU broadcasts the mean with the output's current shape.
      [&] { return at::infer_size_dimvector(mean.sizes(), out.sizes()); }, out, mean);
  return out;
}

Tensor normalFloatTensor(double mean, const Tensor& stddev, OptionalGenerator generator) {
  return normalWithTensors(
      "aten::normal.float_Tensor", generator,
      [mean](const Generator& engine, Tensor& out, const Tensor& stddev) {
        at::cpu::normal_outf(mean, stddev, engine, out);
      },
      [&] { return normalShape(stddev); }, Tensor(), stddev);
}

Tensor& normalFloatTensorOut(double mean, const Tensor& stddev, OptionalGenerator generator, Tensor& out) {
  normalWithTensors(
      "aten::normal.float_Tensor_out", generator,
      [mean](const Generator& engine, Tensor& out, const Tensor& stddev) {
        at::cpu::normal_outf(mean, stddev, engine, out);
      },
      [&] { return normalShape(stddev); }, out, stddev);
  return out;
}

Tensor normalTensorTensor(const Tensor& mean, const Tensor& stddev, OptionalGenerator generator) {
  return normalWithTensors(
      "aten::normal.Tensor_Tensor", generator,
      [](const Generator& engine, Tensor& out, const Tensor& mean, const Tensor& stddev) {
        at::cpu::normal_outf(mean, stddev, engine, out);
      },
      [&] { return normalShape(mean, stddev); }, Tensor(), mean, stddev);
}

Tensor& normalTensorTensorOut(const Tensor& mean, const Tensor& stddev, OptionalGenerator generator, Tensor& out) {
  normalWithTensors(
      "aten::normal.Tensor_Tensor_out", generator,
      [](const Generator& engine, Tensor& out, const Tensor& mean, const Tensor& stddev) {
        at::cpu::normal_outf(mean, stddev, engine, out);
      },
      [&] { return normalShape(mean, stddev); }, out, mean, stddev);
  return out;
}

// ATen's CPU checks, in its order (the CPU kernel runs them before it
// samples, so a host probe would have to sample a whole distribution).
void checkMultinomial(const Tensor& self, int64_t num_samples, bool replacement) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(num_samples > 0, "cannot sample n_sample <= 0 samples");
  TORCH_CHECK(replacement || num_samples <= self.size(-1),
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  constexpr int64_t kFloat32MaxConsecutiveInt = int64_t{1} << 24;
  TORCH_CHECK(self.size(-1) <= kFloat32MaxConsecutiveInt, "number of categories cannot exceed 2^24");
}

at::DimVector multinomialShape(const Tensor& self, int64_t num_samples) {
  return self.dim() == 1 ? at::DimVector{num_samples} : at::DimVector{self.size(0), num_samples};
}

// An invalid distribution (negative, infinite or all-zero weights) is found
// by the kernel, on the stream.
Tensor& multinomialOut(const Tensor& self, int64_t num_samples, bool replacement, OptionalGenerator generator,
                       Tensor& out) {
  NativeCall call("aten::multinomial.out", self, out);
  checkMultinomial(self, num_samples, replacement);
  at::native::resize_output(out, multinomialShape(self, num_samples));
  call.launch([num_samples, replacement](const Tensor& self, Tensor out, const Generator& engine) {
    at::cpu::multinomial_outf(self, num_samples, replacement, engine, out);
  }, self, out, kernelEngine(generator, call.device()));
  return out;
}

Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement, OptionalGenerator generator) {
  Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return multinomialOut(self, num_samples, replacement, std::move(generator), out);
}

Tensor& randpermOut(int64_t n, OptionalGenerator generator, Tensor& out) {
  NativeCall call("aten::randperm.generator_out", out);
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  at::native::check_supported_max_int_with_precision(n, hostProbe(out));
  at::native::resize_output(out, {n});
  call.launch([n](Tensor out, const Generator& engine) { at::cpu::randperm_outf(n, engine, out); }, out,
              kernelEngine(generator, call.device()));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("uniform_", TORCH_FN(uniform));
  m.impl("normal_", TORCH_FN(normalInPlace));
  m.impl("bernoulli_.float", TORCH_FN(bernoulliFloat));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulliTensor));
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
