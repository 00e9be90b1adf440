// Fabric topology (ECMP by 5-tuple, planes, directions), atomic partial
// changes, timelines, flapping, rate accuracy, ECN thresholds, replay by seed.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>
#include <vector>

#include "metaroce/emulator/fabric.h"
#include "metaroce/emulator/timeline.h"
#include "metaroce/wire/udp_frame.h"
#include "every_field_patch.h"

namespace metaroce::emulator {
namespace {

constexpr uint32_t kA = 0x0A000001, kB = 0x0A000002;

std::vector<uint8_t> frame(uint16_t src_port, size_t payload = 1000, uint32_t src = kA, uint32_t dst = kB,
                           wire::Ecn ecn = wire::Ecn::kEct0) {
  std::vector<uint8_t> f(wire::kUdpFrameHeaderBytes + payload);
  wire::UdpFlow flow;
  flow.src_ip = src, flow.dst_ip = dst, flow.src_port = src_port, flow.dst_port = 4794;
  wire::encode_udp_headers(f, flow, ecn, 0, payload);
  return f;
}

FabricConfig two_hosts(uint32_t planes, uint32_t ecmp) {
  FabricConfig c;
  c.planes = planes;
  c.ecmp_links = ecmp;
  c.host_ips = {kA, kB};
  c.port.prop_delay_ns = 0;
  c.ecmp.prop_delay_ns = 1000;
  return c;
}

// Walks a frame through all hops; returns arrival time or -1 when dropped.
Nanos send(Fabric& f, uint32_t from, uint8_t plane, std::vector<uint8_t>& fr, Nanos now, FramePosition* out = nullptr) {
  FramePosition pos;
  pos.from = from;
  pos.plane = plane;
  Nanos at = now, dup;
  while (pos.hop != Hop::kDelivered)
    if (f.forward(pos, fr, at, &at, &dup) != DropCause::kNone) return -1;
  if (out) *out = pos;
  return at;
}

TEST(Fabric, EcmpLinkFollowsTheSourcePort) {
  Fabric f(two_hosts(1, 8));
  std::set<int> used;
  for (uint16_t p = 0; p < 256; ++p) {
    auto fr = frame(static_cast<uint16_t>(40000 + p));
    const int k = f.ecmp_index(fr);
    EXPECT_EQ(k, f.ecmp_index(fr));  // stable
    used.insert(k);
    FramePosition pos;
    ASSERT_GE(send(f, 0, 0, fr, p * 100000, &pos), 0);
    EXPECT_EQ(pos.ecmp, k);
    EXPECT_EQ(pos.to, 1u);
  }
  EXPECT_EQ(used.size(), 8u);  // 256 ports spread over all 8 links
}

TEST(Fabric, PatchTargetsPlaneLinkAndDirectionOnly) {
  Fabric f(two_hosts(2, 4));
  auto fr = frame(50000);
  const uint32_t k = static_cast<uint32_t>(f.ecmp_index(fr));
  LinkSelector sel;
  sel.plane = 1;
  sel.ecmp = k;
  sel.host_a = 0;
  sel.host_b = 1;
  sel.direction = LinkSelector::Direction::kAToB;
  LinkPatch down;
  down.up = false;
  ASSERT_FALSE(f.apply(sel, down, 0));
  EXPECT_FALSE(f.ecmp_link(1, 0, 1, k).config().up);
  EXPECT_TRUE(f.ecmp_link(1, 1, 0, k).config().up);            // other direction
  EXPECT_TRUE(f.ecmp_link(0, 0, 1, k).config().up);            // other plane
  EXPECT_TRUE(f.ecmp_link(1, 0, 1, (k + 1) % 4).config().up);  // other link
  EXPECT_LT(send(f, 0, 1, fr, 0), 0);
  auto back = frame(50000, 1000, kB, kA);
  EXPECT_GE(send(f, 1, 1, back, 0), 0);
  EXPECT_GE(send(f, 0, 0, fr, 0), 0);
  EXPECT_EQ(f.counters().per_plane[1].drops_link_down, 1u);
}

TEST(Fabric, PatchChangesOnlyNamedFieldsAndIsAllOrNothing) {
  Fabric f(two_hosts(2, 2));
  LinkSelector all;
  LinkPatch p;
  p.prop_delay_ns = 7000;
  ASSERT_FALSE(f.apply(all, p, 0));
  LinkPatch q;
  q.duplicate_probability = 0.5;
  ASSERT_FALSE(f.apply(all, q, 0));
  EXPECT_EQ(f.ecmp_link(0, 0, 1, 0).config().prop_delay_ns, 7000);  // not reset by the second patch
  EXPECT_DOUBLE_EQ(f.ecmp_link(0, 0, 1, 0).config().duplicate_probability, 0.5);
  LinkPatch bad;
  bad.prop_delay_ns = 1;
  LossConfig l;
  l.kind = LossConfig::Kind::kBernoulli;
  l.probability = 2.0;
  bad.loss = l;
  const auto err = f.apply(all, bad, 0);
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("probability"), std::string::npos) << *err;
  EXPECT_EQ(f.ecmp_link(0, 0, 1, 0).config().prop_delay_ns, 7000);  // nothing half-applied
  LinkSelector nope;
  nope.plane = 9;
  ASSERT_TRUE(f.apply(nope, p, 0));
  EXPECT_NE(f.apply(nope, p, 0)->find("plane"), std::string::npos);
}

// One authority for link ranges: a patch is checked by applying it to a
// default link and validating that (validate(LinkConfig)), a selector against
// the fabric's shape; Fabric::apply uses both and says how many links changed.
TEST(Fabric, PatchAndSelectorRangesHaveOneAuthority) {
  LinkPatch ok;
  ok.rate_bps = 25e9, ok.prop_delay_ns = 5000, ok.duplicate_probability = 0.01;
  EXPECT_FALSE(validate(ok));
  auto msg = [](auto set) {
    LinkPatch p;
    set(p);
    const auto e = validate(p);
    return e ? *e : std::string("(accepted)");
  };
  EXPECT_EQ(msg([](LinkPatch& p) { p.rate_bps = 0; }), "rate_bps: must be in (0, 1.6e+12] bits/s (got 0)");
  EXPECT_EQ(msg([](LinkPatch& p) { p.rate_bps = std::nan(""); }), "rate_bps: must be in (0, 1.6e+12] bits/s (got nan)");
  EXPECT_EQ(msg([](LinkPatch& p) { p.prop_delay_ns = -1; }), "prop_delay_ns: must be in [0, 3600000000000] ns (got -1)");
  EXPECT_EQ(msg([](LinkPatch& p) { p.reorder_delay_ns = kMaxLinkDelayNs + 1; }),
            "reorder_delay_ns: must be in [0, 3600000000000] ns (got 3600000000001)");
  EXPECT_EQ(msg([](LinkPatch& p) { p.queue_limit_bytes = 0; }), "queue_limit_bytes: must be in [1, 1073741824] (got 0)");
  EXPECT_EQ(msg([](LinkPatch& p) { p.corrupt_probability = 1.5; }), "corrupt_probability: must be in [0, 1] (got 1.5)");
  EXPECT_EQ(msg([](LinkPatch& p) { p.flap = FlapConfig{.period_ns = 10, .down_ns = 10}; }),
            "flap: needs period_ns = 0 (stop) or period_ns > down_ns >= 0 (got period 10, down 10)");
  EXPECT_EQ(msg([](LinkPatch& p) {
              LossConfig l;
              l.kind = LossConfig::Kind::kBernoulli, l.probability = -0.1;
              p.loss = l;
            }),
            "loss.probability: must be in [0, 1] (got -0.1)");
  const FabricConfig shape = two_hosts(2, 2);
  LinkSelector sel;
  EXPECT_FALSE(validate(sel, shape));
  sel.plane = 2;
  EXPECT_EQ(*validate(sel, shape), "plane: must be in [0, 1] (got 2)");
  sel = {}, sel.ecmp = 5;
  EXPECT_EQ(*validate(sel, shape), "ecmp: must be in [0, 1] (got 5)");
  sel = {}, sel.host_a = 0, sel.host_b = 2;
  EXPECT_EQ(*validate(sel, shape), "host_b: must be in [0, 1] (got 2)");
  sel = {}, sel.host_a = 1, sel.host_b = 1;
  EXPECT_EQ(*validate(sel, shape), "host_b: must differ from host_a (got 1 for both)");
  Fabric f(shape);
  uint32_t changed = 99;
  EXPECT_EQ(f.apply(sel, ok, 0, &changed), validate(sel, shape));
  EXPECT_EQ(changed, 0u);
  sel = {}, sel.plane = 1, sel.direction = LinkSelector::Direction::kAToB;
  ASSERT_FALSE(f.apply(sel, ok, 0, &changed));
  EXPECT_EQ(changed, 2u);  // plane 1, 2 ECMP links, one direction
  LinkPatch bad = ok;
  bad.rate_bps = -1;
  EXPECT_EQ(f.apply({}, bad, 0, &changed), validate(bad));
  EXPECT_EQ(changed, 0u);
}

TEST(Fabric, ValidationNamesFields) {
  FabricConfig c = two_hosts(0, 1);
  ASSERT_TRUE(validate(c));
  EXPECT_NE(validate(c)->find("planes"), std::string::npos);
  c = two_hosts(1, 65);
  EXPECT_NE(validate(c)->find("ecmp_links"), std::string::npos);
  c = two_hosts(1, 1);
  c.ecmp.rate_bps = 0;
  EXPECT_NE(validate(c)->find("ecmp.rate_bps"), std::string::npos);
}

TEST(Timeline, EventsApplyAtExactlyTheirInstant) {
  Fabric f(two_hosts(1, 1));
  Timeline t;
  LinkSelector all;
  t.down(5000, all);
  t.up(9000, all);
  ASSERT_FALSE(t.validate(f.config()));
  TimelineRunner r(f, t);
  auto fr = frame(1);
  for (Nanos now : {4999, 5000, 8999, 9000}) {
    r.apply_due(now);
    const bool delivered = send(f, 0, 0, fr, now) >= 0;
    EXPECT_EQ(delivered, now < 5000 || now >= 9000) << "at " << now;
  }
  EXPECT_EQ(r.applied(), 2u);
  EXPECT_EQ(r.next_at(), INT64_MAX);
}

TEST(Timeline, RampAndFlapAndValidation) {
  Fabric f(two_hosts(1, 1));
  Timeline t;
  LinkSelector all;
  t.ramp(0, 1000, 4, all, RampField::kLossProbability, 0.0, 0.2);
  ASSERT_EQ(t.events().size(), 5u);
  TimelineRunner r(f, t);
  r.apply_due(500);
  EXPECT_NEAR(f.ecmp_link(0, 0, 1, 0).config().loss.probability, 0.1, 1e-12);
  r.apply_due(1000);
  EXPECT_NEAR(f.ecmp_link(0, 0, 1, 0).config().loss.probability, 0.2, 1e-12);
  Timeline bad;
  bad.ramp(0, 1000, 2, all, RampField::kLossProbability, 0.0, 1.5);
  const auto e = bad.validate(f.config());
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("timeline["), std::string::npos) << *e;
  // Flapping: 100 us period, 30 us down, from t = 0.
  Fabric g(two_hosts(1, 1));
  Timeline fl;
  fl.flap_start(0, all, 100'000, 30'000);
  TimelineRunner rf(g, fl);
  rf.apply_due(0);
  int up = 0;
  auto fr = frame(1, 64);
  for (Nanos now = 0; now < 1'000'000; now += 1000) up += send(g, 0, 0, fr, now) >= 0;
  EXPECT_EQ(up, 700);
}

TEST(Link, RateHoldsWithinOnePercentOverOneSecond) {
  LinkConfig c;
  c.rate_bps = 10e9;
  c.queue_limit_packets = 1u << 20;
  c.queue_limit_bytes = 1u << 30;
  Link l(c, 1);
  auto fr = frame(1, 1458);  // 1500 B frame
  // Offer 20% more than the link carries for one second.
  const double frame_bits = 8.0 * (fr.size() + c.overhead_bytes);
  const Nanos gap = static_cast<Nanos>(frame_bits / (1.2 * c.rate_bps) * 1e9);
  uint64_t bytes = 0;
  for (Nanos now = 0; now < 1'000'000'000; now += gap) {
    const auto v = l.submit(fr, now);
    if (v.drop == DropCause::kNone && v.deliver_at <= 1'000'000'000 + c.prop_delay_ns) bytes += fr.size() + c.overhead_bytes;
  }
  EXPECT_NEAR(8.0 * bytes / 1.0, c.rate_bps, 0.01 * c.rate_bps);
}

TEST(Link, EcnMarkingStartsAtTheThresholdAndRedIsProportional) {
  LinkConfig c;
  c.rate_bps = 1e9;
  c.ecn_threshold_bytes = 10 * 1042;
  Link l(c, 1);
  for (int i = 0; i < 20; ++i) {
    auto fr = frame(1);
    const bool marked = l.submit(fr, 0).ecn_marked;
    EXPECT_EQ(marked, i >= 10) << "frame " << i;  // the 11th finds 10 frames queued
  }
  LinkConfig r;
  r.rate_bps = 1e9;
  r.red_min_bytes = 0;
  r.red_max_bytes = 100 * 1042;
  r.red_max_p = 1.0;
  r.queue_limit_packets = 1u << 20;
  int marks_low = 0, marks_high = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Link red(r, static_cast<uint64_t>(trial) + 1);
    for (int i = 0; i < 100; ++i) {
      auto fr = frame(1);
      const bool m = red.submit(fr, 0).ecn_marked;
      (i < 50 ? marks_low : marks_high) += m;
    }
  }
  // Expected mark probability rises linearly with backlog: ~0.245 in the first half, ~0.745 in the second.
  EXPECT_NEAR(marks_low / 10000.0, 0.245, 0.03);
  EXPECT_NEAR(marks_high / 10000.0, 0.745, 0.03);
}

// A frame's position collects what each hop did to it (FrameMark), so a
// capture after the emulator can say so: ECN CE where a queue marked it,
// corrupted, reordered; and the marks read as words.
TEST(Fabric, PositionCarriesWhatTheHopsDidToTheFrame) {
  FabricConfig c = two_hosts(1, 1);
  c.port.ecn_threshold_bytes = 1;  // a frame queued behind another at the uplink is marked
  Fabric f(c);
  auto first = frame(40000), second = frame(40000);
  FramePosition a, b;
  ASSERT_GE(send(f, 0, 0, first, 0, &a), 0);
  ASSERT_GE(send(f, 0, 0, second, 0, &b), 0);
  EXPECT_EQ(a.marks, 0);
  EXPECT_EQ(b.marks, kMarkEcnCe);
  EXPECT_EQ(wire::frame_ecn(second), wire::Ecn::kCe);

  FabricConfig bad = two_hosts(1, 1);
  bad.ecmp.corrupt_probability = 1.0;
  Fabric g(bad);
  auto fr = frame(40000);
  FramePosition p;
  ASSERT_GE(send(g, 0, 0, fr, 0, &p), 0);
  EXPECT_EQ(p.marks, kMarkCorrupted);

  std::array<char, kFrameMarksTextBytes> buf;
  EXPECT_EQ(frame_marks_text(0, buf), "");
  EXPECT_EQ(frame_marks_text(kMarkEcnCe | kMarkCorrupted | kMarkReordered | kMarkDuplicate, buf),
            "ECN CE marked, corrupted, reordered, duplicate");
}

TEST(Fabric, SameSeedReplaysBitForBit) {
  auto run = [](uint64_t seed) {
    FabricConfig c = two_hosts(2, 4);
    c.seed = seed;
    c.ecmp.loss.kind = LossConfig::Kind::kGilbertElliott;
    c.ecmp.loss.ge_p = 0.05;
    c.ecmp.loss.ge_r = 0.3;
    c.ecmp.delay.jitter_ns = 500;
    c.ecmp.delay.distribution = DelayConfig::Distribution::kNormal;
    c.ecmp.duplicate_probability = 0.01;
    Fabric f(c);
    std::vector<Nanos> out;
    for (int i = 0; i < 5000; ++i) {
      auto fr = frame(static_cast<uint16_t>(40000 + i % 64));
      out.push_back(send(f, i % 2, static_cast<uint8_t>(i % 2), fr, i * 200));
    }
    return out;
  };
  EXPECT_EQ(run(11), run(11));
  EXPECT_NE(run(11), run(12));
}

TEST(Fabric, RoutesByDestinationAddressAmongManyHosts) {
  FabricConfig c;
  c.hosts = 4;
  c.planes = 1;
  c.host_ips = {1, 2, 3, 4};
  Fabric f(c);
  for (uint32_t from = 0; from < 4; ++from)
    for (uint32_t to = 0; to < 4; ++to) {
      auto fr = frame(7, 100, from + 1, to + 1);
      FramePosition pos;
      const Nanos at = send(f, from, 0, fr, 0, &pos);
      if (from == to) {
        EXPECT_LT(at, 0);
      } else {
        ASSERT_GE(at, 0);
        EXPECT_EQ(pos.to, to);
      }
    }
  auto stray = frame(7, 100, 1, 99);
  EXPECT_LT(send(f, 0, 0, stray, 0), 0);  // unknown destination: no_route
}


// A direction's name is the same in the API, scenario files and flags: one table.
TEST(LinkSelector, DirectionNamesRoundTrip) {
  for (auto d : {LinkSelector::Direction::kBoth, LinkSelector::Direction::kAToB, LinkSelector::Direction::kBToA})
    EXPECT_EQ(parse_direction(direction_name(d)), d) << direction_name(d);
  EXPECT_STREQ(direction_name(LinkSelector::Direction::kAToB), "a_to_b");
  EXPECT_FALSE(parse_direction("up").has_value());
  EXPECT_FALSE(parse_direction("").has_value());
}

using test_support::every_field_patch;

TEST(LinkPatch, ApplyPatchSetsEveryField) {
  const LinkPatch p = every_field_patch();
  ASSERT_FALSE(validate(p)) << *validate(p);
  LinkConfig c;
  apply_patch(p, c);
  EXPECT_EQ(c.rate_bps, *p.rate_bps);
  EXPECT_EQ(c.prop_delay_ns, *p.prop_delay_ns);
  EXPECT_EQ(c.queue_limit_bytes, *p.queue_limit_bytes);
  EXPECT_EQ(c.queue_limit_packets, *p.queue_limit_packets);
  EXPECT_EQ(c.ecn_threshold_bytes, *p.ecn_threshold_bytes);
  EXPECT_EQ(c.loss, *p.loss);
  EXPECT_EQ(c.loss_probability, 0.0) << "a model replaces the shorthand";
  EXPECT_EQ(c.delay, *p.delay);
  EXPECT_EQ(c.reorder, *p.reorder);
  EXPECT_EQ(c.reorder_probability, *p.reorder_probability);
  EXPECT_EQ(c.reorder_delay_ns, *p.reorder_delay_ns);
  EXPECT_EQ(c.duplicate_probability, *p.duplicate_probability);
  EXPECT_EQ(c.corrupt_probability, *p.corrupt_probability);
  EXPECT_EQ(c.up, *p.up);
  EXPECT_EQ(c.flap, *p.flap);

  LinkPatch shorthand;
  shorthand.loss_probability = 0.25;
  apply_patch(shorthand, c);
  EXPECT_EQ(c.loss_probability, 0.25);
  EXPECT_EQ(c.loss, LossConfig{}) << "the shorthand replaces a model";
}

// Emptiness is equality with LinkPatch{}: no second list of fields.
TEST(LinkPatch, EveryFieldMakesAPatchNonEmpty) {
  EXPECT_EQ(LinkPatch{}, LinkPatch{});
  for (const LinkPatch& p : test_support::each_field_alone(every_field_patch()))
    EXPECT_NE(p, LinkPatch{});
}

// The shorthand is folded into a model in one place (effective_loss); the
// link runs that model.
TEST(LinkPatch, LossShorthandIsABernoulliModel) {
  LinkConfig c;
  EXPECT_EQ(effective_loss(c).kind, LossConfig::Kind::kNone);
  c.loss_probability = 0.2;
  EXPECT_EQ(effective_loss(c).kind, LossConfig::Kind::kBernoulli);
  EXPECT_EQ(effective_loss(c).probability, 0.2);
  c.loss.kind = LossConfig::Kind::kGilbertElliott;
  EXPECT_EQ(effective_loss(c), c.loss) << "a model wins over the shorthand";

  // The same losses from the shorthand and from the model it stands for.
  LinkConfig shorthand, model;
  shorthand.loss_probability = 0.3;
  model.loss.kind = LossConfig::Kind::kBernoulli, model.loss.probability = 0.3;
  Link a(shorthand, 7), b(model, 7);
  auto f = frame(1000);
  for (int i = 0; i < 200; ++i) {
    auto fa = f, fb = f;
    EXPECT_EQ(a.submit(fa, i * 1000).drop, b.submit(fb, i * 1000).drop) << i;
  }
  EXPECT_GT(a.counters().drops_random_loss, 0u);
}

TEST(Fabric, ResetEcmpLinksRestoresTheStartingConfiguration) {
  FabricConfig fc = two_hosts(2, 2);
  fc.ecmp.loss_probability = 0.01;
  fc.ecmp.prop_delay_ns = 3000;
  Fabric f(fc);
  ASSERT_FALSE(f.apply(LinkSelector{}, every_field_patch(), 0));
  EXPECT_EQ(f.reset_ecmp_links(10), f.ecmp_link_count());
  for (uint32_t p = 0; p < 2; ++p)
    for (uint32_t k = 0; k < 2; ++k)
      for (auto [a, b] : {std::pair{0u, 1u}, std::pair{1u, 0u}}) {
        const LinkConfig& c = f.ecmp_link(p, a, b, k).config();
        EXPECT_EQ(c.prop_delay_ns, 3000);
        EXPECT_EQ(c.loss_probability, 0.01);
        EXPECT_EQ(c.loss, LossConfig{});
        EXPECT_EQ(c.delay, DelayConfig{});
        EXPECT_TRUE(c.up);
        EXPECT_EQ(c.flap, FlapConfig{});
        EXPECT_EQ(c.rate_bps, fc.ecmp.rate_bps);
      }
}

}  // namespace
}  // namespace metaroce::emulator
