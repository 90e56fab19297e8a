// aten::_has_compatible_shallow_copy_type for mydev: whether one tensor's
// TensorImpl may take over another's data (`tensor.data = other`, which
// Module.to() and Module.cuda()-style conversions use to move parameters).
//
// c10's TensorImpl answers yes for two dense tensors of the built-in backends
// (CPU, CUDA, XPU, ...) and leaves PrivateUse1 to this operator. Without it,
// Module.to("mydev") replaces every parameter with a new Parameter object: an
// optimizer built before the move keeps updating the old ones, and a weight
// two modules share (tied embeddings) becomes two weights that drift apart.
// Dense mydev tensors are plain TensorImpls, as CPU and CUDA tensors are, so
// taking over metadata and storage across them is the same operation.
#include <ATen/core/Tensor.h>
#include <torch/library.h>

namespace torch_mydev {

namespace {

bool isDenseCpuOrMydev(const at::Tensor& tensor) {
  const c10::DispatchKeySet keys = tensor.key_set();
  return keys.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) &&
      (keys.has_backend(c10::BackendComponent::CPUBit) || keys.has_backend(c10::BackendComponent::PrivateUse1Bit));
}

bool hasCompatibleShallowCopyType(const at::Tensor& self, const at::Tensor& from) {
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) ||
      (isDenseCpuOrMydev(self) && isDenseCpuOrMydev(from));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(hasCompatibleShallowCopyType));
}

}  // namespace torch_mydev
