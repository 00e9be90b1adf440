#include "metaroce/emulator/fabric.h"

#include <algorithm>

#include "metaroce/wire/bytes.h"
#include "metaroce/wire/crc.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::emulator {

std::string_view frame_marks_text(uint8_t marks, std::span<char, kFrameMarksTextBytes> buf) {
  size_t n = 0;
  for (const auto& [bit, name] : {std::pair{kMarkEcnCe, "ECN CE marked"}, std::pair{kMarkCorrupted, "corrupted"},
                                  std::pair{kMarkReordered, "reordered"}, std::pair{kMarkDuplicate, "duplicate"}}) {
    if (!(marks & bit)) continue;
    for (const char* part : {n ? ", " : "", name})
      for (const char* c = part; *c && n + 1 < buf.size(); ++c) buf[n++] = *c;
  }
  buf[n] = 0;
  return {buf.data(), n};
}

const char* topology_name(Topology t) { return t == Topology::kClos ? "clos" : "mesh"; }

std::optional<Topology> parse_topology(std::string_view name) {
  for (auto t : {Topology::kMesh, Topology::kClos})
    if (name == topology_name(t)) return t;
  return std::nullopt;
}

size_t FabricConfig::link_count() const {
  const size_t H = hosts, P = planes;
  if (clos()) return P * H * 2 + P * leaves() * spines * 2;
  return P * H * 2 + P * (H * (H - 1) / 2) * ecmp_links * 2;
}

std::optional<std::string> validate(const FabricConfig& c) {
  const auto range = [](const char* name, uint64_t lo, uint64_t hi, uint64_t v) -> std::optional<std::string> {
    if (v >= lo && v <= hi) return std::nullopt;
    return std::string(name) + ": must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " +
           std::to_string(v) + ")";
  };
  if (auto e = range("hosts", 2, kMaxFabricHosts, c.hosts)) return e;
  if (auto e = range("planes", 1, kMaxFabricPlanes, c.planes)) return e;
  if (auto e = range("ecmp_links", 1, kMaxEcmpLinks, c.ecmp_links)) return e;
  if (!c.host_ips.empty() && c.host_ips.size() != c.hosts)
    return "host_ips: needs one address per host (" + std::to_string(c.hosts) + ", got " +
           std::to_string(c.host_ips.size()) + ")";
  if (c.clos()) {
    if (c.ecmp_links != 1)
      return "ecmp_links: must be 1 in a clos topology, whose ECMP group is its spines (got " +
             std::to_string(c.ecmp_links) + ")";
    if (auto e = range("hosts_per_leaf", 1, c.hosts, c.hosts_per_leaf)) return e;
    if (auto e = range("spines", 1, kMaxSpines, c.spines)) return e;
    for (auto [name, v] : {std::pair{"withdraw_after_ns", c.withdraw_after_ns},
                           std::pair{"remote_withdraw_after_ns", c.remote_withdraw_after_ns}})
      if (v < 0 || v > kMaxLinkDelayNs)
        return std::string(name) + ": must be in [0, " + std::to_string(kMaxLinkDelayNs) + "] ns (got " +
               std::to_string(v) + ")";
  } else if (c.hosts_per_leaf != 0 || c.spines != 0) {
    return std::string(c.spines ? "spines" : "hosts_per_leaf") + ": only a clos topology has leaves and spines";
  }
  if (auto e = validate(c.port)) return "port." + *e;
  if (auto e = validate(c.ecmp)) return "ecmp." + *e;
  return std::nullopt;
}

Fabric::Fabric(const FabricConfig& config) : config_(config), clos_(config.clos()) {
  const uint32_t H = config_.hosts, P = config_.planes, K = config_.ecmp_links;
  ports_.reserve(static_cast<size_t>(P) * H * 2);
  uint64_t id = 0;
  for (uint32_t p = 0; p < P; ++p)
    for (uint32_t h = 0; h < H; ++h)
      for (int d = 0; d < 2; ++d) ports_.emplace_back(config_.port, Random::derive(config_.seed, id++));
  if (clos_) {
    leaves_ = config_.leaves();
    const size_t n = static_cast<size_t>(P) * leaves_ * config_.spines * 2;
    ecmp_.reserve(n);
    for (size_t i = 0; i < n; ++i) ecmp_.emplace_back(config_.ecmp, Random::derive(config_.seed, id++));
    down_since_.assign(n, kUp);
    plane_links_down_.assign(P, 0);
    for (uint32_t h = 0; h < config_.host_ips.size(); ++h) ip_index_.emplace_back(config_.host_ips[h], h);
    std::sort(ip_index_.begin(), ip_index_.end());
    return;
  }
  pairs_ = static_cast<size_t>(H) * (H - 1) / 2;
  ecmp_.reserve(static_cast<size_t>(P) * pairs_ * K * 2);
  for (uint32_t p = 0; p < P; ++p)
    for (size_t pr = 0; pr < pairs_; ++pr)
      for (uint32_t k = 0; k < K; ++k)
        for (int d = 0; d < 2; ++d) ecmp_.emplace_back(config_.ecmp, Random::derive(config_.seed, id++));
}

int Fabric::host_of(uint32_t ip) const {
  if (!ip_index_.empty()) {  // clos: up to kMaxFabricHosts hosts
    const auto it = std::lower_bound(ip_index_.begin(), ip_index_.end(), std::pair<uint32_t, uint32_t>{ip, 0});
    return it != ip_index_.end() && it->first == ip ? static_cast<int>(it->second) : -1;
  }
  for (size_t i = 0; i < config_.host_ips.size(); ++i)
    if (config_.host_ips[i] == ip) return static_cast<int>(i);
  return -1;
}

size_t Fabric::pair_index(uint32_t a, uint32_t b) const {
  if (a > b) std::swap(a, b);
  // Row-major index of (a, b) with a < b in the upper triangle.
  const size_t H = config_.hosts;
  return static_cast<size_t>(a) * (2 * H - a - 1) / 2 + (b - a - 1);
}

Link& Fabric::ecmp_link(uint32_t plane, uint32_t a, uint32_t b, uint32_t k) {
  const size_t dir = a < b ? 0 : 1;
  return ecmp_[((plane * pairs_ + pair_index(a, b)) * config_.ecmp_links + k) * 2 + dir];
}

uint32_t ecmp_hash(const wire::UdpFlow& flow, uint32_t hash_seed) {
  // A switch hashes the 5-tuple; CRC32C over it, salted per fabric.
  uint8_t t[13];
  wire::store_be32(t, flow.src_ip);
  wire::store_be32(t + 4, flow.dst_ip);
  wire::store_be16(t + 8, flow.src_port);
  wire::store_be16(t + 10, flow.dst_port);
  t[12] = wire::kIpProtoUdp;
  return wire::crc32c_update(hash_seed ^ 0xFFFFFFFFu, t, sizeof(t));
}

uint32_t ecmp_link_of(const wire::UdpFlow& flow, uint32_t hash_seed, uint32_t ecmp_links) {
  return ecmp_links > 0 ? ecmp_hash(flow, hash_seed) % ecmp_links : 0;
}

int Fabric::ecmp_index(std::span<const uint8_t> frame) const {
  const auto v = wire::decode_udp_frame(frame);
  if (!v) return -1;
  return static_cast<int>(ecmp_link_of(v->flow, config_.hash_seed, config_.ecmp_width()));
}

DropCause Fabric::route(FramePosition& pos, std::span<const uint8_t> frame) const {
  // Destination host by IPv4 address (2 hosts: the other one).
  if (pos.to_known) {
    if (pos.to >= config_.hosts || pos.to == pos.from) return DropCause::kNoRoute;
  } else if (config_.host_ips.empty() && config_.hosts == 2) {
    pos.to = 1 - pos.from;
  } else {
    if (frame.size() < wire::kEthHeaderBytes + wire::kIpv4HeaderBytes) return DropCause::kNoRoute;
    const int to = host_of(wire::load_be32(frame.data() + wire::kEthHeaderBytes + 16));
    if (to < 0 || static_cast<uint32_t>(to) == pos.from) return DropCause::kNoRoute;
    pos.to = static_cast<uint32_t>(to);
  }
  return DropCause::kNone;
}

DropCause Fabric::forward(FramePosition& pos, std::span<uint8_t> frame, Nanos now, Nanos* at, Nanos* duplicate_at) {
  *duplicate_at = -1;
  if (pos.plane >= config_.planes || pos.from >= config_.hosts) return DropCause::kLinkDown;
  if (clos_) return forward_clos(pos, frame, now, at, duplicate_at);
  Link* link = nullptr;
  switch (pos.hop) {
    case Hop::kUplink: {
      // Route: destination host, ECMP by 5-tuple.
      if (const DropCause d = route(pos, frame); d != DropCause::kNone) return d;
      const int k = ecmp_index(frame);
      pos.ecmp = static_cast<uint16_t>(k < 0 ? 0 : k);  // non-UDP traffic takes link 0
      link = &uplink(pos.plane, pos.from);
      break;
    }
    case Hop::kEcmp: link = &ecmp_link(pos.plane, pos.from, pos.to, pos.ecmp); break;
    case Hop::kDownlink: link = &downlink(pos.plane, pos.to); break;
    case Hop::kDelivered: return DropCause::kNone;
    case Hop::kSpineDown: return DropCause::kNoRoute;  // a clos hop: not on a mesh
  }
  const LinkVerdict v = link->submit(frame, now);
  if (v.drop != DropCause::kNone) return v.drop;
  *at = v.deliver_at;
  *duplicate_at = v.duplicate_at;
  pos.marks |= (v.ecn_marked ? kMarkEcnCe : 0) | (v.corrupted ? kMarkCorrupted : 0) | (v.reordered ? kMarkReordered : 0);
  pos.hop = static_cast<Hop>(static_cast<uint8_t>(pos.hop) + 1);
  return DropCause::kNone;
}

int Fabric::live_spine(const FramePosition& pos, std::span<const uint8_t> frame, Nanos now) {
  const uint32_t S = config_.spines, src = leaf_of(pos.from), dst = leaf_of(pos.to);
  const auto usable = [&](uint32_t s) {
    return !withdrawn(clos_index(pos.plane, src, s, true), config_.withdraw_after_ns, now) &&
           !withdrawn(clos_index(pos.plane, dst, s, false), config_.remote_withdraw_after_ns, now);
  };
  if (usable(pos.ecmp)) return pos.ecmp;
  // The hashed spine is withdrawn: the flow moves to a live one, chosen by
  // the rest of its hash, and flows on live spines stay (resilient hashing).
  uint32_t live[kMaxSpines];
  uint32_t n = 0;
  for (uint32_t s = 0; s < S; ++s)
    if (usable(s)) live[n++] = s;
  if (n == 0) return -1;
  const auto v = wire::decode_udp_frame(frame);
  const uint32_t h = v ? ecmp_hash(v->flow, config_.hash_seed) : 0;
  return static_cast<int>(live[(h / S) % n]);
}

DropCause Fabric::forward_clos(FramePosition& pos, std::span<uint8_t> frame, Nanos now, Nanos* at,
                               Nanos* duplicate_at) {
  Link* link = nullptr;
  Hop next = Hop::kDelivered;
  switch (pos.hop) {
    case Hop::kUplink: {
      if (const DropCause d = route(pos, frame); d != DropCause::kNone) return d;
      const int s = ecmp_index(frame);
      pos.ecmp = static_cast<uint16_t>(s < 0 ? 0 : s);  // non-UDP traffic takes spine 0
      link = &uplink(pos.plane, pos.from);
      next = leaf_of(pos.from) == leaf_of(pos.to) ? Hop::kDownlink : Hop::kEcmp;
      break;
    }
    case Hop::kEcmp: {  // at the source leaf: its ECMP choice of spine
      if (plane_links_down_[pos.plane] != 0) {
        const int s = live_spine(pos, frame, now);
        if (s < 0) {
          ++no_route_;
          return DropCause::kNoRoute;
        }
        if (static_cast<uint32_t>(s) != pos.ecmp) ++rerouted_, pos.ecmp = static_cast<uint16_t>(s);
      }
      link = &ecmp_[clos_index(pos.plane, leaf_of(pos.from), pos.ecmp, true)];
      next = Hop::kSpineDown;
      break;
    }
    case Hop::kSpineDown:
      link = &ecmp_[clos_index(pos.plane, leaf_of(pos.to), pos.ecmp, false)];
      next = Hop::kDownlink;
      break;
    case Hop::kDownlink:
      link = &downlink(pos.plane, pos.to);
      next = Hop::kDelivered;
      break;
    case Hop::kDelivered: return DropCause::kNone;
  }
  const LinkVerdict v = link->submit(frame, now);
  if (v.drop != DropCause::kNone) return v.drop;
  *at = v.deliver_at;
  *duplicate_at = v.duplicate_at;
  pos.hop = next;
  return DropCause::kNone;
}

bool Fabric::uplink_ready(uint32_t host, uint32_t plane, uint32_t max_backlog, Nanos now) {
  return uplink(plane, host).ready(max_backlog, now);
}

Nanos Fabric::uplink_ready_at(uint32_t host, uint32_t plane, uint32_t max_backlog, Nanos now) {
  return uplink(plane, host).ready_at(max_backlog, now);
}

void apply_patch(const LinkPatch& patch, LinkConfig& c) {
  if (patch.rate_bps) c.rate_bps = *patch.rate_bps;
  if (patch.prop_delay_ns) c.prop_delay_ns = *patch.prop_delay_ns;
  if (patch.queue_limit_bytes) c.queue_limit_bytes = *patch.queue_limit_bytes;
  if (patch.queue_limit_packets) c.queue_limit_packets = *patch.queue_limit_packets;
  if (patch.ecn_threshold_bytes) c.ecn_threshold_bytes = *patch.ecn_threshold_bytes;
  if (patch.loss_probability) c.loss_probability = *patch.loss_probability, c.loss = LossConfig{};
  if (patch.loss) c.loss = *patch.loss, c.loss_probability = 0;
  if (patch.delay) c.delay = *patch.delay;
  if (patch.reorder) c.reorder = *patch.reorder;
  if (patch.reorder_probability) c.reorder_probability = *patch.reorder_probability;
  if (patch.reorder_delay_ns) c.reorder_delay_ns = *patch.reorder_delay_ns;
  if (patch.duplicate_probability) c.duplicate_probability = *patch.duplicate_probability;
  if (patch.corrupt_probability) c.corrupt_probability = *patch.corrupt_probability;
  if (patch.up) c.up = *patch.up;
  if (patch.flap) c.flap = *patch.flap;
}

std::optional<std::string> validate(const LinkPatch& patch) {
  LinkConfig c;
  apply_patch(patch, c);
  return validate(c);
}

const char* direction_name(LinkSelector::Direction d) {
  switch (d) {
    case LinkSelector::Direction::kBoth: return "both";
    case LinkSelector::Direction::kAToB: return "a_to_b";
    case LinkSelector::Direction::kBToA: return "b_to_a";
    case LinkSelector::Direction::kUpward: return "upward";
    case LinkSelector::Direction::kDownward: return "downward";
  }
  return "unknown";
}

std::optional<LinkSelector::Direction> parse_direction(std::string_view name) {
  using D = LinkSelector::Direction;
  for (auto d : {D::kBoth, D::kAToB, D::kBToA, D::kUpward, D::kDownward})
    if (name == direction_name(d)) return d;
  return std::nullopt;
}

const char* tier_name(LinkSelector::Tier t) {
  switch (t) {
    case LinkSelector::Tier::kAll: return "all";
    case LinkSelector::Tier::kHost: return "host";
    case LinkSelector::Tier::kLeafSpine: return "leaf_spine";
  }
  return "unknown";
}

std::optional<LinkSelector::Tier> parse_tier(std::string_view name) {
  using T = LinkSelector::Tier;
  for (auto t : {T::kAll, T::kHost, T::kLeafSpine})
    if (name == tier_name(t)) return t;
  return std::nullopt;
}

std::optional<std::string> validate(const LinkSelector& sel, const FabricConfig& shape) {
  using D = LinkSelector::Direction;
  using T = LinkSelector::Tier;
  const auto in_range = [](const char* name, const std::optional<uint32_t>& v, uint32_t n) -> std::optional<std::string> {
    if (!v || *v < n) return std::nullopt;
    return std::string(name) + ": must be in [0, " + std::to_string(n - 1) + "] (got " + std::to_string(*v) + ")";
  };
  if (auto e = in_range("plane", sel.plane, shape.planes)) return e;
  if (shape.clos()) {
    if (sel.ecmp)
      return "ecmp: a clos topology has no ECMP link index: its leaves' ECMP group is the spines (name a spine)";
    if (sel.host_b)
      return "host_b: a clos topology has no links between two hosts: name one host (its host links), a leaf or a spine";
    if (sel.direction == D::kAToB || sel.direction == D::kBToA)
      return std::string("direction: a clos topology's directions are both | upward | downward (got ") +
             direction_name(sel.direction) + ")";
    if (auto e = in_range("host_a", sel.host_a, shape.hosts)) return e;
    if (auto e = in_range("leaf", sel.leaf, shape.leaves())) return e;
    if (auto e = in_range("spine", sel.spine, shape.spines)) return e;
    if (sel.host_a && (sel.leaf || sel.spine))
      return std::string(sel.leaf ? "leaf" : "spine") + ": a host names its own two host links; leave out leaf and spine";
    if (sel.host_a && sel.tier == T::kLeafSpine) return "tier: a host's links are host links (got tier leaf_spine)";
    if (sel.spine && sel.tier == T::kHost) return "tier: a spine's links are leaf-spine links (got tier host)";
    return std::nullopt;
  }
  if (sel.leaf || sel.spine || sel.tier != T::kAll || sel.direction == D::kUpward || sel.direction == D::kDownward) {
    const char* field = sel.leaf ? "leaf" : sel.spine ? "spine" : sel.tier != T::kAll ? "tier" : "direction";
    return std::string(field) + ": only a clos topology has leaves, spines, tiers and upward/downward links (this fabric is a full mesh)";
  }
  if (auto e = in_range("ecmp", sel.ecmp, shape.ecmp_links)) return e;
  for (auto [name, h] : {std::pair{"host_a", &sel.host_a}, std::pair{"host_b", &sel.host_b}})
    if (auto e = in_range(name, *h, shape.hosts)) return e;
  if (sel.host_a && sel.host_b && *sel.host_a == *sel.host_b)
    return "host_b: must differ from host_a (got " + std::to_string(*sel.host_b) + " for both)";
  return std::nullopt;
}

std::optional<std::string> Fabric::apply(const LinkSelector& sel, const LinkPatch& patch, Nanos now,
                                         uint32_t* links_changed) {
  if (links_changed) *links_changed = 0;
  if (auto e = validate(sel, config_)) return e;
  // Collect the selected links, build every new configuration, validate all, then commit.
  std::vector<std::pair<Link*, LinkConfig>> staged;
  const auto stage = [&](Link& l) -> std::optional<std::string> {
    LinkConfig c = l.config();
    apply_patch(patch, c);
    if (patch.flap) c.flap.start_ns = now;  // the phase starts when applied (live and simulated alike)
    if (auto e = validate(c)) return *e;
    staged.emplace_back(&l, c);
    return std::nullopt;
  };
  if (clos_) {
    using D = LinkSelector::Direction;
    using T = LinkSelector::Tier;
    const bool up = sel.direction != D::kDownward, down = sel.direction != D::kUpward;
    for (uint32_t p = 0; p < config_.planes; ++p) {
      if (sel.plane && *sel.plane != p) continue;
      if (sel.tier != T::kLeafSpine && !sel.spine)
        for (uint32_t h = 0; h < config_.hosts; ++h) {
          if ((sel.host_a && *sel.host_a != h) || (sel.leaf && *sel.leaf != leaf_of(h))) continue;
          if (up)
            if (auto e = stage(uplink(p, h))) return e;
          if (down)
            if (auto e = stage(downlink(p, h))) return e;
        }
      if (sel.tier != T::kHost && !sel.host_a)
        for (uint32_t l = 0; l < leaves_; ++l)
          for (uint32_t s = 0; s < config_.spines; ++s) {
            if ((sel.leaf && *sel.leaf != l) || (sel.spine && *sel.spine != s)) continue;
            if (up)
              if (auto e = stage(leaf_spine_link(p, l, s, true))) return e;
            if (down)
              if (auto e = stage(leaf_spine_link(p, l, s, false))) return e;
          }
    }
  } else {
    for (uint32_t p = 0; p < config_.planes; ++p) {
      if (sel.plane && *sel.plane != p) continue;
      for (uint32_t a = 0; a < config_.hosts; ++a)
        for (uint32_t b = a + 1; b < config_.hosts; ++b) {
          if (sel.host_a && sel.host_b &&
              !((*sel.host_a == a && *sel.host_b == b) || (*sel.host_a == b && *sel.host_b == a)))
            continue;
          if (sel.host_a && !sel.host_b && *sel.host_a != a && *sel.host_a != b) continue;
          for (uint32_t k = 0; k < config_.ecmp_links; ++k) {
            if (sel.ecmp && *sel.ecmp != k) continue;
            // Direction is relative to the pair as named (a_to_b = host_a -> host_b when given).
            const bool named_reversed = sel.host_a && sel.host_b && *sel.host_a > *sel.host_b;
            for (int d = 0; d < 2; ++d) {
              const bool a_to_b = (d == 0) != named_reversed;
              if (sel.direction == LinkSelector::Direction::kAToB && !a_to_b) continue;
              if (sel.direction == LinkSelector::Direction::kBToA && a_to_b) continue;
              if (auto e = stage(d == 0 ? ecmp_link(p, a, b, k) : ecmp_link(p, b, a, k))) return e;
            }
          }
        }
    }
  }
  if (staged.empty()) return "selector: matches no link";
  for (auto& [l, c] : staged) {
    l->reconfigure(c, now);
    if (clos_ && l >= ecmp_.data() && l < ecmp_.data() + ecmp_.size()) note_up_down(static_cast<size_t>(l - ecmp_.data()), now);
  }
  if (links_changed) *links_changed = static_cast<uint32_t>(staged.size());
  return std::nullopt;
}

void Fabric::note_up_down(size_t i, Nanos now) {
  const bool up = ecmp_[i].config().up;
  const bool was_up = down_since_[i] == kUp;
  if (up == was_up) return;  // a link that stays down keeps the instant it went down
  const uint32_t plane = static_cast<uint32_t>(i / (static_cast<size_t>(leaves_) * config_.spines * 2));
  down_since_[i] = up ? kUp : now;
  if (up) --plane_links_down_[plane];
  else ++plane_links_down_[plane];
}

uint32_t Fabric::reset_ecmp_links(Nanos now) {
  for (Link& l : ecmp_) l.reconfigure(config_.ecmp, now);
  if (clos_)
    for (size_t i = 0; i < ecmp_.size(); ++i) note_up_down(i, now);
  return static_cast<uint32_t>(ecmp_.size());
}

uint64_t Fabric::deepest_queue(Nanos now) {
  uint64_t deepest = 0;
  for (size_t i = 1; i < ports_.size(); i += 2) deepest = std::max(deepest, ports_[i].backlog_bytes(now));
  for (Link& l : ecmp_) deepest = std::max(deepest, l.backlog_bytes(now));
  return deepest;
}

std::optional<std::string> Fabric::set_port_config(uint32_t plane, const LinkConfig& c) {
  if (plane >= config_.planes) return "plane: must be in [0, " + std::to_string(config_.planes - 1) + "]";
  if (auto e = validate(c)) return "port." + *e;
  for (uint32_t h = 0; h < config_.hosts; ++h) {
    uplink(plane, h).reconfigure(c);
    downlink(plane, h).reconfigure(c);
  }
  return std::nullopt;
}

FabricCounters Fabric::counters() const {
  FabricCounters fc;
  fc.per_plane.resize(config_.planes);
  auto add = [](LinkCounters& a, const LinkCounters& b) {
    a.packets_in += b.packets_in;
    a.bytes_in += b.bytes_in;
    a.packets_out += b.packets_out;
    a.bytes_out += b.bytes_out;
    a.drops_random_loss += b.drops_random_loss;
    a.drops_queue_overflow += b.drops_queue_overflow;
    a.drops_link_down += b.drops_link_down;
    a.ecn_marks += b.ecn_marks;
    a.duplicates += b.duplicates;
    a.reorders += b.reorders;
    a.corruptions += b.corruptions;
    a.queue_high_water_bytes = std::max(a.queue_high_water_bytes, b.queue_high_water_bytes);
  };
  for (const Link& l : ports_) add(fc.total, l.counters());
  if (clos_) {
    fc.per_plane_host_links.resize(config_.planes);
    fc.per_plane_leaf_spine.resize(config_.planes);
    const size_t host_links = static_cast<size_t>(config_.hosts) * 2;
    for (size_t i = 0; i < ports_.size(); ++i) {
      add(fc.per_plane_host_links[i / host_links], ports_[i].counters());
      if (i % 2 == 1) add(fc.per_plane[i / host_links], ports_[i].counters());
    }
    const size_t per_plane = static_cast<size_t>(leaves_) * config_.spines * 2;
    for (size_t i = 0; i < ecmp_.size(); ++i) {
      add(fc.total, ecmp_[i].counters());
      add(fc.per_plane_leaf_spine[i / per_plane], ecmp_[i].counters());
    }
    fc.ecmp_rerouted = rerouted_;
    fc.no_route = no_route_;
    return fc;
  }
  const size_t per_plane = pairs_ * config_.ecmp_links * 2;
  for (size_t i = 0; i < ecmp_.size(); ++i) {
    add(fc.total, ecmp_[i].counters());
    add(fc.per_plane[i / per_plane], ecmp_[i].counters());
  }
  return fc;
}

}  // namespace metaroce::emulator
