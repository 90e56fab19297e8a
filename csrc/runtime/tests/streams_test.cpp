// Kernels and streams (launch order, queue limits, the worker's sleep and
// wake-up, host tasks), and events.
#include "harness.h"

#include <mutex>

using namespace runtime_test;

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

namespace {
// A lock the waiting thread holds and a kernel needs, as an interpreter's global lock.
std::mutex interpreter_lock;
std::atomic<int> waits_begun{0};
std::atomic<int> waits_ended{0};
void release_interpreter_lock() {
  ++waits_begun;
  interpreter_lock.unlock();
}
void take_interpreter_lock() {
  interpreter_lock.lock();
  ++waits_ended;
}
}  // namespace

TEST(host_wait_callbacks_let_a_kernel_take_a_lock_the_waiter_holds) {
  CHECK_OK(mydevSetHostWaitCallbacks(release_interpreter_lock, take_interpreter_lock));
  mydevHostWaitCallback before = nullptr;
  mydevHostWaitCallback after = nullptr;
  CHECK_OK(mydevGetHostWaitCallbacks(&before, &after));
  CHECK(before == release_interpreter_lock && after == take_interpreter_lock);
  interpreter_lock.lock();
  CHECK_OK(mydevStreamSynchronize(nullptr));  // nothing queued: no wait, no callback
  CHECK_EQ(waits_begun.load(), 0);
  bool ran = false;
  CHECK_OK(launch("takes_the_lock", [&ran] {
    std::lock_guard<std::mutex> lock(interpreter_lock);
    ran = true;
  }));
  CHECK_OK(mydevStreamSynchronize(nullptr));  // without the callbacks, a deadlock
  CHECK(ran);
  CHECK_EQ(waits_begun.load(), 1);
  CHECK_EQ(waits_ended.load(), 1);
  interpreter_lock.unlock();
  CHECK_OK(mydevSetHostWaitCallbacks(nullptr, nullptr));
  CHECK_ERR(mydevGetHostWaitCallbacks(nullptr, &after), mydevErrorInvalidValue);
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

TEST(a_destroyed_stream_is_refused_not_freed) {
  mydevStream_t stream = nullptr;
  CHECK_OK(mydevStreamCreate(&stream));
  bool ran = false;
  CHECK_OK(launch("before_destroy", [&ran] { ran = true; }, stream));
  CHECK_OK(mydevStreamDestroy(stream));
  CHECK(ran);  // destroying waited for the stream's work
  // A thread that still holds the handle gets an error (the address sanitizer
  // would report freed memory here).
  CHECK_ERR(mydevStreamQuery(stream), mydevErrorInvalidResourceHandle);
  mydevEvent_t event = nullptr;
  CHECK_OK(mydevEventCreateWithFlags(&event, mydevEventDefault));
  CHECK_ERR(mydevEventRecord(event, stream), mydevErrorInvalidResourceHandle);
  CHECK_OK(mydevEventDestroy(event));
  CHECK_ERR(mydevStreamDestroy(stream), mydevErrorInvalidResourceHandle);
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
