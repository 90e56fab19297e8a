// The runtime tests' entry point: runs every registered test, or, re-executed
// with --child=MODE, one of the child modes below.
#include "harness.h"

using namespace runtime_test;

// ---- child modes ------------------------------------------------------------------------------

namespace runtime_test {

int child_print_config() {
  int count = 0;
  if (mydevError_t error = mydevGetDeviceCount(&count)) {
    printf("error %s %s\n", mydevGetErrorName(error), mydevGetLastErrorMessage());
    return 0;
  }
  mydevDeviceProp prop;
  size_t free_now = 0, total = 0;
  if (mydevGetDeviceProperties(&prop, 0) != mydevSuccess || mydevMemGetInfo(&free_now, &total) != mydevSuccess) return 1;
  printf("count=%d total=%zu free=%zu\n", count, prop.totalGlobalMem, free_now);
  return total == prop.totalGlobalMem ? 0 : 2;
}

int child_launch_blocking() {
  std::atomic<bool> done{false};
  if (launch("slow", [&] {
        sleep_ms(20);
        done = true;
      }) != mydevSuccess || !done) {
    return 1;
  }
  if (mydevLaunchKernel("blocking_failure", fail_with_boom, nullptr, nullptr, nullptr) != mydevErrorLaunchFailure) return 2;
  if (std::string(mydevGetLastErrorMessage()) != "kernel 'blocking_failure' failed on mydev:0: boom") return 3;
  if (mydevStreamSynchronize(nullptr) != mydevSuccess) return 4;
  void* a = nullptr;
  unsigned char* pinned = nullptr;
  if (mydevMalloc(&a, 4096) != mydevSuccess || mydevHostAlloc(reinterpret_cast<void**>(&pinned), 4096) != mydevSuccess)
    return 5;
  mydevStream_t stream = nullptr;
  if (mydevStreamCreate(&stream) != mydevSuccess) return 6;
  if (mydevMemsetAsync(a, 6, 4096, stream) != mydevSuccess) return 7;
  if (mydevMemcpyAsync(pinned, a, 4096, mydevMemcpyDeviceToHost, stream) != mydevSuccess || pinned[4095] != 6) return 8;
  if (mydevStreamQuery(stream) != mydevSuccess) return 9;
  return 0;
}

int child_fork_before_init() {
  const pid_t pid = fork();
  if (pid == 0) {
    int count = 0;
    if (mydevGetDeviceCount(&count) != mydevSuccess) _exit(1);
    void* p = nullptr;
    if (mydevMalloc(&p, 256) != mydevSuccess || mydevFree(p) != mydevSuccess) _exit(2);
    printf("grandchild count=%d\n", count);
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 3;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

void previous_handler(int, siginfo_t*, void*) {
  static const char message[] = "previous handler ran\n";
  (void)!write(STDERR_FILENO, message, sizeof(message) - 1);
  _exit(42);
}

int child_fault_chain(bool device_address) {
  struct sigaction action = {};
  action.sa_sigaction = previous_handler;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, nullptr);
  void* a = nullptr;
  if (mydevMalloc(&a, 256) != mydevSuccess) return 1;
  volatile char* target = device_address ? static_cast<volatile char*>(a) : reinterpret_cast<volatile char*>(16);
  volatile char value = *target;
  (void)value;
  return 2;
}

int child_injected_from_environment() {
  int ignored = 0;
  mydevLaunchKernel("my::kernel", [](void*) {}, &ignored, nullptr, nullptr);
  const mydevError_t first = mydevDeviceSynchronize();
  mydevLaunchKernel("my::kernel", [](void*) {}, &ignored, nullptr, nullptr);
  const mydevError_t second = mydevDeviceSynchronize();
  printf("first=%s second=%s\n", mydevGetErrorName(first), mydevGetErrorName(second));
  void* blocks[3] = {};
  const char* outcomes[3];
  for (int i = 0; i < 3; ++i) outcomes[i] = mydevGetErrorName(mydevMalloc(&blocks[i], 256));
  printf("allocations=%s,%s,%s\n", outcomes[0], outcomes[1], outcomes[2]);
  return 0;
}

int run_child_mode(const std::string& mode) {
  if (mode == "print-config") return child_print_config();
  if (mode == "injected-from-environment") return child_injected_from_environment();
  if (mode == "launch-blocking") return child_launch_blocking();
  if (mode == "fork-before-init") return child_fork_before_init();
  if (mode == "fault-chain-device") return child_fault_chain(true);
  if (mode == "fault-chain-other") return child_fault_chain(false);
  fprintf(stderr, "unknown child mode %s\n", mode.c_str());
  return 100;
}

}  // namespace runtime_test

int main(int argc, char** argv) {
  if (argc == 2 && strncmp(argv[1], "--child=", 8) == 0) return run_child_mode(argv[1] + 8);
  setenv("MYDEV_DEVICE_MEMORY", "64MiB", 1);
  unsetenv("MYDEV_DEVICE_COUNT");
  unsetenv("MYDEV_LAUNCH_BLOCKING");
  int passed = 0, failed = 0;
  for (const TestCase& test : tests()) {
    const auto start = Clock::now();
    std::string failure;
    try {
      test.body();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (failure.empty()) {
      ++passed;
      printf("PASS %s (%.0f ms)\n", test.name, ms);
    } else {
      ++failed;
      printf("FAIL %s (%.0f ms): %s\n", test.name, ms, failure.c_str());
    }
    fflush(stdout);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
