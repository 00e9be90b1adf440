// Test support shared by the emulator's and the Fabric API's tests: one
// LinkPatch that sets every field, so that a field added to LinkPatch is added
// here once and every test built on it (apply_patch, emptiness, the API codec)
// covers it.
#pragma once

#include <vector>

#include "metaroce/emulator/fabric.h"

namespace metaroce::test_support {

// Every field set to a value other than the default link's and valid
// (emulator::validate accepts it): a field that apply_patch (the one list of
// what a patch changes) or a codec drops shows up as a default left behind.
inline emulator::LinkPatch every_field_patch() {
  using emulator::DelayConfig;
  using emulator::LossConfig;
  emulator::LinkPatch p;
  p.rate_bps = 25e9;
  p.prop_delay_ns = 7000;
  p.queue_limit_bytes = 12345;
  p.queue_limit_packets = 321;
  p.ecn_threshold_bytes = 6000;
  p.loss_probability = 0.25;  // replaced by the model below: both are applied
  LossConfig loss;
  loss.kind = LossConfig::Kind::kGilbertElliott;
  loss.probability = 0.1, loss.correlation = 0.2;
  loss.ge_p = 0.01, loss.ge_r = 0.3, loss.ge_1_h = 0.9, loss.ge_1_k = 0.05;
  p.loss = loss;
  DelayConfig delay;
  delay.delay_ns = 100, delay.jitter_ns = 10, delay.distribution = DelayConfig::Distribution::kPareto;
  delay.correlation = 0.4, delay.allow_reorder = true;
  p.delay = delay;
  emulator::ReorderConfig reorder;
  reorder.probability = 0.3, reorder.correlation = 0.1, reorder.gap = 5;
  p.reorder = reorder;
  p.reorder_probability = 0.02;
  p.reorder_delay_ns = 500;
  p.duplicate_probability = 0.03;
  p.corrupt_probability = 0.04;
  p.up = false;
  p.flap = emulator::FlapConfig{.period_ns = 1000, .down_ns = 100};
  return p;
}

// One patch per field of `all`, holding that field alone, in declaration
// order. A field added to LinkPatch is added here and in every_field_patch.
inline std::vector<emulator::LinkPatch> each_field_alone(const emulator::LinkPatch& all) {
  using P = emulator::LinkPatch;
  std::vector<P> out;
  auto only = [&](auto member) {
    P p;
    p.*member = all.*member;
    out.push_back(p);
  };
  only(&P::rate_bps), only(&P::prop_delay_ns), only(&P::queue_limit_bytes), only(&P::queue_limit_packets);
  only(&P::ecn_threshold_bytes), only(&P::loss_probability), only(&P::loss), only(&P::delay), only(&P::reorder);
  only(&P::reorder_probability), only(&P::reorder_delay_ns), only(&P::duplicate_probability);
  only(&P::corrupt_probability), only(&P::up), only(&P::flap);
  return out;
}

}  // namespace metaroce::test_support
