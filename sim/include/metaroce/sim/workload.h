// Saturating, self-verifying WRITE traffic between two simulated endpoints.
//
// Each connection keeps `depth` WRITEs outstanding. Every message has its own
// freshly generated content in a source slot; when the sender's completion
// arrives, the destination slot must equal the source byte for byte (the
// receiver placed everything before the sender completed), then the
// destination is scribbled over so the next message in that slot must
// rewrite every byte. Any mismatch is counted, never ignored.
#pragma once

#include <cstdint>
#include <vector>

#include "metaroce/sim/simulator.h"
#include "metaroce/transport/endpoint.h"

namespace metaroce::sim {

struct WriteWorkloadConfig {
  uint32_t message_bytes = 64 * 1024;
  uint32_t depth = 16;       // outstanding WRITEs per connection and stream
  uint16_t streams = 1;      // streams used per connection
  uint32_t slots = 64;       // buffers per connection and stream (>= depth)
  uint64_t seed = 1;
  bool record_latency = false;  // keep every message's post-to-completion time (latencies())
};

struct Sample {
  Nanos at;
  uint64_t bytes;  // cumulative payload bytes completed and verified
};

class WriteWorkload {
 public:
  WriteWorkload(Simulator& sim, transport::Endpoint& src, int src_host, transport::Endpoint& dst,
                std::vector<uint32_t> src_conns, const WriteWorkloadConfig& cfg);

  void start();
  void stop() { stopped_ = true; }
  // Hook for Simulator::on_host_activity.
  void on_activity(int host);
  // One completion of this workload's connections, for a caller that polls an
  // endpoint shared by several workloads itself (dispatching by wc.conn).
  void on_completion(const transport::Completion& wc);

  uint64_t bytes_completed() const { return bytes_; }
  uint64_t messages_completed() const { return messages_; }
  uint64_t verify_failures() const { return verify_failures_; }
  uint64_t error_completions() const { return errors_; }
  // Payload bytes completed on each connection, in src_conns order (all its streams).
  std::vector<uint64_t> bytes_by_connection() const;
  // Cumulative bytes at completion times (one sample per completion).
  const std::vector<Sample>& samples() const { return samples_; }
  // Payload bytes completed in [from, to).
  uint64_t bytes_between(Nanos from, Nanos to) const;
  // Post-to-completion time of every successful message, in completion order
  // (empty unless cfg.record_latency).
  const std::vector<Nanos>& latencies() const { return latencies_; }

 private:
  struct Slot {
    uint64_t message_id = 0;
    Nanos posted_at = 0;
    bool busy = false;
  };
  struct Lane {  // one (connection, stream)
    uint32_t conn;
    uint16_t stream;
    uint8_t* src;
    uint8_t* dst;
    uint32_t src_key, dst_key;
    std::vector<Slot> slots;
    uint32_t next_slot = 0;
    uint32_t conn_index;  // position of conn in src_conns
    uint64_t bytes = 0;   // completed and verified on this lane
  };
  void post_one(Lane& lane);
  void fill(uint8_t* p, uint64_t message_id);

  Simulator& sim_;
  transport::Endpoint& src_;
  int src_host_;
  transport::Endpoint& dst_;
  WriteWorkloadConfig cfg_;
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<Lane> lanes_;
  size_t connections_ = 0;
  uint64_t next_message_ = 1;
  uint64_t bytes_ = 0, messages_ = 0, verify_failures_ = 0, errors_ = 0;
  std::vector<Sample> samples_;
  std::vector<Nanos> latencies_;
  bool stopped_ = false;
};

}  // namespace metaroce::sim
