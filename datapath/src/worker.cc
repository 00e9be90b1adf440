#include "metaroce/datapath/worker.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "metaroce/datapath/scheduling.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::datapath {

namespace {
constexpr size_t kBurst = 32;
constexpr size_t kMaxRxBurstsPerStep = 8;
constexpr uint32_t kStageFrame = 9216;

void block(const std::vector<Port*>& ports, Nanos wait_ns, WorkerStats& stats) {
  if (wait_ns <= 0) return;
  stats.idle_blocks++;
  pollfd fds[64];
  nfds_t n = 0;
  for (Port* p : ports)
    if (p && p->wait_fd() >= 0 && n < 64) fds[n++] = {p->wait_fd(), POLLIN, 0};
  if (n > 0) {
    // poll() has millisecond resolution: use ppoll for microseconds.
    timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
    ppoll(fds, n, &ts, nullptr);
  } else {
    // No wait fd (DPDK, memory ports): a short sleep bounds both latency and CPU.
    timespec ts{0, static_cast<long>(std::min<Nanos>(wait_ns, 20'000))};
    nanosleep(&ts, nullptr);
  }
}
// /proc/thread-self/schedstat of the thread that constructs it, read with
// pread (which regenerates the file: one syscall a read). The one reader of
// that file: for snapshots (sample_schedule) and around every block.
class ThreadSchedstat {
 public:
  ThreadSchedstat() : fd_(::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}
  ~ThreadSchedstat() {
    if (fd_ >= 0) ::close(fd_);
  }
  ThreadSchedstat(const ThreadSchedstat&) = delete;
  ThreadSchedstat& operator=(const ThreadSchedstat&) = delete;
  // "<cpu ns> <run-queue wait ns> <timeslices>"; false where the kernel does not provide it.
  bool read(Nanos* cpu_ns, Nanos* run_delay_ns) const {
    if (fd_ < 0) return false;
    char buf[96];
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = 0;
    long long cpu = 0, wait = 0;
    if (std::sscanf(buf, "%lld %lld", &cpu, &wait) != 2) return false;
    *cpu_ns = cpu;
    *run_delay_ns = wait;
    return true;
  }
  // The thread's run-queue wait so far, ns; -1 where not provided.
  Nanos run_delay() const {
    Nanos cpu = 0, wait = 0;
    return read(&cpu, &wait) ? wait : -1;
  }

 private:
  int fd_;
};

// A worker's sleeps end when they are due, not up to 50 us later (the
// kernel's default timer slack), so emulated delays and engine timers keep
// their time when the worker blocks between frames.
void tighten_timer_slack() { prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); }

}  // namespace

void sample_schedule(WorkerStats& stats) {
  stats.sampled_ns = monotonic_ns();
  Nanos cpu = 0, wait = 0;
  if (ThreadSchedstat().read(&cpu, &wait)) {
    stats.cpu_ns = cpu;
    stats.run_delay_ns = wait;
  }
}

// Holds a frame in a delay line; a refusal counts under its cause.
static void hold(DelayLine& line, Nanos due, std::span<const uint8_t> frame, const emulator::FramePosition& pos,
                 WorkerStats& stats) {
  if (frame.size() > line.frame_size()) stats.frames_too_large++;
  else if (!line.push(due, frame, pos)) stats.delay_line_full++;
}

TxStaging::TxStaging(size_t frames, size_t frame_size)
    : capacity_(frames), frame_size_(frame_size), bytes_(frames * frame_size) {
  frames_.reserve(frames);
}

bool TxStaging::add(std::span<const uint8_t> frame) {
  if (frame.size() > frame_size_) return false;
  uint8_t* dst = &bytes_[frames_.size() * frame_size_];
  std::memcpy(dst, frame.data(), frame.size());
  frames_.emplace_back(dst, frame.size());
  return true;
}

void TxStaging::send(Port* port, WorkerStats& stats) {
  if (!frames_.empty()) {
    const size_t sent = port ? port->tx_burst(frames_) : 0;
    stats.tx_frames += sent;
    stats.tx_dropped_ring_full += frames_.size() - sent;
    frames_.clear();
  }
  // Flush even with nothing new: an AF_XDP ring in copy mode sends only when
  // kicked, and once every descriptor waits in it unkicked the port is not
  // tx_ready(), the engine stages nothing for it, and without this kick that
  // plane would stay silent for good. flush() is a flag test when idle.
  if (port) port->flush();
}

Nanos monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Nanos>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// ---------------------------------------------------------------- endpoint

EndpointWorker::EndpointWorker(transport::Endpoint& ep, std::vector<Port*> ports, std::optional<InlineEmulation> emu,
                               IdlePolicy idle, double port_rate_bps)
    : ep_(ep), ports_(std::move(ports)), idle_(idle) {
  if (port_rate_bps > 0) {
    // Only the serialiser matters: no delay, no impairment, a queue that never
    // drops (it holds at most kNicQueueBytes plus one burst).
    emulator::LinkConfig nic;
    nic.rate_bps = port_rate_bps;
    nic.prop_delay_ns = 0;
    nic.queue_limit_bytes = emulator::kMaxQueueLimitBytes;
    nic.queue_limit_packets = emulator::kMaxQueueLimitPackets;
    for (size_t p = 0; p < ports_.size(); ++p) port_model_.emplace_back(nic, 0);
  }
  if (emu) {
    for (size_t p = 0; p < ports_.size(); ++p) {
      const emulator::LinkConfig e = p < emu->egress.size() ? emu->egress[p] : emulator::LinkConfig{};
      const emulator::LinkConfig i = p < emu->ingress.size() ? emu->ingress[p] : emulator::LinkConfig{};
      egress_.emplace_back(e, emulator::Random::derive(emu->seed, p * 2));
      ingress_.emplace_back(i, emulator::Random::derive(emu->seed, p * 2 + 1));
    }
    delay_ = std::make_unique<DelayLine>(emu->delay_frames, kStageFrame);
  }
  tx_buffers_.resize(kBurst, std::vector<uint8_t>(wire::kMaxFrameBytes));
  tx_frames_.resize(kBurst);
  staging_.reserve(ports_.size());
  for (size_t p = 0; p < ports_.size(); ++p) staging_.emplace_back(kBurst, kStageFrame);
  rx_.resize(kBurst);
}

void EndpointWorker::stage(size_t plane, std::span<const uint8_t> frame) {
  if (staging_[plane].full()) staging_[plane].send(ports_[plane], stats_);
  staging_[plane].add(frame);
}

void EndpointWorker::flush_staged() {
  for (size_t p = 0; p < ports_.size(); ++p) staging_[p].send(ports_[p], stats_);
}

bool EndpointWorker::step(Nanos now) {
  bool work = false;
  stats_.iterations++;
  // Receive: drain each port (a bounded number of bursts) before the engine's
  // timers run in poll_tx below, so ACKs that queued up while this thread was
  // descheduled are seen before a retransmission timeout is declared.
  for (size_t p = 0; p < ports_.size(); ++p) {
    for (size_t burst = 0; burst < kMaxRxBurstsPerStep; ++burst) {
      const size_t n = ports_[p]->rx_burst(rx_);
      for (size_t i = 0; i < n; ++i) {
        work = true;
        stats_.rx_frames++;
        std::span<const uint8_t> f(rx_[i].data, rx_[i].len);
        if (capture_) capture_->offer(CapturePoint::kEndpointRx, static_cast<uint32_t>(p), 0, now, f);
        if (!delay_) {
          ep_.on_frame(f, now);
          continue;
        }
        // Inline ingress emulation: copy, impair, hold until due.
        emulator::FramePosition pos;
        pos.plane = static_cast<uint8_t>(p);
        pos.hop = emulator::Hop::kDownlink;  // marks "ingress" in the delay line
        hold(*delay_, now, f, pos, stats_);
      }
      if (n < rx_.size()) break;
    }
  }
  // Frames whose time has come: through their link, then on to engine or port.
  if (delay_) {
    while (const DelayLine::Held* h = delay_->peek_due(now)) {
      work = true;
      stats_.frame_lateness.record(now - h->due);
      emulator::FramePosition pos = h->pos;
      std::span<uint8_t> bytes = delay_->bytes(*h);
      if (pos.hop == emulator::Hop::kDelivered) {  // already impaired: deliver
        if (pos.from == 1) ep_.on_frame(bytes, now);
        else stage(pos.plane, bytes);
        delay_->pop();
        continue;
      }
      const bool ingress = pos.hop == emulator::Hop::kDownlink;
      emulator::Link& link = ingress ? ingress_[pos.plane] : egress_[pos.plane];
      const emulator::LinkVerdict v = link.submit(bytes, h->due);
      if (v.drop != emulator::DropCause::kNone) {
        stats_.emu_drops[static_cast<size_t>(v.drop)]++;
        delay_->pop();
        continue;
      }
      pos.hop = emulator::Hop::kDelivered;
      pos.from = ingress ? 1 : 0;
      if (v.duplicate_at >= 0) hold(*delay_, v.duplicate_at, bytes, pos, stats_);
      delay_->reschedule_top(v.deliver_at, pos);
    }
  }
  // Transmit: the engine fills frames for planes whose port has room, asked
  // again before every frame (a NIC takes descriptors only while it has room).
  const auto ready_planes = [&] {
    uint64_t ready = 0;
    for (size_t p = 0; p < ports_.size() && p < 64; ++p)
      if (ports_[p]->tx_ready() && (port_model_.empty() || port_model_[p].ready(emulator::kNicQueueBytes, now)))
        ready |= 1ull << p;
    return ready;
  };
  for (size_t i = 0; i < kBurst; ++i)
    tx_frames_[i] = {tx_buffers_[i].data(), static_cast<uint32_t>(tx_buffers_[i].size()), 0, 0};
  const size_t sent = ep_.poll_tx_paced(tx_frames_, now, ready_planes, [&](const transport::TxFrame& f) {
    if (f.plane >= ports_.size()) return;
    if (capture_) capture_->offer(CapturePoint::kEndpointTx, f.plane, 0, now, {f.data, f.len});
    if (!port_model_.empty()) port_model_[f.plane].submit({f.data, f.len}, now);
    if (!delay_) {
      stage(f.plane, {f.data, f.len});
      return;
    }
    emulator::FramePosition pos;
    pos.plane = f.plane;
    pos.hop = emulator::Hop::kUplink;  // marks "egress"
    hold(*delay_, now, {f.data, f.len}, pos, stats_);
  });
  if (sent > 0) work = true;
  flush_staged();
  // A paced plane that is full wakes the worker when its port model drains.
  port_ready_at_ = transport::kNever;
  for (size_t p = 0; p < port_model_.size(); ++p)
    if (!port_model_[p].ready(emulator::kNicQueueBytes, now))
      port_ready_at_ = std::min(port_ready_at_, port_model_[p].ready_at(emulator::kNicQueueBytes, now));
  // A full tx ring drains by itself (the kernel or the NIC takes its
  // descriptors) with no event to wake the worker, and what waits for it (an
  // owed ACK, a due retransmission) has no deadline of its own: look again
  // without blocking, or it would wait up to max_block_ns, a delay the host
  // and not the fabric made.
  if (ep_.connections_waiting() > 0)
    for (Port* port : ports_)
      if (!port->tx_ready()) port_ready_at_ = now;
  return work;
}

bool EndpointWorker::poll(Nanos now) {
  const Nanos due = ep_.next_deadline();
  ep_.set_poll_lateness(due <= now ? now - due : 0);
  if (due <= now && due != timer_seen_) {
    stats_.timer_lateness.record(now - due);
    timer_seen_ = due;
    ep_.set_timer_granularity(granularity_.add(now - due));
  }
  const bool work = step(now);
  if (on_iteration_) on_iteration_(now);
  return work;
}

Nanos EndpointWorker::next_wake() const {
  Nanos next = std::min(ep_.next_deadline(), port_ready_at_);
  if (delay_) next = std::min(next, delay_->next_due());
  return next;
}

void EndpointWorker::run(const std::atomic<bool>& stop, const std::function<void(Nanos)>& on_iteration) {
  set_on_iteration(on_iteration);
  PolledLoop* self = this;
  run_loops({&self, 1}, stop, idle_);
}

// ---------------------------------------------------------------- fabric node

FabricNode::FabricNode(const Config& config, std::vector<std::vector<Port*>> ports)
    : config_(config),
      fabric_(config.fabric),
      ports_(std::move(ports)),
      origin_(monotonic_ns()),
      delay_(config.delay_frames, config.frame_size) {
  const uint32_t H = config_.fabric.hosts, P = config_.fabric.planes;
  staging_.reserve(static_cast<size_t>(H) * P);
  for (size_t i = 0; i < static_cast<size_t>(H) * P; ++i) staging_.emplace_back(kBurst, config_.frame_size);
  rx_.resize(kBurst);
  for (auto& row : ports_)
    for (Port* p : row) all_ports_.push_back(p);
}

void FabricNode::flush_port(uint32_t plane, uint32_t host) {
  staging_[plane * config_.fabric.hosts + host].send(ports_[plane][host], stats_);
}

int FabricNode::host_for(uint32_t plane, const uint8_t* mac) const {
  for (const auto* table : {&config_.host_macs, &config_.interface_macs}) {
    if (plane >= table->size()) continue;
    const auto& macs = (*table)[plane];
    for (size_t h = 0; h < macs.size(); ++h)
      if (std::memcmp(macs[h].data(), mac, 6) == 0) return static_cast<int>(h);
  }
  return -1;
}

void FabricNode::admit(uint32_t plane, uint32_t from, std::span<const uint8_t> frame, Nanos now) {
  if (frame.size() < wire::kEthHeaderBytes) return;
  const bool broadcast = frame[0] & 1;  // group address: ARP requests, multicast
  const int dest = broadcast ? -1 : host_for(plane, frame.data());  // looked up once per frame
  if (!broadcast && dest < 0) {
    stats_.emu_drops[static_cast<size_t>(emulator::DropCause::kNoRoute)]++;
    return;
  }
  const uint32_t H = config_.fabric.hosts;
  for (uint32_t to = 0; to < H; ++to) {
    if (to == from) continue;
    if (!broadcast && static_cast<uint32_t>(dest) != to) continue;
    emulator::FramePosition pos;
    pos.from = from;
    pos.to = to;
    pos.to_known = true;
    pos.plane = static_cast<uint8_t>(plane);
    pos.hop = emulator::Hop::kUplink;
    hold(delay_, now, frame, pos, stats_);
  }
}

bool FabricNode::step(Nanos now) {
  const bool received = receive(now);
  return release(now) || received;
}

bool FabricNode::receive(Nanos now) {
  bool work = false;
  stats_.iterations++;
  if (timeline_) timeline_->apply_due(now);
  const uint32_t H = config_.fabric.hosts, P = config_.fabric.planes;
  for (uint32_t p = 0; p < P; ++p)
    for (uint32_t h = 0; h < H; ++h) {
      Port* port = ports_[p][h];
      if (!port) continue;
      const size_t n = port->rx_burst(rx_);
      for (size_t i = 0; i < n; ++i) {
        work = true;
        stats_.rx_frames++;
        if (capture_) capture_->offer(CapturePoint::kFabricIn, p, h, origin_ + now, {rx_[i].data, rx_[i].len});
        admit(p, h, {rx_[i].data, rx_[i].len}, now);
      }
    }
  return work;
}

bool FabricNode::release(Nanos now) {
  bool work = false;
  const uint32_t H = config_.fabric.hosts, P = config_.fabric.planes;
  while (const DelayLine::Held* held = delay_.peek_due(now)) {
    work = true;
    stats_.frame_lateness.record(now - held->due);
    emulator::FramePosition pos = held->pos;
    std::span<uint8_t> bytes = delay_.bytes(*held);
    if (pos.hop == emulator::Hop::kDelivered) {
      TxStaging& s = staging_[pos.plane * H + pos.to];
      if (capture_) capture_->offer(CapturePoint::kFabricOut, pos.plane, pos.to, origin_ + now, bytes, 0, pos.marks);
      if (s.full()) flush_port(pos.plane, pos.to);
      if (!s.add(bytes)) stats_.tx_dropped_ring_full++;
      delay_.pop();
      continue;
    }
    Nanos at = 0, dup = -1;
    const emulator::DropCause d = fabric_.forward(pos, bytes, held->due, &at, &dup);
    if (d != emulator::DropCause::kNone) {
      stats_.emu_drops[static_cast<size_t>(d)]++;
      if (capture_)
        capture_->offer(CapturePoint::kFabricDropped, pos.plane, pos.from, origin_ + now, bytes, static_cast<uint8_t>(d));
      delay_.pop();
      continue;
    }
    if (dup >= 0) {
      emulator::FramePosition copy = pos;
      copy.marks |= emulator::kMarkDuplicate;
      hold(delay_, dup, bytes, copy, stats_);
    }
    delay_.reschedule_top(at, pos);
  }
  for (uint32_t p = 0; p < P; ++p)
    for (uint32_t h = 0; h < H; ++h) flush_port(p, h);
  return work;
}

bool FabricNode::poll(Nanos now) {
  const Nanos t = now - origin_;
  const bool received = receive(t);
  // The delay line on a fresh clock: frames that fell due while the receive
  // bursts were read leave now, and their lateness counts that time too
  // (with the iteration's start time it would read low).
  const bool work = release(received ? monotonic_ns() - origin_ : t) || received;
  if (on_iteration_) on_iteration_(t);
  return work;
}

Nanos FabricNode::next_wake() const {
  Nanos next = delay_.next_due();
  if (timeline_) next = std::min(next, timeline_->next_at());
  return next >= INT64_MAX - origin_ ? INT64_MAX : next + origin_;  // node time -> monotonic
}

void FabricNode::run(const std::atomic<bool>& stop, const std::function<void(Nanos)>& on_iteration) {
  set_on_iteration(on_iteration);
  PolledLoop* self = this;
  run_loops({&self, 1}, stop, config_.idle);
}

// ---------------------------------------------------------------- loops on one thread

void run_loops(std::span<PolledLoop* const> loops, const std::atomic<bool>& stop, const IdlePolicy& idle) {
  std::vector<Port*> ports;
  for (PolledLoop* l : loops)
    for (Port* p : l->wait_ports()) ports.push_back(p);
  tighten_timer_slack();
  const ThreadSchedstat schedstat;
  const Nanos started = monotonic_ns();
  for (PolledLoop* l : loops) {
    l->begin();
    l->loop_stats().started_ns = started;
  }
  std::vector<uint64_t> rx_before(loops.size());
  Nanos idle_since = -1;      // start of the current idle stretch
  bool worked = false;        // the current idle stretch follows an iteration that moved something
  IdleSpin spin(idle.spin_ns, idle.max_spin_ns);
  for (PolledLoop* l : loops) l->loop_stats().idle_spin_ns = spin.after_work();
  Nanos looked_at = started;  // frames in the rings now arrived after this (or while waking, below)
  Nanos woke_late = 0;        // how long the last block's wake-up waited for a CPU
  RealtimeBudget realtime(idle.realtime_share, started);
  for (PolledLoop* l : loops) l->loop_stats().realtime_share = realtime.share();
  auto running_until = [&](Nanos t) {  // the stats change only when the share is used up
    if (realtime.running_until(t))
      for (PolledLoop* l : loops) l->loop_stats().realtime_demotions = realtime.demotions();
  };
  while (!stop.load(std::memory_order_relaxed)) {
    const Nanos now = monotonic_ns();
    running_until(now);
    for (size_t i = 0; i < loops.size(); ++i) rx_before[i] = loops[i]->loop_stats().rx_frames;
    bool work = false;
    for (PolledLoop* l : loops) work |= l->poll(now);
    for (size_t i = 0; i < loops.size(); ++i) {
      WorkerStats& s = loops[i]->loop_stats();
      s.receive_wait.record(now - looked_at + woke_late, s.rx_frames - rx_before[i]);
    }
    looked_at = now;
    woke_late = 0;
    if (work) {
      const Nanos spent = monotonic_ns() - now;
      for (PolledLoop* l : loops) l->loop_stats().busy_ns += spent;
    }
    if (work || idle.busy_poll) {
      idle_since = -1;
      worked = worked || work;
      continue;
    }
    if (idle_since < 0) idle_since = now;
    if (now - idle_since < (worked ? spin.after_work() : idle.spin_ns)) continue;
    idle_since = -1;
    worked = false;
    Nanos next = INT64_MAX;
    for (PolledLoop* l : loops) next = std::min(next, l->next_wake());
    WorkerStats& first = loops.front()->loop_stats();
    const uint64_t blocks = first.idle_blocks;
    const Nanos wait = std::clamp<Nanos>(next - monotonic_ns(), 0, idle.max_block_ns);
    // A frame that arrives during the block wakes the thread; the time the
    // woken thread then waited for a CPU, or the block overran its time, is
    // the frame's wait too (wait_after_block).
    if (wait > 0) {
      const Nanos queued_before = schedstat.run_delay();
      const Nanos asked_at = monotonic_ns();
      running_until(asked_at);
      block(ports, wait, first);
      looked_at = monotonic_ns();
      realtime.resumed(looked_at);
      const Nanos queued_after = queued_before >= 0 ? schedstat.run_delay() : -1;
      woke_late = wait_after_block(asked_at, wait, looked_at,
                                   queued_after >= 0 ? std::max<Nanos>(0, queued_after - queued_before) : 0);
      spin.on_block(woke_late);
      for (PolledLoop* l : loops) l->loop_stats().idle_spin_ns = spin.after_work();
    }
    for (PolledLoop* l : loops.subspan(1)) l->loop_stats().idle_blocks += first.idle_blocks - blocks;
  }
}

}  // namespace metaroce::datapath
