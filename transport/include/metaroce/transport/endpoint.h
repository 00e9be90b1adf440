// An endpoint: one host's transport engine instance (MetaRoCE and RoCEv2
// connections, memory regions, one completion queue).
//
// Driving contract (the same in the simulator, in tests and behind real ports):
//   on_frame(frame, now)           for every received Ethernet frame
//   poll_tx(burst, ready, now)     whenever a port can take frames; fills the
//                                  burst with frames, each tagged with its plane
//                                  (poll_tx_paced: readiness re-checked per frame)
//   next_deadline()                the latest time poll_tx must be called again
//                                  (timers, pacing) if nothing else happens
//   poll_completions(out)          completions, in post order per stream
// No call blocks, sleeps or reads a clock; steady-state calls do not allocate.
// A connection's state grows when it first needs more (docs/architecture.md,
// "Memory per connection"): an idle one holds little, and the arrays a stream
// or a path uses are allocated once, by its first post, post_recv or packet.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "metaroce/transport/connection_schedule.h"
#include "metaroce/transport/memory.h"
#include "metaroce/transport/types.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::transport {

// The largest frame a connection with this mtu_payload builds, either
// transport, any opcode: Ethernet/IPv4/UDP, then MetaRoCE's largest header
// stack (an ACK carrying every block; a data packet's headers are smaller,
// and so are RoCEv2's BTH/RETH/immediate/AETH with pad and ICRC) and the
// payload. A caller sizing its frame buffers to this never has a frame
// refused (poll_tx skips a frame that does not fit its TxFrame).
constexpr size_t max_frame_bytes(uint32_t mtu_payload) {
  constexpr size_t stack = sizeof(wire::CommonHeader) + sizeof(wire::AckExt) + wire::kMaxAckBlocks * sizeof(wire::AckBlock) +
                           sizeof(wire::AtomicExt) + wire::kCrcBytes;
  return wire::kUdpFrameHeaderBytes + stack + mtu_payload;
}

struct TxFrame {
  uint8_t* data = nullptr;   // caller-owned buffer
  uint32_t capacity = 0;     // bytes available at data
  uint32_t len = 0;          // set by poll_tx
  uint8_t plane = 0;         // set by poll_tx: the port/plane to send on
};

enum class PathState : uint8_t { kActive, kDegraded, kDown };
const char* path_state_name(PathState s);

struct PathStats {
  uint8_t plane = 0;
  uint16_t src_port = 0;
  PathState state = PathState::kActive;
  uint64_t packets_sent = 0, bytes_sent = 0, payload_bytes_acked = 0;
  uint64_t retransmits = 0, lost = 0, spurious_retransmits = 0;
  uint64_t rtos = 0, probes = 0, ecn_echoes = 0, state_changes = 0, entropy_rotations = 0;
  double cwnd_bytes = 0, srtt_ns = 0, loss_ewma = 0;
  uint32_t inflight = 0;
};

struct ConnectionStats {
  TransportKind transport = TransportKind::kMetaRoCE;
  uint64_t data_packets_sent = 0, data_bytes_sent = 0;
  uint64_t retransmits = 0, spurious_retransmits = 0, rtos = 0;
  uint64_t late_timeouts_deferred = 0;  // timers that fired late (host stalled) and waited one more round trip
  uint64_t messages_completed = 0, payload_bytes_completed = 0;
  uint64_t duplicates_received = 0, naks_sent = 0, naks_received = 0;
  uint64_t go_back_n = 0;  // RoCEv2: rewinds
  double conn_cwnd_bytes = 0;
  uint32_t rate_hint_kbps = 0;
  uint64_t state_bytes = 0;  // bytes of engine state the connection holds now (Connection::state_bytes)
  std::vector<PathStats> paths;

  // Path state changes over all paths (what progress lines and intervals show).
  uint64_t path_state_changes() const {
    uint64_t n = 0;
    for (const PathStats& p : paths) n += p.state_changes;
    return n;
  }
};

// Why a request was refused, MetaRoCE NAK codes and RoCEv2 NAK syndromes in
// one list, so NAKs sent and received can be counted by cause.
enum class RejectCode : uint8_t {
  kRnr,                 // receiver not ready (MetaRoCE 0x01, RoCEv2 RNR NAK)
  kBadKey,              // MetaRoCE 0x02
  kOutOfBounds,         // MetaRoCE 0x03
  kAccessViolation,     // MetaRoCE 0x04
  kUnknownConnection,   // MetaRoCE 0x05
  kInvalidRequest,      // MetaRoCE 0x06, RoCEv2 0x61
  kPsnSequenceError,    // RoCEv2 0x60
  kRemoteAccess,        // RoCEv2 0x62 (bad R_Key, bounds or rights)
  kOther,               // a code this version does not know
};
inline constexpr size_t kRejectCodes = static_cast<size_t>(RejectCode::kOther) + 1;
const char* reject_code_name(RejectCode c);
RejectCode reject_code(wire::NakCode c);
RejectCode rocev2_reject_code(uint8_t syndrome);

struct EndpointCounters {
  uint64_t frames_in = 0, frames_out = 0;
  uint64_t drop_not_ours = 0;        // not UDP/IPv4, or not to our address/ports
  uint64_t drop_decode = 0;          // malformed header, bad length
  uint64_t drop_checksum = 0;        // CRC32C / ICRC mismatch (corruption)
  uint64_t drop_bad_version = 0;     // MetaRoCE version byte / RoCEv2 TVer this version does not speak
  uint64_t drop_bad_opcode = 0;      // opcode unknown or not supported
  uint64_t drop_qp_error = 0;        // RoCEv2: frames for a QP in the error state
  uint64_t drop_unknown_connection = 0;
  uint64_t drop_wrong_peer = 0;      // connection id valid but sent from another address
  uint64_t drop_out_of_window = 0;
  // Not a drop: MetaRoCE frames that arrived after a later frame of their own
  // path. A path is one route (its entropy picks one ECMP link per hop), so
  // only a fabric that reorders (configured reorder or jitter) or a datapath
  // that does makes them; the sender counts each as lost and resends it.
  uint64_t rx_reordered_in_path = 0;
  uint64_t completion_queue_overflow = 0;
  // A gauge, not a count: bytes of engine state all connections hold now (the
  // sum of ConnectionStats::state_bytes).
  uint64_t connection_state_bytes = 0;
  uint64_t naks_unknown_connection = 0;
  uint64_t naks_sent[kRejectCodes] = {};      // by RejectCode, every connection
  uint64_t naks_received[kRejectCodes] = {};
};

class Connection;  // internal, one per transport kind

// What a connection's stream is about to be used for (Endpoint::prepare).
enum class ConnectionUse : uint8_t {
  kRequest,       // post requests (request slots, the paths' transmission records)
  kReceive,       // take the peer's requests (the receive window)
  kRespond,       // answer the peer's READs and atomics (response slots, transmission records)
  kPostReceives,  // post receives for the peer's SENDs (posted-receive slots)
};

class Endpoint {
 public:
  explicit Endpoint(const EndpointConfig& config);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const EndpointConfig& config() const { return config_; }

  // Control plane (may allocate).
  std::optional<uint32_t> register_memory(void* addr, uint64_t length, uint32_t access);
  bool deregister_memory(uint32_t key);
  // Returns the local connection id, or an error (field and allowed range) in *error.
  std::optional<uint32_t> create_connection(const ConnectionConfig& config, std::string* error);
  bool destroy_connection(uint32_t local_id);
  // Allocates now what the stream's first use would allocate on the datapath
  // (at a post, or inside on_frame), so a worker that prepares at a job's start
  // allocates nothing once traffic runs. False: no such connection or stream,
  // or a use the transport does not have (RoCEv2 allocates nothing to receive
  // or respond).
  bool prepare(uint32_t conn, uint16_t stream, ConnectionUse use);

  // Verbs.
  PostError post(uint32_t conn, uint16_t stream, const WorkRequest& wr);
  PostError post_recv(uint32_t conn, uint16_t stream, const RecvRequest& rr);
  size_t poll_completions(std::span<Completion> out);

  // Datapath.
  void on_frame(std::span<const uint8_t> frame, Nanos now);
  size_t poll_tx(std::span<TxFrame> burst, uint64_t ready_planes, Nanos now);
  // poll_tx one frame at a time, as a NIC takes descriptors: ready_planes()
  // is asked before every frame and sent(frame) told after it, so a plane
  // whose queue has just filled is offered no more. (Filling a whole burst
  // from one readiness check let a connection that had just gone back N put
  // up to a burst of frames into a queue already at its limit: 32 frames of
  // 2 KiB, 2.6 ms at 200 Mb/s, on that plane's round trip.)
  template <typename ReadyPlanes, typename Sent>
  size_t poll_tx_paced(std::span<TxFrame> burst, Nanos now, ReadyPlanes&& ready_planes, Sent&& sent) {
    size_t n = 0;
    for (; n < burst.size(); ++n) {
      const uint64_t ready = ready_planes();
      if (ready == 0 || poll_tx(burst.subspan(n, 1), ready, now) == 0) break;
      sent(burst[n]);
    }
    return n;
  }
  Nanos next_deadline() const;
  // Connections poll_tx will ask again: some may wait only for a plane to
  // take a frame (an owed ACK has no deadline), which no timer announces.
  size_t connections_waiting() const { return schedule_.active(); }

  // Operator actions and observability.
  bool set_path_entropy(uint32_t conn, uint8_t path, uint16_t src_port);
  ConnectionStats stats(uint32_t conn) const;
  const EndpointCounters& counters() const { return counters_; }

  // For connections: shared services.
  MemoryTable& memory() { return memory_; }
  void push_completion(const Completion& c);
  uint32_t rate_hint_kbps(Nanos now);
  void note_active_sender(size_t slot, Nanos now);  // slot: the connection's (Connection::slot)
  // A connection allocated more state (counters().connection_state_bytes).
  void add_connection_state_bytes(size_t bytes) { counters_.connection_state_bytes += bytes; }
  EndpointCounters& mutable_counters() { return counters_; }

  // How late this host services timers (RFC 6298's clock granularity G), as
  // measured by whoever drives the endpoint on a real clock (the datapath
  // worker); 0 in the simulator. Retransmission timeouts are at least
  // srtt + max(G, 4 x rttvar), so a scheduler that wakes us late does not
  // read as loss.
  void set_timer_granularity(Nanos g) { timer_granularity_ns_ = g; }
  Nanos timer_granularity() const { return timer_granularity_ns_; }
  // How late the datapath's current poll started after next_deadline(), as it
  // measured (0 on an ideal clock, and when no deadline had passed): a timer
  // that fired late for this reason is not evidence of loss (timer_fired_late).
  void set_poll_lateness(Nanos late) { poll_lateness_ns_ = late; }
  Nanos poll_lateness() const { return poll_lateness_ns_; }

 private:
  void reply_unknown_connection(const wire::UdpFrameView& v, const wire::PacketView& pv);
  // After any call into c: it may have work, and its deadline may have moved.
  void touched(const Connection& c);
  // fn(connection) for the connection with this id (missing if there is
  // none), then touched(): every call that may give a connection work.
  template <typename R, typename Fn>
  R with_connection(uint32_t id, R missing, Fn&& fn);

  EndpointConfig config_;
  MemoryTable memory_;
  EndpointCounters counters_;
  std::vector<std::unique_ptr<Connection>> connections_;
  // Every connection by its local_id (a MetaRoCE connection id or a RoCEv2
  // QP number: one id space). Open addressing: one lookup per frame received
  // and per post, and at thousands of connections a node-based map's pointer
  // chase was a cache miss each time.
  absl::flat_hash_map<uint32_t, Connection*> by_id_;
  Connection* find_connection(uint32_t id) const;
  Connection* find_connection(uint32_t id, TransportKind kind) const;
  std::vector<Completion> cq_;
  size_t cq_head_ = 0, cq_count_ = 0;
  size_t tx_rr_ = 0;  // round-robin cursor over connections: after the last one that sent
  // Which connections poll_tx asks, and their deadlines (next_deadline).
  // Mutable: next_deadline() drops outdated entries as it reads.
  mutable ConnectionSchedule schedule_;
  uint64_t seen_planes_ = 0;  // every plane ever reported ready to poll_tx
  // Endpoint-level NAKs for unknown connections (bounded; excess dropped).
  struct PendingNak {
    wire::UdpFlow flow;
    uint32_t dst_conn;
    wire::NakExt nak;
  };
  std::vector<PendingNak> pending_naks_;
  // Connections that sent data lately, for the fair-share hint.
  RecentSenders recent_senders_;
  Nanos timer_granularity_ns_ = 0;
  Nanos poll_lateness_ns_ = 0;
};

}  // namespace metaroce::transport
