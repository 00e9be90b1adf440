// In-memory port: two ends of a named channel joined back to back through
// bounded lock-free SPSC rings, with a fault injector per direction. See
// memory_port.h for the behaviour; this file is the mechanism.
//
// Threads: each end is driven by one thread (any thread). The registry mutex
// is taken only by open, close and the fault-injection hooks, never by
// rx_burst/tx_burst/tx_ready. Everything the two ends share on the data path
// is an atomic: the ring indices (head written only by the producer, tail
// only by the consumer), the receiver's "armed" wakeup flag, the truncation
// counter and the fault settings (a sequence lock the producer only reads).
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "backends.h"
#include "metaroce/datapath/memory_port.h"

namespace metaroce::datapath {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double unit_draw(uint64_t& state) { return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53; }

// One end's receive ring. Allocated when that end is first opened and kept
// for the channel's lifetime, so a producer never sees it freed under it.
struct Ring {
  Ring(uint32_t n, uint32_t fs)
      : slots(n), frame_size(fs), data(new uint8_t[static_cast<size_t>(n) * fs]()), lens(new uint32_t[n]()) {}
  ~Ring() {
    if (event_fd >= 0) close(event_fd);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  uint8_t* slot(uint64_t index) { return data.get() + static_cast<size_t>(index % slots) * frame_size; }

  const uint32_t slots;
  const uint32_t frame_size;
  const std::unique_ptr<uint8_t[]> data;
  const std::unique_ptr<uint32_t[]> lens;
  int event_fd = -1;
  alignas(64) std::atomic<uint64_t> head{0};       // frames published; written by the producer only
  alignas(64) std::atomic<uint64_t> tail{0};       // frames released; written by the consumer only
  alignas(64) std::atomic<bool> armed{false};      // consumer idle: the producer signals event_fd once
  std::atomic<uint64_t> truncated{0};              // frames too large for a slot (producer counts)
};

struct FaultSettings {
  uint32_t drop_every_nth = 0, corrupt_every_nth = 0;
  double drop_probability = 0, corrupt_probability = 0;
  int64_t corrupt_bit = -1;
  uint64_t seed = 1;
  bool any() const {
    return drop_every_nth || corrupt_every_nth || drop_probability > 0 || corrupt_probability > 0;
  }
};

// Faults on the frames one end transmits. The setter (under the registry
// mutex) writes the fields inside a sequence lock; the producer rereads them
// when the sequence changed and is even, never blocking.
struct Direction {
  std::atomic<uint64_t> seq{0};
  std::atomic<uint32_t> drop_every_nth{0}, corrupt_every_nth{0};
  std::atomic<double> drop_probability{0}, corrupt_probability{0};
  std::atomic<int64_t> corrupt_bit{-1};
  std::atomic<uint64_t> seed{1};
  std::atomic<uint64_t> frames{0}, dropped_nth{0}, dropped_random{0}, corrupted{0};
};

struct End {
  std::unique_ptr<Ring> ring_owner;            // set once, under the registry mutex
  std::atomic<Ring*> ring{nullptr};            // the same, for the peer's lock-free reads
  std::atomic<bool> open{false};               // carrier: the peer transmits only while set
  bool held = false;                           // a port holds this end (registry mutex)
  Direction tx;                                // faults on frames this end transmits
};

struct Channel {
  explicit Channel(std::string n) : name(std::move(n)) {}
  const std::string name;
  End ends[2];
};

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Channel>> channels;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: ports may outlive static destruction
  return *r;
}

class MemoryPort final : public Port {
 public:
  MemoryPort(const PortConfig& config, std::shared_ptr<Channel> channel, int end)
      : name_(config.name.empty() ? config.ifname : config.name),
        channel_(std::move(channel)),
        end_(end),
        max_frame_(config.frame_size),
        self_(channel_->ends[end]),
        peer_(channel_->ends[1 - end]),
        rx_(self_.ring.load(std::memory_order_relaxed)) {
    // Start empty: whatever a previous holder of this end left unread is gone.
    rx_->tail.store(rx_->head.load(std::memory_order_acquire), std::memory_order_release);
    rx_->armed.store(false, std::memory_order_relaxed);
    uint64_t drain;
    while (read(rx_->event_fd, &drain, sizeof drain) == sizeof drain) {
    }
    cached_head_ = rx_->tail.load(std::memory_order_relaxed);
    truncated_base_ = rx_->truncated.load(std::memory_order_relaxed);
  }

  ~MemoryPort() override {
    std::lock_guard lock(registry().mu);
    self_.open.store(false, std::memory_order_release);
    self_.held = false;
    if (!peer_.held) registry().channels.erase(channel_->name);
  }

  const char* kind() const override { return "memory"; }
  const std::string& name() const override { return name_; }
  int end() const { return end_; }

  size_t rx_burst(std::span<RxFrame> out) override {
    uint64_t tail = rx_->tail.load(std::memory_order_relaxed);
    if (pending_release_) {  // the previous burst's frames go back to the producer now
      tail += pending_release_;
      pending_release_ = 0;
      rx_->tail.store(tail, std::memory_order_release);
    }
    if (out.empty()) return 0;
    if (cached_head_ - tail < out.size()) cached_head_ = rx_->head.load(std::memory_order_acquire);
    if (cached_head_ == tail) {
      arm_wakeup();
      cached_head_ = rx_->head.load(std::memory_order_acquire);
      if (cached_head_ == tail) return 0;
    }
    const size_t n = std::min<uint64_t>(cached_head_ - tail, out.size());
    for (size_t i = 0; i < n; ++i) {
      const uint64_t idx = tail + i;
      out[i].data = rx_->slot(idx);
      out[i].len = rx_->lens[idx % rx_->slots];
      stats_.rx_bytes += out[i].len;
    }
    stats_.rx_frames += n;
    pending_release_ = static_cast<uint32_t>(n);
    return n;
  }

  size_t tx_burst(std::span<const std::span<const uint8_t>> frames) override {
    Ring* r = peer_ring();
    if (r == nullptr) {
      stats_.tx_ring_full += frames.size();
      return 0;
    }
    refresh_faults();
    uint64_t head = r->head.load(std::memory_order_relaxed);
    uint64_t space = r->slots - (head - cached_tail_);
    if (space < frames.size()) {
      cached_tail_ = r->tail.load(std::memory_order_acquire);
      space = r->slots - (head - cached_tail_);
    }
    const size_t accepted = std::min<uint64_t>(space, frames.size());
    const uint32_t limit = std::min(r->frame_size, max_frame_);
    Direction& d = self_.tx;
    for (size_t i = 0; i < accepted; ++i) {
      const auto& f = frames[i];
      stats_.tx_bytes += f.size();
      bool corrupt = false;
      const uint64_t nth = ++fault_frames_;
      d.frames.store(nth, std::memory_order_relaxed);
      if (faults_active_) {
        if (faults_.drop_every_nth && nth % faults_.drop_every_nth == 0) {
          d.dropped_nth.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (faults_.drop_probability > 0 && unit_draw(rng_) < faults_.drop_probability) {
          d.dropped_random.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        corrupt = (faults_.corrupt_every_nth && nth % faults_.corrupt_every_nth == 0) ||
                  (faults_.corrupt_probability > 0 && unit_draw(rng_) < faults_.corrupt_probability);
      }
      if (f.size() > limit) {
        r->truncated.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      uint8_t* dst = r->slot(head);
      if (!f.empty()) std::memcpy(dst, f.data(), f.size());
      r->lens[head % r->slots] = static_cast<uint32_t>(f.size());
      if (corrupt && !f.empty()) {
        const uint64_t bits = f.size() * 8ull;
        const uint64_t bit =
            faults_.corrupt_bit >= 0 ? static_cast<uint64_t>(faults_.corrupt_bit) % bits : splitmix64(rng_) % bits;
        dst[bit / 8] ^= static_cast<uint8_t>(0x80u >> (bit % 8));
        d.corrupted.fetch_add(1, std::memory_order_relaxed);
      }
      ++head;
    }
    stats_.tx_frames += accepted;
    stats_.tx_ring_full += frames.size() - accepted;
    if (accepted == 0) return 0;
    r->head.store(head, std::memory_order_release);
    // Dekker with the consumer's arm_wakeup(): it stores `armed` then reads
    // `head`; we store `head` then read `armed`. The fence makes one of us see
    // the other, so an idle consumer is never left sleeping on frames.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (r->armed.load(std::memory_order_relaxed) && r->armed.exchange(false, std::memory_order_acq_rel)) {
      const uint64_t one = 1;
      if (write(r->event_fd, &one, sizeof one) == sizeof one) ++stats_.wakeups;
    }
    return accepted;
  }

  bool tx_ready() const override {
    Ring* r = peer_.ring.load(std::memory_order_acquire);
    if (r == nullptr || !peer_.open.load(std::memory_order_acquire)) return false;
    const uint64_t used = r->head.load(std::memory_order_relaxed) - r->tail.load(std::memory_order_acquire);
    return used < r->slots;
  }

  int wait_fd() const override { return rx_->event_fd; }

  PortStats stats() const override {
    PortStats s = stats_;
    s.rx_truncated = rx_->truncated.load(std::memory_order_relaxed) - truncated_base_;
    return s;
  }

 private:
  Ring* peer_ring() {
    if (!peer_.open.load(std::memory_order_acquire)) return nullptr;
    if (peer_ring_ == nullptr) {
      peer_ring_ = peer_.ring.load(std::memory_order_acquire);
      if (peer_ring_ != nullptr) cached_tail_ = peer_ring_->tail.load(std::memory_order_acquire);
    }
    return peer_ring_;
  }

  void refresh_faults() {
    Direction& d = self_.tx;
    const uint64_t s1 = d.seq.load(std::memory_order_acquire);
    if (s1 == faults_seq_ || (s1 & 1)) return;  // unchanged, or a setter is mid-write: keep the old
    FaultSettings f;
    f.drop_every_nth = d.drop_every_nth.load(std::memory_order_relaxed);
    f.corrupt_every_nth = d.corrupt_every_nth.load(std::memory_order_relaxed);
    f.drop_probability = d.drop_probability.load(std::memory_order_relaxed);
    f.corrupt_probability = d.corrupt_probability.load(std::memory_order_relaxed);
    f.corrupt_bit = d.corrupt_bit.load(std::memory_order_relaxed);
    f.seed = d.seed.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (d.seq.load(std::memory_order_relaxed) != s1) return;
    faults_ = f;
    faults_seq_ = s1;
    faults_active_ = f.any();
    fault_frames_ = 0;
    rng_ = f.seed;
  }

  void arm_wakeup() {
    if (armed_ && rx_->armed.load(std::memory_order_relaxed)) return;  // still armed, nothing signalled
    if (armed_) {  // the producer took the arm and signalled: clear the eventfd before re-arming
      uint64_t v;
      while (read(rx_->event_fd, &v, sizeof v) == sizeof v) {
      }
    }
    rx_->armed.store(true, std::memory_order_relaxed);
    armed_ = true;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }

  const std::string name_;
  const std::shared_ptr<Channel> channel_;
  const int end_;
  const uint32_t max_frame_;
  End& self_;
  End& peer_;
  Ring* const rx_;
  PortStats stats_;
  // consumer side (our ring)
  uint64_t cached_head_ = 0;
  uint32_t pending_release_ = 0;
  bool armed_ = false;
  uint64_t truncated_base_ = 0;
  // producer side (the peer's ring)
  Ring* peer_ring_ = nullptr;
  uint64_t cached_tail_ = 0;
  uint64_t faults_seq_ = 0;
  FaultSettings faults_;
  bool faults_active_ = false;
  uint64_t fault_frames_ = 0;
  uint64_t rng_ = 1;
};

std::string end_error(int from_end) {
  return "from_end: must be 0 or 1 (got " + std::to_string(from_end) + ")";
}

}  // namespace

std::unique_ptr<Port> open_memory_port(const PortConfig& config, std::string* error) {
  if (config.ifname.empty()) {
    *error = "ifname: a memory port needs a channel name (both ends open the same ifname)";
    return nullptr;
  }
  if (std::string e = software_ring_size_error(config.ring_size); !e.empty()) {
    *error = e;
    return nullptr;
  }
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  auto& slot = reg.channels[config.ifname];
  if (!slot) slot = std::make_shared<Channel>(config.ifname);
  std::shared_ptr<Channel> ch = slot;
  int end = -1;
  for (int e = 0; e < 2 && end < 0; ++e)
    if (!ch->ends[e].held) end = e;
  if (end < 0) {
    *error = "ifname: memory channel '" + config.ifname + "' already has both ends open";
    return nullptr;
  }
  End& self = ch->ends[end];
  if (Ring* r = self.ring.load(std::memory_order_relaxed)) {
    if (r->slots != config.ring_size || r->frame_size != config.frame_size) {
      const bool ring = r->slots != config.ring_size;
      *error = std::string(ring ? "ring_size" : "frame_size") + ": memory channel '" + config.ifname + "' end " +
               std::to_string(end) + " was first opened with " + (ring ? "ring_size " : "frame_size ") +
               std::to_string(ring ? r->slots : r->frame_size) + " and keeps it (got " +
               std::to_string(ring ? config.ring_size : config.frame_size) + ")";
      if (!ch->ends[1 - end].held) reg.channels.erase(config.ifname);
      return nullptr;
    }
  } else {
    auto ring = std::make_unique<Ring>(config.ring_size, config.frame_size);
    ring->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ring->event_fd < 0) {
      *error = "ifname: memory channel '" + config.ifname + "': eventfd failed: " + std::strerror(errno);
      if (!ch->ends[1 - end].held) reg.channels.erase(config.ifname);
      return nullptr;
    }
    self.ring.store(ring.get(), std::memory_order_release);
    self.ring_owner = std::move(ring);
  }
  self.held = true;
  auto port = std::make_unique<MemoryPort>(config, ch, end);
  self.open.store(true, std::memory_order_release);
  return port;
}

bool set_memory_faults(const std::string& channel, int from_end, const MemoryFaults& f, std::string* error) {
  std::string scratch;
  if (!error) error = &scratch;
  if (from_end != 0 && from_end != 1) {
    *error = end_error(from_end);
    return false;
  }
  auto bad_probability = [](double p) { return !(p >= 0 && p <= 1); };  // also NaN
  if (bad_probability(f.drop_probability)) {
    *error = "drop_probability: must be in [0, 1] (got " + std::to_string(f.drop_probability) + ")";
    return false;
  }
  if (bad_probability(f.corrupt_probability)) {
    *error = "corrupt_probability: must be in [0, 1] (got " + std::to_string(f.corrupt_probability) + ")";
    return false;
  }
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  auto it = reg.channels.find(channel);
  if (it == reg.channels.end()) {
    *error = "channel: no open memory channel '" + channel + "'";
    return false;
  }
  Direction& d = it->second->ends[from_end].tx;
  d.seq.fetch_add(1, std::memory_order_relaxed);  // odd: writing
  std::atomic_thread_fence(std::memory_order_release);
  d.drop_every_nth.store(f.drop_every_nth, std::memory_order_relaxed);
  d.corrupt_every_nth.store(f.corrupt_every_nth, std::memory_order_relaxed);
  d.drop_probability.store(f.drop_probability, std::memory_order_relaxed);
  d.corrupt_probability.store(f.corrupt_probability, std::memory_order_relaxed);
  d.corrupt_bit.store(f.corrupt_bit, std::memory_order_relaxed);
  d.seed.store(f.seed, std::memory_order_relaxed);
  d.frames.store(0, std::memory_order_relaxed);
  d.dropped_nth.store(0, std::memory_order_relaxed);
  d.dropped_random.store(0, std::memory_order_relaxed);
  d.corrupted.store(0, std::memory_order_relaxed);
  d.seq.fetch_add(1, std::memory_order_release);  // even: published
  return true;
}

std::optional<MemoryFaultCounters> memory_fault_counters(const std::string& channel, int from_end) {
  if (from_end != 0 && from_end != 1) return std::nullopt;
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  auto it = reg.channels.find(channel);
  if (it == reg.channels.end()) return std::nullopt;
  const Direction& d = it->second->ends[from_end].tx;
  MemoryFaultCounters c;
  c.frames = d.frames.load(std::memory_order_relaxed);
  c.dropped_nth = d.dropped_nth.load(std::memory_order_relaxed);
  c.dropped_random = d.dropped_random.load(std::memory_order_relaxed);
  c.corrupted = d.corrupted.load(std::memory_order_relaxed);
  return c;
}

int memory_port_end(const Port& port) {
  const auto* m = dynamic_cast<const MemoryPort*>(&port);
  return m ? m->end() : -1;
}

}  // namespace metaroce::datapath
