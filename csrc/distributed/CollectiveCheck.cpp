// mccl's check that every rank makes the same collective, before gloo sees
// it (MCCL_CHECK_COLLECTIVES=1, or TORCH_DISTRIBUTED_DEBUG=DETAIL).
//
// Unchecked, ranks that disagree get what gloo does with CPU tensors: a size
// mismatch aborts a rank inside gloo's transport thread, which no caller can
// catch; a dtype of the same size, or another reduction, gives wrong numbers
// silently; another collective waits for the timeout. NCCL does no better.
// TORCH_DISTRIBUTED_DEBUG=DETAIL's wrapper compares collective kinds, dtypes
// and shapes, but not the reduction nor the root, at the cost of a barrier and
// an all-gather per collective.
//
// Checked, each collective first all-gathers a fixed-size record of what its
// rank called: the collective's number in the group, its kind, reduction and
// root, and of its tensors what every rank must agree on (not what a rank
// chooses alone: all_to_all's sizes, gather's outputs off the root; element
// counts only where NCCL takes any shape). Records are fixed-size, so this
// exchange cannot mismatch; if any differ (by a hash of the whole call),
// every rank sees all of them, skips the collective, and its Work fails with
// a message naming each rank's call (cut at ~500 characters a rank). Having
// skipped it alike, the ranks stay paired: the group stays usable. A call
// that one rank refuses at the call (bad arguments) takes its place in the
// check all the same, as a refusal (CallRecord), so the ranks stay paired
// after it too. The cost is one more latency-bound exchange per collective
// (benchmarks/distributed_vs_gloo.py --check). Every rank of a group must
// check, or none: the creator agrees on it through the store.
#include "ProcessGroupMydev.h"

#include "../core/Device.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace torch_mydev {

namespace {

// The transfer of a refused call that every rank refused alike: none, done.
// (c10d's Work::create_from_future would refuse the kernel's finite wait.)
class NothingMoved final : public c10d::Work {
 public:
  NothingMoved() { finish(); }
};

constexpr size_t kRecordBytes = 512;
constexpr size_t kHashBytes = sizeof(uint64_t);

// FNV-1a: the same on every rank and host, which std::hash is not bound to be.
uint64_t fingerprint(const std::string& text) {
  uint64_t hash = 14695981039346656037ULL;
  for (const char c : text) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return hash;
}

const char* reductionName(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "UNUSED";
  }
}

}  // namespace

CallRecord ProcessGroupMydev::describeCall(const AgreedCall& call, std::initializer_list<AgreedTensors> tensors) {
  if (!check_collectives_) {
    return {};
  }
  std::ostringstream text;
  text << call.name << "(";
  const char* separator = "";
  if (call.reduction != nullptr) {
    text << "op=" << reductionName(*call.reduction);
    separator = ", ";
  }
  if (call.root >= 0) {
    text << separator << "root=" << call.root;
  }
  text << ")";
  separator = " of ";
  for (const AgreedTensors& agreed : tensors) {
    for (const at::Tensor& tensor : agreed.tensors) {
      text << separator << c10::toString(tensor.scalar_type());
      if (agreed.what == Agreed::kShapes) {
        text << tensor.sizes();
      } else if (agreed.what == Agreed::kCounts) {
        text << "[" << tensor.numel() << " elements]";
      }
      separator = ", ";
    }
  }
  return CallRecord(this, text.str());
}

CallRecord::~CallRecord() {
  if (group_ != nullptr && !text_.empty()) {
    group_->takePlaceOfRefusedCall(std::move(text_));
  }
}

// The refused call's place in the check: an operation that only compares,
// with the refusal in its record, on the device the group last used (as a
// barrier guesses it). If every rank refused the same call, the records
// agree and nothing more happens.
void ProcessGroupMydev::takePlaceOfRefusedCall(std::string record) noexcept {
  try {
    c10::DeviceIndex device = last_device_.load();
    if (device < 0) {
      device = currentDevice();
    }
    CallRecord refusal(/*refuses_through=*/nullptr, record + ", refused at the call");
    (void)collective(
        c10d::OpType::BARRIER, "mccl:refused_call", std::move(refusal), {}, {},
        [](auto&, auto&) { return c10::make_intrusive<NothingMoved>(); },
        CallForm{/*outputs_are_inputs=*/false, /*ends_in_wait=*/false, device});
  } catch (const std::exception& error) {
    TORCH_WARN("mccl: a refused call could not take its place in the check, so this rank is one collective behind "
               "the others: ", error.what());
  } catch (...) {
    TORCH_WARN("mccl: a refused call could not take its place in the check, so this rank is one collective behind "
               "the others");
  }
}

std::exception_ptr ProcessGroupMydev::compareAcrossRanks(const std::string& record) {
  at::Tensor mine = at::zeros({static_cast<int64_t>(kRecordBytes)}, at::kByte);
  const uint64_t hash = fingerprint(record);
  std::memcpy(mine.data_ptr(), &hash, kHashBytes);
  std::memcpy(mine.data_ptr<uint8_t>() + kHashBytes, record.data(),
              std::min(record.size(), kRecordBytes - kHashBytes - 1));
  std::vector<std::vector<at::Tensor>> records(1);
  for (int rank = 0; rank < size_; ++rank) {
    records[0].push_back(at::empty_like(mine));
  }
  std::vector<at::Tensor> sent{mine};
  c10::intrusive_ptr<c10d::Work> exchange = gloo_->allgather(records, sent, c10d::AllgatherOptions());
  exchange->wait(timeout_);
  bool same = true;
  std::ostringstream calls;
  for (int rank = 0; rank < size_; ++rank) {
    const auto* theirs = records[0][rank].data_ptr<uint8_t>();
    uint64_t their_hash = 0;
    std::memcpy(&their_hash, theirs, kHashBytes);
    same = same && their_hash == hash;
    calls << (rank == 0 ? "" : "; ") << "rank " << rank << ": " << reinterpret_cast<const char*>(theirs + kHashBytes);
  }
  if (same) {
    return nullptr;
  }
  return backendError("mccl: the ranks called different collectives (" + calls.str() +
                      "); no rank ran it, and the group stays usable");
}

}  // namespace torch_mydev
