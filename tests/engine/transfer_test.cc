// run_transfer (sim/transfer.h) end to end: determinism, and no spurious
// retransmissions on planes of unequal delay.
#include "harness.h"
#include "metaroce/sim/transfer.h"

namespace engine_test {
namespace {

ms::TransferConfig small_transfer(double loss, uint64_t seed) {
  ms::TransferConfig c;
  c.transport = mt::TransportKind::kMetaRoCE;
  c.planes.assign(2, ms::PlaneSpec{});
  for (auto& p : c.planes) {
    p.rate_bps = 10e9;
    p.delay_ns = 2000;
    p.loss = loss;
  }
  c.duration_ns = 2 * kMs;  // ~5 MB at 20 Gbit/s
  c.warmup_ns = 200 * kUs;
  c.interval_ns = 200 * kUs;
  c.workload.message_bytes = 64 * 1024;
  c.workload.depth = 8;
  c.seed = seed;
  return c;
}

void expect_same(const ms::TransferResult& a, const ms::TransferResult& b) {
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.messages, b.messages);
  EXPECT_EQ(a.data_packets, b.data_packets);
  EXPECT_EQ(a.retransmits, b.retransmits);
  EXPECT_EQ(a.spurious_retransmits, b.spurious_retransmits);
  EXPECT_EQ(a.rtos, b.rtos);
  EXPECT_EQ(a.interval_gbps, b.interval_gbps);  // bit-identical doubles
  EXPECT_EQ(a.goodput_gbps, b.goodput_gbps);
  EXPECT_EQ(a.link_drops_random, b.link_drops_random);
  EXPECT_EQ(a.events, b.events);
  ASSERT_EQ(a.paths.size(), b.paths.size());
  for (size_t i = 0; i < a.paths.size(); ++i) {
    EXPECT_EQ(a.paths[i].packets_sent, b.paths[i].packets_sent) << "path " << i;
    EXPECT_EQ(a.paths[i].retransmits, b.paths[i].retransmits) << "path " << i;
  }
}

TEST(Determinism, SameSeedSameResultDifferentSeedDiffers) {
  const auto r1 = ms::run_transfer(small_transfer(0.01, 1));
  const auto r2 = ms::run_transfer(small_transfer(0.01, 1));
  const auto r3 = ms::run_transfer(small_transfer(0.01, 2));
  ASSERT_TRUE(r1.data_verified) << r1.verify_failures << " verify failures, " << r1.error_completions << " errors";
  EXPECT_GT(r1.bytes, 1u << 20);
  EXPECT_GT(r1.retransmits, 0u) << "1% loss must cause retransmissions";
  EXPECT_GT(r1.link_drops_random, 0u);
  expect_same(r1, r2);
  ASSERT_TRUE(r3.data_verified);
  EXPECT_TRUE(r1.bytes != r3.bytes || r1.retransmits != r3.retransmits || r1.interval_gbps != r3.interval_gbps ||
              r1.link_drops_random != r3.link_drops_random || r1.events != r3.events)
      << "a different seed should give a different run";
  EXPECT_NE(r1.events, r3.events);
}

TEST(Determinism, RoCEv2SameSeedSameResult) {
  auto c = small_transfer(0.01, 5);
  c.transport = mt::TransportKind::kRoCEv2;
  const auto r1 = ms::run_transfer(c);
  const auto r2 = ms::run_transfer(c);
  ASSERT_TRUE(r1.data_verified);
  EXPECT_GT(r1.retransmits, 0u);
  expect_same(r1, r2);
}

// Planes of 2, 4, 8 and 16 us one-way delay, no loss: per-path sequence
// numbers mean cross-path reordering is never mistaken for loss.
TEST(SpuriousRetransmits, UnequalPlaneDelaysNoLossNoRetransmits) {
  for (uint32_t paths_per_plane : {1u, 2u}) {
    SCOPED_TRACE("paths_per_plane=" + std::to_string(paths_per_plane));
    ms::TransferConfig c;
    c.transport = mt::TransportKind::kMetaRoCE;
    c.planes.assign(4, ms::PlaneSpec{});
    const Nanos delays[] = {2000, 4000, 8000, 16000};
    for (size_t i = 0; i < 4; ++i) {
      c.planes[i].rate_bps = 10e9;
      c.planes[i].delay_ns = delays[i];
    }
    c.paths_per_plane = paths_per_plane;
    c.duration_ns = 1500 * kUs;  // ~6 MB at 40 Gbit/s
    c.warmup_ns = 300 * kUs;
    c.workload.message_bytes = 64 * 1024;
    c.workload.depth = 16;
    c.workload.streams = 2;
    const auto r = ms::run_transfer(c);
    ASSERT_TRUE(r.data_verified) << r.verify_failures << " verify failures, " << r.error_completions << " errors";
    EXPECT_GT(r.bytes, 2u << 20);
    EXPECT_EQ(r.link_drops_random + r.link_drops_queue + r.link_drops_down, 0u) << "the fabric must be lossless here";
    EXPECT_EQ(r.spurious_retransmits, 0u);
    EXPECT_EQ(r.retransmits, 0u);
    EXPECT_EQ(r.rtos, 0u);
    for (size_t i = 0; i < r.paths.size(); ++i) {
      EXPECT_EQ(r.paths[i].spurious_retransmits, 0u) << "path " << i;
      EXPECT_GT(r.paths[i].packets_sent, 0u) << "path " << i << " unused";
    }
  }
}

}  // namespace
}  // namespace engine_test
