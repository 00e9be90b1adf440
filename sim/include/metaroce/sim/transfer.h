// One simulated bulk-WRITE run between two hosts over P planes: the unit the
// loss sweep, the engine tests and (later) scenarios are built from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metaroce/emulator/timeline.h"
#include "metaroce/sim/workload.h"
#include "metaroce/transport/types.h"

namespace metaroce::sim {

struct PlaneSpec {
  double rate_bps = 25e9;
  Nanos delay_ns = 2000;        // one-way propagation
  double loss = 0.0;            // both directions (data and ACKs)
  double duplicate = 0.0;       // probability a packet is duplicated
  double reorder = 0.0;         // probability a packet is held back by reorder_delay_ns
  Nanos reorder_delay_ns = 0;
  double corrupt = 0.0;         // probability of a bit flip
  uint32_t queue_limit_bytes = 4u << 20;
  uint32_t ecn_threshold_bytes = 256 * 1024;
};

struct PlaneEvent {
  Nanos at_ns;
  uint8_t plane;
  bool up;
};

// A whole-run description. The fabric is the full emulator (uplink, ECMP
// link chosen by 5-tuple hash, downlink per plane); PlaneSpec sets every ECMP
// link of its plane, the ports run at the plane's rate with its queue and ECN
// settings; `timeline` adds timed changes (gray failure on one ECMP link, ramps,
// flapping) on top of the simple plane up/down `events`.
struct TransferConfig {
  transport::TransportKind transport = transport::TransportKind::kMetaRoCE;
  std::vector<PlaneSpec> planes = std::vector<PlaneSpec>(4);
  Nanos duration_ns = 10'000'000;
  Nanos warmup_ns = 1'000'000;  // excluded from goodput
  WriteWorkloadConfig workload;
  uint32_t paths_per_plane = 1;  // MetaRoCE paths on each plane
  uint32_t ecmp_links = 1;       // parallel ECMP links per plane
  emulator::Timeline timeline;
  transport::TransportTuning tuning;
  uint32_t mtu_payload = 4096;
  std::vector<PlaneEvent> events;
  Nanos interval_ns = 500'000;  // goodput time series resolution
  uint64_t seed = 1;
};

struct TransferResult {
  double goodput_gbps = 0;       // payload, verified, after warm-up
  double capacity_gbps = 0;      // sum of plane rates
  uint64_t bytes = 0, messages = 0;
  uint64_t data_packets = 0, retransmits = 0, spurious_retransmits = 0, rtos = 0;
  uint64_t verify_failures = 0, error_completions = 0;
  bool data_verified = false;    // at least one message and no mismatch or error
  std::vector<double> interval_gbps;  // goodput per interval from t=0
  uint64_t link_drops_random = 0, link_drops_queue = 0, link_drops_down = 0, ecn_marks = 0;
  uint64_t events = 0;
  uint64_t link_reorders = 0, link_duplicates = 0, link_corruptions = 0;
  uint64_t endpoint_checksum_drops = 0;  // corrupted frames the receivers' integrity checks caught
  std::vector<transport::PathStats> paths;  // MetaRoCE sender's paths
};

TransferResult run_transfer(const TransferConfig& cfg);

// The ECMP link (of its plane) that the k-th path on `plane` hashes to in a
// run_transfer fabric: lets a scenario put a gray failure where traffic is.
uint32_t ecmp_link_of_path(const TransferConfig& cfg, uint32_t plane, uint32_t k);

}  // namespace metaroce::sim
