// Link model: serialisation, delay, queue limits, ECN, loss statistics, validation.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "metaroce/emulator/link.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::emulator {
namespace {

std::vector<uint8_t> frame(size_t payload, wire::Ecn ecn) {
  std::vector<uint8_t> f(wire::kUdpFrameHeaderBytes + payload);
  wire::UdpFlow flow;
  flow.src_ip = 1, flow.dst_ip = 2, flow.src_port = 3, flow.dst_port = 4;
  wire::encode_udp_headers(f, flow, ecn, 0, payload);
  return f;
}

TEST(Link, SerialisesAtRateThenAddsDelay) {
  LinkConfig c;
  c.rate_bps = 10e9;
  c.prop_delay_ns = 1000;
  c.overhead_bytes = 0;
  Link l(c, 1);
  auto f = frame(1250 - wire::kUdpFrameHeaderBytes, wire::Ecn::kNotEct);  // 1250 B = 1 us at 10 Gb/s
  EXPECT_EQ(l.submit(f, 0).deliver_at, 2000);
  EXPECT_EQ(l.submit(f, 0).deliver_at, 3000);  // queued behind the first
  EXPECT_EQ(l.backlog_bytes(0), 2500u);
  EXPECT_EQ(l.backlog_bytes(1000), 1250u);
  EXPECT_EQ(l.drained_to(0, 0), 2000);
  EXPECT_EQ(l.submit(f, 5000).deliver_at, 7000);  // idle link: no queueing
}

TEST(Link, TailDropsAtQueueLimitWithItsOwnCause) {
  LinkConfig c;
  c.rate_bps = 1e9;
  c.queue_limit_bytes = 10000;
  Link l(c, 1);
  auto f = frame(958, wire::Ecn::kNotEct);  // 1000 B
  int dropped = 0;
  for (int i = 0; i < 20; ++i) dropped += l.submit(f, 0).drop == DropCause::kQueueOverflow;
  EXPECT_EQ(dropped, 10);
  EXPECT_EQ(l.counters().drops_queue_overflow, 10u);
  EXPECT_EQ(l.counters().drops_random_loss, 0u);
  EXPECT_EQ(l.counters().queue_high_water_bytes, 10000u);
}

TEST(Link, MarksOnlyEctAboveThreshold) {
  LinkConfig c;
  c.rate_bps = 1e9;
  c.ecn_threshold_bytes = 3000;
  Link l(c, 1);
  for (int i = 0; i < 3; ++i) {
    auto f = frame(958, wire::Ecn::kEct0);
    EXPECT_FALSE(l.submit(f, 0).ecn_marked);
    EXPECT_EQ(wire::frame_ecn(f), wire::Ecn::kEct0);
  }
  auto ect = frame(958, wire::Ecn::kEct0);
  EXPECT_TRUE(l.submit(ect, 0).ecn_marked);
  EXPECT_EQ(wire::frame_ecn(ect), wire::Ecn::kCe);
  EXPECT_TRUE(wire::decode_udp_frame(ect).has_value());  // checksum fixed up
  auto plain = frame(958, wire::Ecn::kNotEct);
  EXPECT_FALSE(l.submit(plain, 0).ecn_marked);
  EXPECT_EQ(wire::frame_ecn(plain), wire::Ecn::kNotEct);
}

TEST(Link, DownDropsEverything) {
  LinkConfig c;
  Link l(c, 1);
  l.set_up(false);
  auto f = frame(100, wire::Ecn::kNotEct);
  EXPECT_EQ(l.submit(f, 0).drop, DropCause::kLinkDown);
  EXPECT_EQ(l.counters().drops_link_down, 1u);
}

TEST(Link, BernoulliLossWithinFourSigma) {
  for (double p : {0.001, 0.01, 0.1, 0.5}) {
    LinkConfig c;
    c.loss_probability = p;
    c.queue_limit_packets = 1u << 30;
    c.queue_limit_bytes = 1u << 31;
    Link l(c, 42);
    auto f = frame(64, wire::Ecn::kNotEct);
    const int n = 200000;
    for (int i = 0; i < n; ++i) l.submit(f, static_cast<Nanos>(i) * 1000);
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(static_cast<double>(l.counters().drops_random_loss), n * p, 4 * sigma) << "p=" << p;
  }
}

TEST(Link, SameSeedSameDrops) {
  LinkConfig c;
  c.loss_probability = 0.2;
  Link a(c, 7), b(c, 7), d(c, 8);
  auto f = frame(64, wire::Ecn::kNotEct);
  int same = 0, diff = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto va = a.submit(f, i * 1000).drop, vb = b.submit(f, i * 1000).drop, vd = d.submit(f, i * 1000).drop;
    same += va == vb;
    diff += va != vd;
  }
  EXPECT_EQ(same, 1000);
  EXPECT_GT(diff, 0);
}

TEST(Link, ValidationNamesFieldAndRange) {
  LinkConfig c;
  c.loss_probability = 1.5;
  auto e = validate(c);
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("loss_probability"), std::string::npos);
  EXPECT_NE(e->find("[0, 1]"), std::string::npos);
  c = LinkConfig{};
  c.rate_bps = 0;
  ASSERT_TRUE(validate(c));
  EXPECT_NE(validate(c)->find("rate_bps"), std::string::npos);
  c = LinkConfig{};
  c.prop_delay_ns = -1;
  EXPECT_NE(validate(c)->find("prop_delay_ns"), std::string::npos);
  c = LinkConfig{};
  c.duplicate_probability = -0.1;
  EXPECT_NE(validate(c)->find("duplicate_probability"), std::string::npos);
  EXPECT_FALSE(validate(LinkConfig{}));
}

TEST(Link, CorruptionFlipsExactlyOneBit) {
  LinkConfig c;
  c.corrupt_probability = 1.0;
  Link l(c, 3);
  for (int i = 0; i < 100; ++i) {
    auto f = frame(200, wire::Ecn::kNotEct);
    const auto orig = f;
    EXPECT_TRUE(l.submit(f, i * 10000).corrupted);
    int flipped = 0;
    for (size_t k = 0; k < f.size(); ++k) flipped += __builtin_popcount(f[k] ^ orig[k]);
    EXPECT_EQ(flipped, 1);
  }
}

}  // namespace
}  // namespace metaroce::emulator
