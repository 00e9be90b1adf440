// The two-tier Clos topology of emulator::Fabric: routing (same leaf, across
// leaves through a spine), ECMP over the spines by 5-tuple, what a dead spine
// or leaf does before and after the leaves withdraw it, which links a
// selector names, validation, and memory that grows with the links that exist.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>
#include <vector>

#include "metaroce/emulator/fabric.h"
#include "metaroce/emulator/timeline.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::emulator {
namespace {

constexpr uint32_t kIp0 = 0x0A000001;
uint32_t ip(uint32_t host) { return kIp0 + host; }

std::vector<uint8_t> frame(uint32_t from, uint32_t to, uint16_t src_port, size_t payload = 1000) {
  std::vector<uint8_t> f(wire::kUdpFrameHeaderBytes + payload);
  wire::UdpFlow flow;
  flow.src_ip = ip(from), flow.dst_ip = ip(to), flow.src_port = src_port, flow.dst_port = 4794;
  wire::encode_udp_headers(f, flow, wire::Ecn::kEct0, 0, payload);
  return f;
}

uint32_t spine_of(uint32_t from, uint32_t to, uint16_t src_port, uint32_t spines, uint32_t hash_seed = 0) {
  wire::UdpFlow flow;
  flow.src_ip = ip(from), flow.dst_ip = ip(to), flow.src_port = src_port, flow.dst_port = 4794;
  return ecmp_link_of(flow, hash_seed, spines);
}

// hosts on leaves of hosts_per_leaf, `spines` spines, on `planes` planes.
FabricConfig clos(uint32_t hosts, uint32_t hosts_per_leaf, uint32_t spines, uint32_t planes = 1) {
  FabricConfig c;
  c.topology = Topology::kClos;
  c.hosts = hosts;
  c.planes = planes;
  c.hosts_per_leaf = hosts_per_leaf;
  c.spines = spines;
  for (uint32_t h = 0; h < hosts; ++h) c.host_ips.push_back(ip(h));
  c.port.rate_bps = 100e9;
  c.port.prop_delay_ns = 500;
  c.ecmp.rate_bps = 400e9;
  c.ecmp.prop_delay_ns = 700;
  c.withdraw_after_ns = 10'000;
  c.remote_withdraw_after_ns = 50'000;
  return c;
}

struct Trip {
  DropCause drop = DropCause::kNone;
  Nanos at = -1;
  std::vector<Hop> hops;  // the hops it was offered to, in order
  FramePosition pos;
};

// Walks a frame hop by hop from `from` on plane `plane`, sent at now.
Trip send(Fabric& f, uint32_t from, uint8_t plane, std::vector<uint8_t>& fr, Nanos now) {
  Trip t;
  t.pos.from = from;
  t.pos.plane = plane;
  Nanos at = now, dup;
  while (t.pos.hop != Hop::kDelivered) {
    t.hops.push_back(t.pos.hop);
    t.drop = f.forward(t.pos, fr, at, &at, &dup);
    if (t.drop != DropCause::kNone) return t;
  }
  t.at = at;
  return t;
}

// A frame's serialisation on an idle link, as Link computes it (ps, rounded up to ns).
Nanos serialise(size_t bytes, double rate_bps) {
  return (static_cast<Nanos>(std::llround(8.0 * static_cast<double>(bytes + 24) * 1e12 / rate_bps)) + 999) / 1000;
}

TEST(Clos, SameLeafTakesTheHostLinksOnly) {
  Fabric f(clos(8, 4, 2));
  auto fr = frame(0, 3, 50000);
  const Trip t = send(f, 0, 0, fr, 0);
  ASSERT_EQ(t.drop, DropCause::kNone);
  EXPECT_EQ(t.hops, (std::vector<Hop>{Hop::kUplink, Hop::kDownlink}));
  EXPECT_EQ(t.pos.to, 3u);
  EXPECT_EQ(t.at, 2 * (serialise(fr.size(), 100e9) + 500));
  EXPECT_EQ(f.uplink(0, 0).counters().packets_out, 1u);
  EXPECT_EQ(f.downlink(0, 3).counters().packets_out, 1u);
  const FabricCounters c = f.counters();
  EXPECT_EQ(c.per_plane_leaf_spine[0].packets_in, 0u);
  EXPECT_EQ(c.per_plane_host_links[0].packets_out, 2u);
  EXPECT_EQ(c.per_plane[0].packets_out, 1u);  // what the plane delivered: one frame
}

TEST(Clos, AcrossLeavesThroughTheHashedSpine) {
  Fabric f(clos(8, 4, 4));
  auto fr = frame(1, 6, 50001);
  const uint32_t s = spine_of(1, 6, 50001, 4);
  EXPECT_EQ(f.ecmp_index(fr), static_cast<int>(s));
  const Trip t = send(f, 1, 0, fr, 0);
  ASSERT_EQ(t.drop, DropCause::kNone);
  EXPECT_EQ(t.hops, (std::vector<Hop>{Hop::kUplink, Hop::kEcmp, Hop::kSpineDown, Hop::kDownlink}));
  EXPECT_EQ(t.pos.ecmp, s);
  EXPECT_EQ(f.leaf_of(1), 0u);
  EXPECT_EQ(f.leaf_of(6), 1u);
  EXPECT_EQ(f.leaf_spine_link(0, 0, s, true).counters().packets_out, 1u);
  EXPECT_EQ(f.leaf_spine_link(0, 1, s, false).counters().packets_out, 1u);
  // Store and forward at every hop: two host links and two leaf-spine links.
  EXPECT_EQ(t.at, 2 * (serialise(fr.size(), 100e9) + 500) + 2 * (serialise(fr.size(), 400e9) + 700));
  const FabricCounters c = f.counters();
  EXPECT_EQ(c.per_plane_leaf_spine[0].packets_out, 2u);
  EXPECT_EQ(c.per_plane_host_links[0].packets_out, 2u);
}

TEST(Clos, EcmpSpreadsFlowsOverTheSpinesBySourcePort) {
  Fabric f(clos(16, 8, 8, 2));
  std::vector<int> per_spine(8, 0);
  for (uint16_t p = 0; p < 512; ++p) {
    auto fr = frame(2, 12, static_cast<uint16_t>(49152 + p));
    const Trip t = send(f, 2, 1, fr, p * 10'000);
    ASSERT_EQ(t.drop, DropCause::kNone);
    EXPECT_EQ(t.pos.ecmp, spine_of(2, 12, static_cast<uint16_t>(49152 + p), 8)) << "port " << 49152 + p;
    per_spine[t.pos.ecmp]++;
  }
  // 512 flows over 8 spines: 64 each on average; a uniform hash keeps every
  // spine within 4 standard deviations (sqrt(512 x 1/8 x 7/8) = 7.5).
  for (int n : per_spine) EXPECT_NEAR(n, 64, 30);
  // The same flow on another fabric salt may take another spine (switch-specific hashing).
  FabricConfig salted = clos(16, 8, 8, 2);
  salted.hash_seed = 0x5eed;
  Fabric g(salted);
  int moved = 0;
  for (uint16_t p = 0; p < 64; ++p) {
    auto fr = frame(2, 12, static_cast<uint16_t>(49152 + p));
    moved += g.ecmp_index(fr) != f.ecmp_index(fr);
  }
  EXPECT_GT(moved, 32);
}

// A whole spine down: until its leaves withdraw it (withdraw_after_ns, the
// leaf's own uplink died) frames hashed onto it are dropped as link_down;
// after that they take a live spine, and flows on the live spines never move.
TEST(Clos, DeadSpineDropsUntilWithdrawnThenFlowsMove) {
  FabricConfig cfg = clos(8, 4, 4);
  Fabric f(cfg);
  // Two flows 0 -> 5: one on spine 2, one elsewhere.
  uint16_t on_dead = 0, on_live = 0;
  for (uint16_t p = 49152; p < 50000 && (!on_dead || !on_live); ++p) {
    const uint32_t s = spine_of(0, 5, p, 4);
    if (s == 2 && !on_dead) on_dead = p;
    if (s != 2 && !on_live) on_live = p;
  }
  ASSERT_TRUE(on_dead && on_live);
  const uint32_t live_spine = spine_of(0, 5, on_live, 4);
  LinkSelector spine2;
  spine2.plane = 0;
  spine2.spine = 2;
  LinkPatch down;
  down.up = false;
  uint32_t changed = 0;
  ASSERT_FALSE(f.apply(spine2, down, 1'000'000, &changed));
  EXPECT_EQ(changed, 2u * 2 * 1);  // 2 leaves x both directions
  auto a = frame(0, 5, on_dead), b = frame(0, 5, on_live);
  // Before detection: the dead spine's flow is dropped at the leaf's uplink to it.
  Trip t = send(f, 0, 0, a, 1'000'000 + 5'000);
  EXPECT_EQ(t.drop, DropCause::kLinkDown);
  EXPECT_EQ(t.hops.back(), Hop::kEcmp);
  EXPECT_EQ(f.leaf_spine_link(0, 0, 2, true).counters().drops_link_down, 1u);
  t = send(f, 0, 0, b, 1'000'000 + 5'000);
  ASSERT_EQ(t.drop, DropCause::kNone);
  EXPECT_EQ(t.pos.ecmp, live_spine);
  // After: the leaf has withdrawn spine 2; the flow moves, the other stays.
  t = send(f, 0, 0, a, 1'000'000 + 10'000);
  ASSERT_EQ(t.drop, DropCause::kNone);
  EXPECT_NE(t.pos.ecmp, 2u);
  const uint32_t moved_to = t.pos.ecmp;
  t = send(f, 0, 0, a, 1'000'000 + 20'000);
  EXPECT_EQ(t.pos.ecmp, moved_to);  // deterministic: the flow keeps its new spine
  t = send(f, 0, 0, b, 1'000'000 + 20'000);
  EXPECT_EQ(t.pos.ecmp, live_spine);  // resilient: flows on live spines stay
  EXPECT_EQ(f.counters().ecmp_rerouted, 2u);
  // The spine back: the flow returns to its hashed spine at once.
  LinkPatch up;
  up.up = true;
  ASSERT_FALSE(f.apply(spine2, up, 2'000'000));
  t = send(f, 0, 0, a, 2'000'000);
  ASSERT_EQ(t.drop, DropCause::kNone);
  EXPECT_EQ(t.pos.ecmp, 2u);
}

// Only the spine's link towards the destination leaf down: the source leaf
// learns it through the routing protocol (remote_withdraw_after_ns), so frames
// die at the spine for longer; other destination leaves keep the spine.
TEST(Clos, RemoteLinkDownIsWithdrawnLater) {
  Fabric f(clos(12, 4, 2));
  uint16_t port = 49152;
  while (spine_of(0, 9, port, 2) != 1) ++port;  // 0 (leaf 0) -> 9 (leaf 2) on spine 1
  uint16_t port_other = 49152;
  while (spine_of(0, 5, port_other, 2) != 1) ++port_other;  // 0 -> 5 (leaf 1) on spine 1
  LinkSelector sel;
  sel.plane = 0, sel.leaf = 2, sel.spine = 1, sel.direction = LinkSelector::Direction::kDownward;
  LinkPatch down;
  down.up = false;
  uint32_t changed = 0;
  ASSERT_FALSE(f.apply(sel, down, 0, &changed));
  EXPECT_EQ(changed, 1u);
  auto a = frame(0, 9, port), b = frame(0, 5, port_other);
  for (Nanos now : {Nanos{10'000}, Nanos{49'000}}) {  // past the local delay, before the remote one
    const Trip t = send(f, 0, 0, a, now);
    EXPECT_EQ(t.drop, DropCause::kLinkDown) << now;
    EXPECT_EQ(t.hops.back(), Hop::kSpineDown) << now;
  }
  Trip t = send(f, 0, 0, a, 50'000);
  ASSERT_EQ(t.drop, DropCause::kNone);
  EXPECT_EQ(t.pos.ecmp, 0u);
  t = send(f, 0, 0, b, 50'000);
  ASSERT_EQ(t.drop, DropCause::kNone);
  EXPECT_EQ(t.pos.ecmp, 1u);  // leaf 1 is still reached through spine 1
}

// A leaf down: its hosts lose the plane (their host links are down), and once
// every leaf has learnt that no spine reaches it, frames for it stop at the
// source leaf with the cause no_route.
TEST(Clos, LeafDownCutsItsHostsOffTheplane) {
  Fabric f(clos(8, 4, 2, 2));
  LinkSelector leaf1;
  leaf1.plane = 1, leaf1.leaf = 1;
  LinkPatch down;
  down.up = false;
  uint32_t changed = 0;
  ASSERT_FALSE(f.apply(leaf1, down, 0, &changed));
  EXPECT_EQ(changed, 4u * 2 + 2u * 2);  // 4 hosts' links, 2 spines' links, both directions
  auto fr = frame(0, 6, 50000);
  Trip t = send(f, 0, 1, fr, 1'000);
  EXPECT_EQ(t.drop, DropCause::kLinkDown);  // the spine's link to leaf 1 is dead, not yet withdrawn
  t = send(f, 0, 1, fr, 60'000);
  EXPECT_EQ(t.drop, DropCause::kNoRoute);
  EXPECT_EQ(t.hops.back(), Hop::kEcmp);
  EXPECT_EQ(f.counters().no_route, 1u);
  auto back = frame(6, 0, 50000);
  EXPECT_EQ(send(f, 6, 1, back, 60'000).drop, DropCause::kLinkDown);  // its own uplink
  EXPECT_EQ(send(f, 0, 0, fr, 60'000).drop, DropCause::kNone);        // plane 0 untouched
}

uint32_t count(Fabric& f, const LinkSelector& sel) {
  LinkPatch p;
  p.loss_probability = 0.01;
  uint32_t n = 0;
  const auto e = f.apply(sel, p, 0, &n);
  EXPECT_FALSE(e) << *e;
  return n;
}

// Which links each selector names: H hosts, L leaves, S spines per plane.
TEST(Clos, SelectorsNameHostLinksLeafSpineLinksSwitchesAndPlanes) {
  const uint32_t H = 10, L = 3, S = 4, P = 2;  // hosts_per_leaf 4: the last leaf has 2 hosts
  Fabric f(clos(H, 4, S, P));
  ASSERT_EQ(f.config().leaves(), L);
  using D = LinkSelector::Direction;
  using T = LinkSelector::Tier;
  LinkSelector sel;
  EXPECT_EQ(count(f, sel), P * (2 * H + 2 * L * S));  // everything
  sel.plane = 1;
  EXPECT_EQ(count(f, sel), 2 * H + 2 * L * S);  // a whole plane
  sel.tier = T::kHost;
  EXPECT_EQ(count(f, sel), 2 * H);
  sel.tier = T::kLeafSpine;
  EXPECT_EQ(count(f, sel), 2 * L * S);
  sel.direction = D::kUpward;
  EXPECT_EQ(count(f, sel), L * S);
  sel = {}, sel.host_a = 9;
  EXPECT_EQ(count(f, sel), P * 2);  // a host link, each plane, both directions
  sel.direction = D::kDownward, sel.plane = 0;
  EXPECT_EQ(count(f, sel), 1u);
  sel = {}, sel.plane = 0, sel.leaf = 2;
  EXPECT_EQ(count(f, sel), 2 * 2 + 2 * S);  // leaf 2: its 2 hosts' links and its spine links
  sel.tier = T::kHost;
  EXPECT_EQ(count(f, sel), 2 * 2u);
  sel = {}, sel.plane = 0, sel.spine = 3;
  EXPECT_EQ(count(f, sel), 2 * L);  // a spine: its link to every leaf, both directions
  sel.leaf = 1;
  EXPECT_EQ(count(f, sel), 2u);
  // The links themselves.
  LinkPatch lossy;
  lossy.loss_probability = 0.25;
  sel = {}, sel.plane = 1, sel.leaf = 1, sel.spine = 2, sel.direction = D::kUpward;
  ASSERT_FALSE(f.apply(sel, lossy, 0));
  EXPECT_DOUBLE_EQ(f.leaf_spine_link(1, 1, 2, true).config().loss_probability, 0.25);
  EXPECT_DOUBLE_EQ(f.leaf_spine_link(1, 1, 2, false).config().loss_probability, 0.01);
  EXPECT_DOUBLE_EQ(f.leaf_spine_link(0, 1, 2, true).config().loss_probability, 0.01);
}

TEST(Clos, SelectorValidationNamesTheFieldAndRange) {
  const FabricConfig shape = clos(10, 4, 4, 2);
  const auto err = [&](auto set) {
    LinkSelector s;
    set(s);
    const auto e = validate(s, shape);
    return e ? *e : std::string("(accepted)");
  };
  EXPECT_EQ(err([](LinkSelector& s) { s.leaf = 3; }), "leaf: must be in [0, 2] (got 3)");
  EXPECT_EQ(err([](LinkSelector& s) { s.spine = 4; }), "spine: must be in [0, 3] (got 4)");
  EXPECT_EQ(err([](LinkSelector& s) { s.host_a = 10; }), "host_a: must be in [0, 9] (got 10)");
  EXPECT_EQ(err([](LinkSelector& s) { s.plane = 2; }), "plane: must be in [0, 1] (got 2)");
  EXPECT_EQ(err([](LinkSelector& s) { s.ecmp = 0; }),
            "ecmp: a clos topology has no ECMP link index: its leaves' ECMP group is the spines (name a spine)");
  EXPECT_EQ(err([](LinkSelector& s) { s.host_a = 0, s.host_b = 1; }),
            "host_b: a clos topology has no links between two hosts: name one host (its host links), a leaf or a spine");
  EXPECT_EQ(err([](LinkSelector& s) { s.direction = LinkSelector::Direction::kAToB; }),
            "direction: a clos topology's directions are both | upward | downward (got a_to_b)");
  EXPECT_EQ(err([](LinkSelector& s) { s.host_a = 1, s.spine = 0; }),
            "spine: a host names its own two host links; leave out leaf and spine");
  EXPECT_EQ(err([](LinkSelector& s) { s.host_a = 1, s.tier = LinkSelector::Tier::kLeafSpine; }),
            "tier: a host's links are host links (got tier leaf_spine)");
  EXPECT_EQ(err([](LinkSelector& s) { s.spine = 1, s.tier = LinkSelector::Tier::kHost; }),
            "tier: a spine's links are leaf-spine links (got tier host)");
  EXPECT_EQ(err([](LinkSelector& s) { s.leaf = 2, s.spine = 3, s.direction = LinkSelector::Direction::kUpward; }),
            "(accepted)");
  // And the other way: a full mesh has no leaves, spines, tiers or upward links.
  FabricConfig mesh;
  mesh.hosts = 4;
  LinkSelector s;
  s.spine = 0;
  EXPECT_EQ(*validate(s, mesh),
            "spine: only a clos topology has leaves, spines, tiers and upward/downward links (this fabric is a full mesh)");
  s = {}, s.direction = LinkSelector::Direction::kUpward;
  EXPECT_NE(validate(s, mesh)->find("direction: "), std::string::npos);
  // Names in files and flags.
  for (auto d : {LinkSelector::Direction::kUpward, LinkSelector::Direction::kDownward})
    EXPECT_EQ(parse_direction(direction_name(d)), d);
  for (auto t : {LinkSelector::Tier::kAll, LinkSelector::Tier::kHost, LinkSelector::Tier::kLeafSpine})
    EXPECT_EQ(parse_tier(tier_name(t)), t);
  EXPECT_EQ(parse_topology("clos"), Topology::kClos);
  EXPECT_EQ(parse_topology("mesh"), Topology::kMesh);
  EXPECT_FALSE(parse_topology("torus"));
}

TEST(Clos, ConfigValidationNamesTheFieldAndRange) {
  const auto err = [](auto set) {
    FabricConfig c = clos(8, 4, 2);
    set(c);
    const auto e = validate(c);
    return e ? *e : std::string("(accepted)");
  };
  EXPECT_EQ(err([](FabricConfig&) {}), "(accepted)");
  EXPECT_EQ(err([](FabricConfig& c) { c.hosts_per_leaf = 0; }), "hosts_per_leaf: must be in [1, 8] (got 0)");
  EXPECT_EQ(err([](FabricConfig& c) { c.hosts_per_leaf = 9; }), "hosts_per_leaf: must be in [1, 8] (got 9)");
  EXPECT_EQ(err([](FabricConfig& c) { c.spines = 65; }), "spines: must be in [1, 64] (got 65)");
  EXPECT_EQ(err([](FabricConfig& c) { c.ecmp_links = 2; }),
            "ecmp_links: must be 1 in a clos topology, whose ECMP group is its spines (got 2)");
  EXPECT_EQ(err([](FabricConfig& c) { c.withdraw_after_ns = -1; }),
            "withdraw_after_ns: must be in [0, 3600000000000] ns (got -1)");
  EXPECT_EQ(err([](FabricConfig& c) {
              c.hosts = 1025;
              c.host_ips.clear();
            }),
            "hosts: must be in [2, 1024] (got 1025)");
  EXPECT_EQ(err([](FabricConfig& c) { c.ecmp.rate_bps = 0; }), "ecmp.rate_bps: must be in (0, 1.6e+12] bits/s (got 0)");
  FabricConfig mesh;
  mesh.spines = 4;
  EXPECT_EQ(*validate(mesh), "spines: only a clos topology has leaves and spines");
}

// Memory follows the links that exist: planes x (2 x hosts + 2 x leaves x
// spines) for a clos, where the full mesh has planes x (2 x hosts + hosts x
// (hosts - 1) x ecmp_links).
TEST(Clos, LinksGrowWithHostsNotHostsSquared) {
  for (const auto& [hosts, per_leaf, spines, planes] :
       {std::tuple{8u, 4u, 2u, 1u}, std::tuple{64u, 8u, 4u, 2u}, std::tuple{128u, 8u, 4u, 2u}, std::tuple{100u, 16u, 8u, 3u}}) {
    const FabricConfig c = clos(hosts, per_leaf, spines, planes);
    const size_t leaves = (hosts + per_leaf - 1) / per_leaf;
    const size_t want = planes * (2 * hosts + 2 * leaves * spines);
    EXPECT_EQ(c.link_count(), want);
    Fabric f(c);
    EXPECT_EQ(f.link_count(), want) << hosts << " hosts";
    EXPECT_EQ(f.ecmp_link_count(), planes * 2 * leaves * spines);
  }
  // Twice the hosts on twice the leaves: twice the links. The mesh: about four times.
  EXPECT_EQ(clos(128, 8, 4, 2).link_count(), 2 * clos(64, 8, 4, 2).link_count());
  FabricConfig mesh;
  mesh.hosts = 16, mesh.planes = 2, mesh.ecmp_links = 1;
  EXPECT_EQ(mesh.link_count(), 2u * (2 * 16 + 16 * 15));
  // A 1024-host, 8-plane clos of 32-host leaves and 8 spines would take
  // 8 x (2048 + 512) = 20,480 links; as a mesh it would be 8 x 1024 x 1023 + ... > 8 M.
  FabricConfig big = clos(1024, 32, 8, 8);
  EXPECT_EQ(big.link_count(), 8u * (2 * 1024 + 2 * 32 * 8));
  big.topology = Topology::kMesh, big.hosts_per_leaf = 0, big.spines = 0;
  EXPECT_GT(big.link_count(), 8'000'000u);
}

// A clos timeline validates without building a fabric and applies at its instant.
TEST(Clos, TimelineTakesClosSelectors) {
  const FabricConfig cfg = clos(8, 4, 2);
  Timeline t;
  LinkSelector sel;
  sel.spine = 1;
  t.down(1000, sel);
  t.up(2000, sel);
  ASSERT_FALSE(t.validate(cfg));
  LinkSelector bad;
  bad.spine = 2;
  Timeline tb;
  tb.down(0, bad);
  EXPECT_EQ(*tb.validate(cfg), "timeline[0] (down): spine: must be in [0, 1] (got 2)");
  Fabric f(cfg);
  TimelineRunner r(f, t);
  r.apply_due(1000);
  EXPECT_FALSE(f.leaf_spine_link(0, 0, 1, true).config().up);
  EXPECT_TRUE(f.leaf_spine_link(0, 0, 0, true).config().up);
  r.apply_due(2000);
  EXPECT_TRUE(f.leaf_spine_link(0, 0, 1, true).config().up);
}

// Same seed, same frames: the same fates (every random source is derived from the seed).
TEST(Clos, ReplaysBitForBit) {
  auto run = [] {
    FabricConfig c = clos(16, 4, 4, 2);
    c.ecmp.loss_probability = 0.05;
    c.port.delay.jitter_ns = 300;
    Fabric f(c);
    std::vector<Nanos> out;
    for (uint32_t i = 0; i < 2000; ++i) {
      const uint32_t from = i % 16, to = (i * 7 + 3) % 16;
      if (from == to) continue;
      auto fr = frame(from, to, static_cast<uint16_t>(49152 + i % 97));
      const Trip t = send(f, from, static_cast<uint8_t>(i % 2), fr, i * 50);
      out.push_back(t.drop == DropCause::kNone ? t.at : -static_cast<Nanos>(t.drop));
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace metaroce::emulator
