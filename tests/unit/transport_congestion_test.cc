// ECN-driven AIMD windows: slow start, proportional cuts, additive increase.
#include <gtest/gtest.h>

#include "congestion.h"

namespace metaroce::transport {
namespace {

constexpr double kMss = 4000;
CcParams params() {
  return CcParams{.mss = kMss, .init_cwnd_packets = 10, .max_cwnd_packets = 200, .additive_increase_packets = 1,
                  .gain = 1.0 / 16};
}

TEST(PathCongestion, SlowStartGrowsByAckedBytesUpToMax) {
  PathCongestion cc(params());
  EXPECT_DOUBLE_EQ(cc.cwnd(), 10 * kMss);
  uint32_t seq = 0;
  for (int i = 0; i < 10; ++i, ++seq) cc.on_ack(1, kMss, 0, seq, seq + 1);
  EXPECT_DOUBLE_EQ(cc.cwnd(), 20 * kMss);
  for (int i = 0; i < 1000; ++i, ++seq) cc.on_ack(1, kMss, 0, seq, seq + 1);
  EXPECT_DOUBLE_EQ(cc.cwnd(), 200 * kMss);  // capped
}

TEST(PathCongestion, MarksCutInProportionOncePerWindow) {
  PathCongestion cc(params());
  // Window ends when floor passes the seq recorded at the last evaluation.
  cc.on_ack(1, kMss, 0, 0, 100);  // evaluates (window_end 0), sets window_end 100
  const double before = cc.cwnd();
  double cut = 1;
  for (uint32_t s = 1; s <= 100; ++s) cut = std::min(cut, cc.on_ack(1, kMss, 1, s, 200));
  // Every packet marked: alpha = gain after one window, cut = 1 - gain/2.
  EXPECT_NEAR(cc.alpha(), 1.0 / 16, 1e-12);
  EXPECT_NEAR(cut, 1 - 1.0 / 32, 1e-12);
  EXPECT_LT(cc.cwnd(), before);
  EXPECT_DOUBLE_EQ(cc.ssthresh(), cc.cwnd() < cc.ssthresh() ? cc.ssthresh() : cc.cwnd());
}

TEST(PathCongestion, AlphaTracksMarkedFraction) {
  PathCongestion cc(params());
  uint32_t seq = 0, end = 0;
  for (int window = 0; window < 400; ++window) {
    end = seq + 20;
    for (int i = 0; i < 20; ++i, ++seq) cc.on_ack(1, kMss, i % 4 == 0 ? 1 : 0, seq, end);
  }
  EXPECT_NEAR(cc.alpha(), 0.25, 0.02);
}

TEST(PathCongestion, AdditiveIncreaseAfterSlowStart) {
  PathCongestion cc(params());
  cc.on_ack(1, kMss, 0, 0, 10);
  cc.on_ack(1, kMss, 1, 10, 20);  // a mark ends slow start (ssthresh = cwnd)
  const double w = cc.cwnd();
  // One window's worth of unmarked ACKs adds about one MSS.
  const int n = static_cast<int>(w / kMss);
  for (int i = 0; i < n; ++i) cc.on_ack(1, kMss, 0, 20, 20);
  EXPECT_NEAR(cc.cwnd(), w + kMss, 0.1 * kMss);
}

TEST(PathCongestion, TimeoutRestartsFromOnePacket) {
  PathCongestion cc(params());
  cc.on_timeout();
  EXPECT_DOUBLE_EQ(cc.cwnd(), kMss);
  cc.reset();
  EXPECT_DOUBLE_EQ(cc.cwnd(), 10 * kMss);
}

TEST(ConnectionCongestion, PathCutSharedAcrossPaths) {
  ConnectionCongestion c(kMss, 1000);
  const double full = c.cwnd();
  c.on_ack(kMss, true, 0.5, 4);  // one of four paths halved
  EXPECT_NEAR(c.cwnd(), full * (1 - 0.5 / 4), 1e-6);
  c.on_ack(kMss, false, 1.0, 4);
  EXPECT_GT(c.cwnd(), full * (1 - 0.5 / 4));
  for (int i = 0; i < 400000; ++i) c.on_ack(kMss, false, 1.0, 4);
  EXPECT_DOUBLE_EQ(c.cwnd(), full);
}

}  // namespace
}  // namespace metaroce::transport
