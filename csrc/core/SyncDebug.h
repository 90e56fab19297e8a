// Sync-debug mode, as torch.cuda.set_sync_debug_mode: a process-wide setting
// that makes every operation which makes the host wait for the device warn or
// raise, naming the operation (.item(), a blocking copy, an operator whose
// output shape depends on the data, ...). As on CUDA, a stream's
// synchronization reports too, while the device's and an event's never do.
#pragma once

namespace torch_mydev {

enum class SyncDebugMode { Disabled = 0, Warn = 1, Error = 2 };

void setSyncDebugMode(SyncDebugMode mode);
SyncDebugMode syncDebugMode();

// Called where an operation is about to make the host wait for the device:
// nothing when the mode is Disabled (one relaxed load), a warning or an error
// naming `operation` otherwise.
void reportHostWait(const char* operation);

// While one lives, the calling thread's waits are mydev's own and not
// reported (a check that reads the data on the host where CUDA reads it in
// its kernel, so that the error comes at the call as on the CPU).
class UnreportedHostWaits {
 public:
  UnreportedHostWaits();
  ~UnreportedHostWaits();
  UnreportedHostWaits(const UnreportedHostWaits&) = delete;
  UnreportedHostWaits& operator=(const UnreportedHostWaits&) = delete;

 private:
  bool outer_;
};

}  // namespace torch_mydev
