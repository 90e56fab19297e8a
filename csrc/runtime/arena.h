// The memory of one device: a memfd mapped twice, once inaccessible (the
// addresses handed out as device pointers) and once read-write (how the runtime
// itself reaches the bytes), with a best-fit sub-allocator over it.
//
// The addresses span kAddressSpaceFactor times the device's memory (at most
// kMaxExtraAddressSpace more), as a CUDA device's virtual address space
// exceeds its physical memory: the bytes allocated are held to the capacity,
// but a block needs a free range of addresses, not of memory, so blocks freed
// all over the device do not keep out a large one while the memory is free.
// A freed range's whole pages go back to the system, so what is resident is
// the capacity at most, plus the partly used pages of small live blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace mydev {

constexpr size_t kAllocationAlignment = 256;
constexpr size_t kAddressSpaceFactor = 4;
// 16 devices of the largest memory MYDEV_DEVICE_MEMORY allows (1 TiB), mapped
// twice, then take 64 TiB of the 128 TiB a process can address.
constexpr size_t kMaxExtraAddressSpace = size_t(1) << 40;

class Arena {
 public:
  // Creates and maps the arena of `device`; NULL with a reason on failure.
  static std::unique_ptr<Arena> create(int device, size_t capacity, std::string* error);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Offset of a new block of at least `size` bytes, or false if none fits.
  bool allocate(size_t size, size_t* offset);
  // Returns the block starting at `offset` to the free list; false if no live
  // allocation starts there.
  bool release(size_t offset);
  // The live allocation containing `offset`.
  bool find_allocation(size_t offset, size_t* base, size_t* size) const;

  size_t capacity() const { return capacity_; }
  size_t free_bytes() const;
  // The largest allocation that would fit now.
  size_t largest_free_block() const;
  char* device_base() const { return device_base_; }
  char* host_base() const { return host_base_; }

 private:
  Arena(int device, int fd, size_t capacity, size_t mapped, char* device_base, char* host_base);
  void insert_free(size_t offset, size_t size);
  void erase_free(std::map<size_t, size_t>::iterator it);
  void return_pages(size_t freed_offset, size_t freed_size, size_t block_offset, size_t block_size);

  const int device_;
  const int fd_;
  const size_t capacity_;
  const size_t mapped_;
  char* const device_base_;
  char* const host_base_;

  mutable std::mutex mutex_;
  std::map<size_t, size_t> free_by_offset_;             // free addresses: offset -> size
  std::set<std::pair<size_t, size_t>> free_by_size_;    // (size, offset), for best fit
  std::map<size_t, size_t> live_;                       // offset -> size
  size_t free_bytes_;                                   // of the capacity
};

// Lock-free registry of the device views, readable from a signal handler.
// Returns the device whose inaccessible view contains `p` (and the offset into
// it), or -1.
int find_device_of(const void* p, size_t* offset);
// Read-write address of a device pointer; `device` and `offset` from find_device_of.
char* host_address(int device, size_t offset);

}  // namespace mydev
