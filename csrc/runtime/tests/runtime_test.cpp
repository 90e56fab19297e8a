// Tests of the simulated device runtime, linked directly against its sources.
// Behaviour that depends on the environment read at initialisation, or that
// kills the process, runs in child processes (fork, or this binary re-executed
// with --child=MODE).
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

namespace {

struct TestCase {
  const char* name;
  void (*body)();
};

std::vector<TestCase>& tests() {
  static std::vector<TestCase> registered;
  return registered;
}

struct Registrar {
  Registrar(const char* name, void (*body)()) { tests().push_back({name, body}); }
};

struct TestFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string where(const char* file, int line) {
  const char* base = strrchr(file, '/');
  return std::string(base != nullptr ? base + 1 : file) + ":" + std::to_string(line) + ": ";
}

template <typename A, typename B>
void check_equal(const A& actual, const B& expected, const char* text, const char* file, int line) {
  if (actual == expected) return;
  std::ostringstream message;
  message << where(file, line) << text << ": got " << actual << ", expected " << expected;
  throw TestFailure(message.str());
}

void check_ok(mydevError_t error, const char* text, const char* file, int line) {
  if (error == mydevSuccess) return;
  throw TestFailure(where(file, line) + text + " returned " + mydevGetErrorName(error) + ": " +
                    mydevGetLastErrorMessage());
}

void check_contains(const std::string& text, const std::string& part, const char* file, int line) {
  if (text.find(part) != std::string::npos) return;
  throw TestFailure(where(file, line) + "'" + text + "' does not contain '" + part + "'");
}

}  // namespace

#define TEST(name)                                 \
  static void name();                              \
  static const Registrar name##_registrar(#name, name); \
  static void name()
#define CHECK(condition)                                                                   \
  do {                                                                                     \
    if (!(condition)) throw TestFailure(where(__FILE__, __LINE__) + "CHECK(" #condition ")"); \
  } while (0)
#define CHECK_EQ(actual, expected) check_equal((actual), (expected), #actual, __FILE__, __LINE__)
#define CHECK_OK(call) check_ok((call), #call, __FILE__, __LINE__)
#define CHECK_ERR(call, code) check_equal(std::string(mydevGetErrorName(call)), std::string(mydevGetErrorName(code)), #call, __FILE__, __LINE__)
#define CHECK_CONTAINS(text, part) check_contains((text), (part), __FILE__, __LINE__)

// ---- helpers ------------------------------------------------------------------

namespace {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kTestDeviceMemory = 64 * kMiB;

using Clock = std::chrono::steady_clock;

std::string last_message() { return mydevGetLastErrorMessage(); }

void run_body(void* args) { (*static_cast<std::function<void()>*>(args))(); }
void delete_body(void* args) { delete static_cast<std::function<void()>*>(args); }

mydevError_t launch(const char* name, std::function<void()> body, mydevStream_t stream = nullptr) {
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

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void busy_wait(std::chrono::microseconds duration) {
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

mydevStream_t default_stream(int device) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevDeviceGetDefaultStream(device, &stream));
  return stream;
}

size_t free_bytes() {
  size_t free_now = 0, total = 0;
  CHECK_OK(mydevMemGetInfo(&free_now, &total));
  return free_now;
}

// Kernel body writing `value` into `bytes` bytes of device memory at `p`.
std::function<void()> fill_kernel(void* p, unsigned char value, size_t bytes) {
  return [=] {
    void* host = nullptr;
    if (mydevKernelMapPointer(p, &host) != mydevSuccess) {
      mydevKernelFail(mydevGetLastErrorMessage());
      return;
    }
    memset(host, value, bytes);
  };
}

std::vector<unsigned char> read_device(const void* p, size_t bytes) {
  std::vector<unsigned char> data(bytes);
  CHECK_OK(mydevMemcpy(data.data(), p, bytes, mydevMemcpyDeviceToHost));
  return data;
}

bool all_equal(const std::vector<unsigned char>& data, unsigned char value) {
  for (unsigned char byte : data) {
    if (byte != value) return false;
  }
  return true;
}

struct ChildResult {
  int status = 0;
  std::string output;  // stdout and stderr
};

std::string read_all(int fd) {
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
ChildResult run_forked(const std::function<int()>& child) {
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
ChildResult run_self(const std::string& mode, const std::vector<std::string>& extra_env) {
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

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

void check_child_exit(const ChildResult& result, int code, const char* file, int line) {
  if (WIFEXITED(result.status) && WEXITSTATUS(result.status) == code) return;
  throw TestFailure(where(file, line) + "child ended with " + describe_status(result.status) + ", expected exit " +
                    std::to_string(code) + "; output:\n" + result.output);
}
#define CHECK_CHILD_EXIT(result, code) check_child_exit((result), (code), __FILE__, __LINE__)

long rss_shmem_kib() {
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

}  // namespace

// ---- configuration ----------------------------------------------------------------

TEST(error_names) {
  CHECK_EQ(std::string(mydevGetErrorName(mydevSuccess)), "mydevSuccess");
  CHECK_EQ(std::string(mydevGetErrorName(mydevErrorMemoryAllocation)), "mydevErrorMemoryAllocation");
  CHECK_EQ(std::string(mydevGetErrorName(mydevErrorForkedChild)), "mydevErrorForkedChild");
  CHECK_EQ(std::string(mydevGetErrorName(mydevErrorInitialization)), "mydevErrorInitialization");
  CHECK_EQ(std::string(mydevGetErrorName(static_cast<mydevError_t>(99))), "mydevErrorUnrecognized");
}

TEST(config_parsing) {
  std::string error;
  int count = 0;
  CHECK(mydev::parse_device_count(nullptr, &count, &error) && count == 2);
  CHECK(mydev::parse_device_count("", &count, &error) && count == 2);
  CHECK(mydev::parse_device_count("1", &count, &error) && count == 1);
  CHECK(mydev::parse_device_count("16", &count, &error) && count == 16);
  for (const char* bad : {"0", "17", "abc", "2x", " 2", "-1", "99999999999999999999999"}) {
    error.clear();
    CHECK(!mydev::parse_device_count(bad, &count, &error));
    CHECK_CONTAINS(error, "MYDEV_DEVICE_COUNT");
    CHECK_CONTAINS(error, bad);
  }

  const std::pair<const char*, size_t> good_sizes[] = {
      {nullptr, size_t(4) << 30}, {"8GiB", size_t(8) << 30}, {"512MiB", 512 * kMiB}, {"512M", 512 * kMiB},
      {"512MB", 512 * kMiB},      {"512m", 512 * kMiB},      {"1048576", kMiB},       {"2048K", 2 * kMiB},
      {"1T", size_t(1) << 40},    {"1048576B", kMiB},        {"1048600", kMiB + 0},
  };
  for (const auto& [text, expected] : good_sizes) {
    size_t bytes = 0;
    CHECK(mydev::parse_device_memory(text, &bytes, &error));
    CHECK_EQ(bytes, expected);
  }
  for (const char* bad : {"abc", "1.5G", "G", "12XB", "4GiBs", "-1G", "1000", "2T", "99999999999999999999G"}) {
    size_t bytes = 0;
    error.clear();
    CHECK(!mydev::parse_device_memory(bad, &bytes, &error));
    CHECK_CONTAINS(error, "MYDEV_DEVICE_MEMORY");
  }

  bool blocking = true;
  CHECK(mydev::parse_launch_blocking(nullptr, &blocking, &error) && !blocking);
  CHECK(mydev::parse_launch_blocking("0", &blocking, &error) && !blocking);
  CHECK(mydev::parse_launch_blocking("1", &blocking, &error) && blocking);
  CHECK(!mydev::parse_launch_blocking("yes", &blocking, &error));
  CHECK_CONTAINS(error, "MYDEV_LAUNCH_BLOCKING");
}

TEST(environment_configures_devices) {
  ChildResult result = run_self("print-config", {"MYDEV_DEVICE_COUNT=3", "MYDEV_DEVICE_MEMORY=8MiB"});
  CHECK_CHILD_EXIT(result, 0);
  CHECK_CONTAINS(result.output, "count=3 total=8388608 free=8388608");

  result = run_self("print-config", {});
  CHECK_CHILD_EXIT(result, 0);
  CHECK_CONTAINS(result.output, "count=2 total=4294967296");
}

TEST(bad_environment_fails_initialisation) {
  ChildResult result = run_self("print-config", {"MYDEV_DEVICE_COUNT=lots"});
  CHECK_CHILD_EXIT(result, 0);
  CHECK_CONTAINS(result.output, "error mydevErrorInitialization mydevGetDeviceCount: invalid MYDEV_DEVICE_COUNT='lots'");
  result = run_self("print-config", {"MYDEV_DEVICE_MEMORY=4GB!"});
  CHECK_CONTAINS(result.output, "error mydevErrorInitialization");
  CHECK_CONTAINS(result.output, "MYDEV_DEVICE_MEMORY='4GB!'");
}

// ---- devices ------------------------------------------------------------------------

// Runs first among the tests that touch memory: nothing has used a device yet.
TEST(devices_initialise_lazily) {
  int initialized = -1;
  CHECK_OK(mydevDeviceIsInitialized(1, &initialized));
  CHECK_EQ(initialized, 0);
  mydevDeviceProp prop;
  CHECK_OK(mydevGetDeviceProperties(&prop, 1));
  CHECK_OK(mydevDeviceIsInitialized(1, &initialized));
  CHECK_EQ(initialized, 0);
  default_stream(1);
  CHECK_OK(mydevDeviceIsInitialized(1, &initialized));
  CHECK_EQ(initialized, 1);
  CHECK_ERR(mydevDeviceIsInitialized(2, &initialized), mydevErrorInvalidDevice);
}

TEST(device_count_current_device_and_properties) {
  int count = 0;
  CHECK_OK(mydevGetDeviceCount(&count));
  CHECK_EQ(count, 2);
  int current = -1;
  CHECK_OK(mydevGetDevice(&current));
  CHECK_EQ(current, 0);
  CHECK_OK(mydevSetDevice(1));
  CHECK_OK(mydevGetDevice(&current));
  CHECK_EQ(current, 1);
  int other_thread = -1;
  std::thread([&] { mydevGetDevice(&other_thread); }).join();
  CHECK_EQ(other_thread, 0);
  CHECK_OK(mydevSetDevice(0));

  CHECK_ERR(mydevSetDevice(2), mydevErrorInvalidDevice);
  CHECK_CONTAINS(last_message(), "mydevSetDevice: invalid device mydev:2");
  CHECK_ERR(mydevSetDevice(-1), mydevErrorInvalidDevice);
  CHECK_ERR(mydevGetDeviceCount(nullptr), mydevErrorInvalidValue);

  mydevDeviceProp prop;
  CHECK_OK(mydevGetDeviceProperties(&prop, 0));
  CHECK_EQ(std::string(prop.name), "mydev simulated device");
  CHECK_EQ(prop.totalGlobalMem, kTestDeviceMemory);
  CHECK_EQ(prop.multiProcessorCount, static_cast<int>(std::thread::hardware_concurrency()));
  CHECK_EQ(prop.major, 1);
  CHECK_EQ(prop.minor, 0);
  CHECK_ERR(mydevGetDeviceProperties(&prop, 5), mydevErrorInvalidDevice);
  CHECK_CONTAINS(last_message(), "mydevGetDeviceProperties");

  // A message that names no device of its own gets the caller's current one.
  CHECK_OK(mydevSetDevice(1));
  CHECK_ERR(mydevGetDeviceCount(nullptr), mydevErrorInvalidValue);
  CHECK_CONTAINS(last_message(), "mydevGetDeviceCount");
  CHECK_CONTAINS(last_message(), "(current device mydev:1)");
  CHECK_OK(mydevSetDevice(0));

  size_t free_now = 0, total = 0;
  CHECK_OK(mydevMemGetInfo(&free_now, &total));
  CHECK_EQ(total, kTestDeviceMemory);
  CHECK_EQ(free_now, kTestDeviceMemory);
}

// ---- memory ---------------------------------------------------------------------------

TEST(malloc_and_free) {
  void* p = nullptr;
  CHECK_OK(mydevMalloc(&p, 1000));
  CHECK(p != nullptr);
  CHECK_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  CHECK_EQ(free_bytes(), kTestDeviceMemory - 1024);
  void* q = nullptr;
  CHECK_OK(mydevMalloc(&q, 1));
  CHECK_EQ(reinterpret_cast<uintptr_t>(q) % 256, 0u);
  CHECK_EQ(free_bytes(), kTestDeviceMemory - 1024 - 256);

  CHECK_ERR(mydevFree(static_cast<char*>(p) + 256), mydevErrorInvalidDevicePointer);
  CHECK_CONTAINS(last_message(), "mydevFree");
  CHECK_CONTAINS(last_message(), "mydev:0");
  int host_variable = 0;
  CHECK_ERR(mydevFree(&host_variable), mydevErrorInvalidDevicePointer);
  CHECK_OK(mydevFree(p));
  CHECK_ERR(mydevFree(p), mydevErrorInvalidDevicePointer);
  CHECK_OK(mydevFree(q));
  CHECK_OK(mydevFree(nullptr));
  CHECK_EQ(free_bytes(), kTestDeviceMemory);

  void* empty = &host_variable;
  CHECK_OK(mydevMalloc(&empty, 0));
  CHECK(empty == nullptr);
  CHECK_ERR(mydevMalloc(nullptr, 16), mydevErrorInvalidValue);
}

TEST(out_of_memory_and_recovery) {
  void* big = nullptr;
  CHECK_OK(mydevMalloc(&big, 48 * kMiB));
  void* more = nullptr;
  CHECK_ERR(mydevMalloc(&more, 32 * kMiB), mydevErrorMemoryAllocation);
  CHECK_EQ(last_message(),
           std::string("mydevMalloc: out of memory on mydev:0: tried to allocate 32.00 MiB; 16.00 MiB of 64.00 MiB free"));
  CHECK(more == nullptr);
  CHECK_ERR(mydevMalloc(&more, size_t(1) << 50), mydevErrorMemoryAllocation);
  CHECK_OK(mydevFree(big));
  CHECK_OK(mydevMalloc(&more, 32 * kMiB));
  CHECK_OK(mydevMalloc(&big, 32 * kMiB));
  CHECK_EQ(free_bytes(), 0u);
  CHECK_OK(mydevFree(more));
  CHECK_OK(mydevFree(big));
  CHECK_OK(mydevMalloc(&big, kTestDeviceMemory));
  CHECK_OK(mydevFree(big));
}

TEST(malloc_free_cycles_return_to_baseline) {
  const size_t baseline = free_bytes();
  std::mt19937 random(42);
  std::uniform_int_distribution<size_t> size(1, 64 * 1024);
  for (int i = 0; i < 100000; ++i) {
    void* p = nullptr;
    CHECK_OK(mydevMalloc(&p, size(random)));
    CHECK_OK(mydevFree(p));
  }
  CHECK_EQ(free_bytes(), baseline);

  // Free a fragmented heap in random order: coalescing must rebuild one block.
  std::vector<void*> blocks(2000);
  for (void*& p : blocks) CHECK_OK(mydevMalloc(&p, size(random)));
  CHECK(free_bytes() < baseline);
  std::shuffle(blocks.begin(), blocks.end(), random);
  for (void* p : blocks) CHECK_OK(mydevFree(p));
  CHECK_EQ(free_bytes(), baseline);
  void* whole = nullptr;
  CHECK_OK(mydevMalloc(&whole, baseline));
  CHECK_OK(mydevFree(whole));
}

TEST(free_returns_physical_pages) {
  const size_t bytes = 32 * kMiB;
  void* p = nullptr;
  CHECK_OK(mydevMalloc(&p, bytes));
  const long before = rss_shmem_kib();
  CHECK_OK(mydevMemsetAsync(p, 0xab, bytes, nullptr));
  CHECK_OK(mydevStreamSynchronize(nullptr));
  const long touched = rss_shmem_kib();
  CHECK_OK(mydevFree(p));
  const long after = rss_shmem_kib();
  if (before >= 0) {
    CHECK(touched - before >= 30 * 1024);
    CHECK(touched - after >= 30 * 1024);
  }
  // The same range handed out again reads as zero: the pages were punched.
  CHECK_OK(mydevMalloc(&p, bytes));
  CHECK(all_equal(read_device(p, bytes), 0));
  CHECK_OK(mydevFree(p));
}

TEST(pointer_attributes) {
  void* p = nullptr;
  CHECK_OK(mydevMalloc(&p, 1000));
  mydevPointerAttributes attr;
  CHECK_OK(mydevPointerGetAttributes(&attr, p));
  CHECK_EQ(attr.type, mydevMemoryTypeDevice);
  CHECK_EQ(attr.device, 0);
  CHECK(attr.base == p);
  CHECK_EQ(attr.size, 1024u);
  CHECK_OK(mydevPointerGetAttributes(&attr, static_cast<char*>(p) + 999));
  CHECK_EQ(attr.type, mydevMemoryTypeDevice);
  CHECK(attr.base == p);

  CHECK_OK(mydevSetDevice(1));
  void* on_one = nullptr;
  CHECK_OK(mydevMalloc(&on_one, 64));
  CHECK_OK(mydevSetDevice(0));
  CHECK_OK(mydevPointerGetAttributes(&attr, on_one));
  CHECK_EQ(attr.type, mydevMemoryTypeDevice);
  CHECK_EQ(attr.device, 1);
  int device = -1;
  CHECK_OK(mydevPointerGetDevice(&device, static_cast<char*>(on_one) + 10));
  CHECK_EQ(device, 1);
  CHECK_OK(mydevPointerGetDevice(&device, p));
  CHECK_EQ(device, 0);
  CHECK_OK(mydevFree(on_one));

  void* pinned = nullptr;
  CHECK_OK(mydevHostAlloc(&pinned, 10000));
  CHECK_EQ(reinterpret_cast<uintptr_t>(pinned) % 4096, 0u);
  CHECK_OK(mydevPointerGetAttributes(&attr, static_cast<char*>(pinned) + 5000));
  CHECK_EQ(attr.type, mydevMemoryTypeHost);
  CHECK_EQ(attr.device, -1);
  CHECK(attr.base == pinned);
  CHECK_EQ(attr.size, 10000u);
  CHECK_OK(mydevFreeHost(pinned));
  CHECK_ERR(mydevFreeHost(pinned), mydevErrorInvalidValue);

  int stack_variable = 0;
  CHECK_OK(mydevPointerGetAttributes(&attr, &stack_variable));
  CHECK_EQ(attr.type, mydevMemoryTypeUnregistered);
  CHECK_EQ(attr.device, -1);
  CHECK(attr.base == nullptr);
  CHECK_EQ(attr.size, 0u);
  CHECK_OK(mydevPointerGetAttributes(&attr, nullptr));
  CHECK_EQ(attr.type, mydevMemoryTypeUnregistered);
  CHECK_ERR(mydevPointerGetDevice(&device, &stack_variable), mydevErrorInvalidDevicePointer);
  CHECK_ERR(mydevPointerGetDevice(nullptr, p), mydevErrorInvalidValue);

  CHECK_OK(mydevFree(p));
  CHECK_OK(mydevPointerGetAttributes(&attr, p));
  CHECK_EQ(attr.type, mydevMemoryTypeDevice);
  CHECK(attr.base == nullptr);
  CHECK_ERR(mydevPointerGetAttributes(nullptr, p), mydevErrorInvalidValue);
}

TEST(memcpy_synchronous) {
  const size_t n = 100000;
  std::vector<unsigned char> source(n), back(n);
  for (size_t i = 0; i < n; ++i) source[i] = static_cast<unsigned char>(i * 7);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_OK(mydevMalloc(&a, n));
  CHECK_OK(mydevMalloc(&b, n));
  CHECK_OK(mydevSetDevice(1));
  CHECK_OK(mydevMalloc(&c, n));
  CHECK_OK(mydevSetDevice(0));

  CHECK_OK(mydevMemcpy(a, source.data(), n, mydevMemcpyHostToDevice));
  CHECK_OK(mydevMemcpy(b, a, n, mydevMemcpyDeviceToDevice));
  CHECK_OK(mydevMemcpy(c, b, n, mydevMemcpyDeviceToDevice));
  CHECK_OK(mydevMemcpy(back.data(), c, n, mydevMemcpyDeviceToHost));
  CHECK(back == source);
  std::vector<unsigned char> copy(n);
  CHECK_OK(mydevMemcpy(copy.data(), source.data(), n, mydevMemcpyHostToHost));
  CHECK(copy == source);
  // Interior pointers, partial ranges.
  CHECK_OK(mydevMemcpy(back.data(), static_cast<char*>(a) + 10, 5, mydevMemcpyDeviceToHost));
  CHECK(memcmp(back.data(), source.data() + 10, 5) == 0);

  CHECK_ERR(mydevMemcpy(a, source.data(), n, mydevMemcpyDeviceToHost), mydevErrorInvalidValue);
  CHECK_CONTAINS(last_message(), "mydevMemcpy: mydevMemcpyDeviceToHost does not match");
  CHECK_ERR(mydevMemcpy(back.data(), source.data(), n, mydevMemcpyHostToDevice), mydevErrorInvalidValue);
  CHECK_ERR(mydevMemcpy(a, b, n, mydevMemcpyHostToDevice), mydevErrorInvalidValue);
  CHECK_ERR(mydevMemcpy(a, source.data(), n + 1024, mydevMemcpyHostToDevice), mydevErrorInvalidValue);
  CHECK_CONTAINS(last_message(), "not inside a live allocation of mydev:0");
  CHECK_ERR(mydevMemcpy(a, source.data(), n, static_cast<mydevMemcpyKind>(9)), mydevErrorInvalidValue);
  CHECK_OK(mydevMemcpy(nullptr, nullptr, 0, mydevMemcpyHostToDevice));

  CHECK_OK(mydevFree(a));
  CHECK_OK(mydevFree(b));
  CHECK_OK(mydevFree(c));
}

TEST(memcpy_async_pageable) {
  const size_t n = 1 << 20;
  std::vector<unsigned char> source(n, 1), back(n, 0);
  void *a = nullptr, *c = nullptr;
  CHECK_OK(mydevMalloc(&a, n));
  CHECK_OK(mydevSetDevice(1));
  CHECK_OK(mydevMalloc(&c, n));
  CHECK_OK(mydevSetDevice(0));
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));

  // The source is staged: overwriting it right after the call changes nothing.
  Gate gate;
  CHECK_OK(launch("gate", [&] { gate.wait(); }, stream));
  CHECK_OK(mydevMemcpyAsync(a, source.data(), n, mydevMemcpyHostToDevice, stream));
  std::fill(source.begin(), source.end(), 2);
  gate.open = true;
  CHECK_OK(mydevMemcpyAsync(c, a, n, mydevMemcpyDeviceToDevice, stream));
  // To pageable memory the call waits: the data is there on return.
  CHECK_OK(mydevMemcpyAsync(back.data(), c, n, mydevMemcpyDeviceToHost, stream));
  CHECK(all_equal(back, 1));
  CHECK(!gate.timed_out);

  CHECK_ERR(mydevMemcpyAsync(back.data(), a, n, mydevMemcpyHostToDevice, stream), mydevErrorInvalidValue);
  CHECK_CONTAINS(last_message(), "mydevMemcpyAsync");
  CHECK_OK(mydevStreamDestroy(stream));
  CHECK_OK(mydevFree(a));
  CHECK_OK(mydevFree(c));
}

TEST(memcpy_async_pinned_is_truly_async) {
  const size_t n = 4096;
  unsigned char* pinned = nullptr;
  CHECK_OK(mydevHostAlloc(reinterpret_cast<void**>(&pinned), n));
  memset(pinned, 5, n);
  void* a = nullptr;
  CHECK_OK(mydevMalloc(&a, n));
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));

  Gate gate;
  CHECK_OK(launch("gate", [&] { gate.wait(); }, stream));
  CHECK_OK(mydevMemcpyAsync(a, pinned, n, mydevMemcpyHostToDevice, stream));
  CHECK_OK(launch("fill", fill_kernel(a, 9, n), stream));
  CHECK_OK(mydevMemcpyAsync(pinned + 0, a, n, mydevMemcpyDeviceToHost, stream));
  sleep_ms(20);
  CHECK_ERR(mydevStreamQuery(stream), mydevErrorNotReady);
  CHECK_EQ(static_cast<int>(pinned[0]), 5);  // the copy back has not run
  gate.open = true;
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_EQ(static_cast<int>(pinned[0]), 9);
  CHECK_EQ(static_cast<int>(pinned[n - 1]), 9);

  // Device to device across devices, asynchronously, through pinned memory.
  void* c = nullptr;
  CHECK_OK(mydevSetDevice(1));
  CHECK_OK(mydevMalloc(&c, n));
  CHECK_OK(mydevSetDevice(0));
  CHECK_OK(mydevMemcpyAsync(c, a, n, mydevMemcpyDeviceToDevice, stream));
  memset(pinned, 0, n);
  CHECK_OK(mydevMemcpyAsync(pinned, c, n, mydevMemcpyDeviceToHost, stream));
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_EQ(static_cast<int>(pinned[100]), 9);

  CHECK(!gate.timed_out);
  CHECK_OK(mydevStreamDestroy(stream));
  CHECK_OK(mydevFree(a));
  CHECK_OK(mydevFree(c));
  CHECK_OK(mydevFreeHost(pinned));
}

TEST(null_stream_is_current_devices_default_stream) {
  CHECK_OK(mydevSetDevice(1));
  void* a = nullptr;
  CHECK_OK(mydevMalloc(&a, 256));
  int* pinned = nullptr;
  CHECK_OK(mydevHostAlloc(reinterpret_cast<void**>(&pinned), sizeof(int)));
  *pinned = 0;
  Gate gate;
  CHECK_OK(launch("late_fill", [&, fill = fill_kernel(a, 7, 256)] {
    gate.wait();
    fill();
  }));
  CHECK_OK(mydevMemcpyAsync(pinned, a, sizeof(int), mydevMemcpyDeviceToHost, nullptr));
  gate.open = true;
  CHECK_OK(mydevStreamSynchronize(default_stream(1)));
  CHECK_EQ(*pinned, 0x07070707);
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  int device = -1;
  CHECK_OK(mydevStreamGetDevice(stream, &device));
  CHECK_EQ(device, 1);
  CHECK_OK(mydevStreamGetDevice(nullptr, &device));
  CHECK_EQ(device, 1);
  CHECK_OK(mydevStreamDestroy(stream));
  CHECK_OK(mydevFree(a));
  CHECK_OK(mydevFreeHost(pinned));
  CHECK_OK(mydevSetDevice(0));
  CHECK(!gate.timed_out);
}

TEST(memset) {
  const size_t n = 10000;
  void* a = nullptr;
  CHECK_OK(mydevMalloc(&a, n));
  CHECK_OK(mydevMemsetAsync(a, 0x11, n, nullptr));
  CHECK_OK(mydevMemsetAsync(static_cast<char*>(a) + 100, 0x1ff, 50, nullptr));
  std::vector<unsigned char> data = read_device(a, n);
  CHECK_EQ(static_cast<int>(data[99]), 0x11);
  CHECK_EQ(static_cast<int>(data[100]), 0xff);
  CHECK_EQ(static_cast<int>(data[149]), 0xff);
  CHECK_EQ(static_cast<int>(data[150]), 0x11);
  CHECK_EQ(static_cast<int>(data[n - 1]), 0x11);
  std::vector<char> host(16);
  CHECK_ERR(mydevMemsetAsync(host.data(), 0, host.size(), nullptr), mydevErrorInvalidValue);
  CHECK_ERR(mydevMemsetAsync(a, 0, n + 1000, nullptr), mydevErrorInvalidValue);
  CHECK_OK(mydevFree(a));
}

// ---- kernels and streams ----------------------------------------------------------------

TEST(launch_is_asynchronous) {
  Gate gate;
  std::atomic<bool> ran{false};
  std::atomic<bool> released{false};
  struct Args {
    Gate* gate;
    std::atomic<bool>* ran;
    std::atomic<bool>* released;
  } args{&gate, &ran, &released};
  auto kernel = [](void* p) {
    Args* a = static_cast<Args*>(p);
    a->gate->wait();
    *a->ran = true;
  };
  auto release = [](void* p) {
    Args* a = static_cast<Args*>(p);
    *a->released = a->ran->load();  // released after the kernel ran
  };
  CHECK_OK(mydevLaunchKernel("waits_for_gate", kernel, &args, release, nullptr));
  CHECK(!ran);  // the launch returned before the kernel could run
  CHECK_EQ(mydevStreamQuery(nullptr), mydevErrorNotReady);
  gate.open = true;
  CHECK_OK(mydevStreamSynchronize(nullptr));
  CHECK(ran);
  CHECK(released);
  CHECK(!gate.timed_out);

  // A launch that fails releases its arguments at once.
  bool freed = false;
  CHECK_ERR(mydevLaunchKernel("no_function", nullptr, &freed, [](void* p) { *static_cast<bool*>(p) = true; }, nullptr),
            mydevErrorInvalidValue);
  CHECK(freed);
}

TEST(stream_runs_kernels_in_order) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  std::vector<int> order;
  for (int i = 0; i < 1000; ++i) CHECK_OK(launch("append", [&order, i] { order.push_back(i); }, stream));
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) CHECK_EQ(order[i], i);
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(full_stream_blocks_the_launch_until_a_task_finishes) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  Gate gate;
  CHECK_OK(launch("waits_for_gate", [&gate] { gate.wait(); }, stream));
  // With the first task held, the ring fills up: the launches after it wait.
  constexpr int kLaunches = 3000;
  std::atomic<int> launched{0};
  std::atomic<int> ran{0};
  std::atomic<int> order_errors{0};
  std::thread launcher([&] {
    for (int i = 0; i < kLaunches; ++i) {
      if (launch("count", [&, i] { order_errors += ran.fetch_add(1) != i; }, stream) != mydevSuccess) ++order_errors;
      ++launched;
    }
  });
  sleep_ms(50);
  CHECK(launched.load() < kLaunches);
  CHECK_EQ(ran.load(), 0);
  gate.open = true;
  launcher.join();
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_EQ(ran.load(), kLaunches);
  CHECK_EQ(order_errors.load(), 0);
  CHECK(!gate.timed_out);
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(kernel_arguments_live_in_the_launch_queue) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  // Arguments of many sizes, enough of them to wrap the argument ring several
  // times, a few larger than the whole ring (those come from the heap), all
  // launched behind a held kernel so that the ring fills up too.
  struct Header {
    int index;
    size_t size;
    std::atomic<int>* ran;
    std::atomic<int>* errors;
    std::atomic<int>* destroyed;
  };
  std::atomic<int> ran{0}, errors{0}, destroyed{0};
  struct Build {
    Header header;
  };
  const auto construct = [](void* context, void* args) {
    const Header& header = static_cast<Build*>(context)->header;
    if (reinterpret_cast<uintptr_t>(args) % 64 != 0) ++*header.errors;
    std::memcpy(args, &header, sizeof(Header));
    auto* bytes = static_cast<unsigned char*>(args);
    for (size_t i = sizeof(Header); i < header.size; ++i) bytes[i] = static_cast<unsigned char>(header.index + i);
    return 0;
  };
  const auto kernel = [](void* args) {
    Header header;
    std::memcpy(&header, args, sizeof(Header));
    const auto* bytes = static_cast<const unsigned char*>(args);
    bool intact = header.ran->fetch_add(1) == header.index;
    for (size_t i = sizeof(Header); i < header.size; ++i) {
      intact = intact && bytes[i] == static_cast<unsigned char>(header.index + i);
    }
    if (!intact) ++*header.errors;
  };
  const auto destroy = [](void* args) {
    Header header;
    std::memcpy(&header, args, sizeof(Header));
    ++*header.destroyed;
  };
  Gate gate;
  CHECK_OK(launch("waits_for_gate", [&gate] { gate.wait(); }, stream));
  std::mt19937 random(7);
  constexpr int kLaunches = 4000;
  std::thread opener([&] {
    sleep_ms(20);
    gate.open = true;
  });
  for (int i = 0; i < kLaunches; ++i) {
    const size_t size = i % 997 == 0 ? (size_t(1) << 20) : sizeof(Header) + random() % 2000;
    Build build{{i, size, &ran, &errors, &destroyed}};
    CHECK_OK(mydevLaunchKernelWithArgs("check_arguments", kernel, size, construct, &build, destroy, stream));
  }
  opener.join();
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_EQ(ran.load(), kLaunches);
  CHECK_EQ(destroyed.load(), kLaunches);
  CHECK_EQ(errors.load(), 0);
  CHECK(!gate.timed_out);
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(kernel_arguments_whose_construction_fails_or_throws_queue_nothing) {
  std::atomic<int> ran{0};
  const auto kernel = [](void* args) { ++**static_cast<std::atomic<int>**>(args); };
  const auto refuse = [](void*, void*) { return 1; };
  CHECK_ERR(mydevLaunchKernelWithArgs("refused", kernel, 64, refuse, nullptr, nullptr, nullptr),
            mydevErrorInvalidValue);
  CHECK_CONTAINS(last_message(), "kernel 'refused': its argument constructor failed; nothing was queued");
  const auto throwing = [](void*, void*) -> int { throw std::runtime_error("cannot build the arguments"); };
  bool thrown = false;
  try {
    mydevLaunchKernelWithArgs("throws", kernel, 1 << 21, throwing, nullptr, nullptr, nullptr);
  } catch (const std::runtime_error& e) {
    thrown = std::string(e.what()) == "cannot build the arguments";
  }
  CHECK(thrown);
  std::atomic<int>* counter = &ran;
  const auto store = [](void* context, void* args) {
    std::memcpy(args, context, sizeof(void*));
    return 0;
  };
  CHECK_OK(mydevLaunchKernelWithArgs("counts", kernel, sizeof(counter), store, &counter, nullptr, nullptr));
  CHECK_OK(mydevDeviceSynchronize());
  CHECK_EQ(ran.load(), 1);
  CHECK_ERR(mydevLaunchKernelWithArgs("no_function", nullptr, 64, store, &counter, nullptr, nullptr),
            mydevErrorInvalidValue);
  CHECK_CONTAINS(last_message(), "has no function");
  CHECK_ERR(mydevLaunchKernelWithArgs("no_constructor", kernel, 64, nullptr, nullptr, nullptr, nullptr),
            mydevErrorInvalidValue);
  CHECK_CONTAINS(last_message(), "has no argument constructor");
}

TEST(bursts_after_the_worker_fell_asleep_all_run) {
  // The worker sleeps after spinning ~30 us on an empty queue; each round lets
  // it fall asleep, then launches a burst, some long enough to fill the ring
  // (the launch then waits for the worker). A lost wake-up hangs the round:
  // the watchdog turns that into a failure.
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  std::atomic<int> ran{0};
  HangWatchdog watchdog("bursts_after_the_worker_fell_asleep_all_run", ran);
  std::mt19937 random(11);
  int launched = 0;
  for (int round = 0; round < 5000; ++round) {
    // Busy-waits around the worker's spin time, so that launches land just
    // before, during and after its falling asleep.
    busy_wait(std::chrono::microseconds(15 + random() % 40));
    const int burst = round % 250 == 0 ? 1500 : 1 + static_cast<int>(random() % 3);
    for (int i = 0; i < burst; ++i) {
      CHECK_OK(launch("count", [&ran] { ++ran; }, stream));
    }
    launched += burst;
    if (round % 7 == 0) CHECK_OK(mydevStreamSynchronize(stream));
  }
  CHECK_OK(mydevStreamSynchronize(stream));
  watchdog.finish();
  CHECK_EQ(ran.load(), launched);
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(launches_after_a_long_kernel_all_run) {
  // After a long kernel the worker goes to sleep without spinning first: a
  // launch that lands just as it does must still wake it (a lost wake-up
  // hangs a round, which the watchdog turns into a failure).
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  std::atomic<int> ran{0};
  HangWatchdog watchdog("launches_after_a_long_kernel_all_run", ran);
  std::mt19937 random(5);
  int launched = 0;
  for (int round = 0; round < 300; ++round) {
    const auto long_kernel = std::chrono::microseconds(350 + random() % 200);
    CHECK_OK(launch("long", [&ran, long_kernel] {
      busy_wait(long_kernel);
      ++ran;
    }, stream));
    busy_wait(long_kernel + std::chrono::microseconds(random() % 60));
    CHECK_OK(launch("count", [&ran] { ++ran; }, stream));
    launched += 2;
    if (round % 5 == 0) CHECK_OK(mydevStreamSynchronize(stream));
  }
  CHECK_OK(mydevStreamSynchronize(stream));
  watchdog.finish();
  CHECK_EQ(ran.load(), launched);
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(blocking_sync_event_waiter_sleeps) {
  // A blocking-sync event's waiter sleeps at once instead of polling: its
  // thread uses next to no CPU time while a kernel runs for 200 ms.
  mydevEvent_t event = nullptr;
  CHECK_OK(mydevEventCreateWithFlags(&event, mydevEventBlockingSync | mydevEventDisableTiming));
  Gate gate;
  CHECK_OK(launch("gate", [&] { gate.wait(); }));
  CHECK_OK(mydevEventRecord(event, nullptr));
  std::atomic<bool> returned{false};
  double waiter_cpu_ms = 0;
  std::thread waiter([&] {
    timespec start{}, end{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    CHECK_OK(mydevEventSynchronize(event));
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
    waiter_cpu_ms = (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6;
    returned = true;
  });
  sleep_ms(200);
  CHECK(!returned);
  gate.open = true;
  waiter.join();
  CHECK(returned);
  CHECK(waiter_cpu_ms < 20.0);
  CHECK_OK(mydevEventQuery(event));
  CHECK_OK(mydevEventDestroy(event));
  CHECK(!gate.timed_out);
}

TEST(host_task_holds_its_place_in_the_stream_until_ended) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  float* data = nullptr;
  CHECK_OK(mydevMalloc(reinterpret_cast<void**>(&data), sizeof(float)));
  mydevHostTask_t task = nullptr;
  CHECK_OK(mydevHostTaskBegin(stream, &task));
  // The agent writes device memory through its mapping; the kernel queued
  // behind the task reads what the agent wrote.
  float* agent_view = nullptr;
  CHECK_OK(mydevHostTaskMapPointer(task, data, reinterpret_cast<void**>(&agent_view)));
  std::atomic<float> kernel_saw{0.0f};
  CHECK_OK(launch("after the host task", [data, &kernel_saw] {
    float* mapped = nullptr;
    CHECK_OK(mydevKernelMapPointer(data, reinterpret_cast<void**>(&mapped)));
    kernel_saw = *mapped;
  }, stream));
  mydevEvent_t event = nullptr;
  CHECK_OK(mydevEventCreateWithFlags(&event, mydevEventBlockingSync | mydevEventDisableTiming));
  CHECK_OK(mydevEventRecord(event, stream));
  sleep_ms(50);
  CHECK_ERR(mydevStreamQuery(stream), mydevErrorNotReady);
  CHECK_ERR(mydevEventQuery(event), mydevErrorNotReady);
  CHECK_EQ(kernel_saw.load(), 0.0f);
  // Another host task cannot begin while this one is pending.
  mydevHostTask_t second = nullptr;
  CHECK_ERR(mydevHostTaskBegin(stream, &second), mydevErrorNotReady);
  *agent_view = 42.0f;
  std::thread agent([task] { CHECK_OK(mydevHostTaskEnd(task)); });
  CHECK_OK(mydevEventSynchronize(event));
  agent.join();
  CHECK_EQ(kernel_saw.load(), 42.0f);
  CHECK_OK(mydevEventDestroy(event));
  CHECK_OK(mydevFree(data));
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(host_task_waits_for_pending_work_to_begin) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  Gate gate;
  CHECK_OK(launch("gate", [&] { gate.wait(); }, stream));
  mydevHostTask_t task = nullptr;
  CHECK_ERR(mydevHostTaskBegin(stream, &task), mydevErrorNotReady);
  CHECK_CONTAINS(mydevGetLastErrorMessage(), "pending");
  gate.open = true;
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_OK(mydevHostTaskBegin(stream, &task));
  CHECK_OK(mydevHostTaskEnd(task));
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_OK(mydevStreamDestroy(stream));
  CHECK(!gate.timed_out);
}

TEST(host_tasks_back_to_back_complete_without_the_worker) {
  // A collective loop: host task after host task, each waited for through an
  // event, no kernel in between. The worker sleeps through all of them: each
  // agent completes its task itself, which a worker still asleep at an
  // earlier host task must not undo when a launch finally wakes it.
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  mydevEvent_t event = nullptr;
  CHECK_OK(mydevEventCreateWithFlags(&event, mydevEventBlockingSync | mydevEventDisableTiming));
  std::atomic<int> ended{0};
  HangWatchdog watchdog("host_tasks_back_to_back_complete_without_the_worker", ended);
  for (int round = 0; round < 2000; ++round) {
    mydevHostTask_t task = nullptr;
    CHECK_OK(mydevHostTaskBegin(stream, &task));
    CHECK_OK(mydevEventRecord(event, stream));
    std::thread agent([task, &ended] {
      CHECK_OK(mydevHostTaskEnd(task));
      ++ended;
    });
    CHECK_OK(mydevEventSynchronize(event));
    agent.join();
  }
  std::atomic<int> ran{0};
  CHECK_OK(launch("after the host tasks", [&ran] { ++ran; }, stream));
  CHECK_OK(mydevStreamSynchronize(stream));
  watchdog.finish();
  CHECK_EQ(ran.load(), 1);
  CHECK_EQ(ended.load(), 2000);
  CHECK_OK(mydevEventDestroy(event));
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(host_tasks_ended_at_any_point_of_the_worker_all_complete) {
  // Host tasks begin just after the worker finished a kernel (it spins, then
  // sleeps) and end before, while and after it gets to them, from the caller
  // or another thread, with launches queued behind some of them. A lost
  // completion or wake-up hangs a round, which the watchdog turns into a
  // failure.
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  std::atomic<int> ran{0};
  HangWatchdog watchdog("host_tasks_ended_at_any_point_of_the_worker_all_complete", ran);
  std::mt19937 random(17);
  int launched = 0;
  for (int round = 0; round < 3000; ++round) {
    CHECK_OK(launch("count", [&ran] { ++ran; }, stream));
    ++launched;
    CHECK_OK(mydevStreamSynchronize(stream));
    busy_wait(std::chrono::microseconds(random() % 60));
    mydevHostTask_t task = nullptr;
    CHECK_OK(mydevHostTaskBegin(stream, &task));
    const int queued_behind = static_cast<int>(random() % 3);
    const auto delay = std::chrono::microseconds(random() % 80);
    std::thread agent;
    if (round % 2 == 0) {
      agent = std::thread([task, delay] {
        busy_wait(delay);
        CHECK_OK(mydevHostTaskEnd(task));
      });
    }
    for (int i = 0; i < queued_behind; ++i) {
      CHECK_OK(launch("count", [&ran] { ++ran; }, stream));
    }
    launched += queued_behind;
    if (round % 2 == 0) {
      agent.join();
    } else {
      busy_wait(delay);
      CHECK_OK(mydevHostTaskEnd(task));
    }
    if (round % 3 == 0) CHECK_OK(mydevStreamSynchronize(stream));
  }
  CHECK_OK(mydevStreamSynchronize(stream));
  watchdog.finish();
  CHECK_EQ(ran.load(), launched);
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(stream_properties_and_destroy) {
  int least = 99, greatest = 99;
  CHECK_OK(mydevDeviceGetStreamPriorityRange(&least, &greatest));
  CHECK_EQ(least, 0);
  CHECK_EQ(greatest, -1);
  mydevStream_t high = nullptr, clamped = nullptr;
  CHECK_OK(mydevStreamCreateWithPriority(&high, -1));
  CHECK_OK(mydevStreamCreateWithPriority(&clamped, -7));
  int priority = 5;
  CHECK_OK(mydevStreamGetPriority(high, &priority));
  CHECK_EQ(priority, -1);
  CHECK_OK(mydevStreamGetPriority(clamped, &priority));
  CHECK_EQ(priority, -1);
  CHECK_OK(mydevStreamGetPriority(nullptr, &priority));
  CHECK_EQ(priority, 0);
  // Destroy waits for the queued work.
  std::atomic<bool> done{false};
  CHECK_OK(launch("slow", [&] {
    sleep_ms(20);
    done = true;
  }, high));
  CHECK_OK(mydevStreamDestroy(high));
  CHECK(done);
  CHECK_OK(mydevStreamDestroy(clamped));
  CHECK_ERR(mydevStreamDestroy(default_stream(0)), mydevErrorInvalidResourceHandle);
  CHECK_CONTAINS(last_message(), "default stream of mydev:0");
  CHECK_ERR(mydevStreamDestroy(nullptr), mydevErrorInvalidResourceHandle);
  CHECK_ERR(mydevDeviceGetDefaultStream(7, &high), mydevErrorInvalidDevice);
}

TEST(device_synchronize_waits_for_every_stream) {
  mydevStream_t first = nullptr, second = nullptr;
  CHECK_OK(mydevStreamCreate(&first));
  CHECK_OK(mydevStreamCreate(&second));
  std::atomic<int> done{0};
  CHECK_OK(launch("slow", [&] { sleep_ms(20); ++done; }, first));
  CHECK_OK(launch("slow", [&] { sleep_ms(30); ++done; }, second));
  CHECK_OK(launch("slow", [&] { sleep_ms(10); ++done; }));
  CHECK_OK(mydevDeviceSynchronize());
  CHECK_EQ(done.load(), 3);
  CHECK_OK(mydevStreamDestroy(first));
  CHECK_OK(mydevStreamDestroy(second));
}

TEST(free_waits_for_the_device) {
  void* a = nullptr;
  CHECK_OK(mydevMalloc(&a, 4096));
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  std::atomic<bool> done{false};
  CHECK_OK(launch("writes_late", [&, fill = fill_kernel(a, 1, 4096)] {
    sleep_ms(30);
    fill();
    done = true;
  }, stream));
  CHECK_OK(mydevFree(a));
  CHECK(done);
  CHECK_OK(mydevStreamSynchronize(stream));  // and the kernel did not fail
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(kernel_map_pointer) {
  void* a = nullptr;
  void* b = nullptr;
  CHECK_OK(mydevMalloc(&a, 512));
  CHECK_OK(mydevSetDevice(1));
  CHECK_OK(mydevMalloc(&b, 512));
  CHECK_OK(mydevSetDevice(0));
  void* mapped = nullptr;
  CHECK_ERR(mydevKernelMapPointer(a, &mapped), mydevErrorNotPermitted);
  CHECK_CONTAINS(last_message(), "mydevKernelMapPointer");
  CHECK(mapped == nullptr);

  std::atomic<int> host_pointer_result{-1};
  int host_variable = 0;
  CHECK_OK(launch("map_both", [&] {
    void* pa = nullptr;
    void* pb = nullptr;
    if (mydevKernelMapPointer(a, &pa) != mydevSuccess || mydevKernelMapPointer(static_cast<char*>(b) + 8, &pb) != mydevSuccess) {
      mydevKernelFail(mydevGetLastErrorMessage());
      return;
    }
    memset(pa, 3, 512);
    memset(pb, 4, 504);
    void* ph = nullptr;
    host_pointer_result = mydevKernelMapPointer(&host_variable, &ph);
  }));
  CHECK_OK(mydevStreamSynchronize(nullptr));
  CHECK_EQ(host_pointer_result.load(), static_cast<int>(mydevErrorInvalidDevicePointer));
  CHECK(all_equal(read_device(a, 512), 3));
  std::vector<unsigned char> on_one = read_device(b, 512);
  CHECK_EQ(static_cast<int>(on_one[0]), 0);
  CHECK_EQ(static_cast<int>(on_one[8]), 4);
  CHECK_EQ(static_cast<int>(on_one[511]), 4);
  CHECK_OK(mydevFree(a));
  CHECK_OK(mydevFree(b));
}

// ---- events ---------------------------------------------------------------------------------

TEST(event_query_and_synchronize) {
  mydevEvent_t event = nullptr;
  CHECK_OK(mydevEventCreateWithFlags(&event, mydevEventDefault));
  CHECK_OK(mydevEventQuery(event));        // never recorded
  CHECK_OK(mydevEventSynchronize(event));  // never recorded
  Gate gate;
  CHECK_OK(launch("gate", [&] { gate.wait(); }));
  CHECK_OK(mydevEventRecord(event, nullptr));
  CHECK_EQ(mydevEventQuery(event), mydevErrorNotReady);
  gate.open = true;
  CHECK_OK(mydevEventSynchronize(event));
  CHECK_OK(mydevEventQuery(event));
  CHECK_OK(mydevEventDestroy(event));
  CHECK_ERR(mydevEventCreateWithFlags(&event, 0x40), mydevErrorInvalidValue);
  CHECK_ERR(mydevEventQuery(nullptr), mydevErrorInvalidResourceHandle);
  CHECK(!gate.timed_out);
}

TEST(event_elapsed_time) {
  mydevEvent_t start = nullptr, end = nullptr, untimed = nullptr;
  CHECK_OK(mydevEventCreateWithFlags(&start, mydevEventDefault));
  CHECK_OK(mydevEventCreateWithFlags(&end, mydevEventBlockingSync));
  CHECK_OK(mydevEventCreateWithFlags(&untimed, mydevEventDisableTiming));
  float ms = -1;
  CHECK_ERR(mydevEventElapsedTime(&ms, start, end), mydevErrorInvalidResourceHandle);
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  CHECK_OK(mydevEventRecord(start, stream));
  CHECK_OK(launch("sleep_25ms", [] { sleep_ms(25); }, stream));
  CHECK_OK(mydevEventRecord(end, stream));
  CHECK_OK(mydevEventRecord(untimed, stream));
  CHECK_OK(mydevEventSynchronize(end));
  CHECK_OK(mydevEventElapsedTime(&ms, start, end));
  CHECK(ms >= 25.0f);
  CHECK(ms < 5000.0f);
  CHECK_OK(mydevEventSynchronize(untimed));
  CHECK_ERR(mydevEventElapsedTime(&ms, start, untimed), mydevErrorInvalidResourceHandle);
  // Re-recording replaces the capture.
  CHECK_OK(mydevEventRecord(start, stream));
  CHECK_OK(mydevEventSynchronize(start));
  CHECK_OK(mydevEventElapsedTime(&ms, end, start));
  CHECK(ms >= 0.0f && ms < 25.0f);
  CHECK_OK(mydevStreamDestroy(stream));
  // An event outlives the stream it was recorded on.
  CHECK_OK(mydevEventQuery(start));
  CHECK_OK(mydevEventDestroy(start));
  CHECK_OK(mydevEventDestroy(end));
  CHECK_OK(mydevEventDestroy(untimed));
}

void check_stream_wait_event(int producer_device, int consumer_device) {
  CHECK_OK(mydevSetDevice(producer_device));
  mydevStream_t producer = nullptr;
  CHECK_OK(mydevStreamCreate(&producer));
  CHECK_OK(mydevSetDevice(consumer_device));
  mydevStream_t consumer = nullptr;
  CHECK_OK(mydevStreamCreate(&consumer));
  CHECK_OK(mydevSetDevice(0));
  mydevEvent_t event = nullptr;
  CHECK_OK(mydevEventCreateWithFlags(&event, mydevEventDisableTiming));
  CHECK_OK(mydevStreamWaitEvent(consumer, event));  // never recorded: no-op

  Gate gate;
  std::atomic<int> value{0};
  std::atomic<int> seen{-1};
  CHECK_OK(launch("produce", [&] {
    gate.wait();
    value = 1;
  }, producer));
  CHECK_OK(mydevEventRecord(event, producer));
  CHECK_OK(launch("unrelated", [&] { value = 2; }, producer));  // after the record: not waited for
  CHECK_OK(mydevStreamWaitEvent(consumer, event));
  CHECK_OK(launch("consume", [&] { seen = value.load(); }, consumer));
  sleep_ms(20);
  CHECK_EQ(seen.load(), -1);
  CHECK_EQ(mydevStreamQuery(consumer), mydevErrorNotReady);
  gate.open = true;
  CHECK_OK(mydevStreamSynchronize(consumer));
  CHECK(seen.load() >= 1);
  CHECK_OK(mydevStreamSynchronize(producer));
  CHECK(!gate.timed_out);
  CHECK_OK(mydevEventDestroy(event));
  CHECK_OK(mydevStreamDestroy(producer));
  CHECK_OK(mydevStreamDestroy(consumer));
}

TEST(stream_wait_event_same_device) { check_stream_wait_event(0, 0); }
TEST(stream_wait_event_across_devices) { check_stream_wait_event(0, 1); }

// ---- kernel failures ----------------------------------------------------------------------

void fail_with_boom(void*) { mydevKernelFail("boom"); }

// Names are copied into the launch (no allocation); longer ones are cut.
TEST(kernel_failure_names_the_first_63_characters_of_the_kernel) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  const std::string long_name = std::string(60, 'k') + "_and_more";
  CHECK_OK(mydevLaunchKernel(long_name.c_str(), fail_with_boom, nullptr, nullptr, stream));
  CHECK_ERR(mydevStreamSynchronize(stream), mydevErrorLaunchFailure);
  CHECK_EQ(last_message(), "kernel '" + long_name.substr(0, 63) + "' failed on mydev:0: boom");
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(kernel_failure_is_reported_once_at_next_sync) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  std::atomic<int> after{0};
  CHECK_OK(mydevLaunchKernel("failing_kernel", fail_with_boom, nullptr, nullptr, stream));
  CHECK_OK(mydevLaunchKernel("second_failure", [](void*) { mydevKernelFail("ignored"); }, nullptr, nullptr, stream));
  CHECK_OK(launch("after", [&] { ++after; }, stream));
  CHECK_ERR(mydevStreamSynchronize(stream), mydevErrorLaunchFailure);
  CHECK_EQ(last_message(), std::string("kernel 'failing_kernel' failed on mydev:0: boom"));
  CHECK_EQ(after.load(), 1);  // the stream kept running
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_OK(mydevStreamQuery(stream));
  CHECK_OK(launch("after", [&] { ++after; }, stream));
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_EQ(after.load(), 2);

  // A C++ exception escaping the kernel counts as a failure.
  CHECK_OK(launch("throwing_kernel", [] { throw std::runtime_error("thrown from a kernel"); }, stream));
  CHECK_ERR(mydevStreamSynchronize(stream), mydevErrorLaunchFailure);
  CHECK_EQ(last_message(), std::string("kernel 'throwing_kernel' failed on mydev:0: thrown from a kernel"));

  // Query reports it too, once the kernel ran.
  CHECK_OK(mydevLaunchKernel("failing_kernel", fail_with_boom, nullptr, nullptr, stream));
  mydevError_t status;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while ((status = mydevStreamQuery(stream)) == mydevErrorNotReady && Clock::now() < deadline) sleep_ms(1);
  CHECK_ERR(status, mydevErrorLaunchFailure);
  CHECK_OK(mydevStreamQuery(stream));
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(kernel_failure_reported_by_events_device_sync_and_memcpy) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  mydevEvent_t before = nullptr, after = nullptr;
  CHECK_OK(mydevEventCreateWithFlags(&before, mydevEventDefault));
  CHECK_OK(mydevEventCreateWithFlags(&after, mydevEventDisableTiming));
  Gate gate;
  CHECK_OK(mydevEventRecord(before, stream));
  CHECK_OK(launch("gated_failure", [&] {
    gate.wait();
    mydevKernelFail("late");
  }, stream));
  CHECK_OK(mydevEventRecord(after, stream));
  gate.open = true;
  CHECK_OK(mydevEventSynchronize(before));  // recorded before the kernel
  CHECK_ERR(mydevEventSynchronize(after), mydevErrorLaunchFailure);
  CHECK_EQ(last_message(), std::string("kernel 'gated_failure' failed on mydev:0: late"));
  CHECK_OK(mydevEventSynchronize(after));

  CHECK_OK(mydevLaunchKernel("device_sync_failure", fail_with_boom, nullptr, nullptr, stream));
  CHECK_ERR(mydevDeviceSynchronize(), mydevErrorLaunchFailure);
  CHECK_EQ(last_message(), std::string("kernel 'device_sync_failure' failed on mydev:0: boom"));
  CHECK_OK(mydevDeviceSynchronize());

  // On device 1, reported by a synchronous copy on its default stream.
  CHECK_OK(mydevSetDevice(1));
  void* a = nullptr;
  CHECK_OK(mydevMalloc(&a, 256));
  CHECK_OK(mydevLaunchKernel("memcpy_failure", fail_with_boom, nullptr, nullptr, nullptr));
  char host[16] = {};
  CHECK_ERR(mydevMemcpy(host, a, sizeof(host), mydevMemcpyDeviceToHost), mydevErrorLaunchFailure);
  CHECK_EQ(last_message(), std::string("kernel 'memcpy_failure' failed on mydev:1: boom"));
  CHECK_OK(mydevMemcpy(host, a, sizeof(host), mydevMemcpyDeviceToHost));
  CHECK_OK(mydevFree(a));
  CHECK_OK(mydevSetDevice(0));

  CHECK(!gate.timed_out);
  CHECK_OK(mydevEventDestroy(before));
  CHECK_OK(mydevEventDestroy(after));
  CHECK_OK(mydevStreamDestroy(stream));
}

// ---- activity tracing ------------------------------------------------------

std::vector<mydevActivityRecord> flushed_activity(std::vector<std::string>* names) {
  struct Sink {
    std::vector<mydevActivityRecord> records;
    std::vector<std::string>* names;
  } sink{{}, names};
  CHECK_OK(mydevActivityFlush(
      [](const mydevActivityRecord* record, void* context) {
        auto* into = static_cast<Sink*>(context);
        into->records.push_back(*record);
        into->names->push_back(record->name);
      },
      &sink));
  return sink.records;
}

TEST(activity_records_kernels_copies_and_memsets_with_their_correlation) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  uint64_t stream_id = 0;
  CHECK_OK(mydevStreamGetId(stream, &stream_id));
  std::vector<std::string> names;
  flushed_activity(&names);  // nothing left from earlier tests
  CHECK_OK(launch("before_recording", [] {}, stream));
  CHECK_OK(mydevActivityEnable(1));
  CHECK_OK(mydevActivityPushExternalCorrelationId(41));
  CHECK_OK(launch("traced_kernel", [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }, stream));
  CHECK_OK(mydevActivityPopExternalCorrelationId(nullptr));
  void* device_buffer = nullptr;
  CHECK_OK(mydevMalloc(&device_buffer, 4096));
  std::vector<char> host(4096, 1);
  CHECK_OK(mydevMemcpyAsync(device_buffer, host.data(), host.size(), mydevMemcpyHostToDevice, stream));
  CHECK_OK(mydevMemsetAsync(device_buffer, 0, 1024, stream));
  CHECK_OK(mydevActivityEnable(0));
  CHECK_OK(launch("after_recording", [] {}, stream));
  CHECK_OK(mydevStreamSynchronize(stream));
  names.clear();
  const std::vector<mydevActivityRecord> records = flushed_activity(&names);
  CHECK_EQ(records.size(), size_t(3));
  CHECK_EQ(names[0], std::string("traced_kernel"));
  CHECK_EQ(static_cast<int>(records[0].kind), static_cast<int>(mydevActivityKernel));
  CHECK_EQ(records[0].correlation_id, uint64_t(41));
  CHECK_EQ(records[0].stream, stream_id);
  CHECK(records[0].end_ns - records[0].start_ns >= 2000000);
  CHECK(records[0].launch_ns > 0 && records[0].launch_ns <= records[0].start_ns);
  CHECK_EQ(records[0].launch_thread, static_cast<uint64_t>(syscall(SYS_gettid)));
  CHECK_EQ(names[1], std::string("Memcpy HtoD"));
  CHECK_EQ(records[1].bytes, uint64_t(4096));
  CHECK_EQ(records[1].correlation_id, uint64_t(0));
  CHECK_EQ(names[2], std::string("Memset"));
  CHECK_EQ(records[2].bytes, uint64_t(1024));
  CHECK(records[1].start_ns >= records[0].end_ns);
  names.clear();
  CHECK_EQ(flushed_activity(&names).size(), size_t(0));  // flushed records are gone
  CHECK_ERR(mydevActivityPopExternalCorrelationId(nullptr), mydevErrorInvalidValue);
  CHECK_OK(mydevFree(device_buffer));
  CHECK_OK(mydevStreamDestroy(stream));
}

// ---- injected faults --------------------------------------------------------

TEST(injected_kernel_failure_fires_at_the_nth_matching_launch) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  std::atomic<int> ran{0};
  int id = 0;
  CHECK_OK(mydevInjectFault(mydevFaultKernelFailure, "aten::add", 2, &id));
  CHECK_OK(launch("aten::add.out", [&] { ++ran; }, stream));
  CHECK_OK(launch("aten::addmm.out", [&] { ++ran; }, stream));  // a different kernel
  CHECK_OK(launch("aten::add.Tensor", [&] { ++ran; }, stream));  // the second match: fails without running
  CHECK_OK(launch("aten::add.out", [&] { ++ran; }, stream));     // fired once only
  CHECK_ERR(mydevStreamSynchronize(stream), mydevErrorLaunchFailure);
  CHECK_EQ(last_message(),
           std::string("kernel 'aten::add.Tensor' failed on mydev:0: injected fault (mydevInjectFault, MYDEV_INJECT_FAULT)"));
  CHECK_EQ(ran.load(), 3);
  CHECK_OK(mydevStreamSynchronize(stream));  // reported once; the device stays usable
  CHECK_OK(mydevRemoveFault(id));
  CHECK_ERR(mydevRemoveFault(id), mydevErrorInvalidValue);
  CHECK_ERR(mydevInjectFault(mydevFaultKernelFailure, "", 1, &id), mydevErrorInvalidValue);
  CHECK_ERR(mydevInjectFault(mydevFaultKernelFailure, "k", 0, &id), mydevErrorInvalidValue);
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(injected_hang_holds_the_kernel_until_removed) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  std::atomic<int> ran{0};
  int id = 0;
  CHECK_OK(mydevInjectFault(mydevFaultKernelHang, "stuck", 1, &id));
  CHECK_OK(launch("stuck", [&] { ++ran; }, stream));
  sleep_ms(50);
  CHECK_ERR(mydevStreamQuery(stream), mydevErrorNotReady);
  CHECK_EQ(ran.load(), 0);
  CHECK_OK(mydevRemoveFault(id));
  CHECK_OK(mydevStreamSynchronize(stream));
  CHECK_EQ(ran.load(), 1);
  CHECK_OK(mydevStreamDestroy(stream));
}

TEST(injected_out_of_memory_fails_allocations_until_removed) {
  void* first = nullptr;
  void* refused = nullptr;
  int id = 0;
  CHECK_OK(mydevInjectFault(mydevFaultOutOfMemory, nullptr, 2, &id));
  CHECK_OK(mydevMalloc(&first, 1024));
  CHECK_ERR(mydevMalloc(&refused, 1024), mydevErrorMemoryAllocation);
  CHECK_CONTAINS(last_message(), "injected fault");
  CHECK_ERR(mydevMalloc(&refused, 1024), mydevErrorMemoryAllocation);
  CHECK_OK(mydevRemoveFault(id));
  CHECK_OK(mydevMalloc(&refused, 1024));
  CHECK_OK(mydevFree(refused));
  CHECK_OK(mydevFree(first));
}

TEST(environment_injects_faults) {
  ChildResult result = run_self("injected-from-environment", {"MYDEV_INJECT_FAULT=my::kernel:2,oom:3"});
  CHECK_CHILD_EXIT(result, 0);
  CHECK_CONTAINS(result.output, "first=mydevSuccess second=mydevErrorLaunchFailure");
  CHECK_CONTAINS(result.output, "allocations=mydevSuccess,mydevSuccess,mydevErrorMemoryAllocation");
  result = run_self("print-config", {"MYDEV_INJECT_FAULT=oom:x"});
  CHECK_CONTAINS(result.output, "error mydevErrorInitialization");
  CHECK_CONTAINS(result.output, "invalid MYDEV_INJECT_FAULT='oom:x'");
}

TEST(kernel_fail_outside_a_kernel_is_ignored) {
  mydevKernelFail("not in a kernel");
  CHECK_OK(mydevDeviceSynchronize());
}

TEST(launch_blocking_mode) {
  ChildResult result = run_self("launch-blocking", {"MYDEV_LAUNCH_BLOCKING=1", "MYDEV_DEVICE_MEMORY=16MiB"});
  CHECK_CHILD_EXIT(result, 0);
}

// ---- concurrency ----------------------------------------------------------------------------

TEST(threads_hammer_streams) {
  constexpr int kThreads = 8;
  constexpr int kLaunches = 2000;
  mydevStream_t shared = nullptr;
  CHECK_OK(mydevStreamCreate(&shared));
  std::atomic<int> shared_count{0};
  std::atomic<int> private_count[kThreads];
  std::atomic<int> order_errors{0};
  std::atomic<int> api_errors{0};
  for (auto& count : private_count) count = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto ok = [&](mydevError_t error) {
        if (error != mydevSuccess) ++api_errors;
      };
      ok(mydevSetDevice(t % 2));
      mydevStream_t mine = nullptr;
      ok(mydevStreamCreate(&mine));
      mydevEvent_t event = nullptr;
      ok(mydevEventCreateWithFlags(&event, t % 2 ? mydevEventDisableTiming : mydevEventDefault));
      for (int i = 0; i < kLaunches; ++i) {
        if (i % 2 == 0) {
          ok(launch("private", [&, t, expected = i / 2] {
            if (private_count[t].fetch_add(1) != expected) ++order_errors;
          }, mine));
        } else {
          ok(launch("shared", [&] { ++shared_count; }, shared));
        }
        if (i % 100 == 99) {
          ok(mydevEventRecord(event, mine));
          ok(mydevStreamWaitEvent(shared, event));
          ok(mydevEventSynchronize(event));
          if (private_count[t].load() < (i + 1) / 2) ++order_errors;
          void* p = nullptr;
          ok(mydevMalloc(&p, 4096 * (t + 1)));
          ok(mydevMemsetAsync(p, t, 4096, mine));
          ok(mydevFree(p));
        }
      }
      ok(mydevStreamSynchronize(mine));
      ok(mydevEventDestroy(event));
      ok(mydevStreamDestroy(mine));
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK_OK(mydevStreamSynchronize(shared));
  CHECK_EQ(api_errors.load(), 0);
  CHECK_EQ(order_errors.load(), 0);
  CHECK_EQ(shared_count.load(), kThreads * kLaunches / 2);
  for (auto& count : private_count) CHECK_EQ(count.load(), kLaunches / 2);
  CHECK_OK(mydevStreamDestroy(shared));
  CHECK_OK(mydevSetDevice(0));
  CHECK_EQ(free_bytes(), kTestDeviceMemory);
}

// ---- processes ----------------------------------------------------------------------------

TEST(forked_child_is_refused) {
  void* a = nullptr;
  CHECK_OK(mydevMalloc(&a, 256));
  const ChildResult result = run_forked([&] {
    const char* expected =
        "mydev: the runtime was initialised in the parent process and cannot be used in a forked child; use the "
        "'spawn' start method";
    int count = -1;
    if (mydevGetDeviceCount(&count) != mydevErrorForkedChild || count != -1) return 1;
    if (strcmp(mydevGetLastErrorMessage(), expected) != 0) return 2;
    if (mydevFree(a) != mydevErrorForkedChild) return 3;
    void* p = nullptr;
    if (mydevMalloc(&p, 16) != mydevErrorForkedChild) return 4;
    if (mydevStreamSynchronize(nullptr) != mydevErrorForkedChild) return 5;
    bool released = false;
    if (mydevLaunchKernel("k", fail_with_boom, &released, [](void* r) { *static_cast<bool*>(r) = true; }, nullptr) !=
            mydevErrorForkedChild ||
        !released) {
      return 6;
    }
    return 0;
  });
  CHECK_CHILD_EXIT(result, 0);
  CHECK_OK(mydevFree(a));  // the parent is unaffected
}

TEST(child_of_uninitialised_parent_works) {
  ChildResult result = run_self("fork-before-init", {});
  CHECK_CHILD_EXIT(result, 0);
  CHECK_CONTAINS(result.output, "grandchild count=2");
}

TEST(host_dereference_of_device_pointer_is_reported) {
  void* a = nullptr;
  CHECK_OK(mydevMalloc(&a, 4096));
  const ChildResult result = run_forked([&] {
    volatile char value = *(static_cast<volatile char*>(a) + 300);
    (void)value;
    return 0;
  });
  CHECK_OK(mydevFree(a));
  CHECK(WIFSIGNALED(result.status));
  CHECK_EQ(WTERMSIG(result.status), SIGSEGV);
  CHECK_CONTAINS(result.output, "mydev: illegal memory access: host code touched device memory at 0x");
  CHECK_CONTAINS(result.output, "(mydev:0, offset 0x");
  CHECK_CONTAINS(result.output, "copy the data to the CPU first.");
}

TEST(fault_handler_chains_to_previous_handler) {
  ChildResult result = run_self("fault-chain-device", {});
  CHECK_CHILD_EXIT(result, 42);
  CHECK_CONTAINS(result.output, "mydev: illegal memory access");
  CHECK_CONTAINS(result.output, "previous handler ran");
  result = run_self("fault-chain-other", {});
  CHECK_CHILD_EXIT(result, 42);
  CHECK_CONTAINS(result.output, "previous handler ran");
  CHECK(result.output.find("mydev:") == std::string::npos);
}

// ---- child modes ------------------------------------------------------------------------------

namespace {

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

}  // namespace

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
