// Activity tracing: while a profiler records (mydevActivityEnable), each
// launch is tagged with its kind and the launching thread's external
// correlation id, and the stream worker times it and keeps a record until the
// profiler flushes them. The tag is decided at launch, so a kernel launched
// while recording is recorded even if it runs after recording stopped.
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <string>

#include "internal.h"

namespace mydev {
namespace {

std::atomic<bool> g_recording{false};
thread_local std::vector<uint64_t> t_correlation_ids;

struct StoredRecord {
  mydevActivityRecord record;
  std::string name;
};

std::mutex g_records_mutex;
// Leaked on purpose: stream workers may still record while static destructors run at exit.
std::deque<StoredRecord>& records() {
  static auto* stored = new std::deque<StoredRecord>();
  return *stored;
}

const char* copy_name(uint8_t kind) {
  switch (kind) {
    case mydevMemcpyHostToDevice: return "Memcpy HtoD";
    case mydevMemcpyDeviceToHost: return "Memcpy DtoH";
    case mydevMemcpyDeviceToDevice: return "Memcpy DtoD";
    default: return "Memcpy HtoH";
  }
}

}  // namespace

bool activity_recording() { return g_recording.load(std::memory_order_relaxed); }

void tag_activity(Task* task, mydevActivityKind kind) {
  task->activity = static_cast<uint8_t>(kind);
  task->correlation_id = t_correlation_ids.empty() ? 0 : t_correlation_ids.back();
}

int64_t activity_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t activity_thread_id() {
  static thread_local const uint64_t id = static_cast<uint64_t>(syscall(SYS_gettid));
  return id;
}

void record_activity(const Task& task, const char* name, int device, uint64_t stream_id, int64_t start_ns,
                     int64_t end_ns, int64_t launch_ns, uint64_t launch_thread) {
  StoredRecord stored{};
  stored.record.kind = static_cast<mydevActivityKind>(task.activity);
  stored.record.device = device;
  stored.record.stream = stream_id;
  stored.record.correlation_id = task.correlation_id;
  stored.record.start_ns = start_ns;
  stored.record.end_ns = end_ns;
  stored.record.launch_ns = launch_ns;
  stored.record.launch_thread = launch_thread;
  stored.record.bytes = task.bytes;
  stored.record.copy_kind = static_cast<mydevMemcpyKind>(task.copy_kind);
  switch (stored.record.kind) {
    case mydevActivityKernel: stored.name = name; break;
    case mydevActivityMemcpy: stored.name = copy_name(task.copy_kind); break;
    case mydevActivityMemset: stored.name = "Memset"; break;
  }
  std::lock_guard<std::mutex> lock(g_records_mutex);
  records().push_back(std::move(stored));
}

}  // namespace mydev

using namespace mydev;

extern "C" {

mydevError_t mydevActivityEnable(int enable) {
  if (mydevError_t error = enter("mydevActivityEnable")) return error;
  g_recording.store(enable != 0, std::memory_order_relaxed);
  return mydevSuccess;
}

mydevError_t mydevActivityFlush(mydevActivityConsumeFn consume, void* context) {
  const char* api = "mydevActivityFlush";
  if (mydevError_t error = enter(api)) return error;
  if (consume == nullptr) return set_error(mydevErrorInvalidValue, "%s: consume is NULL", api);
  std::deque<StoredRecord> taken;
  {
    std::lock_guard<std::mutex> lock(g_records_mutex);
    taken.swap(records());
  }
  for (StoredRecord& stored : taken) {
    stored.record.name = stored.name.c_str();
    consume(&stored.record, context);
  }
  return mydevSuccess;
}

mydevError_t mydevActivityPushExternalCorrelationId(uint64_t id) {
  if (mydevError_t error = enter("mydevActivityPushExternalCorrelationId")) return error;
  t_correlation_ids.push_back(id);
  return mydevSuccess;
}

mydevError_t mydevActivityPopExternalCorrelationId(uint64_t* id) {
  const char* api = "mydevActivityPopExternalCorrelationId";
  if (mydevError_t error = enter(api)) return error;
  if (t_correlation_ids.empty()) return set_error(mydevErrorInvalidValue, "%s: no correlation id was pushed", api);
  if (id != nullptr) *id = t_correlation_ids.back();
  t_correlation_ids.pop_back();
  return mydevSuccess;
}

}  // extern "C"
