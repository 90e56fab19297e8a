// The device in torch.profiler. Two of PyTorch's extension points:
//
// - A Kineto child profiler (REGISTER_PRIVATEUSE1_PROFILER), for
//   torch.profiler.profile(activities=[..., ProfilerActivity.PrivateUse1]) and
//   torch.autograd.profiler.profile(use_device="mydev", use_kineto=True).
//   While a trace records, the runtime records every kernel, copy and memset
//   launched (mydevActivityEnable), each tagged at launch with the correlation
//   id Kineto pushed on the launching thread for the ATen op that launched it.
//   processTrace turns the records into Kineto activities linked to those ops:
//   the kernel on the device timeline (pid = device, tid = stream), a launch
//   event on the host thread, and a flow arrow between them. PyTorch then fills
//   FunctionEvent.kernels and the device-time columns of key_averages().
// - The legacy ProfilerStubs (registerPrivateUse1Methods), for
//   torch.autograd.profiler.profile(use_device="mydev") without Kineto: device
//   time per op, from timing events recorded around it.
//
// A profile without the PrivateUse1 activity gets no session, and launches
// cost what they cost without a profiler: the runtime reads one flag.
//
// The profiler headers compile only with USE_KINETO, which the wheel's Kineto
// (inside libtorch_cpu) was built with; fmt is not exported by libtorch, so
// Kineto's headers must use it header-only.
#define USE_KINETO
#define FMT_HEADER_ONLY

#include "../core/Device.h"
#include "../core/Exception.h"
#include "../core/Stream.h"

#include <mydev/runtime.h>

#include <c10/util/ApproximateClock.h>
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace torch_mydev {

namespace {

using libkineto::ActivityType;

struct ActivityRecord {
  mydevActivityRecord record;
  std::string name;
};

std::vector<ActivityRecord> flushActivity() {
  std::vector<ActivityRecord> flushed;
  mydevActivityFlush(
      [](const mydevActivityRecord* record, void* into) {
        static_cast<std::vector<ActivityRecord>*>(into)->push_back({*record, record->name});
      },
      &flushed);
  return flushed;
}

ActivityType kinetoType(mydevActivityKind kind) {
  switch (kind) {
    case mydevActivityMemcpy: return ActivityType::GPU_MEMCPY;
    case mydevActivityMemset: return ActivityType::GPU_MEMSET;
    default: return ActivityType::CONCURRENT_KERNEL;
  }
}

// The runtime call a host thread made to queue the work, as CUDA traces show cudaLaunchKernel.
const char* launchName(mydevActivityKind kind) {
  switch (kind) {
    case mydevActivityMemcpy: return "mydevMemcpyAsync";
    case mydevActivityMemset: return "mydevMemsetAsync";
    default: return "mydevLaunchKernel";
  }
}

// A kernel's row is named after the operator that launched it, marked as the
// device's ("aten::mm" -> "mydev:mm"), so that key_averages() and trace
// viewers keep it apart from the operator's own host row, as CUDA's kernel
// names are.
std::string deviceRowName(const mydevActivityRecord& record, const std::string& name) {
  if (record.kind != mydevActivityKernel) {
    return name;
  }
  const size_t namespace_end = name.find("::");
  return "mydev:" + (namespace_end == std::string::npos ? name : name.substr(namespace_end + 2));
}

const char* copyDirection(mydevMemcpyKind kind) {
  switch (kind) {
    case mydevMemcpyHostToDevice: return "HtoD";
    case mydevMemcpyDeviceToHost: return "DtoH";
    case mydevMemcpyDeviceToDevice: return "DtoD";
    default: return "HtoH";
  }
}

class ProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    flushActivity();  // what an earlier, unfinished trace left
    start_ns_ = c10::getTime();
    mydevActivityEnable(1);
    status_ = libkineto::TraceStatus::RECORDING;
  }

  // torch.profiler synchronizes the device before it stops a trace, so the
  // work launched while recording has run and been recorded.
  void stop() override {
    mydevActivityEnable(0);
    end_ns_ = c10::getTime();
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, start_ns_, end_ns_);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_activity,
                    int64_t window_start, int64_t window_end) override {
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(start_ns_, end_ns_, "mydev");
    buffer_->span.iteration = 0;
    buffer_->gpuOpCount = 0;
    for (const ActivityRecord& activity : flushActivity()) {
      const mydevActivityRecord& record = activity.record;
      if (record.end_ns < window_start || record.start_ns > window_end) {
        continue;
      }
      // Kineto's correlation ids are 32-bit, as PyTorch casts them.
      const auto correlation = static_cast<int32_t>(record.correlation_id);
      const libkineto::ITraceActivity* op = correlation != 0 ? linked_activity(correlation) : nullptr;
      const uint32_t flow = next_flow_++;
      // Both ends of the launch: the op's correlation, and the flow from the host's end to the device's.
      const auto linkToOp = [&](libkineto::GenericTraceActivity& activity, bool flow_start) {
        activity.id = correlation;
        activity.flow.id = flow;
        activity.flow.type = libkineto::kLinkAsyncCpuGpu;
        activity.flow.start = flow_start ? 1 : 0;
        activity.linked = op;
      };

      buffer_->emplace_activity(buffer_->span, ActivityType::PRIVATEUSE1_RUNTIME, launchName(record.kind));
      libkineto::GenericTraceActivity& launch = *buffer_->activities.back();
      launch.startTime = record.launch_ns;
      launch.endTime = record.launch_ns;
      launch.device = libkineto::processId();
      launch.resource = static_cast<int32_t>(record.launch_thread);
      launch.threadId = launch.resource;
      linkToOp(launch, /*flow_start=*/true);
      launch.log(logger);

      buffer_->emplace_activity(buffer_->span, kinetoType(record.kind), deviceRowName(record, activity.name));
      libkineto::GenericTraceActivity& work = *buffer_->activities.back();
      work.startTime = record.start_ns;
      work.endTime = record.end_ns;
      work.device = record.device;
      work.resource = static_cast<int32_t>(record.stream);
      work.threadId = work.resource;
      linkToOp(work, /*flow_start=*/false);
      work.addMetadata("device", record.device);
      work.addMetadata("stream", record.stream);
      work.addMetadata("correlation", correlation);
      if (record.kind != mydevActivityKernel) {
        work.addMetadata("bytes", record.bytes);
      }
      if (record.kind == mydevActivityMemcpy) {
        work.addMetadataQuoted("direction", copyDirection(record.copy_kind));
      }
      work.log(logger);
      ++buffer_->gpuOpCount;
      streams_.insert({record.device, record.stream});
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    // Kineto takes one device description per child profiler; the other
    // devices' rows still appear, under their index.
    const int device = streams_.empty() ? 0 : streams_.begin()->first;
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
        device, device, "mydev " + std::to_string(device), "mydev " + std::to_string(device)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> resources;
    for (const auto& [device, stream] : streams_) {
      resources.push_back(libkineto::ResourceInfo{static_cast<int64_t>(stream), static_cast<int64_t>(stream), device,
                                                  "stream " + std::to_string(stream)});
    }
    return resources;
  }

  // The activities handed to the logger must outlive this session: Kineto
  // keeps pointers to them and owns them through this buffer.
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  // Kineto pushes the id of each ATen op on the thread that runs it; the
  // runtime tags every launch with the id on top of its thread's stack.
  void pushCorrelationId(uint64_t id) override { mydevActivityPushExternalCorrelationId(id); }
  void popCorrelationId() override { mydevActivityPopExternalCorrelationId(nullptr); }

 private:
  int64_t start_ns_ = 0;
  int64_t end_ns_ = 0;
  uint32_t next_flow_ = 1;
  std::set<std::pair<int, uint64_t>> streams_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
};

class DeviceProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& /*config*/) override {
    // A CPU-only profile asks too, without device activities: it gets no session.
    if (activity_types.count(ActivityType::CONCURRENT_KERNEL) == 0) {
      return nullptr;
    }
    return std::make_unique<ProfilerSession>();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t /*ts_ms*/, int64_t /*duration_ms*/,
                                                                 const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_ = "mydev";
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                     ActivityType::GPU_MEMSET, ActivityType::PRIVATEUSE1_RUNTIME};
};

REGISTER_PRIVATEUSE1_PROFILER(DeviceProfiler);

// The legacy profiler's device time: a timing event recorded on the current
// stream at each op's start and end; elapsed() waits for the second one.
struct TimingEvent {
  mydevEvent_t event = nullptr;
  ~TimingEvent() {
    if (event != nullptr) {
      mydevEventDestroy(event);
    }
  }
};

class LegacyProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
 public:
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const c10::DeviceIndex current = currentDevice();
    if (device != nullptr) {
      *device = current;
    }
    auto timing = std::make_shared<TimingEvent>();
    MYDEV_CHECK(mydevEventCreateWithFlags(&timing->event, mydevEventDefault));
    MYDEV_CHECK(mydevEventRecord(timing->event, getCurrentMydevStream(current).handle()));
    *event = timing;
    if (cpu_ns != nullptr) {
      *cpu_ns = c10::getTime();
    }
  }

  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* first,
                const torch::profiler::impl::ProfilerVoidEventStub* second) const override {
    const auto* start = static_cast<const TimingEvent*>(first->get());
    const auto* end = static_cast<const TimingEvent*>(second->get());
    MYDEV_CHECK(mydevEventSynchronize(end->event));
    float ms = 0;
    MYDEV_CHECK(mydevEventElapsedTime(&ms, start->event, end->event));
    return ms * 1000.0f;  // microseconds, as the CUDA stubs return
  }

  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    for (c10::DeviceIndex device = 0; device < deviceCount(); ++device) {
      ScopedDevice on_device(device);
      op(device);
    }
  }

  void synchronize() const override { MYDEV_CHECK(mydevDeviceSynchronize()); }
};

struct RegisterLegacyProfilerStubs {
  RegisterLegacyProfilerStubs() {
    static LegacyProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
} register_legacy_profiler_stubs;

}  // namespace

}  // namespace torch_mydev
