#include "metaroce/sim/transfer.h"

#include <algorithm>
#include <stdexcept>

#include "metaroce/wire/metaroce.h"

namespace metaroce::sim {

namespace {
constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;  // simulated only; never on a real network
const wire::MacAddr kMacA{0x02, 0, 0, 0, 0, 1}, kMacB{0x02, 0, 0, 0, 0, 2};
}  // namespace

namespace {
uint16_t path_port(const TransferConfig& cfg, uint32_t plane, uint32_t k) {
  const size_t index = cfg.transport == transport::TransportKind::kMetaRoCE ? k * cfg.planes.size() + plane : plane;
  return static_cast<uint16_t>(49152 + index * 97);
}
}  // namespace

uint32_t ecmp_link_of_path(const TransferConfig& cfg, uint32_t plane, uint32_t k) {
  emulator::FabricConfig fc;
  fc.planes = static_cast<uint32_t>(cfg.planes.size());
  fc.ecmp_links = cfg.ecmp_links;
  emulator::Fabric f(fc);
  std::vector<uint8_t> frame(wire::kUdpFrameHeaderBytes);
  wire::UdpFlow flow;
  flow.src_ip = kIpA;
  flow.dst_ip = kIpB;
  flow.src_port = path_port(cfg, plane, k);
  flow.dst_port = cfg.transport == transport::TransportKind::kMetaRoCE ? wire::kDefaultUdpPort : 4791;
  wire::encode_udp_headers(frame, flow, wire::Ecn::kNotEct, 0, 0);
  return static_cast<uint32_t>(std::max(0, f.ecmp_index(frame)));
}

TransferResult run_transfer(const TransferConfig& cfg) {
  using namespace transport;
  double capacity = 0;
  emulator::FabricConfig fc;
  fc.hosts = 2;
  fc.planes = static_cast<uint32_t>(cfg.planes.size());
  fc.ecmp_links = cfg.ecmp_links;
  fc.host_ips = {kIpA, kIpB};
  fc.seed = cfg.seed;
  if (auto e = emulator::validate(fc)) throw std::invalid_argument(*e);
  emulator::Fabric fabric(fc);
  for (size_t i = 0; i < cfg.planes.size(); ++i) {
    const PlaneSpec& p = cfg.planes[i];
    emulator::LinkConfig port;
    port.rate_bps = p.rate_bps;
    port.prop_delay_ns = 0;
    port.queue_limit_bytes = p.queue_limit_bytes;
    port.ecn_threshold_bytes = p.ecn_threshold_bytes;
    if (auto e = fabric.set_port_config(static_cast<uint32_t>(i), port))
      throw std::invalid_argument("planes[" + std::to_string(i) + "]." + *e);
    emulator::LinkSelector sel;
    sel.plane = static_cast<uint32_t>(i);
    emulator::LinkPatch patch;
    patch.rate_bps = p.rate_bps;
    patch.prop_delay_ns = p.delay_ns;
    patch.queue_limit_bytes = p.queue_limit_bytes;
    patch.ecn_threshold_bytes = p.ecn_threshold_bytes;
    patch.loss_probability = p.loss;
    patch.duplicate_probability = p.duplicate;
    patch.corrupt_probability = p.corrupt;
    patch.reorder_probability = p.reorder;
    patch.reorder_delay_ns = p.reorder_delay_ns;
    if (auto e = fabric.apply(sel, patch, 0)) throw std::invalid_argument("planes[" + std::to_string(i) + "]." + *e);
    capacity += p.rate_bps;
  }
  emulator::Timeline timeline = cfg.timeline;
  for (const PlaneEvent& e : cfg.events) {
    emulator::LinkSelector sel;
    sel.plane = e.plane;
    if (e.up) timeline.up(e.at_ns, sel);
    else timeline.down(e.at_ns, sel);
  }
  if (auto e = timeline.validate(fabric.config())) throw std::invalid_argument(*e);
  EmulatedFabric sim_fabric(fabric);
  sim_fabric.set_timeline(timeline);
  Simulator sim(sim_fabric);

  EndpointConfig ea, eb;
  ea.ip = kIpA, ea.mac = kMacA, ea.inbound_capacity_bps = capacity;
  eb.ip = kIpB, eb.mac = kMacB, eb.inbound_capacity_bps = capacity;
  // A's completions: one per WRITE outstanding (WriteWorkload::max_outstanding);
  // B completes nothing (WRITEs only).
  const size_t connections = cfg.transport == TransportKind::kMetaRoCE ? 1 : cfg.planes.size();
  ea.completion_queue_depth = static_cast<uint32_t>(
      std::clamp<uint64_t>(WriteWorkload::max_outstanding(connections, cfg.workload), 1, 1u << 24));
  eb.completion_queue_depth = 1;
  Endpoint a(ea), b(eb);
  const int ha = sim.add_host(&a);
  sim.add_host(&b);

  std::vector<uint32_t> conns;
  auto connect = [&](uint32_t id, std::vector<PathConfig> paths) {
    ConnectionConfig ca;
    ca.transport = cfg.transport;
    ca.local_id = id;
    ca.remote_id = id + 0x1000;
    ca.peer_ip = kIpB;
    ca.peer_mac = kMacB;
    ca.paths = paths;
    ca.streams = cfg.workload.streams;
    ca.max_outstanding_per_stream = std::max<uint32_t>(cfg.workload.depth, 1);
    ca.recv_window_messages = std::max<uint32_t>(128, ca.max_outstanding_per_stream);
    ca.max_message_bytes = std::max<uint32_t>(cfg.workload.message_bytes, 4096);
    ca.mtu_payload = cfg.mtu_payload;
    ca.tuning = cfg.tuning;
    ConnectionConfig cb = ca;
    std::swap(cb.local_id, cb.remote_id);
    cb.peer_ip = kIpA;
    cb.peer_mac = kMacA;
    std::string err;
    if (!a.create_connection(ca, &err) || !b.create_connection(cb, &err))
      throw std::invalid_argument("connection: " + err);
    conns.push_back(id);
  };
  if (cfg.transport == TransportKind::kMetaRoCE) {
    std::vector<PathConfig> paths;
    for (uint32_t k = 0; k < cfg.paths_per_plane; ++k)
      for (size_t p = 0; p < cfg.planes.size(); ++p)
        paths.push_back({static_cast<uint8_t>(p), path_port(cfg, static_cast<uint32_t>(p), k)});
    connect(1, paths);
  } else {
    // A RoCEv2 QP is pinned to one path: one QP per plane uses every plane.
    for (size_t p = 0; p < cfg.planes.size(); ++p)
      connect(static_cast<uint32_t>(1 + p), {{static_cast<uint8_t>(p), path_port(cfg, static_cast<uint32_t>(p), 0)}});
  }

  WriteWorkload work(sim, a, ha, b, conns, cfg.workload);
  sim.on_host_activity([&](int h) { work.on_activity(h); });
  // Apply timeline changes at their instants even when no frame passes then.
  for (const auto& e : timeline.events()) sim.at(e.at_ns, [&sim_fabric, t = e.at_ns] { sim_fabric.apply_due(t); });
  work.start();
  sim.run_until(cfg.duration_ns);

  TransferResult r;
  r.capacity_gbps = capacity / 1e9;
  const Nanos span = cfg.duration_ns - cfg.warmup_ns;
  r.goodput_gbps = span > 0 ? 8.0 * work.bytes_between(cfg.warmup_ns, cfg.duration_ns) / span : 0;
  r.bytes = work.bytes_completed();
  r.messages = work.messages_completed();
  r.verify_failures = work.verify_failures();
  // Completions the queue could not take count as errors (never expected: it is sized above).
  r.error_completions = work.error_completions() + a.counters().completion_queue_overflow;
  r.data_verified = r.messages > 0 && r.verify_failures == 0 && r.error_completions == 0;
  for (Nanos t = 0; t + cfg.interval_ns <= cfg.duration_ns; t += cfg.interval_ns)
    r.interval_gbps.push_back(8.0 * work.bytes_between(t, t + cfg.interval_ns) / cfg.interval_ns);
  for (uint32_t c : conns) {
    const ConnectionStats sa = a.stats(c);
    const ConnectionStats sb = b.stats(c + 0x1000);
    r.data_packets += sa.data_packets_sent;
    r.retransmits += sa.retransmits;
    r.rtos += sa.rtos;
    // MetaRoCE detects spurious retransmits at the sender (the original was
    // acknowledged after we resent it); in go-back-N the responder sees them
    // as duplicates of PSNs it had already accepted.
    r.spurious_retransmits += cfg.transport == TransportKind::kMetaRoCE ? sa.spurious_retransmits
                                                                         : sb.duplicates_received;
    if (cfg.transport == TransportKind::kMetaRoCE) r.paths = sa.paths;
  }
  const emulator::FabricCounters c = fabric.counters();
  r.link_drops_random = c.total.drops_random_loss;
  r.link_drops_queue = c.total.drops_queue_overflow;
  r.link_drops_down = c.total.drops_link_down;
  r.ecn_marks = c.total.ecn_marks;
  r.link_reorders = c.total.reorders;
  r.link_duplicates = c.total.duplicates;
  r.link_corruptions = c.total.corruptions;
  r.endpoint_checksum_drops = a.counters().drop_checksum + b.counters().drop_checksum;
  r.events = sim.events_processed();
  return r;
}

}  // namespace metaroce::sim
