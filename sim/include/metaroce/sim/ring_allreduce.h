// The step structure of a ring all-reduce over simulated endpoints, every
// byte verified.
//
// n >= 2 positions in a ring; position i only WRITEs to position (i+1) % n.
// One iteration is 2(n-1) steps (reduce-scatter, then all-gather); at each
// step every position WRITEs one chunk, ceil(buffer_bytes / n) bytes, to its
// successor, split as evenly as possible over its connections (one WRITE per
// connection with a nonzero share). The arithmetic of the reduction is not
// modelled: what matters to the transport is who waits for whom.
//
// Dependencies: position i posts step k >= 1 when its own step k-1 WRITEs and
// its predecessor's step k-1 WRITEs have all completed (a WRITE's sender
// completion means the receiver placed every byte, so i holds the data it
// forwards). Step 0 is posted when the iteration starts; iteration t+1
// starts at every position once every position has finished iteration t (a
// barrier), until stop() or cfg.iterations.
//
// Verification, as WriteWorkload does it: a WRITE reads a window of one
// random source pattern whose offset changes with the position and the step
// (so successive uses of a destination and neighbouring positions send
// different bytes), and lands in the receiver's destination slot for the
// step's parity. At the sender's completion the slot must equal that window
// byte for byte; then it is scribbled over (0xEE) so the next WRITE into it
// must rewrite every byte. A mismatch is counted, never ignored.
//
// Errors: a completion with a failed status, or a post the endpoint refuses
// (e.g. a share above the connection's max_message_bytes), is counted in
// error_completions() and stops that position: it posts nothing more, so its
// successors and the barrier wait for it and the iteration never completes.
// first_error() says where and why; the run does not hang silently.
//
// Memory for payloads (buffer_bytes()), fixed at construction and
// independent of the iteration count: one source pattern of chunk + 8 x
// (2n + 1) bytes, shared by every position (registered at each endpoint),
// and 2 destination slots of chunk bytes per position: about 3 x
// cfg.buffer_bytes in all. Samples and latencies grow with the run, one
// entry per WRITE and per iteration, as WriteWorkload's do.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "metaroce/sim/simulator.h"
#include "metaroce/sim/workload.h"
#include "metaroce/transport/endpoint.h"

namespace metaroce::sim {

struct RingAllReduceConfig {
  uint32_t buffer_bytes = 1 << 20;  // the buffer being all-reduced; chunk = ceil(buffer_bytes / n)
  uint64_t iterations = 0;          // 0: until stop()
  uint64_t seed = 1;
  bool record_latency = false;      // keep every iteration's completion time (latencies())
};

// A position posted a step, or every WRITE of a step it posted completed
// successfully (RingAllReduceWorkload::on_step).
struct RingStepEvent {
  enum class Kind : uint8_t { kPosted, kCompleted } kind = Kind::kPosted;
  Nanos at = 0;
  uint32_t position = 0;
  uint64_t iteration = 0;
  uint32_t step = 0;  // within the iteration, [0, 2(n-1))
};

class RingAllReduceWorkload {
 public:
  // ring_endpoints[i] is position i, simulator host ring_hosts[i] (distinct);
  // conns[i] are connection ids local to ring_endpoints[i], each connected to
  // ring_endpoints[(i+1) % n], used by this workload alone (stream 0, one
  // WRITE outstanding at a time). Throws std::invalid_argument naming the
  // problem: fewer than 2 positions, sizes that differ, a null or repeated
  // endpoint, a negative or repeated host, a position without connections or
  // with one twice, buffer_bytes 0.
  RingAllReduceWorkload(Simulator& sim, std::vector<transport::Endpoint*> ring_endpoints, std::vector<int> ring_hosts,
                        std::vector<std::vector<uint32_t>> conns, const RingAllReduceConfig& cfg);

  // Starts the first iteration (once; later calls do nothing).
  void start();
  // Posts nothing more (no further step, no further iteration); WRITEs
  // outstanding still complete and are verified and counted.
  void stop() { stopped_ = true; }
  // One completion of this workload's connections at simulator host `host`,
  // for a caller that polls the endpoints itself (Simulator::on_host_activity).
  void on_completion(int host, const transport::Completion& wc);
  // Hook for Simulator::on_host_activity when the workload is alone on its
  // endpoints: polls the host's endpoint and takes every completion.
  void on_activity(int host);
  // Every step posted and completed, as it happens (tests, traces); empty to
  // stop. Off, it costs one test per step and position.
  void on_step(std::function<void(const RingStepEvent&)> fn) { step_observer_ = std::move(fn); }

  size_t positions() const { return positions_.size(); }
  uint32_t steps_per_iteration() const { return steps_; }
  uint32_t chunk_bytes() const { return chunk_; }
  // Payload bytes of completed and verified WRITEs (a mismatch still counts
  // its bytes: it completed; verify_failures() says it was wrong).
  uint64_t bytes_completed() const { return bytes_; }
  uint64_t messages_completed() const { return messages_; }
  uint64_t iterations_completed() const { return iterations_; }
  uint64_t verify_failures() const { return verify_failures_; }
  // Completions with a failed status, posts the endpoint refused, and
  // completions that are not this workload's.
  uint64_t error_completions() const { return errors_; }
  // The first error in words ("position 2 (host 2), iteration 0 step 3,
  // connection 7: completion remote_aborted"); empty while there is none.
  const std::string& first_error() const { return first_error_; }
  // cfg.iterations completed (never with cfg.iterations = 0).
  bool done() const { return cfg_.iterations != 0 && iterations_ >= cfg_.iterations; }
  // Payload buffers allocated (source pattern + destination slots), fixed
  // from construction: buffer_bytes_for(positions, cfg.buffer_bytes).
  uint64_t buffer_bytes() const { return pattern_.size() + dst_region_.size(); }
  // The chunk a step moves, and the payload buffers a ring of n positions
  // allocates: one pattern of a chunk + 8 B per window (2n + 1 windows) and
  // two destination slots of a chunk per position.
  static uint32_t chunk_bytes_for(size_t n, uint32_t buffer_bytes) {
    return static_cast<uint32_t>(std::max<uint64_t>(1, (uint64_t{buffer_bytes} + n - 1) / n));
  }
  static uint64_t buffer_bytes_for(size_t n, uint32_t buffer_bytes) {
    const uint64_t chunk = chunk_bytes_for(n, buffer_bytes);
    return chunk + 8 * (2 * n + 1) + n * 2 * chunk;
  }
  // Completions any one endpoint can hold at once for this workload: a
  // position has one step outstanding at a time, one WRITE per connection,
  // and WRITEs complete only at the sender; each endpoint is one position.
  // So the most connections of any position.
  static uint64_t max_outstanding(const std::vector<std::vector<uint32_t>>& conns);
  // Payload bytes completed on each connection: position 0's connections in
  // conns order, then position 1's, ...
  std::vector<uint64_t> bytes_by_connection() const { return bytes_by_conn_; }
  // Cumulative bytes at completion times (one sample per completed WRITE).
  const std::vector<Sample>& samples() const { return samples_; }
  // Payload bytes completed in (from, to] (sim::bytes_between).
  uint64_t bytes_between(Nanos from, Nanos to) const;
  // Start-to-finish time of every completed iteration (from its start to the
  // last position's last step), in order; empty unless cfg.record_latency.
  const std::vector<Nanos>& latencies() const { return latencies_; }

 private:
  struct Position {
    transport::Endpoint* ep = nullptr;
    int host = -1;
    std::vector<uint32_t> conns;
    size_t first_conn = 0;     // its connections' index in bytes_by_conn_
    uint32_t lkey = 0;         // the pattern, at ep
    uint32_t rkey = 0;         // its destination slots, at ep
    uint8_t* slots = nullptr;  // its 2 destination slots of chunk bytes each
    uint32_t steps_done = 0;   // steps of the current iteration completed
    uint32_t outstanding = 0;  // WRITEs of the step posted and not yet completed
    bool posting = false;      // step steps_done is posted and not finished
    bool failed = false;       // an error stopped it
  };
  // Posts step steps_done at position i if it may (stopped, failed, posted,
  // or waiting for its predecessor: not).
  void try_post(uint32_t i);
  void post_step(uint32_t i);
  void start_iteration();
  // The step's global number across iterations (what selects source windows).
  uint64_t global_step(uint32_t step) const { return iteration_ * steps_ + step; }
  const uint8_t* source(uint32_t i, uint64_t global) const;
  // Share j of a chunk split over m connections: offset and length.
  void share(uint32_t j, size_t m, uint32_t* offset, uint32_t* length) const;
  void fail(uint32_t i, uint32_t conn, const char* what, const char* name);
  void note_step(RingStepEvent::Kind kind, uint32_t i, uint32_t step) {
    if (step_observer_) step_observer_({kind, sim_.now(), i, iteration_, step});
  }

  Simulator& sim_;
  RingAllReduceConfig cfg_;
  uint32_t chunk_ = 0;
  uint32_t steps_ = 0;    // per iteration: 2(n-1)
  uint32_t windows_ = 0;  // source windows, 8 bytes apart: 2n + 1
  std::vector<Position> positions_;
  std::vector<int> position_of_host_;  // by simulator host id; -1: none
  std::vector<uint8_t> pattern_;       // chunk + 8 x windows_ random bytes
  std::vector<uint8_t> dst_region_;    // n x 2 slots x chunk
  uint64_t iteration_ = 0;             // the current one
  Nanos iteration_start_ = 0;
  uint32_t positions_finished_ = 0;    // that completed every step of the current iteration
  uint64_t bytes_ = 0, messages_ = 0, iterations_ = 0, verify_failures_ = 0, errors_ = 0;
  std::vector<uint64_t> bytes_by_conn_;
  std::vector<Sample> samples_;
  std::vector<Nanos> latencies_;
  std::string first_error_;
  std::function<void(const RingStepEvent&)> step_observer_;
  bool started_ = false, stopped_ = false;
};

}  // namespace metaroce::sim
