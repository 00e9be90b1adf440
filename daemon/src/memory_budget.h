// The daemon's budget for the memory it registers with the endpoint on a
// caller's behalf: operator regions (Memory.Register), responder halves of
// connections (Peer.Accept) and job buffers (Traffic.Start). Each piece holds a
// Reservation for as long as it lives; a request that would take the total past
// endpoint.memory_budget_bytes is refused (RESOURCE_EXHAUSTED) before anything
// is allocated. Control plane only: the workers never touch it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace metaroce::daemon {

struct MemoryBudgetState {
  std::atomic<uint64_t> used{0};
  uint64_t limit = 0;
};

class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t limit_bytes) : state_(std::make_shared<MemoryBudgetState>()) {
    state_->limit = limit_bytes;
  }

  // Holds `bytes` of the budget until destroyed. Move-only.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& o) noexcept : state_(std::move(o.state_)), bytes_(o.bytes_) { o.bytes_ = 0; }
    Reservation& operator=(Reservation&& o) noexcept {
      release();
      state_ = std::move(o.state_);
      bytes_ = o.bytes_;
      o.bytes_ = 0;
      return *this;
    }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation() { release(); }
    uint64_t bytes() const { return bytes_; }

   private:
    friend class MemoryBudget;
    void release() {
      if (state_ && bytes_) state_->used.fetch_sub(bytes_);
      bytes_ = 0;
    }
    std::shared_ptr<MemoryBudgetState> state_;  // shared: a reservation may outlive the budget's owner
    uint64_t bytes_ = 0;
  };

  // A reservation of `bytes`, or nullopt (and *error says why, naming the key)
  // when it would take the total past the limit.
  std::optional<Reservation> reserve(uint64_t bytes, const std::string& what, std::string* error);

  uint64_t used() const { return state_->used.load(); }
  uint64_t limit() const { return state_->limit; }

 private:
  std::shared_ptr<MemoryBudgetState> state_;
};

inline std::optional<MemoryBudget::Reservation> MemoryBudget::reserve(uint64_t bytes, const std::string& what,
                                                                       std::string* error) {
  uint64_t used = state_->used.load();
  do {
    if (bytes > state_->limit || used > state_->limit - bytes) {
      *error = "memory: " + what + " needs " + std::to_string(bytes) + " bytes; " + std::to_string(used) + " of the " +
               std::to_string(state_->limit) +
               "-byte budget (endpoint.memory_budget_bytes) are in use (release regions, connections or jobs, or "
               "raise the budget)";
      return std::nullopt;
    }
  } while (!state_->used.compare_exchange_weak(used, used + bytes));
  Reservation r;
  r.state_ = state_;
  r.bytes_ = bytes;
  return r;
}

}  // namespace metaroce::daemon
