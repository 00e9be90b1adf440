// Deterministic discrete-event simulator: endpoints (the real transport
// engine) joined by an emulated fabric, on one virtual clock.
//
// Determinism: one event queue ordered by (time, insertion sequence), every
// random source seeded from the run seed, no threads, no wall clock. The same
// seed and configuration replay the same run bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/emulator/fabric.h"
#include "metaroce/emulator/link.h"
#include "metaroce/emulator/timeline.h"
#include "metaroce/transport/endpoint.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::sim {

using Nanos = int64_t;

// Where a frame goes next: to a host at deliver_at, or (in_transit) to the
// fabric's next hop at deliver_at, described by pos.
struct Route {
  emulator::DropCause drop = emulator::DropCause::kNone;
  int to_host = -1;
  Nanos deliver_at = 0;
  Nanos duplicate_at = -1;  // >= 0: a copy is delivered then as well
  bool in_transit = false;
  emulator::FramePosition pos;
};

// The fabric: owns the link models; the simulator owns time and packets.
class Fabric {
 public:
  virtual ~Fabric() = default;
  // First hop of a frame host `from` sends on `plane`.
  virtual Route forward(int from_host, uint8_t plane, std::span<uint8_t> frame, Nanos now) = 0;
  // Later hops of a frame a previous call left in transit.
  virtual Route advance(const emulator::FramePosition& pos, std::span<uint8_t> frame, Nanos now) {
    (void)pos, (void)frame, (void)now;
    return Route{emulator::DropCause::kNoRoute};
  }
  // Whether host's egress on plane can take another frame now (NIC back-pressure),
  // and if not, when it next can. Only the host's own frames fill its egress
  // and time drains it, so egress_ready(t) == (t >= egress_ready_at(t0)) for
  // every t >= t0 until the host sends on that plane again: the simulator
  // asks egress_ready_at once per frame sent and keeps the answer.
  virtual bool egress_ready(int host, uint8_t plane, Nanos now) = 0;
  virtual Nanos egress_ready_at(int host, uint8_t plane, Nanos now) = 0;
  virtual size_t planes() const = 0;
};

// Two hosts joined by P planes, each plane one link per direction (issue 2's
// fabric). Host 0 is A, host 1 is B.
class TwoHostFabric final : public Fabric {
 public:
  struct PlaneConfig {
    emulator::LinkConfig a_to_b;
    emulator::LinkConfig b_to_a;
  };
  TwoHostFabric(const std::vector<PlaneConfig>& planes, uint64_t seed,
                uint32_t nic_queue_bytes = emulator::kNicQueueBytes);

  Route forward(int from_host, uint8_t plane, std::span<uint8_t> frame, Nanos now) override;
  bool egress_ready(int host, uint8_t plane, Nanos now) override;
  Nanos egress_ready_at(int host, uint8_t plane, Nanos now) override;
  size_t planes() const override { return links_.size() / 2; }

  emulator::Link& link(int from_host, uint8_t plane) { return links_[plane * 2 + from_host]; }
  void set_plane_up(uint8_t plane, bool up);

 private:
  std::vector<emulator::Link> links_;  // [plane*2 + from_host]
  uint32_t nic_queue_bytes_;
};

// The full emulated fabric (emulator::Fabric: planes, ECMP links, uplinks and
// downlinks, timelines) as seen by the simulator: one event per hop.
class EmulatedFabric final : public Fabric {
 public:
  EmulatedFabric(emulator::Fabric& fabric, uint32_t nic_queue_bytes = emulator::kNicQueueBytes) : f_(fabric), nic_(nic_queue_bytes) {}
  void set_timeline(emulator::Timeline t) { runner_.emplace(f_, std::move(t)); }
  void apply_due(Nanos now) {
    if (runner_) runner_->apply_due(now);
  }

  Route forward(int from_host, uint8_t plane, std::span<uint8_t> frame, Nanos now) override;
  Route advance(const emulator::FramePosition& pos, std::span<uint8_t> frame, Nanos now) override;
  bool egress_ready(int host, uint8_t plane, Nanos now) override { return f_.uplink_ready(host, plane, nic_, now); }
  Nanos egress_ready_at(int host, uint8_t plane, Nanos now) override {
    return f_.uplink_ready_at(host, plane, nic_, now);
  }
  size_t planes() const override { return f_.config().planes; }
  emulator::Fabric& fabric() { return f_; }
  const emulator::TimelineRunner* timeline() const { return runner_ ? &*runner_ : nullptr; }

 private:
  Route step(emulator::FramePosition pos, std::span<uint8_t> frame, Nanos now);
  emulator::Fabric& f_;
  uint32_t nic_;
  std::optional<emulator::TimelineRunner> runner_;
};

// A frame as the fabric takes it from a host, drops it, or delivers it to a
// host (for packet captures; timestamps on the simulated clock).
struct FrameEvent {
  enum class Kind : uint8_t { kSent, kDropped, kDelivered } kind = Kind::kSent;
  Nanos at = 0;
  int host = 0;                 // kSent, kDropped: the sending host; kDelivered: the receiving one
  uint8_t plane = 0;
  emulator::DropCause drop = emulator::DropCause::kNone;  // kDropped
  uint8_t marks = 0;            // kDelivered: emulator::FrameMark bits of what the fabric did to it
  std::span<const uint8_t> frame;  // kSent: before the fabric touched it; else as it is now
};

class Simulator {
 public:
  explicit Simulator(Fabric& fabric);
  ~Simulator();

  // Hosts are engines the caller owns; their index is their fabric attachment.
  int add_host(transport::Endpoint* ep);
  Nanos now() const { return now_; }

  // Runs control actions (fault injection, workload steps) at a virtual time.
  void at(Nanos t, std::function<void()> fn);
  // Wakes a host now (after the caller posted work to its endpoint).
  void kick(int host);
  // Called after a host received frames or completions may be ready.
  void on_host_activity(std::function<void(int host)> fn) { activity_ = std::move(fn); }
  // Every frame sent into, dropped by or delivered out of the fabric, as it
  // happens (captures); empty to stop. Off, it costs one test per event.
  void on_frame(std::function<void(const FrameEvent&)> fn) { frame_observer_ = std::move(fn); }

  // Bytes of each frame buffer (default wire::kMaxFrameBytes, a jumbo
  // frame): transport::max_frame_bytes(mtu_payload) for a run whose
  // connections all use that payload. Set before the first frame.
  void set_frame_capacity(size_t bytes) { frame_capacity_ = bytes; }

  void run_until(Nanos t);
  uint64_t events_processed() const { return events_; }
  // Timed wake-ups serviced (a host's deadline or its uplink draining; frames
  // delivered are not counted), all hosts together.
  uint64_t wakes() const { return wakes_; }

 private:
  enum class Kind : uint8_t { kDeliver, kWake, kControl };
  // 16 bytes, so that a cache line holds four: at cluster scale every frame
  // in every emulated queue is a pending event (millions), and the queue's
  // cost is its cache misses. `key` orders events of one instant by when
  // they were scheduled (seq, the high bits) and says what to do: the kind
  // and an index (a packet slot, a host, a control slot).
  struct Event {
    Nanos at;
    uint64_t key;
  };
  static constexpr unsigned kIndexBits = 24, kKindBits = 2;
  static constexpr uint64_t kMaxIndex = (1ull << kIndexBits) - 1;
  struct Packet {
    std::vector<uint8_t> data;
    uint32_t len = 0;
    bool in_transit = false;  // at a fabric hop, not yet at a host
    int to_host = -1;         // where it is delivered
    emulator::FramePosition pos;
  };
  // from/plane: the frame's sender and plane, for a drop's FrameEvent.
  void route(uint32_t slot, const Route& r, int from, uint8_t plane);

  void push(Nanos at, Kind k, uint32_t index);
  uint32_t alloc_packet();
  void service(int host);
  void schedule_wake(int host, Nanos at);

  Fabric& fabric_;
  std::vector<transport::Endpoint*> hosts_;
  std::vector<Nanos> wake_at_;
  // Pending events, popped in (at, key) order: a radix heap, which fits a
  // simulator because no event is scheduled before the last one popped
  // (monotone). Bucket b > 0 holds the events whose time first differs from
  // last_at_ in bit b - 1; bucket 0 those at last_at_ itself, in key order.
  // A push is an append; a pop takes bucket 0's next event, or first
  // re-sorts the lowest non-empty bucket into lower ones (each event moves
  // at most 64 times in all). A 4-ary heap spent 14 % of a 4,000-connection
  // all-to-all in its pops, a cache miss per level of a million events.
  struct EventQueue {
    std::vector<Event> bucket[65];
    size_t head0 = 0;  // bucket[0]'s next event
    size_t size = 0;
    Nanos last_at = 0;
    static unsigned bucket_of(Nanos at, Nanos last) {
      return at == last ? 0u : 64u - static_cast<unsigned>(__builtin_clzll(static_cast<uint64_t>(at ^ last)));
    }
    void push(const Event& e);
    // The next event if it is due by `until`, else nullptr. Looking does not
    // move last_at past `until`: the caller may still schedule events
    // between its clock and the next event's time.
    const Event* next_due(Nanos until);
    void pop();  // after next_due() returned an event
  };
  EventQueue queue_;
  std::vector<Packet> packets_;
  std::vector<uint32_t> free_packets_;
  std::vector<std::function<void()>> controls_;
  std::function<void(int)> activity_;
  std::function<void(const FrameEvent&)> frame_observer_;
  std::vector<uint32_t> tx_slots_;
  // By host x planes + plane: when that egress can next take a frame
  // (Fabric::egress_ready_at after the host's last frame on it). Asked before
  // every frame of a burst on every plane, this reads one word instead of
  // draining each plane's link.
  std::vector<Nanos> egress_ready_at_;
  Nanos& egress_ready_at(int host, size_t plane) {
    return egress_ready_at_[static_cast<size_t>(host) * fabric_.planes() + plane];
  }
  bool egress_ready(int host, size_t plane) { return now_ >= egress_ready_at(host, plane); }
  Nanos now_ = 0;
  size_t frame_capacity_ = wire::kMaxFrameBytes;
  uint64_t seq_ = 0, events_ = 0, wakes_ = 0;
};

}  // namespace metaroce::sim
