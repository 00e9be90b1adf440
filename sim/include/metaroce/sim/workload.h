// Saturating, self-verifying WRITE traffic between two simulated endpoints.
//
// Each connection keeps `depth` WRITEs outstanding. A message is read from a
// source pattern (random bytes, generated once per workload and never
// written again) at an offset that no other outstanding message uses and
// that alternates between successive messages of the same destination slot;
// when the sender's completion arrives, the destination slot must equal that
// window of the pattern byte for byte (the receiver placed everything before
// the sender completed), then the destination is scribbled over so the next
// message in that slot must rewrite every byte. Any mismatch is counted,
// never ignored.
//
// Memory: one registered region per side and workload (the pattern at the
// source, every connection's destination slots at the destination, each
// connection and stream addressing its own slots at an offset): message
// bytes + 16 B per slot at the source, slots x message bytes at the
// destination; by default slots = depth, what can be outstanding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "metaroce/sim/simulator.h"
#include "metaroce/transport/endpoint.h"

namespace metaroce::sim {

struct WriteWorkloadConfig {
  uint32_t message_bytes = 64 * 1024;
  uint32_t depth = 16;       // outstanding WRITEs per connection and stream
  uint16_t streams = 1;      // streams used per connection
  uint32_t slots = 0;        // destination slots per connection and stream (>= depth; 0: depth)
  uint64_t seed = 1;
  bool record_latency = false;  // keep every message's post-to-completion time (latencies())
  // Messages each connection sends, then it is done (its streams take turns:
  // stream s sends messages / streams, the first messages % streams one
  // more); 0: it keeps sending until stop().
  uint64_t messages = 0;

  // The most messages one (connection, stream) lane sends; 0: unlimited.
  uint64_t lane_messages_max() const { return messages == 0 ? 0 : (messages + streams - 1) / streams; }
  // Destination slots per lane: what can be outstanding on it (depth, or
  // `slots`), and never more than the messages it will send.
  uint32_t slots_per_lane() const {
    const uint64_t want = slots ? slots : depth, most = lane_messages_max();
    return static_cast<uint32_t>(most ? std::max<uint64_t>(1, std::min(want, most)) : want);
  }
  // Payload bytes a workload of `connections` connections allocates: the
  // source pattern (a message + 16 B per slot) and every destination slot.
  uint64_t buffer_bytes(uint64_t connections) const {
    const uint64_t total_slots = connections * streams * slots_per_lane();
    return message_bytes + 16 * total_slots + total_slots * message_bytes;
  }
};

struct Sample {
  Nanos at;
  uint64_t bytes;  // cumulative payload bytes completed and verified
};

// Fills `bytes` with a random, aperiodic pattern from `seed` (xorshift64):
// windows at different offsets differ, so a WRITE read from the wrong offset
// or placed at the wrong one shows.
void fill_random_pattern(std::vector<uint8_t>& bytes, uint64_t seed);

// Payload bytes completed after `from` up to and including `to`, from
// samples in completion order.
uint64_t bytes_between(const std::vector<Sample>& samples, Nanos from, Nanos to);

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

  // Every connection sent its cfg.messages and each completed (never with
  // cfg.messages 0).
  bool done() const { return cfg_.messages != 0 && messages_ + errors_ >= planned_; }
  uint64_t bytes_completed() const { return bytes_; }
  uint64_t messages_completed() const { return messages_; }
  uint64_t verify_failures() const { return verify_failures_; }
  // Payload buffers the workload allocated (source pattern + destination
  // slots), fixed from construction; what it costs per connection is this /
  // connections.
  uint64_t buffer_bytes() const { return pattern_.size() + dst_region_.size(); }
  // Completions the source endpoint can hold at once for this workload: one
  // per WRITE outstanding (connections x streams x depth). A completion stays
  // outstanding until polled, and a slot is posted again only from its
  // completion, so a completion queue this deep (per workload sharing it)
  // cannot overflow.
  static uint64_t max_outstanding(size_t connections, const WriteWorkloadConfig& cfg) {
    return static_cast<uint64_t>(connections) * cfg.streams * std::min<uint64_t>(cfg.depth, cfg.slots_per_lane());
  }
  uint64_t error_completions() const { return errors_; }
  // Payload bytes completed on each connection, in src_conns order (all its streams).
  std::vector<uint64_t> bytes_by_connection() const;
  // Cumulative bytes at completion times (one sample per completion).
  const std::vector<Sample>& samples() const { return samples_; }
  // Payload bytes completed in (from, to] (sim::bytes_between).
  uint64_t bytes_between(Nanos from, Nanos to) const;
  // Post-to-completion time of every successful message, in completion order
  // (empty unless cfg.record_latency).
  const std::vector<Nanos>& latencies() const { return latencies_; }

 private:
  struct Slot {
    Nanos posted_at = 0;
    uint32_t uses = 0;  // messages posted from this slot so far
    bool busy = false;
  };
  struct Lane {  // one (connection, stream)
    uint32_t conn;
    uint16_t stream;
    uint32_t first_slot;  // its slots' index in the destination region
    std::vector<Slot> slots;
    uint32_t next_slot = 0;
    uint32_t conn_index;  // position of conn in src_conns
    uint64_t bytes = 0;   // completed and verified on this lane
    uint64_t unposted = UINT64_MAX;  // messages it has yet to post (cfg.messages)
  };
  void post_one(Lane& lane);
  // The source bytes of the message in (lane, slot idx) at that slot's use'th use.
  const uint8_t* source(const Lane& lane, uint32_t idx, uint32_t use) const;
  uint8_t* destination(const Lane& lane, uint32_t idx);

  Simulator& sim_;
  transport::Endpoint& src_;
  int src_host_;
  transport::Endpoint& dst_;
  WriteWorkloadConfig cfg_;
  uint32_t slots_ = 0;               // destination slots per lane
  std::vector<uint8_t> pattern_;     // source: message bytes + 16 B per destination slot
  std::vector<uint8_t> dst_region_;  // destination: lanes x slots_ x message bytes
  uint32_t src_key_ = 0, dst_key_ = 0;
  std::vector<Lane> lanes_;
  size_t connections_ = 0;
  uint64_t bytes_ = 0, messages_ = 0, verify_failures_ = 0, errors_ = 0;
  uint64_t planned_ = 0;  // messages over all lanes (cfg.messages x connections)
  std::vector<Sample> samples_;
  std::vector<Nanos> latencies_;
  bool stopped_ = false;
};

}  // namespace metaroce::sim
