// The foundation's simulation goals, as deterministic regression tests: fixed
// seeds and virtual time, so these are ratios of simulated goodput, not timings.
#include <gtest/gtest.h>

#include "metaroce/sim/transfer.h"

namespace metaroce::sim {
namespace {

using transport::TransportKind;

TransferConfig base(TransportKind t, double loss) {
  TransferConfig c;
  c.transport = t;
  c.duration_ns = 6'000'000;
  c.warmup_ns = 1'000'000;
  for (auto& p : c.planes) p.loss = loss;
  c.workload.slots = 32;
  c.seed = 7;
  return c;
}

TEST(LossSweepGoals, MetaRoceRetainsThroughputUnderLoss) {
  const TransferResult clean = run_transfer(base(TransportKind::kMetaRoCE, 0));
  const TransferResult one = run_transfer(base(TransportKind::kMetaRoCE, 0.01));
  const TransferResult ten = run_transfer(base(TransportKind::kMetaRoCE, 0.10));
  ASSERT_TRUE(clean.data_verified && one.data_verified && ten.data_verified);
  EXPECT_GE(one.goodput_gbps / clean.goodput_gbps, 0.97);
  EXPECT_GE(ten.goodput_gbps / clean.goodput_gbps, 0.85);
  EXPECT_GT(one.retransmits, 0u);
  EXPECT_EQ(one.spurious_retransmits, 0u);  // FIFO paths: a hole is always a loss
}

TEST(LossSweepGoals, UnequalPlaneDelaysCauseNoSpuriousRetransmits) {
  TransferConfig c = base(TransportKind::kMetaRoCE, 0);
  const Nanos delays[] = {2000, 4000, 8000, 16000};
  for (size_t i = 0; i < c.planes.size(); ++i) c.planes[i].delay_ns = delays[i];
  const TransferResult r = run_transfer(c);
  ASSERT_TRUE(r.data_verified);
  EXPECT_EQ(r.spurious_retransmits, 0u);
  EXPECT_EQ(r.retransmits, 0u);
  EXPECT_GE(r.goodput_gbps / r.capacity_gbps, 0.95);
}

TEST(LossSweepGoals, RoceV2DegradesFarMoreThanMetaRoce) {
  const TransferResult clean = run_transfer(base(TransportKind::kRoCEv2, 0));
  const TransferResult lossy = run_transfer(base(TransportKind::kRoCEv2, 0.02));
  const TransferResult meta_clean = run_transfer(base(TransportKind::kMetaRoCE, 0));
  const TransferResult meta_lossy = run_transfer(base(TransportKind::kMetaRoCE, 0.02));
  ASSERT_TRUE(clean.data_verified && lossy.data_verified);
  const double roce = lossy.goodput_gbps / clean.goodput_gbps;
  const double meta = meta_lossy.goodput_gbps / meta_clean.goodput_gbps;
  EXPECT_LT(roce, meta - 0.1);
  EXPECT_GT(lossy.retransmits, meta_lossy.retransmits);
}

TEST(LossSweepGoals, PlaneFailureMidRunLosesNoData) {
  TransferConfig c = base(TransportKind::kMetaRoCE, 0);
  c.events = {{3'000'000, 1, false}};
  const TransferResult r = run_transfer(c);
  ASSERT_TRUE(r.data_verified);
  // After the failure the three remaining planes carry the traffic.
  const double after = r.interval_gbps.back();
  EXPECT_GT(after, 0.9 * 3 * 25 * 0.97);
  EXPECT_GT(r.link_drops_down, 0u);
}

}  // namespace
}  // namespace metaroce::sim
