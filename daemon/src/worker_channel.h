// Control plane -> worker thread: run a function on the worker, between two
// iterations of its loop, and wait for it. This is how the daemon changes
// anything a worker owns (connections, memory, fabric links, traffic drivers)
// without a lock the worker would ever take: the worker only pops a
// single-producer ring with atomics; control threads serialise among
// themselves with their own mutex. A command that times out (worker stuck)
// stays valid: it is shared between the waiter and the ring.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "metaroce/transport/types.h"

namespace metaroce::daemon {

class WorkerChannel {
 public:
  using Fn = std::function<void(transport::Nanos now)>;

  // Control side. Runs fn on the worker; false if the worker did not run it
  // within timeout (or is not running), in which case it may still run later.
  bool call(Fn fn, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto cmd = std::make_shared<Command>();
    cmd->fn = std::move(fn);
    {
      std::lock_guard<std::mutex> g(producers_);  // control threads only
      if (!running_.load(std::memory_order_acquire)) return false;
      const uint32_t tail = tail_.load(std::memory_order_relaxed);
      if (tail - head_.load(std::memory_order_acquire) == kSlots) return false;
      ring_[tail % kSlots] = new std::shared_ptr<Command>(cmd);
      tail_.store(tail + 1, std::memory_order_release);
    }
    const auto until = std::chrono::steady_clock::now() + timeout;
    // The worker wakes at least every millisecond (IdlePolicy::max_block_ns).
    while (!cmd->done.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return true;
  }

  // Worker side: runs every queued command.
  void drain(transport::Nanos now) {
    uint32_t head = head_.load(std::memory_order_relaxed);
    while (head != tail_.load(std::memory_order_acquire)) {
      std::shared_ptr<Command>* slot = ring_[head % kSlots];
      (*slot)->fn(now);
      (*slot)->done.store(true, std::memory_order_release);
      delete slot;
      head_.store(++head, std::memory_order_release);
    }
  }

  // Under the producers' lock, so no call() slips in after the last drain.
  void set_running(bool running) {
    std::lock_guard<std::mutex> g(producers_);
    running_.store(running, std::memory_order_release);
  }
  bool running() const { return running_.load(std::memory_order_acquire); }

 private:
  struct Command {
    Fn fn;
    std::atomic<bool> done{false};
  };
  static constexpr uint32_t kSlots = 256;
  std::array<std::shared_ptr<Command>*, kSlots> ring_{};
  std::atomic<uint32_t> head_{0}, tail_{0};
  std::atomic<bool> running_{false};
  std::mutex producers_;
};

}  // namespace metaroce::daemon
