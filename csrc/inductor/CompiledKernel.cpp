#include "CompiledKernel.h"

#include "../aten/KernelLaunch.h"
#include "../core/Stream.h"

#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

#include <array>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>

namespace torch_mydev {

namespace {

// The value of a 0-dim CPU tensor, copied at launch; wide enough for complex128.
using HostScalar = std::array<uint64_t, 2>;

// What the stream's worker needs: the words to pass, with the positions still
// to be filled in there (device pointers to translate, pointers to the copied
// host scalars, which move with the closure until it runs).
struct CompiledKernelCall {
  CompiledKernelEntry entry;
  c10::SmallVector<uint64_t, 12> words;
  c10::SmallVector<uint16_t, 8> device_pointer_positions;
  c10::SmallVector<std::pair<uint16_t, HostScalar>, 1> host_scalars;

  void operator()() {
    for (const uint16_t position : device_pointer_positions) {
      void* mapped = nullptr;
      MYDEV_CHECK(mydevKernelMapPointer(reinterpret_cast<const void*>(words[position]), &mapped));
      words[position] = reinterpret_cast<uint64_t>(mapped);
    }
    for (auto& [position, scalar] : host_scalars) {
      words[position] = reinterpret_cast<uint64_t>(scalar.data());
    }
    entry(words.data());
  }
};

}  // namespace

bool isCompiledKernelArgumentKind(char kind) {
  return kind == 'r' || kind == 'w' || kind == 'i' || kind == 'f';
}

void launchCompiledKernel(const std::string& name, CompiledKernelEntry entry, const std::string& kinds,
                          c10::ArrayRef<CompiledKernelArgument> arguments) {
  TORCH_CHECK(arguments.size() == kinds.size(), "mydev compiled kernel '", name, "' takes ", kinds.size(),
              " arguments, got ", arguments.size());
  TORCH_CHECK(arguments.size() <= UINT16_MAX, "mydev compiled kernel '", name, "' has too many arguments (",
              arguments.size(), ")");
  CompiledKernelCall call{entry, {}, {}, {}};
  call.words.resize(arguments.size());
  std::optional<c10::Device> device;
  for (size_t index = 0; index < arguments.size(); ++index) {
    const char kind = kinds[index];
    const CompiledKernelArgument& argument = arguments[index];
    if (kind != 'r' && kind != 'w') {
      call.words[index] = argument.value;
      continue;
    }
    TORCH_CHECK(argument.tensor != nullptr && argument.tensor->defined(), "mydev compiled kernel '", name,
                "': argument ", index, " must be a tensor");
    const at::Tensor& tensor = *argument.tensor;
    if (tensor.device().type() == c10::DeviceType::CPU) {
      TORCH_CHECK(kind == 'r' && tensor.dim() == 0, "mydev compiled kernel '", name, "': argument ", index,
                  " is a tensor on cpu; a mydev kernel takes mydev tensors, and reads only 0-dim cpu tensors");
      HostScalar scalar{};
      std::memcpy(scalar.data(), tensor.const_data_ptr(), tensor.element_size());
      call.host_scalars.emplace_back(static_cast<uint16_t>(index), scalar);
      continue;
    }
    TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1, "mydev compiled kernel '", name,
                "': argument ", index, " is a tensor on ", tensor.device(), "; a mydev kernel takes mydev tensors");
    if (!device) {
      device = tensor.device();
    } else {
      TORCH_CHECK(*device == tensor.device(), "mydev compiled kernel '", name, "': expected all tensors on ",
                  *device, ", argument ", index, " is on ", tensor.device());
    }
    void* data = kind == 'w' ? tensor.data_ptr() : const_cast<void*>(tensor.const_data_ptr());
    call.words[index] = reinterpret_cast<uint64_t>(data);
    if (data != nullptr) {
      call.device_pointer_positions.push_back(static_cast<uint16_t>(index));
    }
  }
  TORCH_CHECK(device.has_value(), "mydev compiled kernel '", name, "' has no mydev tensor argument to place it on");
  const MydevStream stream = getCurrentMydevStream(device->index());
  launchKernelBuiltBy(name.c_str(), stream, [&]() { return std::move(call); });
}

namespace {

thread_local std::string inductor_launch_error;

int launchFromCppWrapper(const char* name, CompiledKernelEntry entry, const char* kinds, void* const* tensors,
                         const uint64_t* values) {
  try {
    const std::string kind_string(kinds);
    c10::SmallVector<CompiledKernelArgument, 12> arguments(kind_string.size());
    for (size_t index = 0; index < kind_string.size(); ++index) {
      arguments[index].value = values[index];
      if (tensors[index] != nullptr) {
        arguments[index].tensor = torch::aot_inductor::tensor_handle_to_tensor_pointer(
            static_cast<AtenTensorHandle>(tensors[index]));
      }
    }
    launchCompiledKernel(name, entry, kind_string, arguments);
    return 0;
  } catch (const c10::Error& error) {
    inductor_launch_error = error.what_without_backtrace();
  } catch (const std::exception& error) {
    inductor_launch_error = error.what();
  }
  return 1;
}

const char* lastInductorLaunchError() {
  return inductor_launch_error.c_str();
}

}  // namespace

const InductorLaunchApi* inductorLaunchApi() {
  static const InductorLaunchApi api{kInductorLaunchApiVersion, &launchFromCppWrapper, &lastInductorLaunchError};
  return &api;
}

}  // namespace torch_mydev
