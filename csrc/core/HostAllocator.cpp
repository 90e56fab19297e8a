// Pinned ("page-locked") host memory for mydev, served by PyTorch's generic
// CachingHostAllocatorImpl over mydevHostAlloc/mydevFreeHost. A pinned block
// that an async copy still reads is kept out of reuse by an event recorded on
// the copy's stream (record_event), exactly as for CUDA.
#include "HostAllocator.h"

#include "Event.h"
#include "Exception.h"
#include "Stream.h"

#include <ATen/core/CachingHostAllocator.h>

#include <cstring>

namespace torch_mydev {

namespace {

struct MydevHostAllocatorImpl final : public at::CachingHostAllocatorImpl<c10::Stream, MydevEvent> {
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

 private:
  void allocate_host_memory(size_t size, void** ptr) override { MYDEV_CHECK(mydevHostAlloc(ptr, size)); }

  void free_block(at::HostBlock<c10::Stream>* block) override { MYDEV_CHECK(mydevFreeHost(block->ptr_)); }

  void record_stream(std::optional<std::vector<MydevEvent>>& events, c10::Stream stream) override {
    MydevEvent event;
    event.record(MydevStream(stream));
    events->push_back(std::move(event));
  }

  bool query_event(MydevEvent& event) override { return event.query(); }

  c10::Stream get_current_stream() const override { return getCurrentMydevStream().unwrap(); }

  bool stream_is_capturing(c10::Stream /*stream*/) const override { return false; }
};

void deletePinned(void* ctx);

DECLARE_HOST_ALLOCATOR(MydevHostAllocator, MydevHostAllocatorImpl, deletePinned, g_host_allocator)

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_host_allocator)

}  // namespace

at::HostAllocator* hostAllocator() { return &g_host_allocator; }

bool isPinned(const void* ptr) {
  mydevPointerAttributes attributes{};
  return mydevPointerGetAttributes(&attributes, ptr) == mydevSuccess && attributes.type == mydevMemoryTypeHost;
}

}  // namespace torch_mydev
