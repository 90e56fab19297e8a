// The generic kernel tier: every ATen operator without a mydev kernel of its
// own arrives here (a boxed fallback on the PrivateUse1 key) and runs ATen's
// CPU kernel over device memory, in place, on the current stream's worker.
//
// Asynchronous path (most operators): the operator's Meta kernel runs first on
// the caller's thread, over meta mirrors of the arguments. That validates the
// call (shape and dtype errors raise here, synchronously, like on CPU) and
// gives every output's geometry. Outputs are allocated on the device, out=
// arguments are resized, views are built over the input's device storage, and
// the CPU kernel is queued on the stream over aliases of device memory.
//
// Synchronous path (FallbackSynchronous.cpp): operators whose outputs depend
// on the data, operators returning non-tensors, operators with a sparse
// argument or result (SparseMembers.h; this fallback also serves the sparse
// keys), and those whose Meta kernel cannot stand in for the CPU's (below).
//
// Random operators take either path; their generator argument becomes a CPU
// generator seeded from one Philox reservation of the device generator
// (core/Generator.h), so that their numbers depend only on the seed and the
// launch order.
#include "Fallback.h"

#include "DeviceTensorRef.h"
#include "DtypeProbe.h"
#include "DtypeSignatures.h"
#include "FallbackPaths.h"
#include "FallbackPolicy.h"
#include "HostChecks.h"
#include "HostResults.h"
#include "KernelLaunch.h"
#include "OperatorDevice.h"
#include "Resize.h"
#include "SparseMembers.h"

#include "../core/Device.h"
#include "../core/Generator.h"
#include "../core/KernelWarnings.h"
#include "../core/Stream.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/TensorImpl.h>
#include <torch/library.h>

#include <exception>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace torch_mydev::fallback {

namespace {

template <typename Predicate>
bool anyArgumentTensor(c10::ArrayRef<c10::IValue> args, Predicate&& predicate) {
  bool found = false;
  for (const c10::IValue& value : args) {
    forEachTensor(value, [&](const at::Tensor& tensor) { found = found || predicate(tensor); });
  }
  return found;
}

// The type of an argument's values: T of T, T? and T[].
c10::TypeKind valueKind(const c10::Argument& argument) {
  c10::TypePtr type = argument.real_type();
  if (const auto optional = type->cast<c10::OptionalType>()) {
    type = optional->getElementType();
  }
  if (const auto list = type->cast<c10::ListType>()) {
    type = list->getElementType();
  }
  return type->kind();
}

// Whether an int argument's value may pick the CPU code, by its name: a dim, a
// reduction or a number of decimals may; a position, a size or a count
// (narrow's start, topk's k) does not, and counting each of its values would
// make a loop over it a loop over new signatures, each first launch waiting
// for its kernel where the probe's stand-ins refuse the value.
bool intPicksCode(const c10::Argument& argument) {
  const std::string& name = argument.name();
  return name.find("dim") != std::string::npos || name == "reduction" || name == "decimals";
}

// Adds to a launch's signature what a boxed argument tells about the CPU code
// its kernel runs (DtypeSignatures.h).
void addToSignature(LaunchSignature& signature, const c10::IValue& value, const c10::Argument& argument) {
  const bool plain_int = valueKind(argument) == c10::TypeKind::IntType;
  if (value.isNone()) {
    signature.addAbsent();
  } else if (value.isString()) {
    signature.addChoice(value.toStringView());
  } else if (value.isIntList()) {
    if (!plain_int || intPicksCode(argument)) {
      signature.addChoices(value.toDimVector());
    } else {
      signature.addChoice(static_cast<int64_t>(value.toIntList().size()));
    }
  } else if (value.isInt() && plain_int) {
    signature.addChoice(intPicksCode(argument) ? value.toInt() : LaunchSignature::kLargeChoice);
  } else if (value.isScalar()) {
    // A Scalar, a float, a bool, or a dtype, layout or memory format passed as an int.
    signature.add(value.toScalar());
  } else {
    forEachTensor(value, [&](const at::Tensor& tensor) { signature.add(tensor); });
  }
}

bool hasSparseArgument(c10::ArrayRef<c10::IValue> args) {
  return anyArgumentTensor(
      args, [](const at::Tensor& tensor) { return tensor.defined() && isSparseLayout(tensor.layout()); });
}

// A Python value among the results (equal, is_nonzero, ...): read on the host.
bool returnsNonTensor(const c10::FunctionSchema& schema) {
  for (const c10::Argument& ret : schema.returns()) {
    const c10::TypePtr& type = ret.type();
    if (!type->isSubtypeOf(*c10::OptionalType::ofTensor()) && !type->isSubtypeOf(*c10::ListType::ofTensors())) {
      return true;
    }
  }
  return false;
}

// Whether CUDA's host waits for this operator too: its output's shape or
// value is read on the host (the tags of nonzero, unique, masked_select,
// boolean indexing, item, equal, ...; a non-tensor result), it is sparse
// (sizes follow the data), or CUDA's own kernel reads the device (histc's
// range of a constant input, linear algebra's LAPACK info).
bool cudaWaitsToo(const c10::OperatorHandle& op, bool sparse) {
  static const std::unordered_set<std::string> reading_on_the_host = {"aten::histc", "aten::linalg_lstsq",
                                                                      "aten::linalg_eig"};
  return sparse || returnsNonTensor(op.schema()) || op.hasTag(at::Tag::dynamic_output_shape) ||
      op.hasTag(at::Tag::data_dependent_output) || reading_on_the_host.count(op.schema().name()) > 0;
}

bool isOptionalTensorList(const c10::TypePtr& type) {
  return type->isSubtypeOf(*c10::ListType::ofOptionalTensors()) &&
      !type->isSubtypeOf(*c10::ListType::ofTensors());
}

std::string kernelName(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

c10::DeviceIndex operatorDevice(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args,
                                 const std::string& name) {
  OperatorDevice device;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    const bool written = alias != nullptr && alias->isWrite();
    const bool accepts_host_tensors = isOptionalTensorList(schema.arguments()[i].type());
    forEachTensor(args[i], [&](const at::Tensor& tensor) {
      if (written) {
        device.addOnDevice(tensor);
      } else {
        device.add(tensor, accepts_host_tensors);
      }
    });
    if (args[i].isDevice()) {
      device.add(args[i].toDevice());
    }
  }
  return device.resolve(name.c_str());
}

bool isGeneratorArgument(const c10::Argument& argument) {
  return argument.type()->isSubtypeOf(*c10::OptionalType::create(c10::GeneratorType::get()));
}

// Operators whose Meta kernel predicts outputs that ATen's CPU kernel does not
// produce (the async path would fail them loudly at run time): embedding bag
// shapes; batch norm's saved statistics, which Meta sizes even in evaluation
// and types float32 for reduced-precision inputs as CUDA does, where the CPU
// returns empty statistics in the input's dtype; the margin losses, 1-element
// for 0-dim inputs with reduction='none' in Meta, 0-dim on the CPU; the
// quantizing operators, float32 in Meta, quantized on the CPU (the synchronous
// path then refuses the quantized result: mydev has no quantized tensors);
// nansum, whose Meta kernel reduces nothing for an empty dim list where the
// CPU reduces everything. And operators whose Meta kernel skips checks the
// CPU kernel makes, so that their errors would arrive late, on the stream:
// nansum's 64-dimension limit, bucketize's 1-D boundaries, searchsorted's
// output dtype, histc's finite range, median's and nanmedian's non-empty
// reduction dimension (found by upstream test_reductions.py), frexp's input
// and output dtypes (test_unary_ufuncs.py). And linalg_lstsq and
// linalg_eig, whose CPU results are LAPACK's column-major buffers (lstsq's
// solution a view of one) where Meta predicts contiguous tensors: with Meta's
// strides, later matrix products took other BLAS paths than on the CPU (2e-5
// apart in lstsq's gradient). And _fft_r2c: for a meta tensor its Meta kernel
// predicts cuFFT's layout, which for a transform over three or more dims is
// not the CPU kernel's (fft.rfftn of a 3x4x5 tensor: strides (4, 1, 12) where
// the CPU returns (12, 3, 1)).
bool metaCannotStandInForCpu(const c10::OperatorName& name) {
  static const std::unordered_set<std::string> names = {
      "aten::nansum",
      "aten::bucketize",
      "aten::searchsorted",
      "aten::histc",
      "aten::median",
      "aten::nanmedian",
      "aten::frexp",
      "aten::quantize_per_tensor",
      "aten::quantize_per_tensor_dynamic",
      "aten::quantize_per_channel",
      "aten::_make_per_tensor_quantized_tensor",
      "aten::_make_per_channel_quantized_tensor",
      "aten::_embedding_bag",
      "aten::_embedding_bag_forward_only",
      "aten::_native_batch_norm_legit",
      "aten::_native_batch_norm_legit_no_training",
      "aten::_batch_norm_with_update",
      "aten::_batch_norm_no_update",
      "aten::multi_margin_loss",
      "aten::multilabel_margin_loss_forward",
      "aten::linalg_lstsq",
      "aten::linalg_eig",
      "aten::_fft_r2c",
  };
  return names.count(name.name) > 0;
}

// max() and min() over no element: the CPU kernel refuses, while their Meta
// kernel returns a 0-dim result, so the error would arrive late, on the stream.
bool reducesNoElementToOne(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  const c10::OperatorName& name = schema.operator_name();
  return (name.name == "aten::max" || name.name == "aten::min") && name.overload_name.empty() &&
      args[0].isTensor() && args[0].toTensor().numel() == 0;
}

bool runsSynchronously(const c10::FunctionSchema& schema) {
  return metaCannotStandInForCpu(schema.operator_name()) || returnsNonTensor(schema);
}

// Meta tensors that mirror device tensors; views of one device storage share
// one meta storage so that meta kernels see the same aliasing.
class MetaMirrors {
 public:
  at::Tensor mirror(const at::Tensor& tensor) {
    const c10::StorageImpl* device_storage = tensor.storage().unsafeGetStorageImpl();
    c10::Storage meta_storage;
    for (const Entry& entry : entries_) {
      if (entry.device_storage.unsafeGetStorageImpl() == device_storage) {
        meta_storage = entry.meta_storage;
        break;
      }
    }
    if (!meta_storage) {
      meta_storage = c10::Storage(c10::Storage::use_byte_size_t(), tensor.storage().nbytes(),
                                  c10::DataPtr(nullptr, c10::Device(c10::DeviceType::Meta)),
                                  c10::GetAllocator(c10::DeviceType::Meta), /*resizable=*/true);
      entries_.push_back(Entry{tensor.storage(), meta_storage});
    }
    auto meta = at::detail::make_tensor<c10::TensorImpl>(std::move(meta_storage),
                                                         c10::DispatchKeySet(c10::DispatchKey::Meta), tensor.dtype());
    meta.unsafeGetTensorImpl()->set_sizes_and_strides(tensor.sizes(), tensor.strides(), tensor.storage_offset());
    if (tensor.is_conj()) {
      meta._set_conj(true);
    }
    if (tensor.is_neg()) {
      meta._set_neg(true);
    }
    originals_.emplace_back(meta.unsafeGetTensorImpl(), tensor);
    return meta;
  }

  // The device tensor a meta tensor mirrors, if it is one of the mirrors.
  const at::Tensor* originalOf(const at::Tensor& meta) const {
    for (const auto& [impl, original] : originals_) {
      if (impl == meta.unsafeGetTensorImpl()) {
        return &original;
      }
    }
    return nullptr;
  }

  // The device storage behind a meta storage (for views produced by meta kernels).
  const c10::Storage* deviceStorageOf(const at::Tensor& meta) const {
    const c10::StorageImpl* impl = meta.storage().unsafeGetStorageImpl();
    for (const Entry& entry : entries_) {
      if (entry.meta_storage.unsafeGetStorageImpl() == impl) {
        return &entry.device_storage;
      }
    }
    return nullptr;
  }

 private:
  struct Entry {
    c10::Storage device_storage;
    c10::Storage meta_storage;
  };
  std::vector<Entry> entries_;
  std::vector<std::pair<const c10::TensorImpl*, at::Tensor>> originals_;
};

}  // namespace

std::vector<ArgSlot> argumentSlots(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args,
                                   c10::DeviceIndex device) {
  std::vector<ArgSlot> slots(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& value = args[i];
    ArgSlot& slot = slots[i];
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    slot.mutated = alias != nullptr && alias->isWrite();
    if (value.isTensor()) {
      slot.kind = ArgSlot::Kind::Tensor;
      slot.tensors.push_back(captureTensor(value.toTensor()));
    } else if (value.isList() && (value.isTensorList() || isOptionalTensorList(schema.arguments()[i].type()))) {
      slot.kind = value.isTensorList() ? ArgSlot::Kind::TensorList : ArgSlot::Kind::OptionalTensorList;
      for (const c10::IValue& element : value.toListRef()) {
        slot.tensors.push_back(element.isTensor() ? captureTensor(element.toTensor()) : CapturedTensor{});
      }
    } else if (isGeneratorArgument(schema.arguments()[i])) {
      slot.plain = reserveCpuGenerator(
          value.isGenerator() ? std::optional<at::Generator>(value.toGenerator()) : std::nullopt, device);
    } else if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
      slot.plain = c10::Device(c10::DeviceType::CPU);
    } else {
      slot.plain = value;
    }
  }
  return slots;
}

torch::jit::Stack cpuStack(const std::vector<ArgSlot>& slots, KernelMemory& memory, bool resizable_outputs) {
  torch::jit::Stack stack;
  stack.reserve(slots.size());
  for (const ArgSlot& slot : slots) {
    const bool resizable = resizable_outputs && slot.mutated;
    switch (slot.kind) {
      case ArgSlot::Kind::Plain:
        stack.push_back(slot.plain);
        break;
      case ArgSlot::Kind::Tensor: {
        at::Tensor tensor = memory.use(slot.tensors[0], resizable);
        stack.push_back(tensor.defined() ? c10::IValue(std::move(tensor)) : c10::IValue());
        break;
      }
      case ArgSlot::Kind::TensorList: {
        c10::List<at::Tensor> list;
        for (const CapturedTensor& element : slot.tensors) {
          list.push_back(memory.use(element, resizable));
        }
        stack.emplace_back(std::move(list));
        break;
      }
      case ArgSlot::Kind::OptionalTensorList: {
        c10::List<std::optional<at::Tensor>> list;
        for (const CapturedTensor& element : slot.tensors) {
          at::Tensor tensor = memory.use(element, resizable);
          list.push_back(tensor.defined() ? std::optional<at::Tensor>(std::move(tensor)) : std::nullopt);
        }
        stack.emplace_back(std::move(list));
        break;
      }
    }
  }
  return stack;
}

at::Tensor deviceView(const c10::Storage& storage, const at::Tensor& geometry) {
  auto view = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(storage),
                                                       c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                       geometry.dtype());
  view.unsafeGetTensorImpl()->set_sizes_and_strides(geometry.sizes(), geometry.strides(), geometry.storage_offset());
  if (geometry.is_conj()) {
    view._set_conj(true);
  }
  if (geometry.is_neg()) {
    view._set_neg(true);
  }
  return view;
}

at::Tensor emptyDevice(const at::Tensor& like, c10::DeviceIndex device) {
  return at::empty_strided(like.sizes(), like.strides(),
                           like.options().device(c10::Device(c10::DeviceType::PrivateUse1, device)));
}

namespace {

// Where the CPU kernel's result for a fresh output must land (undefined
// ref: the output aliases an argument or is undefined, nothing to copy).
struct FreshOutput {
  size_t return_index;
  std::optional<size_t> list_index;
  DeviceTensorRef ref;
};

// An output that is also read by the operator (`self` of an in-place operator,
// or an out= tensor passed as an input too, as in logical_and_(x, y) ==
// logical_and(x, y, out=x)) may not be broadcast to another shape: ATen's CPU
// kernels refuse ("output with shape ... doesn't match the broadcast shape
// ..."), where Python meta kernels resize it with a warning.
bool isReadWrite(const at::Tensor& original, const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  const std::string& name = schema.name();
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isTensor() || !args[i].toTensor().is_same(original)) {
      continue;
    }
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    const bool written = alias != nullptr && alias->isWrite();
    if (!written || (!name.empty() && name.back() == '_')) {
      return true;
    }
  }
  return false;
}

// Turns one meta result into the device tensor to return, recording fresh
// outputs that the kernel must fill.
at::Tensor deviceResult(const at::Tensor& meta, const MetaMirrors& mirrors, c10::DeviceIndex device,
                        size_t return_index, std::optional<size_t> list_index, std::vector<FreshOutput>& fresh,
                        const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args) {
  if (!meta.defined()) {
    return meta;
  }
  if (const at::Tensor* original = mirrors.originalOf(meta)) {
    TORCH_CHECK(original->sizes() == meta.sizes() || !isReadWrite(*original, schema, args), "output with shape ",
                original->sizes(), " doesn't match the broadcast shape ", meta.sizes());
    if (original->sizes() != meta.sizes() || original->strides() != meta.strides() ||
        original->storage_offset() != meta.storage_offset()) {
      original->unsafeGetTensorImpl()->set_sizes_and_strides(meta.sizes(), meta.strides(), meta.storage_offset());
      ensureStorageFits(*original);
    }
    return *original;
  }
  if (const c10::Storage* storage = mirrors.deviceStorageOf(meta)) {
    return deviceView(*storage, meta);
  }
  at::Tensor output = emptyDevice(meta, device);
  fresh.push_back(FreshOutput{return_index, list_index, describe(output)});
  return output;
}

bool tryAsynchronously(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::DeviceIndex device,
                       const MydevStream& stream) {
  const c10::FunctionSchema& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const size_t num_returns = schema.returns().size();
  const auto args = torch::jit::last(*stack, num_args);

  MetaMirrors mirrors;
  torch::jit::Stack meta_stack;
  meta_stack.reserve(num_args);
  for (const c10::IValue& value : args) {
    if (value.isTensor() && isMydev(value.toTensor())) {
      meta_stack.emplace_back(mirrors.mirror(value.toTensor()));
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& tensor : value.toTensorList()) {
        list.push_back(isMydev(tensor) ? mirrors.mirror(tensor) : tensor);
      }
      meta_stack.emplace_back(std::move(list));
    } else if (value.isList() && !value.toListRef().empty() && !value.isTensorList() &&
               value.toList().elementType()->kind() == c10::TypeKind::OptionalType) {
      c10::List<std::optional<at::Tensor>> list;
      for (const c10::IValue& element : value.toListRef()) {
        if (element.isTensor()) {
          const at::Tensor& tensor = element.toTensor();
          list.push_back(isMydev(tensor) ? mirrors.mirror(tensor) : tensor);
        } else {
          list.push_back(std::nullopt);
        }
      }
      meta_stack.emplace_back(std::move(list));
    } else if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
      meta_stack.emplace_back(c10::Device(c10::DeviceType::Meta));
    } else {
      meta_stack.push_back(value);
    }
  }
  // Warnings of a successful Meta pass are the call's warnings (ATen's CPU
  // kernel raises the same ones while validating, such as uint8 indices being
  // deprecated): issued now, and dropped from the kernel. When the Meta pass
  // fails, the CPU kernel runs synchronously and issues them itself.
  RecordedWarnings meta_warnings;
  try {
    c10::WarningUtils::WarningHandlerGuard recording(&meta_warnings);
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta_stack);
  } catch (const std::exception&) {
    return false;  // no usable Meta kernel, or data-dependent: the CPU kernel decides
  }
  for (size_t r = 0; r < num_returns; ++r) {
    bool strided = true;
    forEachTensor(meta_stack[r], [&](const at::Tensor& meta) {
      strided = strided && (!meta.defined() || meta.layout() == c10::kStrided);
    });
    if (!strided) {
      return false;  // a sparse result: its member sizes depend on the data
    }
  }
  meta_warnings.issue();

  std::vector<FreshOutput> fresh;
  std::vector<c10::IValue> results;
  results.reserve(num_returns);
  for (size_t r = 0; r < num_returns; ++r) {
    const c10::IValue& meta = meta_stack[r];
    if (meta.isTensor()) {
      results.emplace_back(deviceResult(meta.toTensor(), mirrors, device, r, std::nullopt, fresh, schema, args));
    } else if (meta.isTensorList()) {
      c10::List<at::Tensor> list;
      const auto metas = meta.toTensorVector();
      for (size_t k = 0; k < metas.size(); ++k) {
        list.push_back(deviceResult(metas[k], mirrors, device, r, k, fresh, schema, args));
      }
      results.emplace_back(std::move(list));
    } else {
      results.push_back(meta);
    }
  }

  // Its arguments and its results' dtypes (which a dtype= argument may choose).
  const std::string name = kernelName(op);
  LaunchSignature signature(&schema, name.c_str());
  signature.countSizes();  // cpuKernelRunsForDtypes below vouches without waiting
  for (size_t i = 0; i < args.size(); ++i) {
    addToSignature(signature, args[i], schema.arguments()[i]);
  }
  for (size_t r = 0; r < num_returns; ++r) {
    forEachTensor(meta_stack[r], [&](const at::Tensor& meta) { signature.add(meta); });
  }
  const auto probe = [&] { return cpuKernelRunsForDtypes(op, args); };
  launchCheckingDtypes(signature, probe, [&](KernelWatch* watch) {
  // Slots are taken after out= arguments were resized, so the kernel sees their final geometry, and once the dtypes
  // are known to have a kernel: a call refused at the launch reserves no random numbers.
  auto slots = argumentSlots(schema, args, device);
  launchKernel(name.c_str(), stream,
               [op, slots = std::move(slots), fresh = std::move(fresh), issued = meta_warnings.messages()] {
                 IssuedWarningsDropped dropped(issued);
                 KernelMemory memory;
                 torch::jit::Stack cpu = cpuStack(slots, memory, /*resizable_outputs=*/false);
                 std::vector<std::pair<at::Tensor, const DeviceTensorRef*>> mutated;
                 for (size_t i = 0; i < slots.size(); ++i) {
                   if (slots[i].mutated && slots[i].kind == ArgSlot::Kind::Tensor && slots[i].tensors[0].on_device) {
                     mutated.emplace_back(cpu[i].toTensor(), &slots[i].tensors[0].ref);
                   }
                 }
                 c10::SmallVector<at::Tensor, 2> targets;
                 for (const FreshOutput& output : fresh) {
                   targets.push_back(memory.map(output.ref));
                 }
                 HostResults placed(targets);
                 op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &cpu);
                 placed.withdraw();
                 for (const auto& [alias, ref] : mutated) {
                   settleViewBits(alias, ref->is_conj, ref->is_neg);
                 }
                 c10::SmallVector<at::Tensor, 2> results;
                 for (size_t k = 0; k < fresh.size(); ++k) {
                   const c10::IValue& value = cpu[fresh[k].return_index];
                   results.push_back(fresh[k].list_index ? value.toTensorVector()[*fresh[k].list_index]
                                                         : value.toTensor());
                   TORCH_CHECK(targets[k].sizes() == results[k].sizes(),
                               "mydev fallback: the CPU kernel produced shape ", results[k].sizes(),
                               " but the Meta kernel predicted ", targets[k].sizes());
                 }
                 placed.store(results);
               },
               watch);
  });

  torch::jit::drop(*stack, num_args);
  for (c10::IValue& result : results) {
    stack->push_back(std::move(result));
  }
  return true;
}

// The name torch::Library::impl takes for an aten operator (aten::add with
// overload "out" -> "add.out").
std::string atenImplName(const c10::OperatorName& name) {
  std::string unqualified = name.name.substr(std::string("aten::").size());
  if (!name.overload_name.empty()) {
    unqualified += "." + name.overload_name;
  }
  return unqualified;
}

// Two kinds of aten operator would not reach the backend fallback, and are
// routed here by name when they have no mydev kernel of their own:
//
// - Sparse operators. The dispatcher prefers an operator's
//   CompositeExplicitAutogradNonFunctional kernel to a fallback, and
//   structured operators (mm, addmm, add, ...) have one, which allocates the
//   output with the first argument's layout and calls the out= variant —
//   where SparseCPU has a kernel of its own for the functional operator, and
//   computes a dense result. So every operator that ATen's CPU backend
//   implements for a sparse layout and SparseLayouts.cpp does not is routed.
// - The _foreach_ operators (what foreach=True optimizer steps,
//   clip_grad_norm_ and user code call). ATen's only kernel for most of them
//   is the CompositeExplicitAutograd loop that the CPU shares, which on mydev
//   would launch one kernel per tensor and per arithmetic step; through the
//   fallback the loop runs once over meta mirrors at the call and once inside
//   a single kernel on the stream. Those without a native kernel
//   (ForeachPointwise.cpp) are routed.
//
// Routed operators are the fallback in every respect: counted, subject to
// MYDEV_FALLBACK, and listed as such by the coverage table.
void routeMatching(torch::Library& library, const std::vector<c10::OperatorName>& names,
                   c10::DispatchKey device_key) {
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : names) {
    const std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
    if (!op.has_value() || op->hasKernelForDispatchKey(device_key)) {
      continue;
    }
    library.impl(atenImplName(name).c_str(), torch::CppFunction::makeFromBoxedFunction<&runOnDevice>());
  }
}

std::vector<c10::OperatorName> atenOperatorsWithPrefix(const std::vector<c10::OperatorName>& names,
                                                       const std::string& prefix) {
  std::vector<c10::OperatorName> matching;
  for (const c10::OperatorName& name : names) {
    if (name.name.compare(0, prefix.size(), prefix) == 0) {
      matching.push_back(name);
    }
  }
  return matching;
}

}  // namespace

}  // namespace torch_mydev::fallback

namespace torch_mydev {

using namespace fallback;

void runOnDevice(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  reissueKernelWarnings();
  const c10::FunctionSchema& schema = op.schema();
  const auto args = torch::jit::last(*stack, schema.arguments().size());
  const std::string name = kernelName(op);
  const c10::DeviceIndex device = operatorDevice(schema, args, name);
  checkOnHost(schema, args);
  admitFallback(name);
  ScopedDevice on_device(device);
  const MydevStream stream = getCurrentMydevStream(device);
  // Sparse arguments have no Meta mirrors, and their members' sizes follow the
  // data.
  const bool sparse = hasSparseArgument(args);
  if (sparse || runsSynchronously(schema) || reducesNoElementToOne(schema, args) ||
      !tryAsynchronously(op, stack, device, stream)) {
    runSynchronously(op, stack, device, stream, name, cudaWaitsToo(op, sparse));
  }
}

void routeOperatorsToFallback() {
  static torch::Library dense(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  static torch::Library coo(torch::Library::IMPL, "aten", c10::DispatchKey::SparsePrivateUse1, __FILE__, __LINE__);
  static torch::Library compressed(torch::Library::IMPL, "aten", c10::DispatchKey::SparseCsrPrivateUse1, __FILE__,
                                   __LINE__);
  static const bool routed = [] {
    auto& dispatcher = c10::Dispatcher::singleton();
    routeMatching(dense, atenOperatorsWithPrefix(dispatcher.getAllOpNames(), "aten::_foreach_"),
                  c10::DispatchKey::PrivateUse1);
    routeMatching(coo, atenOperatorsWithPrefix(dispatcher.getAllOpNamesForDispatchKey(c10::DispatchKey::SparseCPU),
                                               "aten::"),
                  c10::DispatchKey::SparsePrivateUse1);
    routeMatching(compressed,
                  atenOperatorsWithPrefix(dispatcher.getAllOpNamesForDispatchKey(c10::DispatchKey::SparseCsrCPU),
                                          "aten::"),
                  c10::DispatchKey::SparseCsrPrivateUse1);
    return true;
  }();
  (void)routed;
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&runOnDevice>()); }
TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&runOnDevice>()); }
TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&runOnDevice>());
}

}  // namespace torch_mydev
