// The Fabric API's codec (daemon/src/fabric_ops.cc): API messages decoded into
// the emulator's selector and patch, with the emulator's validate() as the one
// authority for ranges; its message comes back under the request's field path
// and with the names the caller used.
#include "metaroce/daemon/fabric_api.h"

#include "metaroce/api/link_patch_codec.h"
#include "every_field_patch.h"

#include <gtest/gtest.h>

#include <cmath>

namespace metaroce::daemon {
namespace {

std::string patch_error(const v1::LinkPatch& p) {
  emulator::LinkPatch out;
  const grpc::Status s = to_emulator_patch(p, &out);
  if (s.ok()) return "(accepted)";
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  return s.error_message();
}

TEST(FabricApi, PatchRangesAreTheEmulatorsUnderTheRequestsFieldNames) {
  v1::LinkPatch p;
  p.set_rate_bps(0);
  EXPECT_EQ(patch_error(p), "patch.rate_bps: must be in (0, 1.6e+12] bits/s (got 0)");
  p.Clear(), p.set_loss_probability(std::nan(""));
  EXPECT_EQ(patch_error(p), "patch.loss_probability: must be in [0, 1] (got nan)");
  p.Clear(), p.mutable_loss()->set_kind("gilbert_elliott"), p.mutable_loss()->set_p(0.1), p.mutable_loss()->set_r(2);
  EXPECT_EQ(patch_error(p), "patch.loss.r: must be in [0, 1] (got 2)");
  p.Clear(), p.mutable_loss()->set_kind("four_state"), p.mutable_loss()->set_p(0.1);
  EXPECT_EQ(patch_error(p), "patch.loss.r: must be in (0, 1] when loss.p > 0 (got 0: state 3 could never return to 1)");
  p.Clear(), p.mutable_delay()->set_jitter_ns(-5);
  EXPECT_EQ(patch_error(p), "patch.delay.jitter_ns: must be in [0, 3600000000000] ns (one hour) (got -5)");
  p.Clear(), p.mutable_delay()->set_distribution("cauchy");
  EXPECT_EQ(patch_error(p), "patch.delay.distribution: must be uniform, normal, pareto or paretonormal (got 'cauchy')");
  p.Clear(), p.mutable_reorder()->set_correlation(1);
  EXPECT_EQ(patch_error(p), "patch.reorder.correlation: must be in [0, 1) (got 1)");
  p.Clear(), p.set_reorder_delay_ns(int64_t{1} << 62);
  EXPECT_EQ(patch_error(p).rfind("patch.reorder_delay_ns: must be in [0, 3600000000000] ns", 0), 0u) << patch_error(p);
  p.Clear(), p.mutable_flap()->set_period_ns(100), p.mutable_flap()->set_down_ns(200);
  EXPECT_EQ(patch_error(p), "patch.flap: needs period_ns = 0 (stop) or period_ns > down_ns >= 0 (got period 100, down 200)");
  p.Clear(), p.set_rate_bps(25e9), p.set_loss_probability(0.01), p.set_up(false);
  EXPECT_EQ(patch_error(p), "(accepted)");
}

TEST(FabricApi, SelectorBoundsAreTheEmulatorsAndAPairIsOrdered) {
  FabricSection f;
  f.hosts = 3, f.planes = 2, f.ecmp_links = 4;
  auto error = [&](const v1::LinkSelector& s, emulator::LinkSelector* out = nullptr) {
    emulator::LinkSelector tmp;
    const grpc::Status st = to_emulator_selector(s, f, out ? out : &tmp);
    return st.ok() ? std::string("(accepted)") : st.error_message();
  };
  v1::LinkSelector s;
  s.set_plane(2);
  EXPECT_EQ(error(s), "selector.plane: must be in [0, 1] (got 2)");
  s.Clear(), s.set_ecmp(4);
  EXPECT_EQ(error(s), "selector.ecmp: must be in [0, 3] (got 4)");
  s.Clear(), s.set_host_a(1);
  EXPECT_EQ(error(s), "selector.host_a: host_a and host_b go together (a host pair)");
  s.set_host_b(1);
  EXPECT_EQ(error(s), "selector.host_b: must differ from host_a (got 1 for both)");
  s.set_host_b(3);
  EXPECT_EQ(error(s), "selector.host_b: must be in [0, 2] (got 3)");
  s.Clear(), s.set_direction("sideways");
  EXPECT_EQ(error(s), "selector.direction: must be both, a_to_b or b_to_a (got 'sideways')");
  s.Clear(), s.set_host_a(2), s.set_host_b(0), s.set_plane(1);
  emulator::LinkSelector out;
  EXPECT_EQ(error(s, &out), "(accepted)");
  EXPECT_EQ(*out.host_a, 0u);
  EXPECT_EQ(*out.host_b, 2u);
  EXPECT_EQ(*out.plane, 1u);
}


// One codec both ways (api::encode_link_patch / decode_link_patch): every
// field of an emulator patch set to a non-default value arrives unchanged, for
// every loss model and delay distribution the API names. A field the codec
// drops or swaps fails here.
TEST(LinkPatchCodec, EveryFieldSurvivesEncodeAndDecode) {
  using emulator::LossConfig;
  using emulator::DelayConfig;
  const emulator::LinkPatch p = test_support::every_field_patch();

  LossConfig bernoulli, correlated, ge, four;
  bernoulli.kind = LossConfig::Kind::kBernoulli, bernoulli.probability = 0.1;
  correlated.kind = LossConfig::Kind::kCorrelated, correlated.probability = 0.1, correlated.correlation = 0.5;
  ge.kind = LossConfig::Kind::kGilbertElliott, ge.ge_p = 0.01, ge.ge_r = 0.3, ge.ge_1_h = 0.9, ge.ge_1_k = 0.05;
  four.kind = LossConfig::Kind::kFourState, four.p13 = 0.01, four.p31 = 0.5, four.p32 = 0.2, four.p23 = 0.3, four.p14 = 0.02;
  int cases = 0;
  for (const LossConfig& loss : {LossConfig{}, bernoulli, correlated, ge, four})
    for (auto dist : {DelayConfig::Distribution::kUniform, DelayConfig::Distribution::kNormal,
                      DelayConfig::Distribution::kPareto, DelayConfig::Distribution::kParetoNormal}) {
      emulator::LinkPatch in = p;
      in.loss = loss;
      in.delay->distribution = dist;
      ASSERT_FALSE(emulator::validate(in)) << *emulator::validate(in);
      emulator::LinkPatch out;
      const auto error = api::decode_link_patch(api::encode_link_patch(in), &out);
      ASSERT_FALSE(error) << *error;
      EXPECT_TRUE(out == in) << "loss kind " << static_cast<int>(loss.kind) << ", distribution " << static_cast<int>(dist);
      ++cases;
    }
  EXPECT_EQ(cases, 20);

  // And each field alone: nothing else appears.
  for (const emulator::LinkPatch& one : test_support::each_field_alone(p)) {
    emulator::LinkPatch out;
    EXPECT_FALSE(api::decode_link_patch(api::encode_link_patch(one), &out));
    EXPECT_TRUE(out == one);
    EXPECT_FALSE(out == emulator::LinkPatch{});
  }
}

// The daemon refuses an out-of-range impairment with the emulator's own
// message (validate), under the request's field path.
TEST(FabricApi, OutOfRangeImpairmentsAreRefusedWithTheEmulatorsMessage) {
  auto emulator_message = [](auto set) {
    emulator::LinkPatch p;
    set(p);
    return *emulator::validate(p);
  };
  v1::LinkPatch p;
  p.set_duplicate_probability(1.5);
  EXPECT_EQ(patch_error(p), "patch." + emulator_message([](auto& e) { e.duplicate_probability = 1.5; }));
  p.Clear(), p.set_loss_probability(-0.5);
  EXPECT_EQ(patch_error(p), "patch." + emulator_message([](auto& e) { e.loss_probability = -0.5; }));
  p.Clear(), p.set_queue_limit_packets(0);
  EXPECT_EQ(patch_error(p), "patch." + emulator_message([](auto& e) { e.queue_limit_packets = 0; }));
  p.Clear(), p.set_reorder_probability(2);
  EXPECT_EQ(patch_error(p), "patch." + emulator_message([](auto& e) { e.reorder_probability = 2; }));
  EXPECT_EQ(patch_error(p), "patch.reorder_probability: must be in [0, 1] (got 2)");
}

}  // namespace
}  // namespace metaroce::daemon
