// MetaRoCE connection: multipath, out-of-order placement, per-path sequence
// numbers with 256-bit SACK, immediate retransmission of exactly the missing
// packet, ECN AIMD per path and per connection, receiver rate hints.
// The mechanisms and our choices are specified in docs/spec/metaroce-wire-v1.md.
//
// Internal (not part of the public API): the connection's state and the class
// declaration, shared by the files that define its methods, one concern each
// (metaroce_verbs.cc, _receive.cc, _ack.cc, _transmit.cc, _timers.cc). The only
// entry point for the rest of the transport is make_metaroce_connection (connection.h).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "congestion.h"
#include "connection.h"
#include "path_health.h"
#include "sack_window.h"

namespace metaroce::transport::detail {

using wire::Opcode;

inline constexpr uint32_t kProbesPerInterval = 4;  // unanswered probes of a down path before its interval doubles
inline constexpr uint32_t kRingSize = 256;  // per-path transmission records at most == SACK span
// A path's records start this many and double when its window first needs
// more (grow_ring): a path that keeps a few packets in flight, as each of an
// all-to-all's thousands of connections does, holds 512 bytes, not 8 KiB.
inline constexpr uint32_t kInitialRingSize = 16;
static_assert(std::has_single_bit(kRingSize) && std::has_single_bit(kInitialRingSize) && kInitialRingSize <= kRingSize);
inline constexpr uint8_t kKindRequest = 0;
inline constexpr uint8_t kKindResponse = 1;
inline constexpr uint8_t kKindProbe = 2;

// A reference from a transmission record to the chunk it carried.
struct ChunkRef {
  uint16_t stream = 0;
  uint8_t kind = kKindRequest;
  uint8_t attempt = 0;  // the message's send round (RNR restarts start a new one)
  uint32_t msg_seq = 0;
  uint32_t chunk = 0;
};

enum class RecState : uint8_t { kFree, kOutstanding, kAcked, kLost };

// sent_at first: 32 bytes instead of 40 (up to kRingSize of them per path).
struct TxRecord {
  Nanos sent_at = 0;
  ChunkRef ref;
  uint32_t bytes = 0;  // frame bytes, for window accounting
  uint32_t payload = 0;
  RecState state = RecState::kFree;
  bool retx = false;
};
static_assert(sizeof(TxRecord) == 32);

// One message being sent: a requester's work request or a responder's READ/atomic response.
struct TxMsg {
  bool active = false;
  bool done = false;
  uint32_t msg_seq = 0;
  Opcode opcode = Opcode::kWrite;
  Verb verb = Verb::kWrite;
  uint64_t wr_id = 0;
  uint8_t* local = nullptr;  // source of payload, or destination of READ/atomic results
  uint32_t length = 0;       // payload bytes this message carries on the wire
  uint32_t read_len = 0;     // READ: bytes expected back
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;
  uint32_t recv_seq = 0;
  uint64_t operand = 0, compare = 0;
  uint32_t chunks = 1, next_chunk = 0, acked_chunks = 0;
  ChunkBitmap acked;
  // Requester side of READ/atomics: response progress.
  uint32_t resp_chunks = 0, resp_received = 0;
  ChunkBitmap resp_bits;
  WcStatus status = WcStatus::kSuccess;
  Nanos last_progress = 0;
  Nanos resume_at = 0;  // RNR back-off: nothing sent before this
  uint32_t rnr_count = 0, timeouts = 0;
  uint8_t attempt = 0;  // ACKs of an earlier round (refused by RNR) must not count
};

struct RxMsg {
  bool active = false;
  bool complete = false;
  bool failed = false;
  uint32_t msg_seq = 0;
  Opcode opcode = Opcode::kWrite;
  uint32_t len = 0, chunks = 0, received = 0;
  uint32_t imm = 0, recv_seq = 0;
  WcStatus recv_status = WcStatus::kSuccess;
  wire::NakCode nak = wire::NakCode::kInvalidRequest;
  // READ / atomic requests execute in stream order (when they reach rx_base),
  // so a READ sees earlier WRITEs and atomics apply in post order.
  bool exec_pending = false;
  uint64_t req_addr = 0, req_operand = 0, req_compare = 0;
  uint32_t req_rkey = 0, req_len = 0;
  uint8_t req_path = 0;
  ChunkBitmap bits;
};

// One stream. Its slot arrays are allocated on first use: req by the first
// post, posted by the first post_recv, rx by the first request packet from the
// peer, resp and resp_fifo by the first READ or atomic the peer asks of us.
struct Stream {
  explicit Stream(const ConnectionConfig& cfg)
      : req(cfg.max_outstanding_per_stream),
        resp(2 * cfg.recv_window_messages),
        resp_fifo(2 * cfg.recv_window_messages),
        rx(cfg.recv_window_messages),
        posted(cfg.recv_window_messages) {}
  // Send side.
  SlotArray<TxMsg> req;          // indexed msg_seq % size
  uint32_t head_seq = 0;         // oldest request not yet completed to the user
  uint32_t next_seq = 0;         // next msg_seq to assign
  uint32_t cursor_seq = 0;       // first request that may still have unsent chunks
  uint32_t next_recv_seq = 0;    // SENDs posted so far
  uint32_t peer_watermark = 0;   // peer reports: all our requests below this are complete there
  SlotArray<TxMsg> resp;         // responses we owe the peer, indexed msg_seq % size
  SlotArray<uint32_t> resp_fifo;  // msg_seqs of responses in creation order
  uint32_t resp_fifo_head = 0, resp_fifo_tail = 0;
  bool error = false;
  // Receive side.
  SlotArray<RxMsg> rx;           // indexed msg_seq % size
  uint32_t rx_base = 0;          // all peer messages below this are complete (the watermark)
  SlotArray<RecvRequest> posted;
  uint32_t posted_count = 0, consumed_count = 0;
  bool rx_error = false;
};

struct Path {
  uint8_t id = 0;
  uint8_t plane = 0;
  uint16_t src_port = 0, base_port = 0;
  PathHealth health;
  PathCongestion cc;
  double spray_credit = 0;  // smooth weighted round-robin (pick_path)
  // Sender.
  uint32_t next_seq = 0, floor = 0;
  // The records of [floor, next_seq), at seq & ring_mask; only that range is
  // ever read, an empty one until the first record. Allocated with the
  // connection's first message to send (ensure_transmit), kInitialRingSize
  // records, doubled up to kRingSize by grow_ring.
  std::unique_ptr<TxRecord[]> ring;
  uint32_t ring_mask = 0;
  TxRecord& rec(uint32_t seq) { return ring[seq & ring_mask]; }
  // Whether one more frame may be sent: a path's unacknowledged records stop
  // one short of kRingSize, so that record() never needs more than the cap.
  bool has_record_room() const { return next_seq - floor < kRingSize - 1; }
  uint32_t inflight = 0;
  uint64_t inflight_bytes = 0;
  double srtt = 0, rttvar = 0;
  Nanos rto = 0;
  uint32_t backoff = 0;
  // When the RTO timer last started: an ACK, an RTO, the first packet in
  // flight, or the first tail-loss probe since the last ACK (RFC 8985 7.3:
  // the probe needs a round trip to be answered, so the RTO must not fire
  // before it can be; only once, so that a dead path still times out).
  Nanos rto_armed_at = 0;
  Nanos last_answered_at = 0;  // the last ACK received on this path
  Nanos next_probe_at = 0;
  uint32_t probe_backoff = 0;  // unanswered probes of a down path (doubles its probe interval)
  Nanos pto_at = kNever;
  bool late_rto_deferred = false;   // this arming's RTO fired late and was deferred (timer_fired_late)
  bool tail_probe_rearmed = false;  // the RTO was re-armed for a tail-loss probe since the last ACK (once only)
  Nanos slow_since = kNever;        // since when its srtt is far above a same-plane path's (on_slow_route)
  uint32_t slow_samples = 0;        // consecutive RTT samples that found it so (up to kSlowRouteMinSamples)
  bool reroute_pending = false;     // leaves a slow route once nothing is in flight on it (no new data meanwhile)
  bool home_was_slow = false;       // it left its configured port because that route was slow (rotate_entropy)
  uint16_t probe_stream = 0;
  // Receiver.
  SackWindow rx;
  uint32_t rx_ce = 0, rx_since_ack = 0, rx_echo_ts = 0;
  uint16_t rx_entropy = 0, rx_stream = 0;
  PathStats stats;
};

inline WcStatus status_for_nak(wire::NakCode c) {
  switch (c) {
    case wire::NakCode::kBadKey:
    case wire::NakCode::kOutOfBounds:
    case wire::NakCode::kAccessViolation: return WcStatus::kRemoteAccessError;
    case wire::NakCode::kUnknownConnection: return WcStatus::kRemoteAborted;
    case wire::NakCode::kRnr: return WcStatus::kRnrRetryExceeded;
    case wire::NakCode::kInvalidRequest: break;
  }
  return WcStatus::kRemoteInvalidRequest;
}

inline wire::NakCode nak_for(AccessCheck a) {
  switch (a) {
    case AccessCheck::kBadKey: return wire::NakCode::kBadKey;
    case AccessCheck::kOutOfBounds: return wire::NakCode::kOutOfBounds;
    case AccessCheck::kAccessViolation: return wire::NakCode::kAccessViolation;
    case AccessCheck::kOk: break;
  }
  return wire::NakCode::kInvalidRequest;
}

class MetaRoceConnection final : public Connection {
 public:
  // --- verbs (metaroce_verbs.cc): construction, the user's requests, completions, stats
  MetaRoceConnection(Endpoint& ep, const ConnectionConfig& cfg);
  PostError post(uint16_t stream, const WorkRequest& wr) override;
  PostError post_recv(uint16_t stream, const RecvRequest& rr) override;
  bool set_path_entropy(uint8_t path, uint16_t src_port) override;
  bool prepare(uint16_t stream, ConnectionUse use) override;
  void release_completions(Stream& s, uint16_t sid);
  void fail_message(uint16_t sid, TxMsg& m, WcStatus st);
  void emit_recv(Stream& s, uint16_t sid, const RxMsg& m, WcStatus st);
  ConnectionStats stats() const override;

  // --- receive (metaroce_receive.cc): path window, data placement, responder side
  void on_packet(const wire::UdpFrameView&, std::span<const uint8_t>, Nanos) override {}
  void on_metaroce_packet(const wire::UdpFrameView& v, const wire::PacketView& pv, Nanos now) override;
  bool rx_path(Path& p, const wire::PacketView& pv, const wire::UdpFrameView& v, Nanos);
  void rx_data(const wire::PacketView& pv, Nanos now);
  void fail_rx(Stream& s, uint16_t sid, RxMsg& m, const wire::PacketView& pv, wire::NakCode code);
  void slide_rx(Stream& s, uint16_t sid);
  bool execute_request(Stream& s, uint16_t sid, RxMsg& m);
  TxMsg* new_response(Stream& s, uint32_t mseq);
  void rx_response(Stream& s, uint16_t sid, const wire::PacketView& pv, Nanos now);
  void nak(uint16_t sid, const wire::PacketView& pv, wire::NakCode code);
  void queue_nak(uint16_t sid, uint32_t msg_seq, uint32_t offset, wire::NakCode code, uint8_t path);

  // --- acks at the sender (metaroce_ack.cc): ACK/SACK/NAK, loss, RTT, path health
  void on_ack(const wire::PacketView& pv, Nanos now);
  void on_ack_block(Path& p, const wire::AckBlock& b, Nanos now);
  // count_in_health: whether the path's loss estimate counts it (not for a
  // timeout's presumed losses, see on_rto).
  void mark_lost(Path& p, TxRecord& r, bool count_in_health = true);
  void advance_floor(Path& p);
  void update_rtt(Path& p, double sample);
  // toward_home: a rotation away from a slow route first goes back to the
  // path's configured port when it is on a detour.
  void rotate_entropy(Path& p, bool toward_home = false);
  // How many times the srtt of another path of the plane a path's must
  // exceed, persistently, for its route to count as slow (on_slow_route).
  // In clos-spine-failure 4 to 10 all keep every job >= 0.9 of its goodput
  // during the failure and >= 0.95 after it (3 leaves one within the
  // assertion's margin); at 4 cluster-permutation already rotates paths that
  // share a busy link, at 6 none of it changes (measured before the
  // kSlowRouteMinSamples condition; clos-spine-failure again after it).
  static constexpr double kSlowRouteRatio = 6.0;
  // ... over at least this many consecutive RTT samples of the path.
  static constexpr uint32_t kSlowRouteMinSamples = 16;
  bool on_slow_route(Path& p, Nanos now);
  void note_state(Path& p, PathState before);
  void chunk_acked(const ChunkRef& ref, Nanos now);
  void on_nak(const wire::PacketView& pv, Nanos now);

  // --- transmit (metaroce_transmit.cc): what to send next, path choice, pacing, frames
  bool poll_tx(TxFrame& f, uint64_t ready, Nanos now) override;
  bool send_new(TxFrame& f, uint64_t ready, Nanos now);
  TxMsg* msg_for(const ChunkRef& ref);
  int pick_path(uint64_t ready, bool retransmit);
  void emit_chunk(TxFrame& f, Path& p, const ChunkRef& ref, TxMsg& m, Nanos now, bool retx);
  void fill_header(wire::CommonHeader& h, Opcode op, uint8_t flags, const Path& p, uint16_t stream, uint32_t plen,
                   Nanos now);
  size_t write_frame(TxFrame& f, const Path& p, const wire::CommonHeader& h, const void* ext, size_t ext_len,
                     const uint8_t* payload, uint32_t plen, std::span<const wire::AckBlock> blocks = {});
  void record(Path& p, const ChunkRef& ref, uint32_t bytes, uint32_t payload, Nanos now, bool retx);
  bool send_acks_and_naks(TxFrame& f, uint64_t ready, Nanos now);
  bool send_probe(TxFrame& f, uint64_t ready, Nanos now);
  bool pacing_blocked(Nanos now);
  void queue_retransmit(const ChunkRef& ref);

  // --- timers (metaroce_timers.cc): RTO, PTO, probes of down paths, message timeouts
  void service_timers(Nanos now);
  Nanos message_timeout() const;
  Nanos pto(const Path& p) const;
  void on_rto(Path& p, Nanos now);
  LossEvidence others_evidence(const Path& p, bool answering_only = false) const;
  bool others_answered_after(const Path& p, Nanos now) const;
  void restart_message(Stream& s, TxMsg& m, Nanos resume_at);
  Nanos next_deadline() const override;

  // --- state allocated on first need (metaroce_verbs.cc)
  // Paths, streams and the NAK queue: at the first post, post_recv,
  // set_path_entropy or packet. Until then the connection holds its object only.
  void activate();
  bool active() const { return !paths_.empty(); }
  Path make_path(size_t i) const;
  // Transmission records of every path and the retransmit queue: at the first
  // message this connection sends (a posted request or a response it owes).
  // Used lazily, kInitialRingSize per path, grown with the window (record,
  // queue_retransmit: a few times in a connection's life). Once the
  // connection was prepared at a control-plane moment (Endpoint::prepare),
  // kRingSize, also for a use it was not prepared for (a READ responder's
  // first response): its traffic never grows them.
  void ensure_transmit();
  void size_transmit(uint32_t records);  // every path's records and the queue at least this many
  void grow_ring(Path& p, uint32_t size);
  void grow_retransmit_queue(size_t size);
  void ensure_requests(Stream& s);
  void ensure_responses(Stream& s);
  void ensure_receive_window(Stream& s);
  void ensure_posted_receives(Stream& s);
  void hold(size_t bytes);
  size_t state_bytes() const override { return state_bytes_; }

  // --- small helpers and constants (here)
  uint32_t chunks_for(uint32_t len) const { return len == 0 ? 1 : (len + cfg_.mtu_payload - 1) / cfg_.mtu_payload; }

  static constexpr double kPacingBurst = 256 * 1024;  // pacing: token bucket depth, bytes

  // --- state, shared by all the files above
  uint32_t mss_ = 0, frame_overhead_ = 0, max_chunks_ = 0;
  uint16_t dst_port_ = 0;
  uint32_t bitmap_words_ = 0;  // words of one chunk bitmap: max_chunks_ bits
  size_t state_bytes_ = 0;
  bool prepared_ = false;  // prepare() was called: transmission records at their cap (ensure_transmit)
  std::vector<Stream> streams_;
  std::vector<Path> paths_;
  std::vector<ChunkRef> retx_;
  uint64_t retx_head_ = 0, retx_tail_ = 0;
  std::vector<wire::NakExt> naks_;
  uint64_t nak_head_ = 0, nak_tail_ = 0;
  uint8_t nak_path_ = 0;
  ConnectionCongestion conn_cc_{4096, 1};
  uint64_t conn_inflight_bytes_ = 0;
  uint32_t rate_hint_kbps_ = 0;
  double tokens_ = kPacingBurst;
  Nanos tokens_at_ = 0, pacing_until_ = 0;
  size_t stream_rr_ = 0, ack_rr_ = 0;
  // Paths owing their sender an ACK, bit i = paths_[i] (paths <= 64,
  // kParamPaths): looking for them reads one word, not every Path (at
  // cluster scale each Path read is a cache miss).
  uint64_t acks_due_ = 0;
  uint64_t probes_due_ = 0;  // paths to send a PROBE on, likewise
  uint64_t path_bit(const Path& p) const { return 1ull << (&p - paths_.data()); }
  Nanos next_timer_at_ = kNever;
  Nanos last_now_ = 0;
  ConnectionStats stats_;
};

}  // namespace metaroce::transport::detail
