#include <strings.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "internal.h"

namespace mydev {
namespace {

constexpr size_t kMinDeviceMemory = size_t(1) << 20;
// 16 devices times two views of this size still fit a 47-bit address space.
constexpr size_t kMaxDeviceMemory = size_t(1) << 40;

bool is_unset(const char* text) { return text == nullptr || *text == '\0'; }

// A decimal number with nothing before it (strtoull would accept " -1").
bool parse_number(const char* text, unsigned long long* value, const char** rest) {
  if (!isdigit(static_cast<unsigned char>(text[0]))) return false;
  errno = 0;
  char* end;
  *value = strtoull(text, &end, 10);
  if (errno == ERANGE) return false;
  *rest = end;
  return true;
}

// Binary multiple named by a size suffix: "", "B", "K", "KB", "KiB", ... up to T.
bool suffix_multiplier(const char* suffix, unsigned long long* multiplier) {
  static const struct {
    char letter;
    unsigned long long multiplier;
  } units[] = {{'k', 1ull << 10}, {'m', 1ull << 20}, {'g', 1ull << 30}, {'t', 1ull << 40}};
  if (*suffix == '\0' || strcasecmp(suffix, "b") == 0) {
    *multiplier = 1;
    return true;
  }
  for (const auto& unit : units) {
    if (tolower(static_cast<unsigned char>(suffix[0])) != unit.letter) continue;
    const char* tail = suffix + 1;
    if (*tail == '\0' || strcasecmp(tail, "b") == 0 || strcasecmp(tail, "ib") == 0) {
      *multiplier = unit.multiplier;
      return true;
    }
  }
  return false;
}

}  // namespace

bool parse_device_count(const char* text, int* count, std::string* error) {
  if (is_unset(text)) {
    *count = kDefaultDeviceCount;
    return true;
  }
  unsigned long long value;
  const char* rest;
  if (!parse_number(text, &value, &rest) || *rest != '\0' || value < 1 || value > kMaxDevices) {
    *error = "invalid MYDEV_DEVICE_COUNT='" + std::string(text) + "': expected an integer from 1 to " +
             std::to_string(kMaxDevices);
    return false;
  }
  *count = static_cast<int>(value);
  return true;
}

bool parse_device_memory(const char* text, size_t* bytes, std::string* error) {
  if (is_unset(text)) {
    *bytes = kDefaultDeviceMemory;
    return true;
  }
  unsigned long long value, multiplier;
  const char* suffix;
  if (!parse_number(text, &value, &suffix) || !suffix_multiplier(suffix, &multiplier) ||
      value > kMaxDeviceMemory / multiplier || value * multiplier < kMinDeviceMemory) {
    *error = "invalid MYDEV_DEVICE_MEMORY='" + std::string(text) +
             "': expected a size from 1MiB to 1TiB such as 4GiB, 512MiB, 512M or 1073741824";
    return false;
  }
  // Allocations are 256-byte granular, so is the capacity.
  *bytes = static_cast<size_t>(value * multiplier) / kAllocationAlignment * kAllocationAlignment;
  return true;
}

bool parse_launch_blocking(const char* text, bool* enabled, std::string* error) {
  if (is_unset(text) || strcmp(text, "0") == 0) {
    *enabled = false;
    return true;
  }
  if (strcmp(text, "1") == 0) {
    *enabled = true;
    return true;
  }
  *error = "invalid MYDEV_LAUNCH_BLOCKING='" + std::string(text) + "': expected 0 or 1";
  return false;
}

bool load_config(Config* config, std::string* error) {
  return parse_device_count(getenv("MYDEV_DEVICE_COUNT"), &config->device_count, error) &&
         parse_device_memory(getenv("MYDEV_DEVICE_MEMORY"), &config->device_memory, error) &&
         parse_launch_blocking(getenv("MYDEV_LAUNCH_BLOCKING"), &config->launch_blocking, error);
}

}  // namespace mydev
