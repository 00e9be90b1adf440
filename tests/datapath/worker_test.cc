// EndpointWorker against a port that behaves like AF_XDP in copy mode: frames
// wait in the TX ring until flush() kicks the kernel, and a kick while the
// device is busy moves nothing. A plane whose ring filled must not go silent
// for good (seen as a plane carrying nothing in DaemonE2E under CPU load).
#include <gtest/gtest.h>

#include <deque>
#include <thread>
#include <string>
#include <vector>

#include "metaroce/datapath/port.h"
#include "metaroce/datapath/worker.h"
#include "metaroce/transport/endpoint.h"

namespace metaroce::datapath {
namespace {

class KickedRingPort final : public Port {
 public:
  explicit KickedRingPort(size_t ring, int busy_kicks) : ring_(ring), busy_kicks_(busy_kicks) {}
  const char* kind() const override { return "kicked-ring"; }
  const std::string& name() const override { return name_; }
  size_t rx_burst(std::span<RxFrame>) override { return 0; }
  size_t tx_burst(std::span<const std::span<const uint8_t>> frames) override {
    size_t taken = 0;
    while (taken < frames.size() && queued_.size() < ring_) queued_.emplace_back(frames[taken++].size());
    return taken;
  }
  // A kick sends everything queued, except that the first kicks after the
  // ring fills find the device busy (EAGAIN) and send nothing.
  void flush() override {
    ++kicks_;
    if (queued_.size() == ring_ && busy_kicks_ > 0) {
      --busy_kicks_;
      return;
    }
    sent_ += queued_.size();
    queued_.clear();
  }
  bool tx_ready() const override { return queued_.size() < ring_; }
  PortStats stats() const override { return {}; }
  size_t sent() const { return sent_; }
  size_t kicks() const { return kicks_; }

 private:
  std::string name_ = "plane0";
  size_t ring_;
  int busy_kicks_;
  std::deque<size_t> queued_;
  size_t sent_ = 0, kicks_ = 0;
};

// An endpoint with one connection (plane 0, 1 KiB packets) and one 1 MiB
// WRITE posted on it: enough data to keep any port busy for a test.
struct OneWrite {
  explicit OneWrite(transport::TransportKind kind = transport::TransportKind::kMetaRoCE,
                    transport::Nanos min_rto_ns = transport::TransportTuning{}.min_rto_ns)
      : ep(endpoint_config()), src(1 << 20, 0x5a) {
    transport::ConnectionConfig cc;
    cc.transport = kind;
    cc.local_id = 1;
    cc.remote_id = 2;
    cc.peer_ip = 0x0A000002;
    cc.peer_mac = {0x02, 0, 0, 0, 0, 2};
    cc.paths = {{0, 49152}};
    cc.mtu_payload = 1024;
    cc.tuning.min_rto_ns = min_rto_ns;
    std::string err;
    EXPECT_TRUE(ep.create_connection(cc, &err)) << err;
    const uint32_t lkey = *ep.register_memory(src.data(), src.size(), transport::kAccessLocalWrite);
    transport::WorkRequest wr;
    wr.verb = transport::Verb::kWrite;
    wr.local_addr = reinterpret_cast<uint64_t>(src.data());
    wr.lkey = lkey;
    wr.length = static_cast<uint32_t>(src.size());
    wr.remote_addr = 0x1000;
    wr.rkey = 0x42;
    EXPECT_EQ(ep.post(1, 0, wr), transport::PostError::kOk);
  }
  static transport::EndpointConfig endpoint_config() {
    transport::EndpointConfig ec;
    ec.ip = 0x0A000001;
    ec.mac = {0x02, 0, 0, 0, 0, 1};
    return ec;
  }
  transport::Endpoint ep;
  std::vector<uint8_t> src;
};

TEST(EndpointWorker, AFullUnkickedTxRingIsKickedAgainAndThePlaneKeepsSending) {
  OneWrite w;
  transport::Endpoint& ep = w.ep;
  KickedRingPort port(/*ring=*/8, /*busy_kicks=*/1);
  EndpointWorker worker(ep, {&port});
  // Virtual time, 1 us a step: well inside the first RTO, so every frame the
  // port sends is new data the engine produced because the port was ready.
  for (int i = 0; i < 50; ++i) worker.step(1'000'000 + i * 1'000);
  EXPECT_GT(port.sent(), 8u) << "the ring filled, its first kick found the device busy, and nothing kicked it again ("
                             << port.kicks() << " kicks)";
}

// A port that takes every frame at once and records when (virtual time) and
// how many bytes: what the worker offered, with nothing holding it back.
class RecordingPort final : public Port {
 public:
  const char* kind() const override { return "recording"; }
  const std::string& name() const override { return name_; }
  size_t rx_burst(std::span<RxFrame>) override { return 0; }
  size_t tx_burst(std::span<const std::span<const uint8_t>> frames) override {
    for (const auto& f : frames) bytes_ += f.size() + 24;  // as emulator::LinkConfig::overhead_bytes counts a frame
    frames_ += frames.size();
    return frames.size();
  }
  bool tx_ready() const override { return true; }
  PortStats stats() const override { return {}; }
  uint64_t frames() const { return frames_; }
  uint64_t wire_bytes() const { return bytes_; }

 private:
  std::string name_ = "plane0";
  uint64_t frames_ = 0, bytes_ = 0;
};

// With a port rate the worker sends as a NIC at that rate would: never more
// than the rate plus one NIC queue (and one burst) ahead, and it wakes when
// its model of the port has drained rather than waiting for a timer. Without
// it the engine fills its whole window at once (what filled the fabric's
// uplink queue live, not in the simulator).
TEST(EndpointWorker, APortRatePacesTheEngineAsANicAtThatRate) {
  auto run = [](double rate_bps, uint64_t* first_step_frames) {
    // No timeout inside the run: every frame is new data.
    OneWrite w(transport::TransportKind::kRoCEv2, 50'000'000);
    transport::Endpoint& ep = w.ep;
    RecordingPort port;
    EndpointWorker worker(ep, {&port}, std::nullopt, {}, rate_bps);
    const Nanos t0 = 1'000'000;
    worker.step(t0);
    worker.step(t0);  // a second burst at the same instant
    *first_step_frames = port.frames();
    if (rate_bps > 0) {
      // Full: the worker's next wake is when its port model has drained
      // below the NIC queue, and nothing more goes before then.
      const Nanos wake = worker.next_wake();
      EXPECT_GT(wake, t0);
      EXPECT_LT(wake, t0 + 5'000'000);
      worker.step(wake - 1);
      EXPECT_EQ(port.frames(), *first_step_frames) << "sent before the port model drained";
      worker.step(wake);
      EXPECT_GT(port.frames(), *first_step_frames) << "woken when the port model drained, and sent nothing";
    }
    // Then 1 us steps for 4 ms of virtual time.
    for (Nanos t = t0 + 1'000; t <= t0 + 4'000'000; t += 1'000) worker.step(t);
    return port.wire_bytes();
  };
  uint64_t first_unpaced = 0, first_paced = 0;
  run(0, &first_unpaced);
  EXPECT_EQ(first_unpaced, 64u) << "unpaced, two bursts fill RoCEv2's 64-packet window at once";
  const double rate = 100e6;
  const uint64_t bytes = run(rate, &first_paced);
  EXPECT_LE(first_paced, 32u) << "paced, one burst at most until the port model drains";
  const double budget = rate / 8 * 0.004 + emulator::kNicQueueBytes + 32 * 1100.0;
  EXPECT_LE(bytes, budget) << "more than the port rate allows in 4 ms";
  EXPECT_GE(bytes, rate / 8 * 0.004 * 0.95) << "the pacer held back more than the port rate";
}

}  // namespace
}  // namespace metaroce::datapath

namespace metaroce::datapath {
namespace {

// A loop whose first iteration takes stall_ns of wall time (as a preempted
// thread, or one doing the kernel's softirq work, would) and whose second
// takes `frames` frames from its "ports": those frames may have waited the
// whole stall, so receive_wait must say so. The third iteration stops.
class StallingLoop final : public PolledLoop {
 public:
  StallingLoop(Nanos stall_ns, uint64_t frames, std::atomic<bool>& stop)
      : stall_ns_(stall_ns), frames_(frames), stop_(stop) {}
  bool poll(Nanos now) override {
    switch (polls_++) {
      case 0:
        while (monotonic_ns() - now < stall_ns_) {
        }
        return true;
      case 1:
        stats_.rx_frames += frames_;
        return true;
      default:
        stop_ = true;
        return false;
    }
  }
  Nanos next_wake() const override { return INT64_MAX; }
  const std::vector<Port*>& wait_ports() const override { return ports_; }
  WorkerStats& loop_stats() override { return stats_; }

 private:
  Nanos stall_ns_;
  uint64_t frames_;
  std::atomic<bool>& stop_;
  int polls_ = 0;
  std::vector<Port*> ports_;
  WorkerStats stats_;
};

TEST(RunLoops, FramesTakenAfterAStallAreCountedAsWaitingThroughIt) {
  std::atomic<bool> stop{false};
  StallingLoop loop(2'000'000, 7, stop);
  PolledLoop* loops[] = {&loop};
  run_loops(loops, stop, IdlePolicy{});
  const emulator::DelayHistogram& w = loop.loop_stats().receive_wait;
  EXPECT_EQ(w.count(), 7u) << "one value per frame received";
  EXPECT_GE(w.min(), 2'000'000) << "each frame may have arrived just after the stalled iteration looked";
  EXPECT_EQ(w.min(), w.max()) << "the frames of one burst waited alike";
}

TEST(RunLoops, ABlockThatOverranItsTimeCountsAsWaitForTheFramesFoundAfterIt) {
  // Asked at 10 ms to block at most 1 ms.
  constexpr Nanos asked = 10'000'000, wait = 1'000'000;
  EXPECT_EQ(wait_after_block(asked, wait, asked + 300'000, 0), 0) << "woken early by a frame, at once";
  EXPECT_EQ(wait_after_block(asked, wait, asked + 300'000, 40'000), 40'000) << "woken, then waited for a CPU";
  EXPECT_EQ(wait_after_block(asked, wait, asked + wait, 0), 0) << "the timeout came on time";
  // The case measured on a 2-vCPU guest: a 1 ms block ended after 17.7 ms,
  // with no run-queue wait visible to the guest; frames sent to this thread
  // meanwhile were found only then.
  EXPECT_EQ(wait_after_block(asked, wait, asked + 17'700'000, 0), 16'700'000);
  EXPECT_EQ(wait_after_block(asked, wait, asked + 1'200'000, 500'000), 500'000)
      << "the longer of the two, not their sum: the run-queue wait is part of the overrun";
}

TEST(IdleSpin, StaysAtItsFloorWhileWakeUpsArePromptAndPollsThroughSlowOnesUpToItsCeiling) {
  IdleSpin spin(5'000, 1'000'000);
  EXPECT_EQ(spin.after_work(), 5'000) << "no block yet: the floor";
  for (int i = 0; i < 100; ++i) spin.on_block(2'000);
  EXPECT_EQ(spin.after_work(), 5'000) << "prompt wake-ups: an idle worker still sleeps soon";
  spin.on_block(40'000);
  EXPECT_EQ(spin.after_work(), 40'000) << "one slow wake-up: poll as long as it was late";
  spin.on_block(17'700'000);
  EXPECT_EQ(spin.after_work(), 1'000'000) << "never longer than the ceiling";
  // It decays by 1/e every kDecayBlocks prompt blocks, back to the floor.
  for (Nanos i = 0; i < IdleSpin::kDecayBlocks; ++i) spin.on_block(0);
  EXPECT_LT(spin.after_work(), 17'700'000 / 2);
  for (Nanos i = 0; i < 12 * IdleSpin::kDecayBlocks; ++i) spin.on_block(0);
  EXPECT_EQ(spin.after_work(), 5'000);
  EXPECT_EQ(IdleSpin(5'000, 0).after_work(), 5'000) << "a ceiling under the floor is the floor";
}

TEST(DecayingMax, RisesAtOnceAndForgetsByOneOverEPerItsSamples) {
  DecayingMax m(1000);
  EXPECT_EQ(m.value(), 0);
  EXPECT_EQ(m.add(300), 300);
  EXPECT_EQ(m.add(1'000'000), 1'000'000) << "a higher sample counts at once";
  EXPECT_EQ(m.add(999'999), 999'999) << "each sample first decays the old maximum by 1/1000";
  for (int i = 1; i < 1000; ++i) m.add(0);
  // After 1000 samples below it, about 1/e is left (0.999^1000 = 0.368).
  EXPECT_NEAR(static_cast<double>(m.value()), 1e6 / 2.718, 1e6 * 0.01);
  for (int i = 0; i < 1000; ++i) m.add(500'000);
  EXPECT_EQ(m.value(), 500'000) << "repeated samples hold it up";
}

}  // namespace
}  // namespace metaroce::datapath

#include <pthread.h>
#include <sched.h>

#include "metaroce/datapath/scheduling.h"

namespace metaroce::datapath {
namespace {

// What the budget asked the scheduler for, and whether the fake allows it.
struct SwitchLog {
  static inline std::vector<bool> asked;
  static inline bool allowed = true;
  static bool fake(bool realtime) {
    asked.push_back(realtime);
    return allowed;
  }
};

TEST(RealtimeBudget, DropsToOrdinaryOnceItsShareOfTheWindowIsUsedAndReturnsInTheNext) {
  SwitchLog::asked.clear();
  SwitchLog::allowed = true;
  {
    RealtimeBudget b(0.5, 0, &SwitchLog::fake, 10'000);  // 5 us of every 10 us
    EXPECT_EQ(b.share(), 0.5);
    EXPECT_TRUE(b.realtime());
    b.running_until(3'000);
    EXPECT_TRUE(b.realtime()) << "3 of 5 us used";
    b.resumed(8'000);  // blocked from 3 to 8 us: not running
    b.running_until(9'000);
    EXPECT_TRUE(b.realtime()) << "blocked time counted as running";
    b.running_until(9'500);
    EXPECT_TRUE(b.realtime()) << "4.5 of 5 us used";
    b.running_until(9'900);
    EXPECT_TRUE(b.realtime()) << "4.9 of 5 us used";
    b.resumed(9'900);
    b.running_until(10'100);  // the next window starts: budget whole again
    EXPECT_TRUE(b.realtime());
    EXPECT_TRUE(b.running_until(15'200)) << "the call that uses the share up says so";
    EXPECT_FALSE(b.realtime()) << "5.1 of 5 us used in the second window";
    EXPECT_EQ(b.demotions(), 1u);
    EXPECT_FALSE(b.running_until(20'200)) << "taking real-time back is no demotion";
    EXPECT_TRUE(b.realtime()) << "a new window gives real-time back";
  }
  EXPECT_EQ(SwitchLog::asked, (std::vector<bool>{true, false, true, false}))
      << "on, off when used up, on in the next window, off when the loop ends";
}

TEST(RealtimeBudget, RefusedOrZeroShareLeavesTheThreadOrdinary) {
  SwitchLog::asked.clear();
  SwitchLog::allowed = false;
  {
    RealtimeBudget refused(0.85, 0, &SwitchLog::fake, 10'000);
    EXPECT_EQ(refused.share(), 0.0) << "the report must not claim a share the kernel refused";
    refused.running_until(50'000);
    EXPECT_FALSE(refused.realtime());
  }
  EXPECT_EQ(SwitchLog::asked, (std::vector<bool>{true})) << "asked once, not every window";
  SwitchLog::asked.clear();
  {
    RealtimeBudget off(0, 0, &SwitchLog::fake, 10'000);
    off.running_until(50'000);
    EXPECT_EQ(off.share(), 0.0);
  }
  EXPECT_TRUE(SwitchLog::asked.empty());
}

// A loop that records the calling thread's scheduling policy in each poll.
class PolicyLoop final : public PolledLoop {
 public:
  explicit PolicyLoop(std::atomic<bool>& stop) : stop_(stop) {}
  bool poll(Nanos) override {
    policy_ = sched_getscheduler(0);
    stop_ = true;
    return true;
  }
  Nanos next_wake() const override { return INT64_MAX; }
  const std::vector<Port*>& wait_ports() const override { return ports_; }
  WorkerStats& loop_stats() override { return stats_; }
  int policy_ = -1;

 private:
  std::atomic<bool>& stop_;
  std::vector<Port*> ports_;
  WorkerStats stats_;
};

TEST(RunLoops, AWorkerWithARealtimeShareRunsSchedFifoAndReportsTheShareInEffect) {
  std::atomic<bool> stop{false};
  PolicyLoop loop(stop);
  PolledLoop* loops[] = {&loop};
  IdlePolicy idle;
  idle.realtime_share = 0.5;
  // On its own thread: the test runner's thread keeps its policy whatever happens.
  std::thread t([&] { run_loops(loops, stop, idle); });
  t.join();
  if (loop.loop_stats().realtime_share == 0) {
    // Only root (CAP_SYS_NICE) may switch to SCHED_FIFO; CI runs as root.
    EXPECT_EQ(loop.policy_, SCHED_OTHER);
    GTEST_SKIP() << "SKIPPED: SCHED_FIFO refused (not root / no CAP_SYS_NICE); the share reads 0, as it must";
  }
  EXPECT_EQ(loop.loop_stats().realtime_share, 0.5);
  EXPECT_EQ(loop.policy_, SCHED_FIFO);
}

}  // namespace
}  // namespace metaroce::datapath
