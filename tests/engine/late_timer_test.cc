// A retransmission timer that fires late because the host did not run (the
// datapath reports how late its poll started) waits one more round trip before
// declaring loss; one that fires late on an ideal clock, or on time, does not.
// The endpoint is driven by hand here: A's frames are never delivered, so the
// only thing that can end the wait is the timer.
#include "harness.h"

namespace engine_test {
namespace {

constexpr Nanos kStep = 10 * kUs;

struct Run {
  uint64_t rtos = 0, deferred = 0;
};

// Posts one WRITE on a fresh connection, sends its frames into the void and
// polls A every kStep until `until`, except for one jump of `jump` at `jump_at`
// reported to the engine as a poll `lateness` late. Returns the counters at the
// first poll after the jump, and the time of the first RTO in *first_rto.
Run drive(mt::TransportKind kind, Nanos jump_at, Nanos jump, Nanos lateness, Nanos until, Nanos* first_rto) {
  Harness h(uniform_planes(1), 812);
  const ConnPair conn = kind == mt::TransportKind::kRoCEv2 ? h.connect_rocev2(0) : h.connect_metaroce(1, 1);
  Buffer& src = h.alloc(kA, 16 * 1024, mt::kAccessLocalWrite, "src");
  Buffer& dst = h.alloc(kB, 16 * 1024, mt::kAccessRemoteWrite, "dst");
  mt::WorkRequest wr;
  wr.wr_id = 1;
  wr.verb = Verb::kWrite;
  wr.local_addr = src.addr(0);
  wr.lkey = src.key;
  wr.length = 16 * 1024;
  wr.remote_addr = dst.addr(0);
  wr.rkey = dst.key;
  EXPECT_EQ(h.post(kA, conn.a, 0, wr), PostError::kOk);
  mt::Endpoint& a = h.ep(kA);
  Run at_jump;
  *first_rto = mt::kNever;
  bool jumped = false;
  for (Nanos t = h.now(); t < until;) {
    a.set_poll_lateness(jumped && t == jump_at + jump ? lateness : 0);
    collect_tx(a, t);  // lost: never delivered to B
    const auto st = a.stats(conn.a);
    if (st.rtos > 0 && *first_rto == mt::kNever) *first_rto = t;
    if (jumped && t == jump_at + jump) at_jump = {st.rtos, st.late_timeouts_deferred};
    if (!jumped && t + kStep > jump_at) {
      jumped = true;
      t = jump_at + jump;
    } else {
      t += kStep;
    }
  }
  return at_jump;
}

void check(mt::TransportKind kind) {
  SCOPED_TRACE(mt::transport_name(kind));
  // On time: when does the first RTO fire?
  Nanos nominal = mt::kNever;
  drive(kind, 1'000 * kMs, 0, 0, 100 * kMs, &nominal);
  ASSERT_NE(nominal, mt::kNever) << "no RTO without ACKs";
  // The host stalls across the deadline and resumes 40 ms after it.
  const Nanos jump_at = nominal - 2 * kStep, jump = 2 * kStep + 40 * kMs;
  Nanos first = mt::kNever;
  const Run stalled = drive(kind, jump_at, jump, 40 * kMs, jump_at + jump + 200 * kMs, &first);
  EXPECT_EQ(stalled.rtos, 0u) << "a timer late only because this host did not run declared loss";
  EXPECT_EQ(stalled.deferred, 1u);
  ASSERT_NE(first, mt::kNever) << "a deferred timer must still fire when no ACK comes";
  EXPECT_GT(first, jump_at + jump);
  EXPECT_LE(first - (jump_at + jump), nominal + kStep) << "deferred by more than one timeout";
  // The same jump on an ideal clock (lateness 0, as when the simulator skips
  // ahead): the timer fires at once.
  const Run ideal = drive(kind, jump_at, jump, 0, jump_at + jump + kStep, &first);
  EXPECT_EQ(ideal.rtos, 1u);
  EXPECT_EQ(ideal.deferred, 0u);
  // A small lateness (below a quarter of the timeout) is the host's normal
  // noise: the timer fires at once too.
  const Run noisy = drive(kind, nominal - kStep, kStep + 40 * kUs, 40 * kUs, nominal + 100 * kUs, &first);
  EXPECT_EQ(noisy.rtos, 1u);
  EXPECT_EQ(noisy.deferred, 0u);
}

TEST(LateTimer, MetaRoceTimeoutLateBecauseTheHostStalledWaitsOneMoreRoundTrip) { check(mt::TransportKind::kMetaRoCE); }
TEST(LateTimer, RoceV2TimeoutLateBecauseTheHostStalledWaitsOneMoreRoundTrip) { check(mt::TransportKind::kRoCEv2); }

}  // namespace
}  // namespace engine_test
