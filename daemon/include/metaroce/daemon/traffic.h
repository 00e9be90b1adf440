// Traffic generation and checking inside an endpoint worker: the requester
// side of a job (TrafficDriver) and the responder side of a connection
// (Responder). Both run on the worker thread that owns the Endpoint; only the
// progress atomics are read from other threads. Memory for messages is
// allocated and registered once at creation; the per-message path posts,
// polls and checks without allocating.
//
// Data pattern (what "verified" means):
//   The target of each stream is a ring of slots_per_stream slots of
//   slot_bytes. Message i of stream s uses slot (s, i % slots_per_stream).
//   Every 8-byte word w >= 1 of slot k holds pattern_word(seed, k, w); word 0
//   is the message header (s << 48 | i) for WRITE/WRITE_IMM/SEND, and
//   pattern_word(seed, k, 0) for READ targets. Messages shorter than 8 bytes
//   carry pattern bytes only. Every slot of the target starts out holding the
//   full pattern (word 0 included), so bytes a message did not write still
//   match. Atomics use one 8-byte counter per stream, kept apart from the
//   slots (which hold the pattern) at offset layout.bytes() + 8 * s of the
//   target and starting at 0: FETCH_ADD adds 1 and must return i; CMP_SWAP
//   swaps i for i + 1 and must return i. The message index i counts per
//   stream over the whole job (it does not restart with each size).
//   slots_per_stream is 2 x queue depth, so a slot is never rewritten while
//   an earlier message to it can still be in flight.
//   Both ends must build the layout from the same (streams, queue_depth,
//   max_message_bytes).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metaroce/emulator/histogram.h"
#include "metaroce/transport/endpoint.h"
#include "metaroce/transport/operations.h"

namespace metaroce::daemon {

using transport::Nanos;

// A job's operation and its name: one table, transport/operations.h.
using transport::is_atomic;
using transport::Operation;
using transport::operation_name;
using transport::parse_operation;

uint64_t pattern_word(uint64_t seed, uint64_t slot, uint64_t word);
// Fills n bytes at p with the pattern of slot (every word, including word 0).
void fill_pattern(uint8_t* p, size_t n, uint64_t seed, uint64_t slot);
// Offset of the first byte at or after from_byte that differs from the
// pattern of slot, or SIZE_MAX when all match.
size_t check_pattern(const uint8_t* p, size_t n, uint64_t seed, uint64_t slot, size_t from_byte = 0);
inline uint64_t message_header(uint32_t stream, uint64_t index) { return (uint64_t{stream} << 48) | index; }

// Slot ring geometry shared by both ends (computed from the same inputs).
struct SlotLayout {
  uint32_t streams = 1;
  uint32_t slots_per_stream = 2;
  uint32_t slot_bytes = 8;
  uint64_t bytes() const { return uint64_t{streams} * slots_per_stream * slot_bytes; }
  uint64_t slot_index(uint32_t stream, uint64_t i) const { return uint64_t{stream} * slots_per_stream + i % slots_per_stream; }
  uint64_t offset(uint32_t stream, uint64_t i) const { return slot_index(stream, i) * slot_bytes; }
  // The atomic counters follow the slots: 8 bytes per stream.
  uint64_t counter_offset(uint32_t stream) const { return bytes() + 8 * uint64_t{stream}; }
  uint64_t target_bytes() const { return bytes() + 8 * uint64_t{streams}; }
};
// slots_per_stream = 2 x max(queue_depth, 1); slot_bytes = max(8, max_message_bytes rounded up to 8).
SlotLayout make_layout(uint32_t streams, uint32_t queue_depth, uint32_t max_message_bytes);

// The remote side of one connection, as the responder reported it.
struct DriverConnection {
  uint32_t conn = 0;         // local connection id
  uint64_t remote_addr = 0;  // target region at the responder
  uint32_t rkey = 0;
  uint64_t remote_bytes = 0;
};

struct DriverSpec {
  Operation op = Operation::kWrite;
  std::vector<uint32_t> sizes;   // message sizes, run in order; atomics: {8}
  uint16_t streams = 1;          // per connection
  uint32_t queue_depth = 16;     // outstanding per stream (<= the connection's max_outstanding_per_stream)
  Nanos duration_ns = 0;         // per size; used when iterations == 0
  uint64_t iterations = 0;       // per size and connection (over all its streams)
  bool verify = true;
  uint64_t seed = 1;
  // Slot size of the layout; must equal the responder's Spec::max_message_bytes.
  // 0: the largest of sizes.
  uint32_t max_message_bytes = 0;
};

struct PhaseResult {
  uint32_t size = 0;
  uint64_t messages = 0, bytes = 0;
  Nanos start_ns = 0, end_ns = 0;  // first post, last completion (worker clock)
  emulator::DelayHistogram latency;  // post to completion (the project's one histogram)
  // Per connection, per stream: messages completed successfully since the job
  // started, when this phase ended (what VerifyPhase::stream_end wants).
  std::vector<std::vector<uint64_t>> stream_end;
};

class TrafficDriver {
 public:
  // prepare() then attach(), on the worker thread. On error returns nullptr
  // and sets *error ("message_bytes: 2000000 exceeds max_message_bytes
  // 1048576"), naming the field.
  static std::unique_ptr<TrafficDriver> create(transport::Endpoint& ep, const DriverSpec& spec,
                                               std::vector<DriverConnection> conns, std::string* error);
  // Any thread (touches no engine state): checks the spec and allocates and
  // fills the local buffers (source slots, READ destinations, atomic results).
  static std::unique_ptr<TrafficDriver> prepare(transport::Endpoint& ep, const DriverSpec& spec,
                                                std::vector<DriverConnection> conns, std::string* error);
  // Worker thread: checks the connections' transports and registers the
  // buffers; on error registers nothing and sets *error.
  bool attach(std::string* error);
  // Worker thread: deregisters the buffers (idempotent). Call it only once
  // finished() or after its connections are destroyed: the engine points into
  // these buffers while requests are outstanding. Then the driver may be
  // destroyed on any thread, and its memory freed there.
  void detach();
  // Detaches if still attached: destroy an attached driver on the worker.
  ~TrafficDriver();

  bool owns(uint32_t conn) const;
  // Worker thread: feed every completion of an owned connection, then pump.
  void on_completion(const transport::Completion& c, Nanos now);
  void pump(Nanos now);  // posts what the queue depth allows; moves to the next size when one is done

  // Any thread.
  void request_stop() { stop_.store(true, std::memory_order_relaxed); }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  uint64_t bytes_done() const { return bytes_done_.load(std::memory_order_relaxed); }
  uint64_t messages_done() const { return messages_done_.load(std::memory_order_relaxed); }
  // Failed completions (flushed included), failed posts and verification failures.
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  uint32_t phase() const { return phase_.load(std::memory_order_relaxed); }  // index into spec.sizes
  double fraction_done(Nanos now) const;  // in [0, 1]; 1 once finished

  // After finished() (acquire): results, one entry per phase that ran.
  const std::vector<PhaseResult>& phases() const { return phases_; }
  // Local checks: READ data and atomic results; "" when every check passed.
  const std::string& first_error() const { return first_error_; }
  uint64_t verify_failures() const { return verify_failures_; }
  uint64_t completion_errors() const { return completion_errors_; }
  // Messages completed per connection and stream (for the responder's Verify).
  const std::vector<std::vector<uint64_t>>& stream_messages() const { return stream_messages_; }
  const SlotLayout& layout() const { return layout_; }
  const DriverSpec& spec() const { return spec_; }

 private:
  TrafficDriver(transport::Endpoint& ep, const DriverSpec& spec, std::vector<DriverConnection> conns);
  uint64_t result_bytes() const;  // per connection, atomics: one 8-byte result per slot
  struct Impl;
  std::unique_ptr<Impl> impl_;
  transport::Endpoint& ep_;
  DriverSpec spec_;
  SlotLayout layout_;
  std::vector<DriverConnection> conns_;
  std::vector<PhaseResult> phases_;
  std::vector<std::vector<uint64_t>> stream_messages_;
  std::string first_error_;
  uint64_t verify_failures_ = 0, completion_errors_ = 0;
  std::atomic<bool> stop_{false}, finished_{false};
  std::atomic<uint64_t> bytes_done_{0}, messages_done_{0}, errors_{0};
  std::atomic<uint32_t> phase_{0};
};

// One phase (size) of a job, as the responder's verify needs it: per stream,
// messages completed successfully since the job started, at the phase's end.
struct VerifyPhase {
  uint32_t message_bytes = 0;
  std::vector<uint64_t> stream_end;  // one per stream, cumulative
};

struct VerifyResult {
  bool ok = true;
  uint64_t checked_bytes = 0, mismatches = 0, received_messages = 0;
  std::string detail;  // first mismatch
};

// Responder half of one connection: a target region (remote write, read and
// atomic access; the slots pre-filled with the pattern, then the atomic
// counters, zeroed) and, when asked, receives for SEND that are checked and
// re-posted as they complete. WRITE_IMM consumes no receive (MetaRoCE and
// this engine's RoCEv2 alike) but still completes here as a kRecv with the
// immediate; it is checked against the target slot when it completes.
// One Responder per job: its expected message indices start at 0. Destroy it
// only when its connection is idle or destroyed (posted receives and READ
// responses in flight point into its memory).
class Responder {
 public:
  struct Spec {
    uint32_t conn = 0;
    uint16_t streams = 1;
    uint32_t queue_depth = 16;
    uint32_t max_message_bytes = 1u << 20;  // slot size
    uint32_t recv_message_bytes = 0;        // > 0: post receives (SEND, WRITE_IMM)
    uint64_t seed = 1;
  };
  // prepare() then attach(), on the worker thread; nullptr and *error on error.
  static std::unique_ptr<Responder> create(transport::Endpoint& ep, const Spec& spec, std::string* error);
  // Any thread: checks the spec, allocates and fills the target and receive buffers.
  static std::unique_ptr<Responder> prepare(transport::Endpoint& ep, const Spec& spec, std::string* error);
  // Worker thread, the connection created: registers the buffers and posts the receives.
  bool attach(std::string* error);
  // Worker thread, after the connection is destroyed: deregisters (idempotent);
  // then it may be destroyed, and its memory freed, on any thread.
  void detach();
  // The memory create() allocates for this spec: the target region and the
  // receive buffers. What the daemon holds against its memory budget.
  static uint64_t memory_bytes(const Spec& spec);
  ~Responder();  // detaches if still attached: destroy an attached responder on the worker

  uint32_t conn() const { return spec_.conn; }
  uint64_t target_addr() const;
  uint32_t target_rkey() const { return target_key_; }
  uint64_t target_bytes() const { return layout_.target_bytes(); }  // slots + atomic counters
  const SlotLayout& layout() const { return layout_; }

  // Worker thread.
  void on_completion(const transport::Completion& c, Nanos now);
  // After the requester finished: checks the target against what
  // `stream_messages[s]` messages of `op` and `message_bytes` must have left
  // (each slot's header names the last message that used it; bytes after the
  // header must match the pattern, whatever sizes the job ran), plus the
  // receive checks for SEND/WRITE_IMM and the counters for atomics.
  VerifyResult verify(Operation op, const std::vector<uint64_t>& stream_messages, uint32_t message_bytes) const;
  // The same for a job of several sizes: the phase a slot's last message
  // belongs to gives its size (headers only for messages of >= 8 bytes).
  VerifyResult verify(Operation op, const std::vector<VerifyPhase>& phases) const;
  uint64_t received_messages() const { return received_; }

 private:
  Responder(transport::Endpoint& ep, const Spec& spec);
  transport::Endpoint& ep_;
  Spec spec_;
  SlotLayout layout_;
  std::vector<uint8_t> target_, recv_;
  uint32_t target_key_ = 0, recv_key_ = 0;
  std::vector<uint64_t> next_recv_;  // per stream: expected next message index
  uint64_t received_ = 0, recv_mismatches_ = 0;
  std::string recv_detail_;
  uint32_t recvs_per_stream_ = 0;
};

}  // namespace metaroce::daemon
