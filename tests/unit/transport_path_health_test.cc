// Path health state machine: degraded vs uniform loss, down after RTOs, back up after probes.
#include <gtest/gtest.h>

#include "path_health.h"

namespace metaroce::transport {
namespace {

HealthParams params() {
  return HealthParams{.loss_gain = 1.0 / 64, .degraded_loss = 0.05, .degraded_ratio = 2.0, .down_after_rtos = 2,
                      .up_after_probes = 2, .rotate_after_degraded_packets = 100};
}

void feed(PathHealth& h, int delivered, int lost) {
  for (int i = 0; i < delivered; ++i) h.on_delivered();
  for (int i = 0; i < lost; ++i) h.on_lost();
}

TEST(PathHealth, UniformLossIsNotThisPathsFault) {
  PathHealth h(params());
  for (int i = 0; i < 200; ++i) {
    feed(h, 9, 1);  // 10% loss ...
    EXPECT_EQ(h.evaluate(0.10), PathHealth::Action::kNone);  // ... like every other path
  }
  EXPECT_EQ(h.state(), PathState::kActive);
}

TEST(PathHealth, LossierThanOthersIsDegradedThenRecovers) {
  PathHealth h(params());
  for (int i = 0; i < 100; ++i) {
    feed(h, 4, 1);  // 20%
    h.evaluate(0.0);
  }
  EXPECT_EQ(h.state(), PathState::kDegraded);
  EXPECT_GT(h.loss(), 0.05);
  for (int i = 0; i < 400 && h.state() != PathState::kActive; ++i) {
    feed(h, 1, 0);
    h.evaluate(0.0);
  }
  EXPECT_EQ(h.state(), PathState::kActive);
  EXPECT_EQ(h.state_changes(), 2u);
}

TEST(PathHealth, PersistentDegradationRotatesEntropy) {
  PathHealth h(params());
  int rotations = 0;
  for (int i = 0; i < 1000; ++i) {
    feed(h, 1, 1);  // 50% loss, never improves
    if (h.evaluate(0.0) == PathHealth::Action::kRotateEntropy) ++rotations;
  }
  EXPECT_GE(rotations, 5);
}

TEST(PathHealth, DownAfterConsecutiveRtosUpAfterProbes) {
  PathHealth h(params());
  EXPECT_EQ(h.on_rto(), PathHealth::Action::kNone);
  EXPECT_EQ(h.state(), PathState::kActive);
  EXPECT_EQ(h.on_rto(), PathHealth::Action::kRotateEntropy);
  EXPECT_EQ(h.state(), PathState::kDown);
  EXPECT_EQ(h.on_rto(), PathHealth::Action::kNone);  // already down: no second rotation
  h.evaluate(0.0);  // first answered probe
  EXPECT_EQ(h.state(), PathState::kDown);
  h.evaluate(0.0);
  EXPECT_EQ(h.state(), PathState::kActive);
  EXPECT_TRUE(h.became_active());
  EXPECT_FALSE(h.became_active());  // an edge, consumed once
}

TEST(PathHealth, AnAckBetweenRtosResetsTheCount) {
  PathHealth h(params());
  h.on_rto();
  h.evaluate(0.0);
  h.on_rto();
  EXPECT_EQ(h.state(), PathState::kActive);
}

// A scheduler hiccup makes every path time out at once: that is no evidence
// against any one path, which stays active through it; only a silence that
// outlasts kSilentExtraRtos more timeouts (every plane dead) takes it down.
TEST(PathHealth, TimeoutsWhileEveryPathIsSilentAreNoEvidence) {
  PathHealth h(params());
  EXPECT_EQ(h.on_rto(/*others_answered=*/false), PathHealth::Action::kNone);
  EXPECT_EQ(h.on_rto(false), PathHealth::Action::kNone);
  EXPECT_EQ(h.state(), PathState::kActive) << "two silent timeouts are a stall, not a dead path";
  h.evaluate(0.0);  // the stall ends: answered again
  for (uint32_t i = 0; i + 1 < 2 + PathHealth::kSilentExtraRtos; ++i) EXPECT_EQ(h.on_rto(false), PathHealth::Action::kNone);
  EXPECT_EQ(h.state(), PathState::kActive);
  EXPECT_EQ(h.on_rto(false), PathHealth::Action::kRotateEntropy) << "a silence this long is a dead path";
  EXPECT_EQ(h.state(), PathState::kDown);
}

}  // namespace
}  // namespace metaroce::transport
