// A lock for critical sections of a few dozen instructions that two threads
// on different cores take on every launch (a stream's queue: the host pushes,
// the worker pops and retires). A contended pthread mutex puts the loser to
// sleep in the kernel and makes the winner pay a futex wake-up on unlock; a
// waiter here spins instead, and yields its core only if the holder seems to
// have been preempted.
#pragma once

#include <atomic>
#include <thread>

namespace mydev {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class SpinLock {
 public:
  void lock() {
    int spins = 0;
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (spins < kSpinsBeforeYield) {
          ++spins;
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr int kSpinsBeforeYield = 1000;
  std::atomic<bool> locked_{false};
};

}  // namespace mydev
