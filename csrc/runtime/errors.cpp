#include <cstdarg>
#include <cstdio>

#include "internal.h"

namespace {
thread_local std::string t_message;
// Set instead of t_message where allocating is not allowed (a forked child).
thread_local const char* t_static_message = nullptr;
}  // namespace

namespace mydev {

mydevError_t set_error(mydevError_t code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list measure;
  va_copy(measure, args);
  const int length = vsnprintf(nullptr, 0, format, measure);
  va_end(measure);
  t_message.resize(length > 0 ? static_cast<size_t>(length) : 0);
  if (length > 0) vsnprintf(&t_message[0], t_message.size() + 1, format, args);
  va_end(args);
  // Every message names a device; where the failing call did not, it is the
  // caller's current device.
  if (t_message.find("mydev:") == std::string::npos) {
    t_message += " (current device mydev:" + std::to_string(current_device()) + ")";
  }
  t_static_message = nullptr;
  return code;
}

mydevError_t set_static_error(mydevError_t code, const char* message) {
  t_static_message = message;
  return code;
}

std::string format_bytes(size_t bytes) {
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  return text;
}

}  // namespace mydev

extern "C" {

const char* mydevGetErrorName(mydevError_t error) {
  switch (error) {
    case mydevSuccess: return "mydevSuccess";
    case mydevErrorInvalidValue: return "mydevErrorInvalidValue";
    case mydevErrorInvalidDevice: return "mydevErrorInvalidDevice";
    case mydevErrorMemoryAllocation: return "mydevErrorMemoryAllocation";
    case mydevErrorInvalidDevicePointer: return "mydevErrorInvalidDevicePointer";
    case mydevErrorNotReady: return "mydevErrorNotReady";
    case mydevErrorLaunchFailure: return "mydevErrorLaunchFailure";
    case mydevErrorInvalidResourceHandle: return "mydevErrorInvalidResourceHandle";
    case mydevErrorNotPermitted: return "mydevErrorNotPermitted";
    case mydevErrorForkedChild: return "mydevErrorForkedChild";
    case mydevErrorInitialization: return "mydevErrorInitialization";
  }
  return "mydevErrorUnrecognized";
}

const char* mydevGetLastErrorMessage(void) { return t_static_message != nullptr ? t_static_message : t_message.c_str(); }

}  // extern "C"
