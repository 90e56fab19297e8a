// Failures: kernel failures and how they are reported, activity records,
// injected faults, many threads on many streams, forked children and the
// handler for host dereferences of device pointers.
#include "harness.h"

using namespace runtime_test;

// ---- kernel failures ----------------------------------------------------------------------

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

TEST(a_failure_reaches_the_streams_that_wait_for_it_and_is_reported_once) {
  for (const int consumer_device : {0, 1}) {
    mydevStream_t producer = nullptr;
    CHECK_OK(mydevStreamCreate(&producer));
    CHECK_OK(mydevSetDevice(consumer_device));
    mydevStream_t consumer = nullptr, bystander = nullptr;
    CHECK_OK(mydevStreamCreate(&consumer));
    CHECK_OK(mydevStreamCreate(&bystander));
    CHECK_OK(mydevSetDevice(0));
    mydevEvent_t produced = nullptr;
    CHECK_OK(mydevEventCreateWithFlags(&produced, mydevEventDisableTiming));

    // Deferred: the consumer's wait is queued while the failing kernel is held.
    Gate gate;
    CHECK_OK(launch("gated_failure", [&] {
      gate.wait();
      mydevKernelFail("late");
    }, producer));
    CHECK_OK(mydevEventRecord(produced, producer));
    CHECK_OK(mydevStreamWaitEvent(consumer, produced));
    CHECK_OK(launch("consume", [] {}, consumer));
    gate.open = true;
    CHECK_ERR(mydevStreamSynchronize(consumer), mydevErrorLaunchFailure);
    CHECK_EQ(last_message(), std::string("kernel 'gated_failure' failed on mydev:0: late"));
    CHECK_OK(mydevStreamSynchronize(producer));  // the same failure: reported once
    CHECK_OK(mydevStreamSynchronize(consumer));

    // Immediate: the failure is pending when the wait is made; the producer reports it first.
    CHECK_OK(mydevLaunchKernel("failure", fail_with_boom, nullptr, nullptr, producer));
    CHECK_OK(mydevEventRecord(produced, producer));
    CHECK_ERR(mydevEventSynchronize(produced), mydevErrorLaunchFailure);
    CHECK_OK(mydevStreamWaitEvent(bystander, produced));  // reported already: nothing to pass
    CHECK_OK(mydevStreamSynchronize(bystander));

    // A stream's own failure takes the place of a copy it holds.
    CHECK_OK(mydevLaunchKernel("first", fail_with_boom, nullptr, nullptr, producer));
    CHECK_OK(mydevEventRecord(produced, producer));
    CHECK_OK(mydevStreamWaitEvent(consumer, produced));
    CHECK_OK(mydevLaunchKernel("own", fail_with_boom, nullptr, nullptr, consumer));
    CHECK_ERR(mydevStreamSynchronize(consumer), mydevErrorLaunchFailure);
    CHECK_EQ(last_message(), std::string("kernel 'own' failed on mydev:") + std::to_string(consumer_device) + ": boom");
    CHECK_ERR(mydevStreamSynchronize(producer), mydevErrorLaunchFailure);
    CHECK_EQ(last_message(), std::string("kernel 'first' failed on mydev:0: boom"));

    CHECK(!gate.timed_out);
    CHECK_OK(mydevEventDestroy(produced));
    CHECK_OK(mydevStreamDestroy(producer));
    CHECK_OK(mydevStreamDestroy(consumer));
    CHECK_OK(mydevStreamDestroy(bystander));
  }
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
  // 2^32 + 1 would be 1 as an int: the first allocation would fail.
  result = run_self("print-config", {"MYDEV_INJECT_FAULT=oom:4294967297"});
  CHECK_CONTAINS(result.output, "invalid MYDEV_INJECT_FAULT='oom:4294967297'");
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
