// The fallback's synchronous path: operators whose outputs depend on the data
// (nonzero, unique, masked_select, ...), operators returning non-tensors
// (equal, is_nonzero, ...), operators with a sparse argument or result, and
// operators whose Meta kernel cannot stand in for the CPU's (Fallback.cpp
// says which and why). The CPU kernel still runs on the stream's worker over
// device memory; the caller waits for it, then turns what it returned into
// device tensors: arguments it aliases, views of their storages, or new
// device memory that a device kernel fills with a host result.
#include "FallbackPaths.h"

#include "KernelLaunch.h"
#include "Resize.h"
#include "SparseMembers.h"

#include "../core/SyncDebug.h"

#include <ATen/ops/empty.h>
#include <c10/core/TensorImpl.h>

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torch_mydev::fallback {

namespace {

// Like forEachTensor, with sparse tensors visited as their strided members.
template <typename F>
void forEachStridedTensor(const c10::IValue& value, F&& visit) {
  forEachTensor(value, [&](const at::Tensor& tensor) {
    if (tensor.defined() && isSparseLayout(tensor.layout())) {
      for (const at::Tensor& member : sparseMembers(tensor)) {
        visit(member);
      }
    } else {
      visit(tensor);
    }
  });
}

// The device storages a tensor returned by the synchronous CPU call still
// aliases (nullptr: host memory): its own, or its members' if it is sparse.
struct ResultBases {
  void* base = nullptr;
  std::vector<void*> members;
};

// The CPU key whose kernel takes these arguments: a compressed sparse
// argument selects SparseCsrCPU, a COO one SparseCPU (the dispatcher's order).
c10::DispatchKey cpuKernelKey(const torch::jit::Stack& cpu_arguments) {
  c10::DispatchKey key = c10::DispatchKey::CPU;
  for (const c10::IValue& value : cpu_arguments) {
    forEachTensor(value, [&](const at::Tensor& tensor) {
      if (!tensor.defined() || tensor.layout() == c10::kStrided) {
        return;
      }
      if (tensor.layout() == c10::kSparse && key == c10::DispatchKey::CPU) {
        key = c10::DispatchKey::SparseCPU;
      } else if (isSparseLayout(tensor.layout()) && tensor.layout() != c10::kSparse) {
        key = c10::DispatchKey::SparseCsrCPU;
      }
    });
  }
  return key;
}

// What the synchronous CPU call produced, handed from the worker to the caller.
struct SyncOutcome {
  std::exception_ptr error;
  torch::jit::Stack returns;
  std::vector<std::vector<ResultBases>> bases;  // per return, per list element
};

ResultBases resultBases(const at::Tensor& cpu, const KernelMemory& memory) {
  ResultBases bases;
  if (cpu.defined() && isSparseLayout(cpu.layout())) {
    for (const at::Tensor& member : sparseMembers(cpu)) {
      bases.members.push_back(memory.deviceBaseOf(member));
    }
  } else {
    bases.base = memory.deviceBaseOf(cpu);
  }
  return bases;
}

// Copies a host result into a device tensor of its shape, on the stream.
void copyHostResultInto(const at::Tensor& target, const at::Tensor& cpu, const MydevStream& stream) {
  launchKernel("mydev::adopt_host_result", stream, [ref = describe(target), cpu] {
    KernelMemory memory;
    memory.map(ref).copy_(cpu);
  });
}

// Copies a host storage's bytes to the start of a device storage at least as
// large, on the stream.
void copyHostStorageInto(const c10::Storage& device_storage, const c10::Storage& cpu, const MydevStream& stream) {
  const auto nbytes = static_cast<int64_t>(cpu.nbytes());
  const at::Tensor cpu_bytes = at::empty({0}, at::kByte).set_(cpu, 0, {nbytes}, {1});
  copyHostResultInto(deviceView(device_storage, at::empty({nbytes}, at::TensorOptions(at::kByte).device(at::kMeta))),
                     cpu_bytes, stream);
}

// A new device storage holding a host storage's bytes.
c10::Storage deviceCopyOfStorage(const c10::Storage& cpu, c10::DeviceIndex device, const MydevStream& stream) {
  const at::Tensor device_bytes = at::empty({static_cast<int64_t>(cpu.nbytes())},
                                            at::TensorOptions(at::kByte).device(c10::DeviceType::PrivateUse1, device));
  copyHostStorageInto(device_bytes.storage(), cpu, stream);
  return device_bytes.storage();
}

// Turns a tensor the synchronous CPU call returned into the device tensor to
// return: an argument it aliases (updated in place for out= arguments), a view
// of an argument's device storage, or new device memory holding a host result.
// A result that is a view with gaps or overlaps (LAPACK's column-major lstsq
// solution, expanded results) brings its whole storage along, so that the
// device tensor has the CPU's geometry, by which later kernels choose their
// paths. A sparse result is adopted member by member.
at::Tensor adoptSyncResult(const at::Tensor& cpu, const ResultBases& bases, const at::Tensor* mutated_argument,
                           c10::ArrayRef<c10::IValue> args, c10::DeviceIndex device, const MydevStream& stream,
                           const std::string& name) {
  if (!cpu.defined()) {
    return cpu;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(!cpu.is_quantized(), name, " returns a quantized tensor (", cpu.toString(),
                              "), and mydev tensors are not quantized");
  TORCH_CHECK_NOT_IMPLEMENTED(cpu.layout() == c10::kStrided || isSparseLayout(cpu.layout()), name,
                              " returns a tensor of layout ", cpu.layout(), ", and mydev tensors are strided or sparse");
  if (isSparseLayout(cpu.layout())) {
    const std::vector<at::Tensor> cpu_members = sparseMembers(cpu);
    std::vector<at::Tensor> members;
    for (size_t k = 0; k < cpu_members.size(); ++k) {
      members.push_back(
          adoptSyncResult(cpu_members[k], ResultBases{bases.members[k], {}}, nullptr, args, device, stream, name));
    }
    if (mutated_argument != nullptr) {
      replaceSparseMembers(*mutated_argument, sparseGeometry(cpu), members);
      return *mutated_argument;
    }
    return assembleSparse(sparseGeometry(cpu), members);
  }
  void* device_base = bases.base;
  if (mutated_argument != nullptr) {
    at::Tensor target = *mutated_argument;
    if (device_base != nullptr && device_base == target.storage().data()) {
      target.unsafeGetTensorImpl()->set_sizes_and_strides(cpu.sizes(), cpu.strides(), cpu.storage_offset());
      ensureStorageFits(target);
      return target;
    }
    if (!cpu.is_non_overlapping_and_dense()) {
      // The CPU kernel grew the output's storage (its old bytes copied along)
      // and made the output a view with gaps into it, as LAPACK's column-major
      // solutions are: the device storage grows and takes all of those bytes,
      // so that the output and any other view of the storage read what they
      // read on the CPU.
      if (target.storage().nbytes() < cpu.storage().nbytes()) {
        resizeStorageBytes(target.storage(), cpu.storage().nbytes());
      }
      target.unsafeGetTensorImpl()->set_sizes_and_strides(cpu.sizes(), cpu.strides(), cpu.storage_offset());
      copyHostStorageInto(target.storage(), cpu.storage(), stream);
      return target;
    }
    target.resize_(cpu.sizes());
    copyHostResultInto(target, cpu, stream);
    return target;
  } else if (device_base != nullptr) {
    for (const c10::IValue& value : args) {
      std::optional<at::Tensor> match;
      forEachStridedTensor(value, [&](const at::Tensor& tensor) {
        if (!match.has_value() && isMydev(tensor) && tensor.storage().data() == device_base) {
          match = tensor;
        }
      });
      if (match.has_value()) {
        if (match->sizes() == cpu.sizes() && match->strides() == cpu.strides() &&
            match->storage_offset() == cpu.storage_offset() && match->dtype() == cpu.dtype()) {
          return *match;
        }
        return deviceView(match->storage(), cpu);
      }
    }
  }
  if (!cpu.is_non_overlapping_and_dense()) {
    return deviceView(deviceCopyOfStorage(cpu.storage(), device, stream), cpu);
  }
  const at::Tensor target = emptyDevice(cpu, device);
  copyHostResultInto(target, cpu, stream);
  return target;
}

}  // namespace

void runSynchronously(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::DeviceIndex device,
                      const MydevStream& stream, const std::string& name, bool cuda_waits_too) {
  const c10::FunctionSchema& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const auto args = torch::jit::last(*stack, num_args);
  if (cuda_waits_too) {
    reportHostWait((name + ", which runs synchronously (its results are read on the host)").c_str());
  }
  auto outcome = std::make_shared<SyncOutcome>();
  launchKernel(name.c_str(), stream, [op, slots = argumentSlots(schema, args, device), outcome] {
    KernelMemory memory;
    try {
      torch::jit::Stack cpu = cpuStack(slots, memory, /*resizable_outputs=*/true);
      op.redispatchBoxed(c10::DispatchKeySet(cpuKernelKey(cpu)), &cpu);
      for (const c10::IValue& value : cpu) {
        std::vector<ResultBases> bases;
        if (value.isTensor()) {
          bases.push_back(resultBases(value.toTensor(), memory));
        } else if (value.isTensorList()) {
          for (const at::Tensor& tensor : value.toTensorVector()) {
            bases.push_back(resultBases(tensor, memory));
          }
        }
        outcome->bases.push_back(std::move(bases));
      }
      outcome->returns = std::move(cpu);
    } catch (...) {
      outcome->error = std::current_exception();
    }
  });
  stream.synchronize();  // also issues the kernel's warnings, at this call
  if (outcome->error) {
    std::rethrow_exception(outcome->error);
  }

  std::vector<c10::IValue> results;
  for (size_t r = 0; r < outcome->returns.size(); ++r) {
    const c10::IValue& value = outcome->returns[r];
    const at::Tensor* mutated_argument = nullptr;
    const c10::AliasInfo* alias = schema.returns()[r].alias_info();
    if (alias != nullptr && alias->isWrite()) {
      for (size_t i = 0; i < num_args; ++i) {
        const c10::AliasInfo* arg_alias = schema.arguments()[i].alias_info();
        if (arg_alias != nullptr && arg_alias->beforeSets() == alias->beforeSets() && args[i].isTensor()) {
          mutated_argument = &args[i].toTensor();
        }
      }
    }
    if (value.isTensor()) {
      results.emplace_back(adoptSyncResult(value.toTensor(), outcome->bases[r][0], mutated_argument, args,
                                           device, stream, name));
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> list;
      const auto tensors = value.toTensorVector();
      for (size_t k = 0; k < tensors.size(); ++k) {
        list.push_back(adoptSyncResult(tensors[k], outcome->bases[r][k], nullptr, args, device, stream, name));
      }
      results.emplace_back(std::move(list));
    } else {
      results.push_back(value);
    }
  }
  torch::jit::drop(*stack, num_args);
  for (c10::IValue& result : results) {
    stack->push_back(std::move(result));
  }
}

}  // namespace torch_mydev::fallback
