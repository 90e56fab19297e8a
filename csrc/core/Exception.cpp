#include "Exception.h"

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
  TORCH_CHECK(false, message);
}

}  // namespace torch_mydev
