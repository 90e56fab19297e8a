// mccl's comm thread: ends the profiler ranges of operations, off the stream
// workers (a range's end callback may need the GIL).
#pragma once

#include <c10/util/Exception.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include <pthread.h>

namespace torch_mydev {

// Runs queued tasks in order on one thread, named (as NCCL's threads are) so
// that a user can tell it in a debugger or /proc.
class CommThread {
 public:
  explicit CommThread(const char* name) : thread_([this] { run(); }) {
    pthread_setname_np(thread_.native_handle(), name);
  }

  ~CommThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    thread_.join();
  }

  bool runsHere() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Once stopping, a task is refused (left to the caller): the thread
  // runs what was queued before, then ends.
  bool post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) {
        return false;
      }
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
    return true;
  }

  // For a thread that cannot join itself (the last reference to its backend
  // was dropped by one of its own tasks): it ends on its own, and this object,
  // which it still uses, is left to it.
  static void stopFromWithin(std::unique_ptr<CommThread> self) {
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->stopping_ = true;
    }
    self->thread_.detach();
    self.release();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) {
          return;
        }
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      try {
        task();
      } catch (const std::exception& error) {
        TORCH_WARN("mccl: ", error.what());
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace torch_mydev
