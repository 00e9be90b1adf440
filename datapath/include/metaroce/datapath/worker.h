// Worker loops: drive the transport engine (endpoint role) or the emulator
// between ports (fabric role) with the real clock.
//
// One worker owns its ports, engine/fabric and buffers and runs on one
// thread; nothing here locks or allocates per frame. When idle the loop
// spins briefly, then blocks in poll() on the ports' wait fds (or sleeps a
// few microseconds for backends without one) until the next timer, so an
// idle worker does not burn a core; busy_poll keeps spinning.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "metaroce/datapath/capture_tap.h"
#include "metaroce/datapath/delay_line.h"
#include "metaroce/datapath/port.h"
#include "metaroce/emulator/fabric.h"
#include "metaroce/emulator/histogram.h"
#include "metaroce/emulator/link.h"
#include "metaroce/emulator/timeline.h"
#include "metaroce/transport/endpoint.h"

namespace metaroce::datapath {

Nanos monotonic_ns();

struct IdlePolicy {
  bool busy_poll = false;
  // How long an idle worker keeps polling before it blocks. Short: on a host
  // with fewer cores than busy threads a spinning worker takes the CPU another
  // worker (or the kernel's veth path) needs, and the fidelity guard then
  // sees frames and timers late; a blocked worker wakes on its ports' fds or
  // its next deadline.
  Nanos spin_ns = 5'000;
  // After an iteration that moved something, the worker polls on for as long
  // as its blocks have lately overrun (IdleSpin), up to this: where waking
  // from a block is slow (a guest whose idle vCPU halts), a worker between two
  // frames of a flow stays awake instead of sleeping through the next ones.
  Nanos max_spin_ns = 1'000'000;
  Nanos max_block_ns = 1'000'000;   // never block longer than this
  // Share of every 10 ms the worker may run SCHED_FIFO (scheduling.h);
  // 0: always an ordinary thread. The daemon's default is kRealtimeShareDefault.
  double realtime_share = 0;
};

// Fidelity figures a worker keeps about itself: whether it kept up with what
// it was asked to do on the real clock (see docs/architecture.md, "fidelity").
struct WorkerStats {
  uint64_t iterations = 0, idle_blocks = 0;
  Nanos idle_spin_ns = 0;              // how long the worker now polls after work before it blocks (IdleSpin)
  double realtime_share = 0;           // the RealtimeBudget share in effect (0: ordinary thread)
  uint64_t realtime_demotions = 0;     // windows in which the worker used up its real-time share
  Nanos started_ns = 0;                // monotonic time the loop started (0: never ran)
  Nanos busy_ns = 0;                   // wall time spent in iterations that moved something
  // Frames leaving a delay line after their due time (emulated delay, queueing,
  // rate): the emulated fabric's own timing error.
  emulator::DelayHistogram frame_lateness;
  // Endpoint role: how late the transport engine's timers were serviced.
  emulator::DelayHistogram timer_lateness;
  // Every received frame, by how long it may have waited in its port's ring
  // before this loop took it (an upper bound: the time since the loop last
  // looked, plus the time it waited for a CPU after a block). A receiver that
  // stalls delays ACKs as a slow fabric would, but has no timers of its own
  // to show it; this is where it shows.
  emulator::DelayHistogram receive_wait;
  // Filled by sample_schedule() on the worker's own thread when a snapshot is
  // taken: monotonic time then, the thread's CPU time, and the time it was
  // runnable but waited for a CPU (the host, not the fabric, delaying frames).
  Nanos sampled_ns = 0, cpu_ns = 0, run_delay_ns = 0;
  uint64_t rx_frames = 0, tx_frames = 0;
  uint64_t tx_dropped_ring_full = 0;   // frames a port refused at their due time
  uint64_t delay_line_full = 0;        // frames dropped: no buffer to hold them
  uint64_t frames_too_large = 0;       // frames dropped: longer than the worker's frame_size
  uint64_t emu_drops[6] = {0, 0, 0, 0, 0, 0};  // by emulator::DropCause
};

// Fills stats.sampled_ns, cpu_ns and run_delay_ns for the calling thread
// (from /proc/thread-self/schedstat; cpu_ns and run_delay_ns stay 0 where the
// kernel does not provide it). Call it on the worker, between iterations.
void sample_schedule(WorkerStats& stats);

// Frames copied for one tx_burst on one port (the source buffers may be
// recycled right after), fixed storage.
class TxStaging {
 public:
  TxStaging(size_t frames, size_t frame_size);
  bool full() const { return frames_.size() == capacity_; }
  // Copies frame; false when it is larger than the staging frame size.
  bool add(std::span<const uint8_t> frame);
  // One tx_burst of everything staged; refused frames count as ring-full drops.
  void send(Port* port, WorkerStats& stats);

 private:
  size_t capacity_, frame_size_;
  std::vector<uint8_t> bytes_;
  std::vector<std::span<const uint8_t>> frames_;
};

// One worker loop, as a thread runs it: poll() once per iteration, and when
// nothing moved, block on wait_ports() until next_wake(). Several loops can
// share one thread (run_loops): on a host with fewer cores than loops, two
// busy threads on one core wait for each other, and every wake-up across
// cores costs more than the frames it carries (see docs/architecture.md,
// "Threads and cores").
class PolledLoop {
 public:
  virtual ~PolledLoop() = default;
  // One iteration at monotonic time now; true if anything moved.
  virtual bool poll(Nanos now) = 0;
  // Monotonic time of the next thing due (INT64_MAX: nothing).
  virtual Nanos next_wake() const = 0;
  virtual const std::vector<Port*>& wait_ports() const = 0;
  virtual WorkerStats& loop_stats() = 0;
  virtual void begin() {}  // on the loop's thread, before the first poll
};

// Runs the loops on the calling thread until stop is set. An iteration polls
// every loop; when none moved anything, the thread spins idle.spin_ns, then
// blocks on all their ports until the earliest next_wake(). Each loop's
// busy_ns counts the thread's iterations in which any loop moved something:
// how close the thread (not the loop alone) is to saturation.
void run_loops(std::span<PolledLoop* const> loops, const std::atomic<bool>& stop, const IdlePolicy& idle);

// How long a frame found right after a block may have waited for the thread
// (beyond the time since it last looked, which a block resets): the block was
// asked at asked_at to end by asked_at + wait at the latest, the thread
// looked again at woke_at, and it waited run_queue_wait for a CPU after its
// wake-up. A frame that arrives during a block wakes the thread at once, so
// normally only the run-queue wait counts. But a block that ends after its
// time (a guest vCPU that halted and was not run again: measured 17.7 ms for
// a 1 ms block, with no run-queue wait the guest could see) left the ports
// unwatched from its deadline on, and the frames the wake-up did not come
// for waited that long.
inline Nanos wait_after_block(Nanos asked_at, Nanos wait, Nanos woke_at, Nanos run_queue_wait) {
  return std::max<Nanos>({run_queue_wait, woke_at - (asked_at + wait), 0});
}

// A maximum that forgets: a sample above it raises it at once, and every
// sample lowers it by 1/decay_samples of itself (to 1/e after decay_samples
// samples), so one old outlier stops counting while repeated ones keep it up.
class DecayingMax {
 public:
  explicit DecayingMax(Nanos decay_samples) : decay_samples_(decay_samples) {}
  Nanos add(Nanos sample) { return value_ = std::max(sample, value_ - value_ / decay_samples_); }
  Nanos value() const { return value_; }

 private:
  Nanos decay_samples_, value_ = 0;
};

// How long an idle worker polls after its last work before it blocks: the
// longest a block's wake-up lately came late (wait_after_block), a maximum
// that decays by 1/e every kDecayBlocks blocks (DecayingMax), within [floor, ceiling]
// (IdlePolicy::spin_ns, max_spin_ns). Where wake-ups are prompt it stays at
// the floor and an idle worker sleeps; where one came 17 ms late, a worker
// polls through the gaps between a flow's frames (tens of microseconds) and
// blocks only once its traffic has stopped for the ceiling.
class IdleSpin {
 public:
  static constexpr Nanos kDecayBlocks = 1024;
  IdleSpin(Nanos floor, Nanos ceiling) : floor_(floor), ceiling_(std::max(floor, ceiling)) {}
  void on_block(Nanos woke_late) { late_.add(woke_late); }
  Nanos after_work() const { return std::clamp(late_.value(), floor_, ceiling_); }

 private:
  Nanos floor_, ceiling_;
  DecayingMax late_{kDecayBlocks};
};

// Endpoint placement: ports[p] carries plane p. Optionally the emulator sits
// inline between the engine and its ports (one Link per plane and direction),
// so a host can impair its own traffic.
class EndpointWorker : public PolledLoop {
 public:
  struct InlineEmulation {
    std::vector<emulator::LinkConfig> egress, ingress;  // per plane
    uint64_t seed = 1;
    size_t delay_frames = 16384;
  };
  // port_rate_bps > 0: the engine sends on a plane only while a model of this
  // host's port at that rate (an emulator::Link) holds less than
  // emulator::kNicQueueBytes, as the simulator's hosts do. Set it to the rate
  // of the emulated link the port feeds; otherwise the engine sends at CPU
  // speed and its queue builds in the fabric's uplink instead of in the
  // sender, which no real NIC allows. 0: as fast as the port takes frames.
  EndpointWorker(transport::Endpoint& ep, std::vector<Port*> ports, std::optional<InlineEmulation> emu = std::nullopt,
                 IdlePolicy idle = {}, double port_rate_bps = 0);

  // One iteration at time now; true if anything moved.
  bool step(Nanos now);
  // Runs until stop is set; on_iteration (may be empty) runs every iteration
  // with the time, e.g. to poll completions and post more work.
  void run(const std::atomic<bool>& stop, const std::function<void(Nanos)>& on_iteration);
  // As a PolledLoop (run() is run_loops over this one): on_iteration as above.
  void set_on_iteration(std::function<void(Nanos)> f) { on_iteration_ = std::move(f); }
  bool poll(Nanos now) override;
  Nanos next_wake() const override;
  const std::vector<Port*>& wait_ports() const override { return ports_; }
  WorkerStats& loop_stats() override { return stats_; }
  const IdlePolicy& idle() const { return idle_; }
  const WorkerStats& stats() const { return stats_; }
  emulator::Link* egress_link(size_t plane) { return plane < egress_.size() ? &egress_[plane] : nullptr; }
  emulator::Link* ingress_link(size_t plane) { return plane < ingress_.size() ? &ingress_[plane] : nullptr; }
  // On the worker's thread only (through its channel): frames read from and
  // handed to the ports are offered to tap (nullptr: none).
  void set_capture(CaptureTap* tap) { capture_ = tap; }

 private:
  void stage(size_t plane, std::span<const uint8_t> frame);
  void flush_staged();

  transport::Endpoint& ep_;
  std::vector<Port*> ports_;
  IdlePolicy idle_;
  std::vector<emulator::Link> egress_, ingress_;
  std::vector<emulator::Link> port_model_;  // per plane, when paced (port_rate_bps > 0)
  Nanos port_ready_at_ = transport::kNever;  // earliest time a paced plane that is full drains
  std::unique_ptr<DelayLine> delay_;
  std::vector<std::vector<uint8_t>> tx_buffers_;
  std::vector<transport::TxFrame> tx_frames_;
  std::vector<TxStaging> staging_;  // per plane
  std::vector<RxFrame> rx_;
  WorkerStats stats_;
  std::function<void(Nanos)> on_iteration_;
  // The engine's clock granularity: how late its timers lately ran here,
  // forgotten by 1/e over kGranularityDecay timer services.
  static constexpr Nanos kGranularityDecay = 4096;
  DecayingMax granularity_{kGranularityDecay};
  Nanos timer_seen_ = -1;  // the engine deadline already recorded as serviced
  CaptureTap* capture_ = nullptr;
};

// Fabric placement (bump in the wire): ports[plane][host] face host `host` on
// `plane`; every frame (MetaRoCE, RoCEv2, ARP, ICMP, TCP, UDP) is forwarded to
// the host owning its destination MAC (broadcasts to every other host of the
// plane) through the emulator's uplink -> ECMP link -> downlink.
class FabricNode : public PolledLoop {
 public:
  struct Config {
    emulator::FabricConfig fabric;                  // hosts, planes, ECMP links, impairments, seed
    std::vector<std::vector<wire::MacAddr>> host_macs;  // [plane][host]: the MAC a host's endpoint sends from
    // Optional, [plane][host]: a second MAC that reaches the host on that plane
    // (in a lab, the host's own interface there, which kernel traffic such as
    // ping and iperf3 uses while the endpoint uses its plane-0 MAC everywhere).
    std::vector<std::vector<wire::MacAddr>> interface_macs;
    size_t delay_frames = 65536;
    uint32_t frame_size = 9216;
    IdlePolicy idle;
  };
  FabricNode(const Config& config, std::vector<std::vector<Port*>> ports);

  // Timeline instants, flap phases and step()'s `now` are all relative to
  // the node's origin (its construction), so "at 2 s" means 2 s after start.
  // Replaces any timeline loaded before (its pending events are dropped).
  void load_timeline(emulator::Timeline t) { timeline_.emplace(fabric_, std::move(t)); }
  size_t timeline_pending() const {
    return timeline_ ? timeline_->timeline().events().size() - timeline_->applied() : 0;
  }
  Nanos origin() const { return origin_; }
  // One iteration at node time now: receive() then release() (poll() reads
  // the clock again between the two).
  bool step(Nanos now);
  void run(const std::atomic<bool>& stop, const std::function<void(Nanos)>& on_iteration);
  // As a PolledLoop: poll() takes monotonic time; on_iteration gets node time.
  void set_on_iteration(std::function<void(Nanos)> f) { on_iteration_ = std::move(f); }
  bool poll(Nanos now) override;
  Nanos next_wake() const override;
  const std::vector<Port*>& wait_ports() const override { return all_ports_; }
  WorkerStats& loop_stats() override { return stats_; }
  const IdlePolicy& idle() const { return config_.idle; }
  emulator::Fabric& fabric() { return fabric_; }
  const WorkerStats& stats() const { return stats_; }
  // On the worker's thread only: frames entering the node, leaving it and
  // dropped by the emulator (with the cause) are offered to tap (nullptr: none).
  void set_capture(CaptureTap* tap) { capture_ = tap; }

 private:
  int host_for(uint32_t plane, const uint8_t* dst_mac) const;
  bool receive(Nanos now);  // reads every port, admits frames into the delay line
  bool release(Nanos now);  // frames due by now: forwarded through the fabric, sent
  void admit(uint32_t plane, uint32_t from, std::span<const uint8_t> frame, Nanos now);

  Config config_;
  emulator::Fabric fabric_;
  std::vector<std::vector<Port*>> ports_;
  std::optional<emulator::TimelineRunner> timeline_;
  Nanos origin_ = 0;
  void flush_port(uint32_t plane, uint32_t host);
  DelayLine delay_;
  std::vector<TxStaging> staging_;  // [plane*hosts + host]
  std::vector<RxFrame> rx_;
  std::vector<Port*> all_ports_;
  WorkerStats stats_;
  std::function<void(Nanos)> on_iteration_;
  CaptureTap* capture_ = nullptr;
};

}  // namespace metaroce::datapath
