#include "Exception.h"

#include "KernelErrorKinds.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <string>

namespace torch_mydev {

namespace {

const char* baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

void throwRuntimeError(mydevError_t error, const char* call, const char* file, int line) {
  std::string detail = mydevGetLastErrorMessage();
  if (detail.empty()) {
    detail = call;
  }
  const std::string message = "mydev error (" + std::string(mydevGetErrorName(error)) + "): " + detail +
      " [at " + baseName(file) + ":" + std::to_string(line) + "]";
  if (error == mydevErrorMemoryAllocation) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, message);
  }
  if (error == mydevErrorLaunchFailure) {
    switch (takeKernelErrorKind(detail)) {
      case KernelErrorKind::NotImplemented:
        TORCH_CHECK_WITH(NotImplementedError, false, message);
      case KernelErrorKind::Value:
        TORCH_CHECK_WITH(ValueError, false, message);
      case KernelErrorKind::Type:
        TORCH_CHECK_WITH(TypeError, false, message);
      case KernelErrorKind::Index:
        TORCH_CHECK_WITH(IndexError, false, message);
      case KernelErrorKind::LinAlg:
        TORCH_CHECK_WITH(LinAlgError, false, message);
      case KernelErrorKind::Generic:
        break;
    }
  }
  // As C10_CUDA_CHECK raises every other runtime error: torch.AcceleratorError
  // (a RuntimeError) carrying the runtime's error code.
  throw c10::AcceleratorError({call, file, static_cast<uint32_t>(line)}, static_cast<int32_t>(error), message);
}

}  // namespace torch_mydev
