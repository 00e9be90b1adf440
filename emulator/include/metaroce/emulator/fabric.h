// The emulated fabric: P planes joining H hosts, leaf-spine style.
//
// On each plane a frame from host i to host j crosses three store-and-forward
// hops, each an emulator::Link (queue, serialiser, impairments):
//
//   uplink(plane, i)  ->  ECMP link(plane, pair{i,j}, k, direction)  ->  downlink(plane, j)
//
// k is chosen by hashing the frame's 5-tuple, so a MetaRoCE path's UDP source
// port picks its ECMP link and changing the port moves it, as on a real fabric.
// The uplink is the host's port (its back-pressure is the NIC's); the downlink
// is the queue where incast congests and ECN marks. Impairments are set per
// plane, per ECMP link and per direction (a_to_b = from the lower host index
// to the higher), and apply atomically at a given instant.
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

enum class Hop : uint8_t { kUplink = 0, kEcmp = 1, kDownlink = 2, kDelivered = 3 };

// Where a frame is in the fabric.
struct FramePosition {
  uint32_t from = 0, to = 0;
  uint8_t plane = 0;
  Hop hop = Hop::kUplink;
  uint16_t ecmp = 0;
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

struct FabricConfig {
  uint32_t hosts = 2;
  uint32_t planes = 4;
  uint32_t ecmp_links = 1;             // K parallel links per host pair and plane (1..64)
  std::vector<uint32_t> host_ips;      // host order; frames are routed by IPv4 destination
  LinkConfig port;                     // uplinks and downlinks (rate, queue, ECN; normally no impairments)
  LinkConfig ecmp;                     // every ECMP link's starting configuration
  uint64_t seed = 1;
  uint32_t hash_seed = 0;              // ECMP hash salt (switch-specific)
};

std::optional<std::string> validate(const FabricConfig& c);

// The ECMP link (0 .. ecmp_links-1) a UDP flow's 5-tuple hashes to on a fabric
// salted with hash_seed: what Fabric::ecmp_index computes for the flow's
// frames. Lets a host choose source ports (entropy) for a wanted link.
uint32_t ecmp_link_of(const wire::UdpFlow& flow, uint32_t hash_seed, uint32_t ecmp_links);

// Which links a change applies to. Unset fields mean "all".
struct LinkSelector {
  std::optional<uint32_t> plane;
  std::optional<uint32_t> ecmp;        // ECMP link index within the plane
  enum class Direction : uint8_t { kBoth, kAToB, kBToA } direction = Direction::kBoth;
  std::optional<uint32_t> host_a, host_b;  // the host pair (default: every pair)
};
// A direction's name in the API, scenario files and flags: "both", "a_to_b", "b_to_a".
const char* direction_name(LinkSelector::Direction d);
std::optional<LinkSelector::Direction> parse_direction(std::string_view name);

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
// range, a host pair of two different hosts.
std::optional<std::string> validate(const LinkSelector& sel, const FabricConfig& shape);

struct FabricCounters {
  LinkCounters total;                  // all hops
  std::vector<LinkCounters> per_plane; // ECMP hops only, summed over the plane
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
  // the ECMP link are derived from the frame. A duplicate, if the hop made one,
  // is reported in *duplicate_at (>= 0) and follows the same route (the caller
  // gives the copy pos.marks | kMarkDuplicate). What the hop did to the frame
  // is added to pos.marks.
  DropCause forward(FramePosition& pos, std::span<uint8_t> frame, Nanos now, Nanos* at, Nanos* duplicate_at);

  // Back-pressure of a host's port on a plane.
  bool uplink_ready(uint32_t host, uint32_t plane, uint32_t max_backlog_bytes, Nanos now);
  Nanos uplink_ready_at(uint32_t host, uint32_t plane, uint32_t max_backlog_bytes, Nanos now);

  // Validates the whole change first: either every selected link changes or
  // none. *links_changed (if given): how many did.
  std::optional<std::string> apply(const LinkSelector& sel, const LinkPatch& patch, Nanos now,
                                   uint32_t* links_changed = nullptr);

  // Every ECMP link back to the configuration the fabric started with
  // (config().ecmp), at once. Returns how many links that is.
  uint32_t reset_ecmp_links(Nanos now);

  // Setup: the uplinks and downlinks of one plane (e.g. planes of different speeds).
  std::optional<std::string> set_port_config(uint32_t plane, const LinkConfig& c);

  // ECMP link index the 5-tuple of frame hashes to on this fabric (-1 if not UDP/IPv4).
  int ecmp_index(std::span<const uint8_t> frame) const;

  Link& ecmp_link(uint32_t plane, uint32_t a, uint32_t b, uint32_t k);  // directed a -> b
  Link& uplink(uint32_t plane, uint32_t host) { return ports_[(plane * config_.hosts + host) * 2]; }
  Link& downlink(uint32_t plane, uint32_t host) { return ports_[(plane * config_.hosts + host) * 2 + 1]; }
  FabricCounters counters() const;
  size_t ecmp_link_count() const { return ecmp_.size(); }

 private:
  size_t pair_index(uint32_t a, uint32_t b) const;  // unordered pair
  FabricConfig config_;
  std::vector<Link> ports_;  // [(plane*hosts + host)*2 + {0 uplink, 1 downlink}]
  std::vector<Link> ecmp_;   // [((plane*pairs + pair)*K + k)*2 + dir]
  size_t pairs_ = 0;
};

}  // namespace metaroce::emulator
