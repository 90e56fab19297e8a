// torch.mydev.memory._record_memory_history and _snapshot. Stacks are
// PyTorch's CapturedTraceback (Python, TorchScript and, with stacks="all", C++
// frames), symbolized only when a snapshot is taken; the snapshot is the dict
// torch.cuda.memory._snapshot documents, which PyTorch's memory viewer
// (torch.cuda._memory_viz, pytorch.org/memory_viz) reads.
#include "../core/CachingAllocator.h"

#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/extension.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace py = pybind11;

// From torch/csrc/profiler/python/combined_traceback.h, which includes
// nlohmann/json.hpp, a header the wheel does not ship; libtorch_python
// exports both.
namespace torch {
std::vector<py::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
void installCapturedTracebackPython();
}  // namespace torch

namespace torch_mydev {

namespace {

std::shared_ptr<c10::GatheredContext> gatherPythonStack() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/false);
}

std::shared_ptr<c10::GatheredContext> gatherFullStack() {
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true, /*cpp=*/true);
}

RecordContext parseContext(const std::optional<std::string>& context) {
  if (!context) {
    return RecordContext::NEVER;
  }
  if (*context == "state") {
    return RecordContext::STATE;
  }
  if (*context == "alloc") {
    return RecordContext::ALLOC;
  }
  TORCH_CHECK_VALUE(*context == "all", "expected context to be 'state', 'alloc', 'all' or None, got '", *context, "'");
  return RecordContext::ALL;
}

const char* actionName(TraceEntry::Action action) {
  switch (action) {
    case TraceEntry::ALLOC: return "alloc";
    case TraceEntry::FREE_REQUESTED: return "free_requested";
    case TraceEntry::FREE_COMPLETED: return "free_completed";
    case TraceEntry::SEGMENT_ALLOC: return "segment_alloc";
    case TraceEntry::SEGMENT_FREE: return "segment_free";
    case TraceEntry::OOM: return "oom";
    case TraceEntry::SNAPSHOT: return "snapshot";
    default: return "segment_map";
  }
}

uint32_t skippedActions(const std::vector<std::string>& names) {
  // The actions mydev's allocator records (it maps no segments).
  static const TraceEntry::Action kRecorded[] = {TraceEntry::ALLOC,         TraceEntry::FREE_REQUESTED,
                                                 TraceEntry::FREE_COMPLETED, TraceEntry::SEGMENT_ALLOC,
                                                 TraceEntry::SEGMENT_FREE,   TraceEntry::OOM,
                                                 TraceEntry::SNAPSHOT};
  uint32_t skipped = 0;
  for (const std::string& name : names) {
    const auto* found = std::find_if(std::begin(kRecorded), std::end(kRecorded),
                                     [&](TraceEntry::Action action) { return name == actionName(action); });
    TORCH_CHECK_VALUE(found != std::end(kRecorded), "unknown action '", name,
                      "' in skip_actions: expected alloc, free_requested, free_completed, segment_alloc, "
                      "segment_free, oom or snapshot");
    skipped |= 1u << *found;
  }
  return skipped;
}

void recordMemoryHistory(const std::optional<std::string>& enabled, const std::optional<std::string>& context,
                         const std::string& stacks, size_t max_entries, bool clear_history,
                         const std::vector<std::string>& skip_actions) {
  TORCH_CHECK_VALUE(!enabled || *enabled == "state" || *enabled == "all",
                    "expected enabled to be 'state', 'all' or None, got '", enabled.value_or(""), "'");
  TORCH_CHECK_VALUE(stacks == "python" || stacks == "all", "expected stacks to be 'python' or 'all', got '", stacks,
                    "'");
  MemoryHistorySettings settings;
  settings.record_trace = enabled == "all";
  settings.context = enabled ? parseContext(context) : RecordContext::NEVER;
  settings.gather = stacks == "all" ? &gatherFullStack : &gatherPythonStack;
  settings.max_entries = max_entries;
  settings.skipped_actions = skippedActions(skip_actions);
  if (settings.context != RecordContext::NEVER) {
    torch::installCapturedTracebackPython();
  }
  // Turning history off drops the trace, as CUDA's allocator does.
  setMemoryHistory(settings, clear_history || !enabled);
}

// Symbolizes every stack of a snapshot in one pass (frames shared between
// stacks are looked up once).
class Frames {
 public:
  void want(const std::shared_ptr<c10::GatheredContext>& context) {
    auto* traceback = dynamic_cast<torch::CapturedTraceback*>(context.get());
    if (traceback != nullptr && index_.emplace(traceback, tracebacks_.size()).second) {
      tracebacks_.push_back(traceback);
    }
  }

  void symbolize() { symbolized_ = torch::py_symbolize(tracebacks_); }

  py::object of(const std::shared_ptr<c10::GatheredContext>& context) const {
    const auto found = index_.find(dynamic_cast<torch::CapturedTraceback*>(context.get()));
    return found == index_.end() ? py::list() : symbolized_[found->second];
  }

 private:
  std::vector<torch::CapturedTraceback*> tracebacks_;
  std::unordered_map<torch::CapturedTraceback*, size_t> index_;
  std::vector<py::object> symbolized_;
};

const char* blockState(const c10::CachingDeviceAllocator::BlockInfo& block) {
  if (block.allocated) {
    return "active_allocated";
  }
  return block.active ? "active_pending_free" : "inactive";
}

// Without traces, device_traces holds an empty list per device, as
// torch.cuda's lightweight snapshot does.
py::dict snapshot(bool include_traces) {
  MemorySnapshot snapshot = memorySnapshot();
  if (!include_traces) {
    for (auto& trace : snapshot.device_traces) {
      trace.clear();
    }
  }
  Frames frames;
  for (const SegmentInfo& segment : snapshot.segments) {
    for (const auto& block : segment.blocks) {
      frames.want(block.context_when_allocated);
    }
  }
  for (const auto& trace : snapshot.device_traces) {
    for (const TraceEntry& entry : trace) {
      frames.want(entry.context_);
    }
  }
  frames.symbolize();

  py::list segments;
  for (const SegmentInfo& segment : snapshot.segments) {
    py::dict info;
    info["device"] = segment.device;
    info["address"] = segment.address;
    info["total_size"] = segment.total_size;
    info["allocated_size"] = segment.allocated_size;
    info["active_size"] = segment.active_size;
    info["requested_size"] = segment.requested_size;
    info["stream"] = reinterpret_cast<intptr_t>(segment.stream);
    info["segment_type"] = segment.is_large ? "large" : "small";
    info["segment_pool_id"] = py::make_tuple(0, 0);
    info["is_expandable"] = false;
    info["frames"] = py::list();
    py::list blocks;
    size_t address = segment.address;
    for (const auto& block : segment.blocks) {
      py::dict block_info;
      block_info["address"] = address;
      block_info["size"] = block.size;
      block_info["requested_size"] = block.requested_size;
      block_info["state"] = blockState(block);
      block_info["frames"] = frames.of(block.context_when_allocated);
      blocks.append(std::move(block_info));
      address += block.size;
    }
    info["blocks"] = std::move(blocks);
    segments.append(std::move(info));
  }

  py::list device_traces;
  for (const auto& trace : snapshot.device_traces) {
    py::list entries;
    for (const TraceEntry& entry : trace) {
      py::dict info;
      info["action"] = actionName(entry.action_);
      if (entry.action_ == TraceEntry::OOM) {
        info["device_free"] = entry.addr_;
      } else {
        info["addr"] = entry.addr_;
      }
      info["size"] = entry.size_;
      info["stream"] = reinterpret_cast<intptr_t>(entry.stream_);
      info["time_us"] = static_cast<int64_t>(entry.time_.t_);
      info["frames"] = frames.of(entry.context_);
      entries.append(std::move(info));
    }
    device_traces.append(std::move(entries));
  }

  py::dict result;
  result["segments"] = std::move(segments);
  result["device_traces"] = std::move(device_traces);
  result["allocator_settings"] = py::dict();
  return result;
}

}  // namespace

void bindMemoryHistory(py::module_& m) {
  m.def("_record_memory_history", &recordMemoryHistory, py::arg("enabled"), py::arg("context"), py::arg("stacks"),
        py::arg("max_entries"), py::arg("clear_history"), py::arg("skip_actions"));
  m.def("_memory_snapshot", &snapshot, py::arg("include_traces") = true);
}

}  // namespace torch_mydev
