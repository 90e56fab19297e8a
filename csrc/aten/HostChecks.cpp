#include "HostChecks.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <c10/core/ScalarType.h>
#include <c10/core/WrapDimMinimal.h>
#include <c10/util/Exception.h>

#include <unordered_map>

namespace torch_mydev {

namespace {

using Arguments = c10::ArrayRef<c10::IValue>;
using Check = void (*)(Arguments);

bool isHalfFloatOrDouble(c10::ScalarType dtype) {
  return dtype == c10::kFloat || dtype == c10::kDouble || dtype == c10::kHalf;
}

// complex.out(Tensor real, Tensor imag, *, Tensor(a!) out): ATen's complex_check_dtype.
void checkComplexOut(Arguments args) {
  const auto real = args[0].toTensor().scalar_type();
  const auto imag = args[1].toTensor().scalar_type();
  const auto out = args[2].toTensor().scalar_type();
  TORCH_CHECK(isHalfFloatOrDouble(real) && isHalfFloatOrDouble(imag),
              "Expected both inputs to be Half, Float or Double tensors but got ", real, " and ", imag);
  TORCH_CHECK(real == imag, "Expected object of scalar type ", real, " but got scalar type ", imag,
              " for second argument");
  TORCH_CHECK(out == c10::toComplexType(real), "Expected object of scalar type ", c10::toComplexType(real),
              " but got scalar type ", out, " for argument 'out'");
}

// masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source); the mask's dtype is checked by the CPU kernel.
void checkMaskedScatter(Arguments args) {
  const at::Tensor& self = args[0].toTensor();
  const at::Tensor& mask = args[1].toTensor();
  const at::Tensor& source = args[2].toTensor();
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter: expected self and source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
}

// masked_select.out(Tensor self, Tensor mask, *, Tensor(a!) out)
void checkMaskedSelectOut(Arguments args) {
  const at::Tensor& self = args[0].toTensor();
  const at::Tensor& mask = args[1].toTensor();
  const at::Tensor& out = args[2].toTensor();
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "masked_select(): self and result must have the same scalar type");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
}

// take.out(Tensor self, Tensor index, *, Tensor(a!) out): the overlap checks, made before the output is resized.
void checkTakeOut(Arguments args) {
  const at::Tensor& self = args[0].toTensor();
  const at::Tensor& index = args[1].toTensor();
  const at::Tensor& out = args[2].toTensor();
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, self);
}

// bernoulli.out(Tensor self, *, Generator? generator=None, Tensor(a!) out): the output, resized to self's shape
// (which keeps an output of that shape as it is), must not overlap itself.
void checkBernoulliOut(Arguments args) {
  const at::Tensor& self = args[0].toTensor();
  const at::Tensor& out = args[2].toTensor();
  if (out.sizes() == self.sizes()) {
    at::assert_no_internal_overlap(out);
  }
}

// kthvalue.values(Tensor self, int k, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices)
void checkKthvalueValues(Arguments args) {
  const at::Tensor& self = args[0].toTensor();
  const int64_t k = args[1].toInt();
  const int64_t dim = c10::maybe_wrap_dim(args[2].toInt(), self.dim());
  const int64_t slice_size = self.dim() == 0 ? 1 : self.size(dim);
  at::native::zero_numel_check_dims(self, dim, "kthvalue()");
  TORCH_CHECK(k >= 1 && k <= slice_size, "kthvalue(): selected number k out of range for dimension ", dim);
  at::assert_no_overlap(self, args[4].toTensor());
}

const std::unordered_map<c10::OperatorName, Check>& checks() {
  static const auto* table = new std::unordered_map<c10::OperatorName, Check>{
      {{"aten::complex", "out"}, &checkComplexOut},
      {{"aten::masked_scatter_", ""}, &checkMaskedScatter},
      {{"aten::masked_select", "out"}, &checkMaskedSelectOut},
      {{"aten::take", "out"}, &checkTakeOut},
      {{"aten::bernoulli", "out"}, &checkBernoulliOut},
      {{"aten::kthvalue", "values"}, &checkKthvalueValues},
  };
  return *table;
}

}  // namespace

void checkOnHost(const c10::FunctionSchema& schema, Arguments args) {
  const auto found = checks().find(schema.operator_name());
  if (found != checks().end()) {
    found->second(args);
  }
}

}  // namespace torch_mydev
