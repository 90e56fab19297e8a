// Host code that dereferences a device pointer touches the inaccessible view
// of an arena and faults. This handler explains that before the process dies;
// every other fault goes to whoever handled it before us.
#include <signal.h>
#include <unistd.h>

#include <cstdint>

#include "internal.h"

namespace {

struct sigaction g_previous_segv;
struct sigaction g_previous_bus;

// Only async-signal-safe calls below: write(2), sigaction(2), no allocation.

size_t text_length(const char* text) {
  size_t length = 0;
  while (text[length] != '\0') ++length;
  return length;
}

void append(char* buffer, size_t* used, size_t capacity, const char* text) {
  for (size_t i = 0; text[i] != '\0' && *used + 1 < capacity; ++i) buffer[(*used)++] = text[i];
  buffer[*used] = '\0';
}

void append_hex(char* buffer, size_t* used, size_t capacity, uintptr_t value) {
  char digits[2 + 2 * sizeof(value) + 1];
  char* end = digits + sizeof(digits) - 1;
  char* p = end;
  *p = '\0';
  do {
    *--p = "0123456789abcdef"[value & 0xf];
    value >>= 4;
  } while (value != 0);
  *--p = 'x';
  *--p = '0';
  append(buffer, used, capacity, p);
}

void append_decimal(char* buffer, size_t* used, size_t capacity, int value) {
  char digits[16];
  char* p = digits + sizeof(digits) - 1;
  *p = '\0';
  unsigned magnitude = static_cast<unsigned>(value);
  do {
    *--p = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  append(buffer, used, capacity, p);
}

void report_device_access(const void* address, int device, size_t offset) {
  char message[512];
  size_t used = 0;
  append(message, &used, sizeof(message), "mydev: illegal memory access: host code touched device memory at ");
  append_hex(message, &used, sizeof(message), reinterpret_cast<uintptr_t>(address));
  append(message, &used, sizeof(message), " (mydev:");
  append_decimal(message, &used, sizeof(message), device);
  append(message, &used, sizeof(message), ", offset ");
  append_hex(message, &used, sizeof(message), offset);
  append(message, &used, sizeof(message),
         "). A mydev device pointer (e.g. tensor.data_ptr() of a mydev tensor) cannot be dereferenced on the host; "
         "copy the data to the CPU first.\n");
  const char* p = message;
  size_t left = text_length(message);
  while (left > 0) {
    const ssize_t written = write(STDERR_FILENO, p, left);
    if (written <= 0) break;
    p += written;
    left -= static_cast<size_t>(written);
  }
}

// Returning from the handler re-executes the faulting access, which then gets
// the default action and kills the process with the original signal.
void restore_default(int signal_number) {
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal_number, &default_action, nullptr);
}

// Returns whether a previous handler existed (and was called).
bool call_previous(const struct sigaction& previous, int signal_number, siginfo_t* info, void* context) {
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction == nullptr) return false;
    previous.sa_sigaction(signal_number, info, context);
    return true;
  }
  if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) return false;
  previous.sa_handler(signal_number);
  return true;
}

void handle_fault(int signal_number, siginfo_t* info, void* context) {
  const struct sigaction& previous = signal_number == SIGBUS ? g_previous_bus : g_previous_segv;
  // A signal sent with kill(2)/raise(3) (si_code <= 0) carries no fault
  // address, and returning from the handler re-executes nothing.
  const bool sent_by_process = info->si_code <= 0;
  size_t offset = 0;
  const int device = sent_by_process ? -1 : mydev::find_device_of(info->si_addr, &offset);
  if (device >= 0) report_device_access(info->si_addr, device, offset);
  const bool chained = call_previous(previous, signal_number, info, context);
  // A previous handler that returned may have repaired its own fault, but none
  // can make a device view accessible: retrying that access would fault forever.
  if (!chained || device >= 0) {
    restore_default(signal_number);
    // Delivered with the default action as soon as this handler returns.
    if (sent_by_process) raise(signal_number);
  }
}

}  // namespace

namespace mydev {

// SA_ONSTACK uses the thread's alternate stack where one exists (Python's
// faulthandler sets one up), so a stack overflow still reaches the previous
// handler.
void install_fault_handler() {
  struct sigaction action = {};
  action.sa_sigaction = handle_fault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &g_previous_segv);
  sigaction(SIGBUS, &action, &g_previous_bus);
}

}  // namespace mydev
