#include "DeviceTensorRef.h"

#include "../core/Exception.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/TensorImpl.h>

namespace torch_mydev {

namespace {

// A view outlives a shrinking of its storage (untyped_storage().resize_(0),
// as FSDP frees parameters): its kernel would read past the storage's end, a
// fault that ends the process. Refused at the launch instead.
void checkWithinStorage(const at::Tensor& tensor, const c10::Storage& storage) {
  const size_t needed =
      at::detail::computeStorageNbytes(tensor.sizes(), tensor.strides(), tensor.itemsize(), tensor.storage_offset());
  TORCH_CHECK(needed <= storage.nbytes(), "mydev: a tensor of sizes ", tensor.sizes(), ", strides ",
              tensor.strides(), " and storage offset ", tensor.storage_offset(), " needs ", needed,
              " bytes of its storage, which has ", storage.nbytes(), " (resized smaller after the tensor was made)");
}

// Fills `ref` in place: a kernel launch describes every tensor argument, and
// building a DeviceTensorRef to copy it would copy its shape vectors twice.
void describeInto(const at::Tensor& tensor, DeviceTensorRef& ref) {
  const c10::Storage& storage = tensor.storage();
  checkWithinStorage(tensor, storage);
  ref.storage_base = const_cast<void*>(storage.data());
  ref.storage_nbytes = storage.nbytes();
  ref.storage_offset = tensor.storage_offset();
  ref.sizes.assign(tensor.sizes().begin(), tensor.sizes().end());
  ref.strides.assign(tensor.strides().begin(), tensor.strides().end());
  ref.dtype = tensor.scalar_type();
  ref.is_conj = tensor.is_conj();
  ref.is_neg = tensor.is_neg();
}

}  // namespace

DeviceTensorRef describe(const at::Tensor& tensor) {
  DeviceTensorRef ref;
  describeInto(tensor, ref);
  return ref;
}

CapturedTensor captureTensor(const at::Tensor& tensor) {
  CapturedTensor captured;
  captured.defined = tensor.defined();
  if (!captured.defined) {
    return captured;
  }
  captured.requires_grad = tensor.requires_grad();
  if (tensor.device().type() == c10::DeviceType::PrivateUse1) {
    captured.on_device = true;
    if (isSparseLayout(tensor.layout())) {
      auto sparse = std::make_shared<CapturedSparseTensor>();
      sparse->geometry = sparseGeometry(tensor);
      for (const at::Tensor& member : sparseMembers(tensor)) {
        sparse->members.push_back(describe(member));
      }
      captured.sparse = std::move(sparse);
    } else {
      describeInto(tensor, captured.ref);
    }
  } else {
    // A Python number wrapped by the argument parser is private to this call;
    // any other host tensor may change after the launch, so the kernel gets a copy.
    captured.host = tensor.unsafeGetTensorImpl()->is_wrapped_number() ? tensor : tensor.clone();
  }
  return captured;
}

at::Tensor KernelMemory::use(const CapturedTensor& captured, bool resizable) {
  if (!captured.defined) {
    return at::Tensor();
  }
  if (!captured.on_device) {
    return captured.host;
  }
  at::Tensor alias;
  if (captured.sparse != nullptr) {
    std::vector<at::Tensor> members;
    for (const DeviceTensorRef& member : captured.sparse->members) {
      members.push_back(map(member, resizable));
    }
    alias = assembleSparse(captured.sparse->geometry, members);
  } else {
    alias = map(captured.ref, resizable);
  }
  if (captured.requires_grad) {
    alias.set_requires_grad(true);
  }
  return alias;
}

at::Tensor KernelMemory::map(const DeviceTensorRef& ref, bool resizable) {
  c10::Storage storage;
  // Storages without bytes have no device address; two of them are distinct
  // storages, not one shared one.
  if (!resizable && ref.storage_base != nullptr) {
    for (const Mapping& mapping : mappings_) {
      if (mapping.shared && mapping.device_base == ref.storage_base) {
        storage = mapping.storage;
        break;
      }
    }
  }
  if (!storage) {
    void* host = nullptr;
    if (ref.storage_base != nullptr) {
      MYDEV_CHECK(mydevKernelMapPointer(ref.storage_base, &host));
    }
    storage = c10::Storage(c10::Storage::use_byte_size_t(), ref.storage_nbytes,
                           c10::DataPtr(host, c10::Device(c10::DeviceType::CPU)),
                           resizable ? c10::GetCPUAllocator() : nullptr, resizable);
    mappings_.push_back(Mapping{ref.storage_base, host, storage, !resizable});
  }
  auto tensor = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                         c10::scalarTypeToTypeMeta(ref.dtype));
  tensor.unsafeGetTensorImpl()->set_sizes_and_strides(ref.sizes, ref.strides, ref.storage_offset);
  if (ref.is_conj) {
    tensor._set_conj(true);
  }
  if (ref.is_neg) {
    tensor._set_neg(true);
  }
  return tensor;
}

void settleViewBits(const at::Tensor& alias, bool conj, bool neg) {
  if (!alias.defined() || (alias.is_conj() == conj && alias.is_neg() == neg)) {
    return;
  }
  const at::Tensor value = alias.resolve_conj().resolve_neg().clone();
  at::Tensor target = alias;
  target._set_conj(conj);
  target._set_neg(neg);
  target.copy_(value);
}

void* KernelMemory::deviceBaseOf(const at::Tensor& cpu_tensor) const {
  if (!cpu_tensor.defined() || !cpu_tensor.has_storage()) {
    return nullptr;
  }
  const c10::StorageImpl* impl = cpu_tensor.storage().unsafeGetStorageImpl();
  for (const Mapping& mapping : mappings_) {
    if (mapping.storage.unsafeGetStorageImpl() == impl && impl->data() == mapping.host_base) {
      return mapping.device_base;
    }
  }
  return nullptr;
}

}  // namespace torch_mydev
