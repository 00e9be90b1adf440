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

std::optional<std::string> validate(const FabricConfig& c) {
  if (c.hosts < 2 || c.hosts > 1024) return "hosts: must be in [2, 1024] (got " + std::to_string(c.hosts) + ")";
  if (c.planes < 1 || c.planes > 64) return "planes: must be in [1, 64] (got " + std::to_string(c.planes) + ")";
  if (c.ecmp_links < 1 || c.ecmp_links > 64)
    return "ecmp_links: must be in [1, 64] (got " + std::to_string(c.ecmp_links) + ")";
  if (!c.host_ips.empty() && c.host_ips.size() != c.hosts)
    return "host_ips: needs one address per host (" + std::to_string(c.hosts) + ", got " +
           std::to_string(c.host_ips.size()) + ")";
  if (auto e = validate(c.port)) return "port." + *e;
  if (auto e = validate(c.ecmp)) return "ecmp." + *e;
  return std::nullopt;
}

Fabric::Fabric(const FabricConfig& config) : config_(config) {
  const uint32_t H = config_.hosts, P = config_.planes, K = config_.ecmp_links;
  pairs_ = static_cast<size_t>(H) * (H - 1) / 2;
  ports_.reserve(static_cast<size_t>(P) * H * 2);
  uint64_t id = 0;
  for (uint32_t p = 0; p < P; ++p)
    for (uint32_t h = 0; h < H; ++h)
      for (int d = 0; d < 2; ++d) ports_.emplace_back(config_.port, Random::derive(config_.seed, id++));
  ecmp_.reserve(static_cast<size_t>(P) * pairs_ * K * 2);
  for (uint32_t p = 0; p < P; ++p)
    for (size_t pr = 0; pr < pairs_; ++pr)
      for (uint32_t k = 0; k < K; ++k)
        for (int d = 0; d < 2; ++d) ecmp_.emplace_back(config_.ecmp, Random::derive(config_.seed, id++));
}

int Fabric::host_of(uint32_t ip) const {
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

uint32_t ecmp_link_of(const wire::UdpFlow& flow, uint32_t hash_seed, uint32_t ecmp_links) {
  // A switch hashes the 5-tuple; CRC32C over it, salted per fabric.
  uint8_t t[13];
  wire::store_be32(t, flow.src_ip);
  wire::store_be32(t + 4, flow.dst_ip);
  wire::store_be16(t + 8, flow.src_port);
  wire::store_be16(t + 10, flow.dst_port);
  t[12] = wire::kIpProtoUdp;
  const uint32_t h = wire::crc32c_update(hash_seed ^ 0xFFFFFFFFu, t, sizeof(t));
  return ecmp_links > 0 ? h % ecmp_links : 0;
}

int Fabric::ecmp_index(std::span<const uint8_t> frame) const {
  const auto v = wire::decode_udp_frame(frame);
  if (!v) return -1;
  return static_cast<int>(ecmp_link_of(v->flow, config_.hash_seed, config_.ecmp_links));
}

DropCause Fabric::forward(FramePosition& pos, std::span<uint8_t> frame, Nanos now, Nanos* at, Nanos* duplicate_at) {
  *duplicate_at = -1;
  if (pos.plane >= config_.planes || pos.from >= config_.hosts) return DropCause::kLinkDown;
  Link* link = nullptr;
  switch (pos.hop) {
    case Hop::kUplink: {
      // Route: destination host by IPv4 address (2 hosts: the other one), ECMP by 5-tuple.
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
      const int k = ecmp_index(frame);
      pos.ecmp = static_cast<uint16_t>(k < 0 ? 0 : k);  // non-UDP traffic takes link 0
      link = &uplink(pos.plane, pos.from);
      break;
    }
    case Hop::kEcmp: link = &ecmp_link(pos.plane, pos.from, pos.to, pos.ecmp); break;
    case Hop::kDownlink: link = &downlink(pos.plane, pos.to); break;
    case Hop::kDelivered: return DropCause::kNone;
  }
  const LinkVerdict v = link->submit(frame, now);
  if (v.drop != DropCause::kNone) return v.drop;
  *at = v.deliver_at;
  *duplicate_at = v.duplicate_at;
  pos.marks |= (v.ecn_marked ? kMarkEcnCe : 0) | (v.corrupted ? kMarkCorrupted : 0) | (v.reordered ? kMarkReordered : 0);
  pos.hop = static_cast<Hop>(static_cast<uint8_t>(pos.hop) + 1);
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
  }
  return "unknown";
}

std::optional<LinkSelector::Direction> parse_direction(std::string_view name) {
  for (auto d : {LinkSelector::Direction::kBoth, LinkSelector::Direction::kAToB, LinkSelector::Direction::kBToA})
    if (name == direction_name(d)) return d;
  return std::nullopt;
}

std::optional<std::string> validate(const LinkSelector& sel, const FabricConfig& shape) {
  if (sel.plane && *sel.plane >= shape.planes)
    return "plane: must be in [0, " + std::to_string(shape.planes - 1) + "] (got " + std::to_string(*sel.plane) + ")";
  if (sel.ecmp && *sel.ecmp >= shape.ecmp_links)
    return "ecmp: must be in [0, " + std::to_string(shape.ecmp_links - 1) + "] (got " + std::to_string(*sel.ecmp) + ")";
  for (auto [name, h] : {std::pair{"host_a", &sel.host_a}, std::pair{"host_b", &sel.host_b}})
    if (*h && **h >= shape.hosts)
      return std::string(name) + ": must be in [0, " + std::to_string(shape.hosts - 1) + "] (got " + std::to_string(**h) + ")";
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
            Link& l = d == 0 ? ecmp_link(p, a, b, k) : ecmp_link(p, b, a, k);
            LinkConfig c = l.config();
            apply_patch(patch, c);
            if (patch.flap) c.flap.start_ns = now;  // the phase starts when applied (live and simulated alike)
            if (auto e = validate(c)) return *e;
            staged.emplace_back(&l, c);
          }
        }
      }
  }
  if (staged.empty()) return "selector: matches no link";
  for (auto& [l, c] : staged) l->reconfigure(c, now);
  if (links_changed) *links_changed = static_cast<uint32_t>(staged.size());
  return std::nullopt;
}

uint32_t Fabric::reset_ecmp_links(Nanos now) {
  for (Link& l : ecmp_) l.reconfigure(config_.ecmp, now);
  return static_cast<uint32_t>(ecmp_.size());
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
  const size_t per_plane = pairs_ * config_.ecmp_links * 2;
  for (size_t i = 0; i < ecmp_.size(); ++i) {
    add(fc.total, ecmp_[i].counters());
    add(fc.per_plane[i / per_plane], ecmp_[i].counters());
  }
  return fc;
}

}  // namespace metaroce::emulator
