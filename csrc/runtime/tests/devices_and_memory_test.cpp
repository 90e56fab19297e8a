// The runtime's configuration, devices and memory: allocation, copies, memset.
#include "harness.h"

using namespace runtime_test;

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

TEST(freed_blocks_scattered_over_the_device_do_not_keep_out_a_large_one) {
  // As on CUDA, whose virtual addresses exceed its memory: half of the device
  // is free in four separate holes, and half of the device can be allocated.
  std::vector<void*> blocks(8);
  for (void*& p : blocks) CHECK_OK(mydevMalloc(&p, kTestDeviceMemory / 8));
  CHECK_EQ(free_bytes(), 0u);
  for (size_t i = 0; i < blocks.size(); i += 2) CHECK_OK(mydevFree(blocks[i]));
  void* half = nullptr;
  CHECK_OK(mydevMalloc(&half, kTestDeviceMemory / 2));
  CHECK_EQ(free_bytes(), 0u);
  void* more = nullptr;
  CHECK_ERR(mydevMalloc(&more, 256), mydevErrorMemoryAllocation);
  CHECK_OK(mydevFree(half));
  for (size_t i = 1; i < blocks.size(); i += 2) CHECK_OK(mydevFree(blocks[i]));
  CHECK_EQ(free_bytes(), kTestDeviceMemory);
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
  // Rounded up to whole pages, a size this close to SIZE_MAX would wrap around to a tiny block.
  CHECK_ERR(mydevHostAlloc(&pinned, SIZE_MAX - 100), mydevErrorMemoryAllocation);
  CHECK(pinned == nullptr);

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
