// Path health through the whole stack: a plane that dies mid-run is marked
// down at the sender, traffic continues on the other planes with no data lost;
// when the plane comes back, probing brings the path back to active and it
// carries traffic again. A lossy plane is marked degraded.
#include "harness.h"

namespace engine_test {
namespace {

constexpr uint8_t kVictim = 2;

mt::PathStats path(Harness& h, uint32_t conn, size_t i) { return h.ep(kA).stats(conn).paths.at(i); }

TEST(PathHealth, PlaneDownThenUpIsDetectedAndRecovered) {
  Harness h(uniform_planes(kPlanes, make_link(25e9, 2 * kUs)), 4242);
  const ConnPair conn = h.connect_metaroce(kPlanes, 2);
  StreamingWriter w(h, conn, 2, 8, 64 * 1024);
  w.start();
  h.run_for(300 * kUs);
  ASSERT_GT(w.messages(), 0u);
  for (size_t i = 0; i < kPlanes; ++i) {
    EXPECT_EQ(path(h, conn.a, i).state, mt::PathState::kActive) << "path " << i << " before the failure";
    EXPECT_GT(path(h, conn.a, i).packets_sent, 0u) << "path " << i << " should carry traffic";
  }

  // Plane down mid-run.
  h.fabric().set_plane_up(kVictim, false);
  const Nanos down_at = h.now();
  ASSERT_TRUE(h.run_until([&] { return path(h, conn.a, kVictim).state == mt::PathState::kDown; }, 20 * kMs))
      << "path " << int(kVictim) << " never marked down";
  const Nanos detect = h.now() - down_at;
  EXPECT_LT(detect, 5 * kMs) << "down detection took too long";
  EXPECT_GT(path(h, conn.a, kVictim).rtos, 0u);
  for (size_t i = 0; i < kPlanes; ++i)
    if (i != kVictim) {
      EXPECT_EQ(path(h, conn.a, i).state, mt::PathState::kActive) << "path " << i;
    }

  // Traffic continues on the other planes; the dead path only sees probes.
  const auto before = path(h, conn.a, kVictim);
  const uint64_t bytes0 = w.bytes();
  h.run_for(1 * kMs);
  const auto after = path(h, conn.a, kVictim);
  const uint64_t moved = w.bytes() - bytes0;
  EXPECT_GT(moved * 8.0 / 1e-3, 0.5 * 75e9) << "goodput on the 3 surviving planes (bits/s) too low";
  EXPECT_EQ(after.state, mt::PathState::kDown);
  EXPECT_LE(after.packets_sent - before.packets_sent, after.probes - before.probes + 2)
      << "a down path should carry probes only";
  EXPECT_GT(after.probes, before.probes) << "a down path must be probed";
  EXPECT_EQ(w.errors(), 0u);
  EXPECT_EQ(w.verify_failures(), 0u);

  // Plane back: probes are answered, the path becomes active and carries traffic.
  h.fabric().set_plane_up(kVictim, true);
  const Nanos up_at = h.now();
  ASSERT_TRUE(h.run_until([&] { return path(h, conn.a, kVictim).state == mt::PathState::kActive; }, 20 * kMs))
      << "path never came back (state " << mt::path_state_name(path(h, conn.a, kVictim).state) << ")";
  EXPECT_LT(h.now() - up_at, 2 * kMs) << "recovery should take a few probe intervals";
  const auto back = path(h, conn.a, kVictim);
  h.run_for(1 * kMs);
  const auto later = path(h, conn.a, kVictim);
  EXPECT_EQ(later.state, mt::PathState::kActive);
  EXPECT_GT(later.packets_sent - back.packets_sent, 100u) << "the recovered path carries traffic again";
  EXPECT_GT(later.payload_bytes_acked, back.payload_bytes_acked);
  EXPECT_GE(later.state_changes, 2u);

  // Drain and check that nothing was lost or corrupted.
  w.stop();
  ASSERT_TRUE(h.run_until([&] { return w.outstanding() == 0; }, 50 * kMs)) << w.outstanding() << " WRITEs stuck";
  EXPECT_EQ(w.errors(), 0u);
  EXPECT_EQ(w.verify_failures(), 0u);
  EXPECT_TRUE(h.verify_all());
}

// A plane losing 20% of its frames (others clean) is marked degraded; the
// connection keeps its data exact.
TEST(PathHealth, LossyPlaneIsMarkedDegraded) {
  auto planes = uniform_planes(kPlanes, make_link(25e9, 2 * kUs));
  planes[3].a_to_b.loss_probability = 0.2;
  planes[3].b_to_a.loss_probability = 0.2;
  Harness h(planes, 77);
  const ConnPair conn = h.connect_metaroce(kPlanes, 1);
  StreamingWriter w(h, conn, 1, 16, 64 * 1024);
  w.start();
  bool seen_degraded = false;
  ASSERT_TRUE(h.run_until(
      [&] {
        const auto st = path(h, conn.a, 3).state;
        seen_degraded |= st != mt::PathState::kActive;
        return seen_degraded;
      },
      20 * kMs))
      << "lossy path never left active";
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(path(h, conn.a, i).state, mt::PathState::kActive) << "path " << i;
  // A path that stays degraded moves to another route: a new source port.
  const uint16_t configured = path(h, conn.a, 3).src_port;
  ASSERT_TRUE(h.run_until([&] { return path(h, conn.a, 3).entropy_rotations > 0; }, 50 * kMs))
      << "the degraded path never rotated its entropy";
  EXPECT_NE(path(h, conn.a, 3).src_port, configured);
  EXPECT_GE(path(h, conn.a, 3).src_port, 49152u);  // rotate_entropy picks from the ephemeral range
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(path(h, conn.a, i).entropy_rotations, 0u) << "path " << i;
  h.run_for(500 * kUs);
  w.stop();
  ASSERT_TRUE(h.run_until([&] { return w.outstanding() == 0; }, 50 * kMs));
  EXPECT_EQ(w.errors(), 0u);
  EXPECT_EQ(w.verify_failures(), 0u);
  EXPECT_TRUE(h.verify_all());
}

// The peer stalls (a descheduled host): every path goes quiet at once for
// about two round trips, then every ACK arrives. The first timer to expire on
// each path is a tail-loss probe in the RTO's place, answered once the peer
// resumes: no path times out, none leaves active, nothing is resent twice.
// (Before, each path timed out, resent everything in flight, and counted each
// packet as lost, which marked healthy paths degraded.) Slow links make the
// RTT long and steady, so the RTO (srtt + 4 x rttvar) comes before the
// probe's 2 x srtt, as it did live.
TEST(PathHealth, APeerThatStallsIsProbedNotTimedOut) {
  Harness h(uniform_planes(kPlanes, make_link(200e6, 5 * kUs)), 4243);
  const ConnPair conn = h.connect_metaroce(kPlanes, 1);
  StreamingWriter w(h, conn, 1, 16, 64 * 1024);
  w.start();
  h.run_for(30 * kMs);
  double srtt = 0;
  for (size_t i = 0; i < kPlanes; ++i) srtt = std::max(srtt, path(h, conn.a, i).srtt_ns);
  ASSERT_GT(srtt, 200 * kUs) << "the links must queue enough for a long RTT";
  const auto before = h.ep(kA).stats(conn.a);
  // Every ACK sent during the stall arrives when it ends.
  const Nanos stall = static_cast<Nanos>(2 * srtt);
  for (uint8_t p = 0; p < kPlanes; ++p) {
    me::LinkConfig c = h.fabric().link(1, p).config();
    c.prop_delay_ns += stall;
    h.fabric().link(1, p).reconfigure(c, h.now());
  }
  h.run_for(stall);
  for (uint8_t p = 0; p < kPlanes; ++p) {
    me::LinkConfig c = h.fabric().link(1, p).config();
    c.prop_delay_ns -= stall;
    h.fabric().link(1, p).reconfigure(c, h.now());
  }
  h.run_for(10 * kMs);
  const auto after = h.ep(kA).stats(conn.a);
  uint64_t probes = 0;
  for (size_t i = 0; i < kPlanes; ++i) {
    EXPECT_EQ(after.paths[i].state_changes, before.paths[i].state_changes) << "path " << i;
    probes += after.paths[i].probes - before.paths[i].probes;
  }
  EXPECT_EQ(after.rtos, before.rtos) << "a stalled peer read as loss";
  EXPECT_GE(probes, kPlanes) << "each silent path should have been probed";
  EXPECT_GT(w.bytes(), 0u);
  w.stop();
  ASSERT_TRUE(h.run_until([&] { return w.outstanding() == 0; }, 500 * kMs));
  EXPECT_EQ(w.errors(), 0u);
  EXPECT_EQ(w.verify_failures(), 0u);
}

// Uniform loss is the fabric's state, not any one path's: at 5% and 10% on
// every plane no path may leave active. Each path's loss estimate is noisy
// (about 130 packets of memory), so a test that compares it with the others'
// without regard to that noise marks healthy paths degraded and back many
// times a second.
TEST(PathHealth, UniformLossDoesNotFlapHealthyPaths) {
  for (const double loss : {0.05, 0.10}) {
    SCOPED_TRACE(testing::Message() << "loss " << loss);
    auto planes = uniform_planes(kPlanes, make_link(25e9, 2 * kUs));
    for (auto& pl : planes) pl.a_to_b.loss_probability = pl.b_to_a.loss_probability = loss;
    Harness h(planes, 616);
    const ConnPair conn = h.connect_metaroce(kPlanes, 1);
    StreamingWriter w(h, conn, 1, 16, 64 * 1024);
    w.start();
    h.run_for(20 * kMs);
    uint64_t changes = 0, lost = 0;
    for (size_t i = 0; i < kPlanes; ++i) {
      changes += path(h, conn.a, i).state_changes;
      lost += path(h, conn.a, i).lost;
      EXPECT_EQ(path(h, conn.a, i).state, mt::PathState::kActive) << "path " << i;
    }
    EXPECT_GT(lost, 1000u) << "the run must see plenty of loss to be a test";
    EXPECT_LE(changes, 2u) << "healthy paths changed state " << changes << " times";
    w.stop();
    ASSERT_TRUE(h.run_until([&] { return w.outstanding() == 0; }, 50 * kMs));
    EXPECT_EQ(w.errors(), 0u);
    EXPECT_EQ(w.verify_failures(), 0u);
  }
}

// A path that loses clearly more than the others is still found when the
// others lose too: 20% on one plane against 3% on the rest.
TEST(PathHealth, LossierPathAmongLossyPathsIsMarkedDegraded) {
  auto planes = uniform_planes(kPlanes, make_link(25e9, 2 * kUs));
  for (auto& pl : planes) pl.a_to_b.loss_probability = pl.b_to_a.loss_probability = 0.03;
  planes[3].a_to_b.loss_probability = planes[3].b_to_a.loss_probability = 0.2;
  Harness h(planes, 78);
  const ConnPair conn = h.connect_metaroce(kPlanes, 1);
  StreamingWriter w(h, conn, 1, 16, 64 * 1024);
  w.start();
  ASSERT_TRUE(h.run_until([&] { return path(h, conn.a, 3).state != mt::PathState::kActive; }, 20 * kMs))
      << "lossy path never left active";
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(path(h, conn.a, i).state, mt::PathState::kActive) << "path " << i;
  w.stop();
  ASSERT_TRUE(h.run_until([&] { return w.outstanding() == 0; }, 50 * kMs));
  EXPECT_EQ(w.errors(), 0u);
  EXPECT_EQ(w.verify_failures(), 0u);
}

// Slow links: one 4 KiB packet takes 330 us to serialise at 100 Mb/s, more
// than min_rto (200 us), and a path's first flight several times that. Before
// its first RTT sample a path must not time out on that (every path did): its
// first timer runs for initial_rto_ns. And a tail-loss probe re-arms the RTO
// (it needs a round trip to be answered). At 2% loss, no timeouts at all.
TEST(PathHealth, NoTimeoutsOnSlowLinksAtStartOrFromTailLoss) {
  auto planes = uniform_planes(kPlanes, make_link(100e6, 5 * kUs));
  for (auto& pl : planes) pl.a_to_b.loss_probability = pl.b_to_a.loss_probability = 0.02;
  Harness h(planes, 99);
  const ConnPair conn = h.connect_metaroce(2 * kPlanes, 1);
  StreamingWriter w(h, conn, 1, 16, 64 * 1024);
  w.start();
  h.run_for(50 * kMs);
  const auto st = h.ep(kA).stats(conn.a);
  uint64_t lost = 0;
  for (const auto& p : st.paths) lost += p.lost;
  EXPECT_GT(lost, 10u) << "the run must see losses to be a test";
  EXPECT_EQ(st.rtos, 0u) << lost << " packets lost";
  w.stop();
  ASSERT_TRUE(h.run_until([&] { return w.outstanding() == 0; }, 100 * kMs));
  EXPECT_EQ(w.errors(), 0u);
  EXPECT_EQ(w.verify_failures(), 0u);
}

// A path whose window collapsed after one timeout (a short outage, or on a live
// host a scheduler hiccup) must earn its share back. When the application, not
// the windows, limits what is in flight, every other path always has more free
// window than the collapsed one; spraying by free window alone then never picks
// it again, so it neither grows its window nor learns that its plane died.
TEST(PathHealth, CollapsedWindowAfterOneTimeoutEarnsItsShareBack) {
  Harness h(uniform_planes(kPlanes, make_link(25e9, 2 * kUs)), 515);
  const ConnPair conn = h.connect_metaroce(kPlanes, 1);
  StreamingWriter w(h, conn, 1, 4, 16 * 1024);  // 16 packets in flight at most: application-limited
  w.start();
  h.run_for(500 * kUs);
  // An outage longer than one RTO and shorter than two: one timeout, no down.
  h.fabric().set_plane_up(kVictim, false);
  ASSERT_TRUE(h.run_until([&] { return path(h, conn.a, kVictim).rtos > 0; }, 5 * kMs)) << "no timeout";
  h.fabric().set_plane_up(kVictim, true);
  EXPECT_NE(path(h, conn.a, kVictim).state, mt::PathState::kDown);
  h.run_for(2 * kMs);  // slow start from one packet takes a few round trips
  std::vector<mt::PathStats> before;
  for (size_t i = 0; i < kPlanes; ++i) before.push_back(path(h, conn.a, i));
  h.run_for(2 * kMs);
  uint64_t others = 0;
  for (size_t i = 0; i < kPlanes; ++i)
    if (i != kVictim) others += path(h, conn.a, i).packets_sent - before[i].packets_sent;
  const uint64_t victim = path(h, conn.a, kVictim).packets_sent - before[kVictim].packets_sent;
  EXPECT_GT(others, 0u);
  EXPECT_GE(victim * (kPlanes - 1), others / 2) << "the recovered path carries " << victim << " packets against "
                                                 << others << " on the other " << kPlanes - 1 << " paths";
  EXPECT_EQ(path(h, conn.a, kVictim).state, mt::PathState::kActive);
  w.stop();
  ASSERT_TRUE(h.run_until([&] { return w.outstanding() == 0; }, 50 * kMs));
  EXPECT_EQ(w.errors(), 0u);
  EXPECT_EQ(w.verify_failures(), 0u);
}

}  // namespace
}  // namespace engine_test
