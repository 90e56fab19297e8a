// What a kernel needs to know about a tensor of device memory, without owning
// it: where its storage starts, its view geometry and dtype. Inside a kernel,
// KernelMemory turns refs into CPU tensors aliasing the same device memory
// (through mydevKernelMapPointer), so ATen's CPU kernels can run over device
// memory with no copy. Refs that share a storage map to one CPU storage, so
// aliasing between arguments is preserved.
#pragma once

#include "SparseMembers.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>
#include <c10/util/SmallVector.h>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace torch_mydev {

struct DeviceTensorRef {
  void* storage_base = nullptr;  // device pointer
  size_t storage_nbytes = 0;
  int64_t storage_offset = 0;
  c10::SmallVector<int64_t, 5> sizes;
  c10::SmallVector<int64_t, 5> strides;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  bool is_conj = false;
  bool is_neg = false;
};

DeviceTensorRef describe(const at::Tensor& tensor);

// A tensor argument as a kernel closure owns it: a device tensor as its
// DeviceTensorRef (never an owning device tensor: its destructor could need
// the GIL on the worker), a sparse device tensor as its geometry and its
// members' refs, a CPU tensor as a private copy.
struct CapturedSparseTensor {
  SparseGeometry geometry;
  std::vector<DeviceTensorRef> members;
};

// Sized for the common case, a dense device tensor: every native launch
// builds a few of these and the stream worker reads them from another core,
// so the rare sparse description lives behind a pointer.
struct CapturedTensor {
  bool defined = false;
  bool on_device = false;
  // CPU kernels read it: sparse.mm's amax/amin forward records the argmax for
  // its backward only when an input requires grad.
  bool requires_grad = false;
  DeviceTensorRef ref;
  std::shared_ptr<const CapturedSparseTensor> sparse;
  at::Tensor host;
};

CapturedTensor captureTensor(const at::Tensor& tensor);

// Only usable while a kernel runs on a stream worker: a CPU kernel may set
// the conjugate or negative bit of an output alias (linalg_lu_solve with
// left=False returns a conjugate view), which the device tensor sharing the
// memory does not see. This rewrites the memory so that the device tensor,
// with bits `conj`/`neg`, reads the value the alias holds, and resets the
// alias's bits to those.
void settleViewBits(const at::Tensor& alias, bool conj, bool neg);

// Only usable while a kernel runs on a stream worker.
class KernelMemory {
 public:
  // `resizable` lets a CPU kernel reallocate the alias (its data then moves to
  // host memory, which the caller must detect and copy back).
  at::Tensor map(const DeviceTensorRef& ref, bool resizable = false);
  // The CPU tensor a captured argument stands for (undefined if it was); a
  // sparse one is assembled over its mapped members.
  at::Tensor use(const CapturedTensor& captured, bool resizable = false);
  // The device storage that a CPU tensor produced inside the kernel still
  // aliases, or nullptr if its data lives in host memory.
  void* deviceBaseOf(const at::Tensor& cpu_tensor) const;

 private:
  struct Mapping {
    void* device_base;
    void* host_base;
    c10::Storage storage;
    bool shared;
  };
  // Inline room for the storages of a typical kernel: no allocation per launch.
  c10::SmallVector<Mapping, 4> mappings_;
};

}  // namespace torch_mydev
