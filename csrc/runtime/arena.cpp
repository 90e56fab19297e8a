#include "arena.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <iterator>

#include "internal.h"

namespace mydev {
namespace {

struct ViewRange {
  std::atomic<uintptr_t> device_base{0};
  std::atomic<uintptr_t> host_base{0};
  std::atomic<size_t> size{0};
};
ViewRange g_views[kMaxDevices];

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

size_t round_down(size_t value, size_t alignment) { return value - value % alignment; }
size_t round_up(size_t value, size_t alignment) { return round_down(value + alignment - 1, alignment); }

// memfd_create may be missing (old kernels) or forbidden (seccomp sandboxes); an
// unlinked file on the tmpfs /dev/shm behaves the same for our purposes.
int open_backing_file(int device, std::string* error) {
  const std::string name = "mydev" + std::to_string(device);
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd >= 0) return fd;
  const int memfd_errno = errno;
  std::string path = "/dev/shm/" + name + "-XXXXXX";
  fd = mkostemp(&path[0], O_CLOEXEC);
  if (fd < 0) {
    *error = std::string("memfd_create failed (") + strerror(memfd_errno) + ") and so did a file in /dev/shm (" +
             strerror(errno) + ")";
    return -1;
  }
  unlink(path.c_str());
  return fd;
}

}  // namespace

std::unique_ptr<Arena> Arena::create(int device, size_t capacity, std::string* error) {
  const size_t memory = round_up(capacity, page_size());
  const size_t mapped = memory + std::min(memory * (kAddressSpaceFactor - 1), kMaxExtraAddressSpace);
  const int fd = open_backing_file(device, error);
  if (fd < 0) return nullptr;
  if (ftruncate(fd, static_cast<off_t>(mapped)) != 0) {
    *error = std::string("ftruncate: ") + strerror(errno);
    close(fd);
    return nullptr;
  }
  void* device_view = mmap(nullptr, mapped, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (device_view == MAP_FAILED) {
    *error = std::string("mmap of the device view: ") + strerror(errno);
    close(fd);
    return nullptr;
  }
  void* host_view = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (host_view == MAP_FAILED) {
    *error = std::string("mmap of the runtime view: ") + strerror(errno);
    munmap(device_view, mapped);
    close(fd);
    return nullptr;
  }
  ViewRange& view = g_views[device];
  view.host_base.store(reinterpret_cast<uintptr_t>(host_view), std::memory_order_relaxed);
  view.size.store(mapped, std::memory_order_relaxed);
  view.device_base.store(reinterpret_cast<uintptr_t>(device_view), std::memory_order_release);
  return std::unique_ptr<Arena>(
      new Arena(device, fd, capacity, mapped, static_cast<char*>(device_view), static_cast<char*>(host_view)));
}

Arena::Arena(int device, int fd, size_t capacity, size_t mapped, char* device_base, char* host_base)
    : device_(device),
      fd_(fd),
      capacity_(capacity),
      mapped_(mapped),
      device_base_(device_base),
      host_base_(host_base),
      free_bytes_(capacity) {
  if (capacity > 0) insert_free(0, mapped);
}

Arena::~Arena() {
  g_views[device_].device_base.store(0, std::memory_order_release);
  munmap(device_base_, mapped_);
  munmap(host_base_, mapped_);
  close(fd_);
}

void Arena::insert_free(size_t offset, size_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void Arena::erase_free(std::map<size_t, size_t>::iterator it) {
  free_by_size_.erase({it->second, it->first});
  free_by_offset_.erase(it);
}

bool Arena::allocate(size_t size, size_t* offset) {
  if (size == 0 || size > capacity_) return false;
  size = round_up(size, kAllocationAlignment);
  std::lock_guard<std::mutex> lock(mutex_);
  if (size > free_bytes_) return false;
  auto best = free_by_size_.lower_bound({size, 0});
  if (best == free_by_size_.end()) return false;
  const size_t block_size = best->first;
  const size_t block_offset = best->second;
  erase_free(free_by_offset_.find(block_offset));
  if (block_size > size) insert_free(block_offset + size, block_size - size);
  live_.emplace(block_offset, size);
  free_bytes_ -= size;
  *offset = block_offset;
  return true;
}

bool Arena::release(size_t offset) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto live = live_.find(offset);
  if (live == live_.end()) return false;
  const size_t size = live->second;
  live_.erase(live);
  free_bytes_ += size;

  size_t block_offset = offset;
  size_t block_size = size;
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.end() && next->first == offset + size) {
    block_size += next->second;
    erase_free(next);
  }
  auto after = free_by_offset_.lower_bound(offset);
  if (after != free_by_offset_.begin()) {
    auto previous = std::prev(after);
    if (previous->first + previous->second == offset) {
      block_offset = previous->first;
      block_size += previous->second;
      erase_free(previous);
    }
  }
  // Under the lock: once the block is on the free list another thread may
  // allocate it and write to it, and a late punch would zero its data.
  return_pages(offset, size, block_offset, block_size);
  insert_free(block_offset, block_size);
  return true;
}

// Punches the pages of the freed range out of the memfd so that their physical
// memory goes back to the system. A page that straddles the range's edge is
// only punched if the rest of it is free too (it lies inside the coalesced
// block); punching the whole coalesced block instead would touch ranges freed
// (and punched) long ago, making every free cost the size of the free space.
void Arena::return_pages(size_t freed_offset, size_t freed_size, size_t block_offset, size_t block_size) {
  const size_t page = page_size();
  size_t begin = round_down(freed_offset, page);
  if (begin < block_offset) begin = round_up(freed_offset, page);
  size_t end = round_up(freed_offset + freed_size, page);
  if (end > block_offset + block_size) end = round_down(freed_offset + freed_size, page);
  if (begin >= end) return;
  // Failure only means the pages stay resident until reused.
  (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(begin),
                  static_cast<off_t>(end - begin));
}

bool Arena::find_allocation(size_t offset, size_t* base, size_t* size) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.upper_bound(offset);
  if (it == live_.begin()) return false;
  --it;
  if (offset >= it->first + it->second) return false;
  *base = it->first;
  *size = it->second;
  return true;
}

size_t Arena::free_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_bytes_;
}

size_t Arena::largest_free_block() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t largest_range = free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first;
  return std::min(largest_range, round_down(free_bytes_, kAllocationAlignment));
}

int find_device_of(const void* p, size_t* offset) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  for (int device = 0; device < kMaxDevices; ++device) {
    const ViewRange& view = g_views[device];
    const uintptr_t base = view.device_base.load(std::memory_order_acquire);
    if (base != 0 && address >= base && address - base < view.size.load(std::memory_order_relaxed)) {
      *offset = address - base;
      return device;
    }
  }
  return -1;
}

char* host_address(int device, size_t offset) {
  return reinterpret_cast<char*>(g_views[device].host_base.load(std::memory_order_relaxed)) + offset;
}

}  // namespace mydev
