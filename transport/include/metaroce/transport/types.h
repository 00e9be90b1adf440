// Public types of the transport engine: verbs, work requests, completions,
// configuration. The engine is pure logic: time is passed in as Nanos, frames
// go in and out as byte spans, nothing here touches a socket or a thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metaroce/transport/connection_params.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::transport {

using Nanos = int64_t;
inline constexpr Nanos kNever = INT64_MAX;

enum class TransportKind : uint8_t { kMetaRoCE, kRoCEv2 };
const char* transport_name(TransportKind t);

enum class Verb : uint8_t { kWrite, kWriteImm, kSend, kSendImm, kRead, kFetchAdd, kCmpSwap, kRecv };
const char* verb_name(Verb v);  // the one table of verb and operation names (operations.cc)

// Memory region access rights (bit flags).
inline constexpr uint32_t kAccessLocalWrite = 1;
inline constexpr uint32_t kAccessRemoteWrite = 2;
inline constexpr uint32_t kAccessRemoteRead = 4;
inline constexpr uint32_t kAccessRemoteAtomic = 8;

// Addresses are virtual addresses in this process (pointer values), as in verbs.
struct WorkRequest {
  uint64_t wr_id = 0;
  Verb verb = Verb::kWrite;
  uint64_t local_addr = 0;  // source (write/send) or destination (read, atomic result: 8 B)
  uint32_t lkey = 0;
  uint32_t length = 0;      // bytes; atomics: 8
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;         // kWriteImm, kSendImm
  uint64_t compare_add = 0; // kFetchAdd: addend; kCmpSwap: compare value
  uint64_t swap = 0;        // kCmpSwap: new value
};

struct RecvRequest {
  uint64_t wr_id = 0;
  uint64_t addr = 0;
  uint32_t lkey = 0;
  uint32_t length = 0;
};

enum class WcStatus : uint8_t {
  kSuccess = 0,
  kLocalLengthError,      // receive buffer too small for the incoming SEND
  kLocalProtectionError,  // local buffer outside its region or without rights
  kRemoteAccessError,     // peer refused: bad key, out of bounds or missing right
  kRemoteInvalidRequest,  // peer refused the request as malformed or too large
  kRemoteAborted,         // peer does not know the connection
  kRnrRetryExceeded,      // peer had no receive posted, retries exhausted
  kRetryExceeded,         // no path delivered the message within the retry budget
  kFlushed,               // an earlier request on the stream failed; the stream is in error
};
const char* wc_status_name(WcStatus s);

struct Completion {
  uint64_t wr_id = 0;
  uint32_t conn = 0;     // local connection id
  uint16_t stream = 0;
  Verb verb = Verb::kWrite;  // kRecv for receive-side completions
  WcStatus status = WcStatus::kSuccess;
  uint32_t byte_len = 0;
  bool has_imm = false;
  uint32_t imm = 0;
  Verb remote_verb = Verb::kSend;  // for kRecv: kSend/kSendImm/kWriteImm that produced it
};

enum class PostError : uint8_t {
  kOk = 0,
  kUnknownConnection,
  kBadStream,
  kQueueFull,        // too many outstanding requests on this stream: poll completions first
  kBadLength,        // 0, above max_message_bytes, or atomics not 8 B
  kLocalProtection,  // local buffer outside a region registered with lkey
  kUnsupported,      // verb not available on this transport
  kBadAlignment,     // atomics need 8-byte aligned addresses
};
const char* post_error_name(PostError e);

struct PathConfig {
  uint8_t plane = 0;        // which port / fabric plane this path leaves on
  uint16_t src_port = 0;    // UDP source port: the path's ECMP entropy
};

// Congestion control and loss recovery knobs, per connection.
struct TransportTuning {
  uint32_t init_cwnd_packets = 16;
  uint32_t max_cwnd_packets = 250;     // per path; < 256 so the SACK window always covers it
  uint32_t conn_max_cwnd_packets = 4096;
  double additive_increase_packets = 1.0;  // per RTT, after slow start
  double dctcp_gain = 1.0 / 16;        // EWMA gain of the CE fraction
  uint32_t reorder_threshold = 1;      // seq distance from the highest SACKed seq at which a hole counts as lost
  Nanos min_rto_ns = kParamMinRto.engine_default;
  // RTO before a path's first RTT sample. The first flight's time is unknown
  // (16 packets of 4 KiB take 2 ms to serialise at 250 Mb/s), so a timer at
  // min_rto_ns fires on every path at start. RFC 6298 uses 1 s; a data-centre
  // first flight takes well under this, and only a path whose whole first
  // flight is lost waits it out. Both transports (RoCEv2's timer follows
  // the measured RTT too once it has a sample).
  Nanos initial_rto_ns = 10'000'000;
  Nanos max_rto_ns = 50'000'000;
  Nanos min_pto_ns = kParamMinPto.engine_default;  // tail-loss probe after max(2 x srtt, this) without ACKs
  uint32_t down_after_rtos = 2;        // consecutive RTOs, while other paths are answered, that mark a path down (more on a lossy fabric: PathHealth::rtos_to_down)
  Nanos probe_interval_ns = 100'000;   // first probe interval of a down path, doubling every 4 unanswered probes ...
  Nanos max_probe_interval_ns = 10'000'000;  // ... up to this: a dead plane costs little, a returning one is found fast
  uint32_t up_after_probes = 2;        // answered probes that bring a path back
  double degraded_loss = 0.05;         // path loss (EWMA) that marks it degraded ...
  double degraded_ratio = 2.0;         // ... when also this many times the connection's
  double degraded_weight = 0.25;       // spraying weight of a degraded path
  uint32_t rotate_after_degraded_packets = 512;  // entropy rotation on persistent loss
  // Entropy rotation on a slow route: a path whose srtt stays far above that
  // of another path of its plane for this many of its srtts moves to another
  // ECMP route (MetaRoceConnection::on_slow_route). 0: never.
  uint32_t rotate_after_slow_rtts = 3;
  uint32_t retry_limit = 16;           // RTOs of one message without progress before kRetryExceeded
  Nanos rnr_delay_ns = 50'000;
  uint32_t rnr_retry_limit = 7;
  uint32_t ack_every = 1;              // receiver acknowledges every Nth in-order packet
  uint32_t rocev2_window_packets = 64; // RoCEv2: fixed window of unacknowledged packets
  bool ect = true;                     // mark data packets ECT(0)
};
// The timer floors' ceiling (connection_params.h) is the default max_rto_ns,
// which clamps every RTO: a larger floor would be clamped away.
static_assert(kParamMinRto.max == TransportTuning{}.max_rto_ns && kParamMinPto.max == kParamMinRto.max);

struct ConnectionConfig {
  TransportKind transport = TransportKind::kMetaRoCE;
  uint32_t local_id = 0;    // nonzero; RoCEv2: local QP number (24 bit)
  uint32_t remote_id = 0;   // nonzero; RoCEv2: remote QP number
  uint32_t peer_ip = 0;
  wire::MacAddr peer_mac{};
  uint16_t peer_udp_port = 0;  // 0: the transport's default port
  // The caller-chosen fields read their defaults and ranges from connection_params.h.
  std::vector<PathConfig> paths;  // MetaRoCE: kParamPaths, same list on both ends; RoCEv2: exactly 1
  uint16_t streams = kParamStreams.engine_default;
  uint32_t max_outstanding_per_stream = kParamQueueDepth.engine_default;
  uint32_t recv_window_messages = 128;  // receiver's message slots per stream (>= outstanding)
  uint32_t max_message_bytes = kParamMaxMessage.engine_default;
  uint32_t mtu_payload = kParamMtuPayload.engine_default;
  TransportTuning tuning;
};

inline constexpr size_t kMaxPaths = kParamPaths.max;

struct EndpointConfig {
  uint32_t ip = 0;
  wire::MacAddr mac{};
  uint16_t metaroce_udp_port = 0;   // 0: wire::kDefaultUdpPort
  double inbound_capacity_bps = 0;  // for the receiver's fair-share rate hint; 0 = no hint
  Nanos active_sender_window_ns = 100'000;
  uint32_t completion_queue_depth = 1u << 16;
  // Seeds the memory keys' random bits (MemoryTable): the daemon draws it from
  // the OS so keys are unguessable; the simulator and tests keep a fixed one.
  uint64_t key_seed = 0;
};

// Returns an error naming the field and its allowed range, or an empty string.
std::string validate(const ConnectionConfig& c);
std::string validate(const EndpointConfig& c);

}  // namespace metaroce::transport
