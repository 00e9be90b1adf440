// The emulated fabric: P planes joining H hosts, in one of two topologies.
//
// Full mesh (Topology::kMesh, the default): on each plane a frame from host i
// to host j crosses three store-and-forward hops, each an emulator::Link
// (queue, serialiser, impairments):
//
//   uplink(plane, i)  ->  ECMP link(plane, pair{i,j}, k, direction)  ->  downlink(plane, j)
//
// k is chosen by hashing the frame's 5-tuple, so a MetaRoCE path's UDP source
// port picks its ECMP link and changing the port moves it, as on a real fabric.
// The uplink is the host's port (its back-pressure is the NIC's); the downlink
// is the queue where incast congests and ECN marks. Impairments are set per
// plane, per ECMP link and per direction (a_to_b = from the lower host index
// to the higher), and apply atomically at a given instant. Links per plane:
// 2 x hosts + hosts x (hosts - 1) x ecmp_links.
//
// Two-tier Clos (Topology::kClos), rail-style: every plane is its own
// leaf/spine fabric, and every host has one port on one leaf of every plane
// (host h on leaf h / hosts_per_leaf). A frame from host i to host j:
//
//   same leaf:  host link up(plane, i)  ->  host link down(plane, j)
//   otherwise:  host link up(plane, i)  ->  leaf(i) -> spine s  ->  spine s -> leaf(j)  ->  host link down(plane, j)
//
// Every hop is a Link with its own queue (ECN step / RED marking at every
// egress), serialiser and impairments. The leaf picks the spine s by the same
// 5-tuple hash as the mesh's ECMP link (ecmp_link_of, modulo spines, salted by
// hash_seed), so a MetaRoCE path's source port picks its spine. Links per
// plane: 2 x hosts + 2 x leaves x spines; memory grows with the links that
// exist, not with hosts squared.
//
// Failures in the Clos: a leaf-spine link that is down (LinkPatch::up = false;
// a whole spine or leaf down is all its links down) keeps its place in the
// leaves' ECMP groups until the routing notices, as on real switches: frames
// hashed onto it are dropped (link_down) for withdraw_after_ns when the
// leaf's own uplink died (the leaf sees the port go down), and for
// remote_withdraw_after_ns when the spine's link to the destination leaf died
// (the leaf learns it from the routing protocol). After that the leaf
// withdraws the spine from its group for that destination: frames hashed onto
// a withdrawn spine move to a live one (resilient hashing: flows on live spines
// stay where they are), and a frame for which no spine is left is dropped as
// no_route. A link that comes back up is used again at once. Only down counts:
// a lossy (gray) link stays in the group, as it does on real switches, and so
// does a flapping link (its outages are taken as shorter than detection).
//
// Clock-agnostic: every call takes `now`. The caller moves a frame from hop to
// hop at the times forward() returns (the simulator as events, a real-time
// datapath with a timer wheel).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metaroce/emulator/link.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::emulator {

// The hop a frame is offered to next. Mesh: kUplink -> kEcmp -> kDownlink ->
// kDelivered. Clos: kUplink (host -> leaf) -> kEcmp (leaf -> spine, the
// leaf's ECMP choice) -> kSpineDown (spine -> destination leaf) -> kDownlink
// (leaf -> host) -> kDelivered; between hosts of one leaf kUplink -> kDownlink.
enum class Hop : uint8_t { kUplink = 0, kEcmp = 1, kDownlink = 2, kDelivered = 3, kSpineDown = 4 };

// Where a frame is in the fabric.
struct FramePosition {
  uint32_t from = 0, to = 0;
  uint8_t plane = 0;
  Hop hop = Hop::kUplink;
  uint16_t ecmp = 0;      // mesh: the ECMP link; clos: the spine
  bool to_known = false;  // the caller routed it (e.g. by MAC): do not route by IPv4
  uint8_t marks = 0;      // FrameMark bits: what the hops so far did to the frame (forward() sets them)
};

// What a hop did to a frame it delivered, kept in FramePosition::marks so that
// a capture after the emulator can say so in the frame's comment.
enum FrameMark : uint8_t {
  kMarkEcnCe = 1,      // the hop set ECN CE (queue above the threshold, or RED)
  kMarkCorrupted = 2,  // the hop flipped a bit (the receiver's CRC check drops it)
  kMarkReordered = 4,  // the hop held it back or let it overtake (netem reorder)
  kMarkDuplicate = 8,  // this is the copy a hop duplicated
};
// The marks as words ("ECN CE marked, corrupted"), written into buf and cut to
// fit; "" for none. Allocates nothing (called per captured frame).
inline constexpr size_t kFrameMarksTextBytes = 64;
std::string_view frame_marks_text(uint8_t marks, std::span<char, kFrameMarksTextBytes> buf);

enum class Topology : uint8_t { kMesh, kClos };
// A topology's name in scenario files and messages: "mesh", "clos".
const char* topology_name(Topology t);
std::optional<Topology> parse_topology(std::string_view name);

// The shapes validate(FabricConfig) accepts; front ends quote them.
inline constexpr uint32_t kMaxFabricHosts = 1024;
inline constexpr uint32_t kMaxFabricPlanes = 64;
inline constexpr uint32_t kMaxEcmpLinks = 64;
inline constexpr uint32_t kMaxSpines = 64;
// Clos: how long after a leaf-spine link goes down its leaves stop hashing
// onto it, when nobody says (FabricConfig). Local: the leaf's own uplink, seen
// by the port going down and removed from the ECMP group by the switch itself.
// Remote: the spine's link to the destination leaf, learnt through the routing
// protocol (BGP with BFD takes tens of milliseconds). Fabric time, like link
// delays: a scenario's sim.time_scale does not scale it.
inline constexpr Nanos kDefaultWithdrawAfterNs = 1'000'000;
inline constexpr Nanos kDefaultRemoteWithdrawAfterNs = 50'000'000;

struct FabricConfig {
  Topology topology = Topology::kMesh;
  uint32_t hosts = 2;                  // [2, kMaxFabricHosts]
  uint32_t planes = 4;                 // [1, kMaxFabricPlanes]
  uint32_t ecmp_links = 1;             // mesh: K parallel links per host pair and plane (1..64); clos: 1
  uint32_t hosts_per_leaf = 0;         // clos: [1, hosts]; leaves = ceil(hosts / hosts_per_leaf) per plane
  uint32_t spines = 0;                 // clos: per plane, [1, kMaxSpines]: the leaves' ECMP group
  Nanos withdraw_after_ns = kDefaultWithdrawAfterNs;              // clos: [0, kMaxLinkDelayNs]
  Nanos remote_withdraw_after_ns = kDefaultRemoteWithdrawAfterNs;  // clos: [0, kMaxLinkDelayNs]
  std::vector<uint32_t> host_ips;      // host order; frames are routed by IPv4 destination
  LinkConfig port;                     // host links: uplinks and downlinks (rate, queue, ECN; normally no impairments)
  LinkConfig ecmp;                     // every ECMP link's (mesh) or leaf-spine link's (clos) starting configuration
  uint64_t seed = 1;
  uint32_t hash_seed = 0;              // ECMP hash salt (switch-specific)

  bool clos() const { return topology == Topology::kClos; }
  uint32_t leaves() const { return clos() && hosts_per_leaf ? (hosts + hosts_per_leaf - 1) / hosts_per_leaf : 0; }
  // How many ways the ECMP hash splits: ECMP links (mesh) or spines (clos).
  uint32_t ecmp_width() const { return clos() ? spines : ecmp_links; }
  // Links of every plane together: what the fabric allocates.
  size_t link_count() const;
};

std::optional<std::string> validate(const FabricConfig& c);

// The ECMP link (0 .. ecmp_links-1) a UDP flow's 5-tuple hashes to on a fabric
// salted with hash_seed: what Fabric::ecmp_index computes for the flow's
// frames (on a clos, ecmp_links = spines: the spine a leaf picks). Lets a host
// choose source ports (entropy) for a wanted link. ecmp_hash is the whole
// hash (CRC32C of the 5-tuple); ecmp_link_of is ecmp_hash % ecmp_links.
uint32_t ecmp_hash(const wire::UdpFlow& flow, uint32_t hash_seed);
uint32_t ecmp_link_of(const wire::UdpFlow& flow, uint32_t hash_seed, uint32_t ecmp_links);

// Which links a change applies to. Unset fields mean "all".
//
// Mesh: the ECMP links (host ports are set up with set_port_config). plane,
// ecmp, host_a alone (every ECMP link of that host), host_a + host_b (the
// pair's links), direction a_to_b / b_to_a (of the pair as named).
//
// Clos: every link of the planes named, host links and leaf-spine links
// alike (so plane alone is the whole plane), narrowed by
//   host_a        that host's two host links (uplink and downlink)
//   leaf          the leaf: its hosts' links and its links to every spine
//   spine         the spine: its links to every leaf
//   leaf + spine  the one pair of links between them
//   tier          kHost (host links only) or kLeafSpine (leaf-spine links only)
//   direction     kUpward (host -> leaf, leaf -> spine) or kDownward
// A switch down is all its links down (leaf: its hosts lose that plane).
struct LinkSelector {
  std::optional<uint32_t> plane;
  std::optional<uint32_t> ecmp;        // mesh: ECMP link index within the plane
  enum class Direction : uint8_t { kBoth, kAToB, kBToA, kUpward, kDownward } direction = Direction::kBoth;
  std::optional<uint32_t> host_a, host_b;  // mesh: the host pair (default: every pair); clos: host_a only
  std::optional<uint32_t> leaf, spine;     // clos
  enum class Tier : uint8_t { kAll, kHost, kLeafSpine } tier = Tier::kAll;  // clos
};
// A direction's name in the API, scenario files and flags: "both", "a_to_b",
// "b_to_a" (mesh), "upward", "downward" (clos).
const char* direction_name(LinkSelector::Direction d);
std::optional<LinkSelector::Direction> parse_direction(std::string_view name);
// A tier's name: "all", "host", "leaf_spine".
const char* tier_name(LinkSelector::Tier t);
std::optional<LinkSelector::Tier> parse_tier(std::string_view name);

// A partial change: only the fields that are set are changed (nothing you do
// not name is reset). Applied to every selected ECMP link at one instant.
struct LinkPatch {
  std::optional<double> rate_bps;
  std::optional<Nanos> prop_delay_ns;
  std::optional<uint32_t> queue_limit_bytes, queue_limit_packets, ecn_threshold_bytes;
  std::optional<double> loss_probability;  // the Bernoulli shorthand (LinkConfig::loss_probability)
  std::optional<LossConfig> loss;      // a whole loss model; overrides loss_probability when both are set
  std::optional<DelayConfig> delay;
  std::optional<ReorderConfig> reorder;
  std::optional<double> reorder_probability;  // hold-back (LinkConfig::reorder_probability)
  std::optional<Nanos> reorder_delay_ns;
  std::optional<double> duplicate_probability, corrupt_probability;
  std::optional<bool> up;
  std::optional<FlapConfig> flap;      // period 0 stops flapping; its phase starts when applied

  // An empty patch (LinkPatch{}) changes nothing.
  bool operator==(const LinkPatch&) const = default;
};

// The patch's fields on c: the one list of what a patch can change. The
// shorthand and a loss model each replace the other (a flap's phase is left
// to the caller).
void apply_patch(const LinkPatch& patch, LinkConfig& c);
// Every field the patch sets is in range: the patch on a default link must
// pass validate(LinkConfig), the one place link ranges are checked. The
// message names the field ("rate_bps: must be in ...").
std::optional<std::string> validate(const LinkPatch& patch);
// The selector names links this fabric has: plane, ECMP link and hosts in
// range, a host pair of two different hosts; leaf, spine and the clos
// directions only on a clos, the mesh's ECMP link, host pair and directions
// only on a mesh, and no contradiction (a host with a leaf or spine, a spine
// with tier host, a host with tier leaf_spine). A valid selector matches at
// least one link. The message names the field.
std::optional<std::string> validate(const LinkSelector& sel, const FabricConfig& shape);

struct FabricCounters {
  LinkCounters total;                  // all hops
  // Mesh: the ECMP hops, summed over the plane (each frame once, in the
  // middle). Clos: the plane's host downlinks (what the plane delivered).
  std::vector<LinkCounters> per_plane;
  // Clos only (empty on a mesh): per plane, its host links (uplinks and
  // downlinks) and its leaf-spine links (both directions).
  std::vector<LinkCounters> per_plane_host_links, per_plane_leaf_spine;
  uint64_t ecmp_rerouted = 0;          // clos: frames a leaf moved off a withdrawn spine
  uint64_t no_route = 0;               // clos: frames a leaf had no live spine for (dropped)
};

class Fabric {
 public:
  explicit Fabric(const FabricConfig& config);

  const FabricConfig& config() const { return config_; }
  // Host index of an IPv4 address, or -1.
  int host_of(uint32_t ip) const;

  // Offers the frame to its current hop at time now. On success pos advances
  // and *at is when it reaches the next hop (or the host, when pos.hop becomes
  // kDelivered). For a first hop pos.from and pos.plane must be set; pos.to and
  // the ECMP link (spine) are derived from the frame. A duplicate, if the hop
  // made one, is reported in *duplicate_at (>= 0) and follows the same route
  // (the caller gives the copy pos.marks | kMarkDuplicate). What the hop did to
  // the frame is added to pos.marks.
  DropCause forward(FramePosition& pos, std::span<uint8_t> frame, Nanos now, Nanos* at, Nanos* duplicate_at);

  // Back-pressure of a host's port on a plane.
  bool uplink_ready(uint32_t host, uint32_t plane, uint32_t max_backlog_bytes, Nanos now);
  Nanos uplink_ready_at(uint32_t host, uint32_t plane, uint32_t max_backlog_bytes, Nanos now);

  // Validates the whole change first: either every selected link changes or
  // none. *links_changed (if given): how many did.
  std::optional<std::string> apply(const LinkSelector& sel, const LinkPatch& patch, Nanos now,
                                   uint32_t* links_changed = nullptr);

  // Every ECMP link (mesh) or leaf-spine link (clos) back to the
  // configuration the fabric started with (config().ecmp), at once. Returns
  // how many links that is.
  uint32_t reset_ecmp_links(Nanos now);

  // Setup: the uplinks and downlinks of one plane (e.g. planes of different speeds).
  std::optional<std::string> set_port_config(uint32_t plane, const LinkConfig& c);

  // ECMP link (mesh) or spine (clos) index the 5-tuple of frame hashes to on
  // this fabric (-1 if not UDP/IPv4). On a clos it is the spine the leaf
  // picks while that spine is not withdrawn.
  int ecmp_index(std::span<const uint8_t> frame) const;

  Link& ecmp_link(uint32_t plane, uint32_t a, uint32_t b, uint32_t k);  // mesh: directed a -> b
  Link& uplink(uint32_t plane, uint32_t host) { return ports_[(plane * config_.hosts + host) * 2]; }
  Link& downlink(uint32_t plane, uint32_t host) { return ports_[(plane * config_.hosts + host) * 2 + 1]; }
  // Clos: the link between a leaf and a spine, upward (leaf -> spine) or downward.
  Link& leaf_spine_link(uint32_t plane, uint32_t leaf, uint32_t spine, bool upward) {
    return ecmp_[clos_index(plane, leaf, spine, upward)];
  }
  uint32_t leaf_of(uint32_t host) const { return host / config_.hosts_per_leaf; }  // clos
  FabricCounters counters() const;
  size_t ecmp_link_count() const { return ecmp_.size(); }  // mesh: ECMP links; clos: leaf-spine links
  size_t link_count() const { return ports_.size() + ecmp_.size(); }
  // The deepest backlog now of any link past the hosts' own ports: the
  // downlinks and the ECMP (mesh) or leaf-spine (clos) links.
  uint64_t deepest_queue(Nanos now);

 private:
  size_t pair_index(uint32_t a, uint32_t b) const;  // unordered pair
  size_t clos_index(uint32_t plane, uint32_t leaf, uint32_t spine, bool upward) const {
    return ((static_cast<size_t>(plane) * leaves_ + leaf) * config_.spines + spine) * 2 + (upward ? 0 : 1);
  }
  // The destination host of a first hop (pos.to), or why there is none.
  DropCause route(FramePosition& pos, std::span<const uint8_t> frame) const;
  DropCause forward_clos(FramePosition& pos, std::span<uint8_t> frame, Nanos now, Nanos* at, Nanos* duplicate_at);
  // Clos: the spine the leaf of pos.from sends the frame to at time now
  // (pos.ecmp is its hashed choice), or -1 when every spine towards the
  // destination leaf is withdrawn.
  int live_spine(const FramePosition& pos, std::span<const uint8_t> frame, Nanos now);
  // Clos: after leaf-spine link i was reconfigured, when it went down (or up).
  void note_up_down(size_t i, Nanos now);
  bool withdrawn(size_t link, Nanos after, Nanos now) const {
    return down_since_[link] != kUp && now - down_since_[link] >= after;
  }
  static constexpr Nanos kUp = INT64_MIN;

  FabricConfig config_;
  bool clos_ = false;
  std::vector<Link> ports_;  // [(plane*hosts + host)*2 + {0 uplink, 1 downlink}]
  std::vector<Link> ecmp_;   // mesh: [((plane*pairs + pair)*K + k)*2 + dir]; clos: [clos_index(...)]
  size_t pairs_ = 0;
  // Clos: since when each leaf-spine link has been down (kUp while up), and
  // how many are down per plane (0: every spine live, the fast path).
  uint32_t leaves_ = 0;
  std::vector<Nanos> down_since_;
  std::vector<uint32_t> plane_links_down_;
  std::vector<std::pair<uint32_t, uint32_t>> ip_index_;  // clos: (IPv4, host), sorted
  uint64_t rerouted_ = 0, no_route_ = 0;
};

}  // namespace metaroce::emulator
