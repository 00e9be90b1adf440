#include "metaroce/sim/transfer.h"

#include <stdexcept>

namespace metaroce::sim {

namespace {
constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;  // simulated only; never on a real network
const wire::MacAddr kMacA{0x02, 0, 0, 0, 0, 1}, kMacB{0x02, 0, 0, 0, 0, 2};
}  // namespace

TransferResult run_transfer(const TransferConfig& cfg) {
  using namespace transport;
  std::vector<TwoHostFabric::PlaneConfig> planes;
  double capacity = 0;
  for (const PlaneSpec& p : cfg.planes) {
    emulator::LinkConfig l;
    l.rate_bps = p.rate_bps;
    l.prop_delay_ns = p.delay_ns;
    l.loss_probability = p.loss;
    l.duplicate_probability = p.duplicate;
    l.reorder_probability = p.reorder;
    l.reorder_delay_ns = p.reorder_delay_ns;
    l.corrupt_probability = p.corrupt;
    l.queue_limit_bytes = p.queue_limit_bytes;
    l.ecn_threshold_bytes = p.ecn_threshold_bytes;
    if (auto e = emulator::validate(l)) throw std::invalid_argument("planes[]." + *e);
    planes.push_back({l, l});
    capacity += p.rate_bps;
  }
  TwoHostFabric fabric(planes, cfg.seed);
  Simulator sim(fabric);

  EndpointConfig ea, eb;
  ea.ip = kIpA, ea.mac = kMacA, ea.inbound_capacity_bps = capacity;
  eb.ip = kIpB, eb.mac = kMacB, eb.inbound_capacity_bps = capacity;
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
        paths.push_back({static_cast<uint8_t>(p), static_cast<uint16_t>(49152 + paths.size() * 97)});
    connect(1, paths);
  } else {
    // A RoCEv2 QP is pinned to one path: one QP per plane uses every plane.
    for (size_t p = 0; p < cfg.planes.size(); ++p)
      connect(static_cast<uint32_t>(1 + p), {{static_cast<uint8_t>(p), static_cast<uint16_t>(49152 + p * 97)}});
  }

  WriteWorkload work(sim, a, ha, b, conns, cfg.workload);
  sim.on_host_activity([&](int h) { work.on_activity(h); });
  for (const PlaneEvent& e : cfg.events) sim.at(e.at_ns, [&fabric, e] { fabric.set_plane_up(e.plane, e.up); });
  work.start();
  sim.run_until(cfg.duration_ns);

  TransferResult r;
  r.capacity_gbps = capacity / 1e9;
  const Nanos span = cfg.duration_ns - cfg.warmup_ns;
  r.goodput_gbps = span > 0 ? 8.0 * work.bytes_between(cfg.warmup_ns, cfg.duration_ns) / span : 0;
  r.bytes = work.bytes_completed();
  r.messages = work.messages_completed();
  r.verify_failures = work.verify_failures();
  r.error_completions = work.error_completions();
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
  for (size_t p = 0; p < cfg.planes.size(); ++p)
    for (int from = 0; from < 2; ++from) {
      const auto& c = fabric.link(from, static_cast<uint8_t>(p)).counters();
      r.link_drops_random += c.drops_random_loss;
      r.link_drops_queue += c.drops_queue_overflow;
      r.link_drops_down += c.drops_link_down;
      r.ecn_marks += c.ecn_marks;
    }
  r.events = sim.events_processed();
  return r;
}

}  // namespace metaroce::sim
