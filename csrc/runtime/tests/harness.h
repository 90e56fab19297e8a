// The runtime tests' harness: a tiny test registry (TEST, CHECK and friends)
// and the helpers the tests share (launching a lambda, gates, watchdogs,
// child processes). The tests are linked directly against the runtime's
// sources; build_and_run.sh builds and runs them.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <mydev/host_task.h>

#include "../internal.h"

// ---- a tiny test registry ---------------------------------------------------

namespace runtime_test {

struct TestCase {
  const char* name;
  void (*body)();
};

inline std::vector<TestCase>& tests() {
  static std::vector<TestCase> registered;
  return registered;
}

struct Registrar {
  Registrar(const char* name, void (*body)()) { tests().push_back({name, body}); }
};

struct TestFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string where(const char* file, int line) {
  const char* base = strrchr(file, '/');
  return std::string(base != nullptr ? base + 1 : file) + ":" + std::to_string(line) + ": ";
}

template <typename A, typename B>
inline void check_equal(const A& actual, const B& expected, const char* text, const char* file, int line) {
  if (actual == expected) return;
  std::ostringstream message;
  message << where(file, line) << text << ": got " << actual << ", expected " << expected;
  throw TestFailure(message.str());
}

inline void check_ok(mydevError_t error, const char* text, const char* file, int line) {
  if (error == mydevSuccess) return;
  throw TestFailure(where(file, line) + text + " returned " + mydevGetErrorName(error) + ": " +
                    mydevGetLastErrorMessage());
}

inline void check_contains(const std::string& text, const std::string& part, const char* file, int line) {
  if (text.find(part) != std::string::npos) return;
  throw TestFailure(where(file, line) + "'" + text + "' does not contain '" + part + "'");
}

}  // namespace runtime_test

#define TEST(name)                                                  \
  static void name();                                               \
  static const runtime_test::Registrar name##_registrar(#name, name); \
  static void name()
#define CHECK(condition)                                                                   \
  do {                                                                                     \
    if (!(condition)) throw runtime_test::TestFailure(runtime_test::where(__FILE__, __LINE__) + "CHECK(" #condition ")"); \
  } while (0)
#define CHECK_EQ(actual, expected) runtime_test::check_equal((actual), (expected), #actual, __FILE__, __LINE__)
#define CHECK_OK(call) runtime_test::check_ok((call), #call, __FILE__, __LINE__)
#define CHECK_ERR(call, code) runtime_test::check_equal(std::string(mydevGetErrorName(call)), std::string(mydevGetErrorName(code)), #call, __FILE__, __LINE__)
#define CHECK_CONTAINS(text, part) runtime_test::check_contains((text), (part), __FILE__, __LINE__)

// ---- helpers ------------------------------------------------------------------

namespace runtime_test {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kTestDeviceMemory = 64 * kMiB;

using Clock = std::chrono::steady_clock;

inline std::string last_message() { return mydevGetLastErrorMessage(); }

inline void run_body(void* args) { (*static_cast<std::function<void()>*>(args))(); }
inline void delete_body(void* args) { delete static_cast<std::function<void()>*>(args); }

inline mydevError_t launch(const char* name, std::function<void()> body, mydevStream_t stream = nullptr) {
  return mydevLaunchKernel(name, run_body, new std::function<void()>(std::move(body)), delete_body, stream);
}

// A flag a kernel waits on, with a deadline so that a broken runtime fails the
// test instead of hanging it.
struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> timed_out{false};
  void wait() {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!open.load()) {
      if (Clock::now() > deadline) {
        timed_out = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
};

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

inline void busy_wait(std::chrono::microseconds duration) {
  const auto until = Clock::now() + duration;
  while (Clock::now() < until) {
  }
}

// A test that could hang on a lost wake-up: if it has not finished within a
// minute, the watchdog reports how many kernels ran and ends the process.
class HangWatchdog {
 public:
  HangWatchdog(const char* test, const std::atomic<int>& ran)
      : thread_([this, test, &ran] {
          const auto deadline = Clock::now() + std::chrono::seconds(60);
          while (!finished_ && Clock::now() < deadline) sleep_ms(10);
          if (!finished_) {
            std::fprintf(stderr, "%s: hung after %d kernels\n", test, ran.load());
            std::_Exit(3);
          }
        }) {}
  ~HangWatchdog() { finish(); }

  void finish() {
    finished_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

inline mydevStream_t default_stream(int device) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevDeviceGetDefaultStream(device, &stream));
  return stream;
}

inline size_t free_bytes() {
  size_t free_now = 0, total = 0;
  CHECK_OK(mydevMemGetInfo(&free_now, &total));
  return free_now;
}

// Kernel body writing `value` into `bytes` bytes of device memory at `p`.
inline std::function<void()> fill_kernel(void* p, unsigned char value, size_t bytes) {
  return [=] {
    void* host = nullptr;
    if (mydevKernelMapPointer(p, &host) != mydevSuccess) {
      mydevKernelFail(mydevGetLastErrorMessage());
      return;
    }
    memset(host, value, bytes);
  };
}

inline std::vector<unsigned char> read_device(const void* p, size_t bytes) {
  std::vector<unsigned char> data(bytes);
  CHECK_OK(mydevMemcpy(data.data(), p, bytes, mydevMemcpyDeviceToHost));
  return data;
}

inline bool all_equal(const std::vector<unsigned char>& data, unsigned char value) {
  for (unsigned char byte : data) {
    if (byte != value) return false;
  }
  return true;
}

struct ChildResult {
  int status = 0;
  std::string output;  // stdout and stderr
};

inline std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

// Runs `child` in a forked process whose stdout and stderr go to a pipe; the
// child exits with child()'s return value.
inline ChildResult run_forked(const std::function<int()>& child) {
  int pipe_fds[2];
  CHECK(pipe(pipe_fds) == 0);
  const pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    const struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    _exit(child());
  }
  close(pipe_fds[1]);
  ChildResult result;
  result.output = read_all(pipe_fds[0]);
  close(pipe_fds[0]);
  CHECK(waitpid(pid, &result.status, 0) == pid);
  return result;
}

// Re-executes this binary with --child=MODE and extra environment variables.
inline ChildResult run_self(const std::string& mode, const std::vector<std::string>& extra_env) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (strncmp(*e, "MYDEV_", 6) != 0) env_strings.push_back(*e);
  }
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(&s[0]);
  envp.push_back(nullptr);
  std::string arg0 = "runtime_test", arg1 = "--child=" + mode;
  char* argv[] = {&arg0[0], &arg1[0], nullptr};
  return run_forked([&] {
    execve("/proc/self/exe", argv, envp.data());
    return 127;
  });
}

inline std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

inline void check_child_exit(const ChildResult& result, int code, const char* file, int line) {
  if (WIFEXITED(result.status) && WEXITSTATUS(result.status) == code) return;
  throw TestFailure(where(file, line) + "child ended with " + describe_status(result.status) + ", expected exit " +
                    std::to_string(code) + "; output:\n" + result.output);
}
#define CHECK_CHILD_EXIT(result, code) runtime_test::check_child_exit((result), (code), __FILE__, __LINE__)

inline long rss_shmem_kib() {
  FILE* status = fopen("/proc/self/status", "r");
  if (status == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof(line), status) != nullptr) {
    if (sscanf(line, "RssShmem: %ld kB", &kib) == 1) break;
  }
  fclose(status);
  return kib;
}

// A kernel body that fails with "boom".
inline void fail_with_boom(void*) { mydevKernelFail("boom"); }

}  // namespace runtime_test
