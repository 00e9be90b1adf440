// The one mapping of a scenario's topology, selectors and link settings into
// the emulator's terms (sim_backend.h). Apart from the simulator so that the
// scenario parser, which checks clos selectors against the fabric, needs only
// the emulator.
#include <algorithm>
#include <cmath>

#include "metaroce/emulator/fabric.h"
#include "metaroce/scenario/sim_backend.h"

namespace metaroce::scenario {

emulator::LinkSelector emulator_selector(const Selector& s) {
  emulator::LinkSelector out;
  out.plane = s.plane;
  out.ecmp = s.ecmp;
  out.host_a = s.host_a;
  out.host_b = s.host_b;
  out.leaf = s.leaf;
  out.spine = s.spine;
  out.direction = emulator::parse_direction(s.direction).value();  // the scenario parser took only these names
  out.tier = emulator::parse_tier(s.tier).value();
  return out;
}

emulator::FabricConfig emulator_fabric(const Scenario& s, uint32_t planes) {
  emulator::FabricConfig fc;
  fc.hosts = s.hosts_count;
  fc.planes = planes;
  fc.port.rate_bps = s.link_rate_bps();
  fc.port.prop_delay_ns = 0;
  fc.seed = s.seed;
  if (!s.clos) {
    // Ports and ECMP links at the link rate; no propagation delay (the scenario's delay is base.delay).
    fc.ecmp_links = s.ecmp_links;
    fc.ecmp = fc.port;
    return fc;
  }
  const ClosTopology& c = *s.clos;
  fc.topology = emulator::Topology::kClos;
  fc.hosts_per_leaf = c.hosts_per_leaf;
  fc.spines = c.spines;
  fc.withdraw_after_ns = c.withdraw_after_ns;
  fc.remote_withdraw_after_ns = c.remote_withdraw_after_ns;
  fc.port.prop_delay_ns = c.host_delay_ns;
  fc.ecmp = fc.port;
  fc.ecmp.rate_bps = c.leaf_spine_rate_bps();
  fc.ecmp.prop_delay_ns = c.spine_delay_ns;
  return fc;
}

emulator::LinkPatch emulator_patch(const FabricChange& c, double time_scale) {
  const LinkSettings& l = c.set;
  emulator::LinkPatch p;
  p.loss_probability = l.loss;
  if (l.delay_ns || l.jitter_ns) {  // delay and jitter together (uniform, FIFO), as live
    emulator::DelayConfig d;
    d.delay_ns = l.delay_ns.value_or(0);
    d.jitter_ns = l.jitter_ns.value_or(0);
    p.delay = d;
  }
  if (l.duplicate) p.duplicate_probability = *l.duplicate;
  if (l.corrupt) p.corrupt_probability = *l.corrupt;
  if (l.reorder) p.reorder_probability = *l.reorder;
  if (l.reorder_delay_ns) p.reorder_delay_ns = *l.reorder_delay_ns;
  if (l.rate_bps) p.rate_bps = *l.rate_bps;
  if (l.ecn_threshold_bytes) p.ecn_threshold_bytes = *l.ecn_threshold_bytes;
  if (l.queue_limit_bytes) p.queue_limit_bytes = *l.queue_limit_bytes;
  if (c.up) p.up = *c.up;
  if (c.flap) {
    emulator::FlapConfig f;
    if (c.flap->period_ns > 0) {
      f.period_ns = std::max<Nanos>(2, std::llround(static_cast<double>(c.flap->period_ns) * time_scale));
      f.down_ns = std::min<Nanos>(std::llround(static_cast<double>(c.flap->down_ns) * time_scale), f.period_ns - 1);
    }
    p.flap = f;
  }
  return p;
}

}  // namespace metaroce::scenario
