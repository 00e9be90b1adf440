#include "metaroce/transport/endpoint.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "connection.h"
#include "metaroce/wire/rocev2.h"

namespace metaroce::transport {

const char* transport_name(TransportKind t) { return t == TransportKind::kMetaRoCE ? "metaroce" : "rocev2"; }

const char* wc_status_name(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess: return "success";
    case WcStatus::kLocalLengthError: return "local_length_error";
    case WcStatus::kLocalProtectionError: return "local_protection_error";
    case WcStatus::kRemoteAccessError: return "remote_access_error";
    case WcStatus::kRemoteInvalidRequest: return "remote_invalid_request";
    case WcStatus::kRemoteAborted: return "remote_aborted";
    case WcStatus::kRnrRetryExceeded: return "rnr_retry_exceeded";
    case WcStatus::kRetryExceeded: return "retry_exceeded";
    case WcStatus::kFlushed: return "flushed";
  }
  return "unknown";
}

const char* post_error_name(PostError e) {
  switch (e) {
    case PostError::kOk: return "ok";
    case PostError::kUnknownConnection: return "unknown_connection";
    case PostError::kBadStream: return "bad_stream";
    case PostError::kQueueFull: return "queue_full";
    case PostError::kBadLength: return "bad_length";
    case PostError::kLocalProtection: return "local_protection";
    case PostError::kUnsupported: return "unsupported";
    case PostError::kBadAlignment: return "bad_alignment";
  }
  return "unknown";
}

const char* reject_code_name(RejectCode c) {
  switch (c) {
    case RejectCode::kRnr: return "rnr";
    case RejectCode::kBadKey: return "bad_key";
    case RejectCode::kOutOfBounds: return "out_of_bounds";
    case RejectCode::kAccessViolation: return "access_violation";
    case RejectCode::kUnknownConnection: return "unknown_connection";
    case RejectCode::kInvalidRequest: return "invalid_request";
    case RejectCode::kPsnSequenceError: return "psn_sequence_error";
    case RejectCode::kRemoteAccess: return "remote_access";
    case RejectCode::kOther: return "other";
  }
  return "other";
}

RejectCode reject_code(wire::NakCode c) {
  switch (c) {
    case wire::NakCode::kRnr: return RejectCode::kRnr;
    case wire::NakCode::kBadKey: return RejectCode::kBadKey;
    case wire::NakCode::kOutOfBounds: return RejectCode::kOutOfBounds;
    case wire::NakCode::kAccessViolation: return RejectCode::kAccessViolation;
    case wire::NakCode::kUnknownConnection: return RejectCode::kUnknownConnection;
    case wire::NakCode::kInvalidRequest: return RejectCode::kInvalidRequest;
  }
  return RejectCode::kOther;
}

RejectCode rocev2_reject_code(uint8_t syndrome) {
  if ((syndrome & 0xE0) == wire::rocev2::kSyndromeRnrNak) return RejectCode::kRnr;
  switch (syndrome) {
    case wire::rocev2::kSyndromeNakPsnSeqError: return RejectCode::kPsnSequenceError;
    case wire::rocev2::kSyndromeNakInvalidRequest: return RejectCode::kInvalidRequest;
    case wire::rocev2::kSyndromeNakRemoteAccess: return RejectCode::kRemoteAccess;
    default: return RejectCode::kOther;
  }
}

const char* path_state_name(PathState s) {
  switch (s) {
    case PathState::kActive: return "active";
    case PathState::kDegraded: return "degraded";
    case PathState::kDown: return "down";
  }
  return "unknown";
}

namespace {
std::string range_error(const char* field, uint64_t lo, uint64_t hi, uint64_t got) {
  return std::string(field) + ": must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " +
         std::to_string(got) + ")";
}
}  // namespace

std::string validate(const ConnectionConfig& c) {
  const bool roce = c.transport == TransportKind::kRoCEv2;
  const uint64_t id_max = roce ? 0xFFFFFF : 0xFFFFFFFF;
  if (c.local_id == 0 || c.local_id > id_max) return range_error("local_id", 1, id_max, c.local_id);
  if (c.remote_id == 0 || c.remote_id > id_max) return range_error("remote_id", 1, id_max, c.remote_id);
  if (c.peer_ip == 0) return "peer_ip: must be set";
  if (roce && c.paths.size() != 1) return range_error("paths (count, rocev2)", 1, 1, c.paths.size());
  if (!kParamPaths.accepts(static_cast<int64_t>(c.paths.size())))
    return kParamPaths.refusal("paths (count)", static_cast<int64_t>(c.paths.size()));
  for (const PathConfig& p : c.paths)
    if (p.plane >= 64) return range_error("paths[].plane", 0, 63, p.plane);
  // The caller-chosen fields: ranges from connection_params.h, as the daemon checks them.
  if (!kParamStreams.accepts(c.streams)) return kParamStreams.refusal("streams", c.streams);
  if (!kParamMtuPayload.accepts(c.mtu_payload)) return kParamMtuPayload.refusal("mtu_payload", c.mtu_payload);
  if (!kParamMaxMessage.accepts(c.max_message_bytes))
    return kParamMaxMessage.refusal("max_message_bytes", c.max_message_bytes);
  if (!kParamQueueDepth.accepts(c.max_outstanding_per_stream))
    return kParamQueueDepth.refusal("max_outstanding_per_stream", c.max_outstanding_per_stream);
  if (c.recv_window_messages < c.max_outstanding_per_stream || c.recv_window_messages > 8192)
    return range_error("recv_window_messages (>= max_outstanding_per_stream)", c.max_outstanding_per_stream, 8192,
                       c.recv_window_messages);
  const TransportTuning& t = c.tuning;
  if (t.max_cwnd_packets == 0 || t.max_cwnd_packets > 250)
    return range_error("tuning.max_cwnd_packets", 1, 250, t.max_cwnd_packets);
  if (t.init_cwnd_packets == 0 || t.init_cwnd_packets > t.max_cwnd_packets)
    return range_error("tuning.init_cwnd_packets", 1, t.max_cwnd_packets, t.init_cwnd_packets);
  if (t.reorder_threshold == 0 || t.reorder_threshold > 128)
    return range_error("tuning.reorder_threshold", 1, 128, t.reorder_threshold);
  if (!kParamMinRto.accepts(t.min_rto_ns)) return kParamMinRto.refusal("tuning.min_rto_ns", t.min_rto_ns);
  if (!kParamMinPto.accepts(t.min_pto_ns)) return kParamMinPto.refusal("tuning.min_pto_ns", t.min_pto_ns);
  if (t.max_rto_ns < t.min_rto_ns) return "tuning.max_rto_ns: must be >= min_rto_ns";
  if (t.initial_rto_ns <= 0) return "tuning.initial_rto_ns: must be > 0 (it is used within [min_rto_ns, max_rto_ns])";
  if (t.ack_every == 0 || t.ack_every > 64) return range_error("tuning.ack_every", 1, 64, t.ack_every);
  if (t.rocev2_window_packets == 0 || t.rocev2_window_packets > (1u << 22))
    return range_error("tuning.rocev2_window_packets", 1, 1u << 22, t.rocev2_window_packets);
  if (!(t.degraded_weight > 0 && t.degraded_weight <= 1)) return "tuning.degraded_weight: must be in (0, 1]";
  if (t.down_after_rtos == 0) return "tuning.down_after_rtos: must be >= 1";
  return {};
}

std::string validate(const EndpointConfig& c) {
  if (c.ip == 0) return "ip: must be set";
  if (c.completion_queue_depth == 0 || c.completion_queue_depth > (1u << 24))
    return range_error("completion_queue_depth", 1, 1u << 24, c.completion_queue_depth);
  if (c.inbound_capacity_bps < 0) return "inbound_capacity_bps: must be >= 0";
  return {};
}

Endpoint::Endpoint(const EndpointConfig& config) : config_(config), memory_(config.key_seed) {
  if (config_.metaroce_udp_port == 0) config_.metaroce_udp_port = wire::kDefaultUdpPort;
  cq_.resize(config_.completion_queue_depth);
  pending_naks_.reserve(64);
}

Endpoint::~Endpoint() = default;

std::optional<uint32_t> Endpoint::register_memory(void* addr, uint64_t length, uint32_t access) {
  return memory_.register_region(addr, length, access);
}
bool Endpoint::deregister_memory(uint32_t key) { return memory_.deregister(key); }

std::optional<uint32_t> Endpoint::create_connection(const ConnectionConfig& config, std::string* error) {
  std::string e = validate(config);
  // One id space for both transports: every call (post, stats, destroy)
  // names a connection by its local_id alone.
  if (e.empty() && by_id_.contains(config.local_id)) e = "local_id: " + std::to_string(config.local_id) + " is in use";
  if (!e.empty()) {
    if (error) *error = e;
    return std::nullopt;
  }
  auto conn = config.transport == TransportKind::kRoCEv2 ? make_rocev2_connection(*this, config)
                                                          : make_metaroce_connection(*this, config);
  by_id_[config.local_id] = conn.get();
  counters_.connection_state_bytes += conn->state_bytes();
  conn->slot = connections_.size();
  connections_.push_back(std::move(conn));
  schedule_.resize(connections_.size());
  recent_senders_.resize(connections_.size());
  touched(*connections_.back());
  return config.local_id;
}

bool Endpoint::destroy_connection(uint32_t local_id) {
  auto it = by_id_.find(local_id);
  if (it == by_id_.end()) return false;
  const size_t i = it->second->slot;
  by_id_.erase(it);
  counters_.connection_state_bytes -= connections_[i]->state_bytes();
  // The last connection takes slot i: nothing else is renumbered or
  // rescheduled (a daemon tearing down 16,000 connections pays O(log n) each).
  schedule_.swap_remove(i);
  recent_senders_.swap_remove(i);
  connections_[i] = std::move(connections_.back());
  connections_.pop_back();
  if (i < connections_.size()) connections_[i]->slot = i;
  if (tx_rr_ >= connections_.size()) tx_rr_ = 0;
  return true;
}

Connection* Endpoint::find_connection(uint32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

// A frame of one transport names a connection of that transport only.
Connection* Endpoint::find_connection(uint32_t id, TransportKind kind) const {
  Connection* c = find_connection(id);
  return c && c->config().transport == kind ? c : nullptr;
}

void Endpoint::touched(const Connection& c) { schedule_.touched(c.slot, c.next_deadline()); }

template <typename R, typename Fn>
R Endpoint::with_connection(uint32_t id, R missing, Fn&& fn) {
  Connection* c = find_connection(id);
  if (!c) return missing;
  const R r = fn(*c);
  touched(*c);
  return r;
}

PostError Endpoint::post(uint32_t conn, uint16_t stream, const WorkRequest& wr) {
  return with_connection(conn, PostError::kUnknownConnection, [&](Connection& c) { return c.post(stream, wr); });
}

PostError Endpoint::post_recv(uint32_t conn, uint16_t stream, const RecvRequest& rr) {
  return with_connection(conn, PostError::kUnknownConnection, [&](Connection& c) { return c.post_recv(stream, rr); });
}

bool Endpoint::prepare(uint32_t conn, uint16_t stream, ConnectionUse use) {
  return with_connection(conn, false, [&](Connection& c) { return c.prepare(stream, use); });
}

bool Endpoint::set_path_entropy(uint32_t conn, uint8_t path, uint16_t src_port) {
  return with_connection(conn, false, [&](Connection& c) { return c.set_path_entropy(path, src_port); });
}

ConnectionStats Endpoint::stats(uint32_t conn) const {
  Connection* c = find_connection(conn);
  return c ? c->stats() : ConnectionStats{};
}

void Endpoint::push_completion(const Completion& c) {
  if (cq_count_ == cq_.size()) {
    counters_.completion_queue_overflow++;
    return;
  }
  cq_[(cq_head_ + cq_count_) % cq_.size()] = c;
  ++cq_count_;
}

size_t Endpoint::poll_completions(std::span<Completion> out) {
  size_t n = 0;
  while (n < out.size() && cq_count_ > 0) {
    out[n++] = cq_[cq_head_];
    cq_head_ = (cq_head_ + 1) % cq_.size();
    --cq_count_;
  }
  return n;
}

void Endpoint::note_active_sender(size_t slot, Nanos now) { recent_senders_.seen(slot, now); }

uint32_t Endpoint::rate_hint_kbps(Nanos now) {
  if (config_.inbound_capacity_bps <= 0) return 0;
  const size_t active = recent_senders_.count(now, config_.active_sender_window_ns);
  const double share = config_.inbound_capacity_bps / static_cast<double>(std::max<size_t>(active, 1)) / 1000.0;
  return static_cast<uint32_t>(std::min(share, 4.0e9));
}

void Endpoint::on_frame(std::span<const uint8_t> frame, Nanos now) {
  counters_.frames_in++;
  const auto v = wire::decode_udp_frame(frame);
  if (!v || v->flow.dst_ip != config_.ip) {
    counters_.drop_not_ours++;
    return;
  }
  if (v->flow.dst_port == config_.metaroce_udp_port) {
    // Integrity first: a corrupted connection id must count as corruption, not
    // as an unknown connection, and never reach a connection.
    wire::PacketView pv;
    const wire::DecodeError err = wire::decode_packet(v->payload, pv);
    if (err != wire::DecodeError::kNone) {
      (err == wire::DecodeError::kBadChecksum  ? counters_.drop_checksum
       : err == wire::DecodeError::kBadVersion ? counters_.drop_bad_version
       : err == wire::DecodeError::kBadOpcode  ? counters_.drop_bad_opcode
                                               : counters_.drop_decode)++;
      return;
    }
    Connection* c = find_connection(pv.common.dst_conn_id.get(), TransportKind::kMetaRoCE);
    if (!c) {
      counters_.drop_unknown_connection++;
      reply_unknown_connection(*v, pv);
      return;
    }
    if (c->config().peer_ip != v->flow.src_ip) {
      counters_.drop_wrong_peer++;
      return;
    }
    c->on_metaroce_packet(*v, pv, now);
    touched(*c);
    return;
  }
  if (v->flow.dst_port == wire::rocev2::kUdpPort) {
    if (v->payload.size() < sizeof(wire::rocev2::Bth)) {
      counters_.drop_decode++;
      return;
    }
    const uint32_t qpn = wire::load_be24(v->payload.data() + 5);
    Connection* c = find_connection(qpn, TransportKind::kRoCEv2);
    if (!c) {
      counters_.drop_unknown_connection++;
      return;
    }
    if (c->config().peer_ip != v->flow.src_ip) {
      counters_.drop_wrong_peer++;
      return;
    }
    c->on_packet(*v, frame, now);
    touched(*c);
    return;
  }
  counters_.drop_not_ours++;
}

void Endpoint::reply_unknown_connection(const wire::UdpFrameView& v, const wire::PacketView& pv) {
  // Only answer intact MetaRoCE data packets (never ACK/NAK: no NAK storms).
  if (!wire::is_data_opcode(pv.opcode)) return;
  if (pv.common.src_conn_id.get() == 0 || pending_naks_.size() >= 64) return;
  PendingNak n;
  n.flow = v.flow;
  std::swap(n.flow.src_ip, n.flow.dst_ip);
  std::swap(n.flow.src_mac, n.flow.dst_mac);
  std::swap(n.flow.src_port, n.flow.dst_port);
  n.flow.src_port = v.flow.src_port;  // keep the path's entropy for the way back
  n.flow.dst_port = config_.metaroce_udp_port;
  n.dst_conn = pv.common.src_conn_id.get();
  n.nak = wire::NakExt{};
  n.nak.code = static_cast<uint8_t>(wire::NakCode::kUnknownConnection);
  counters_.naks_sent[static_cast<size_t>(RejectCode::kUnknownConnection)]++;
  n.nak.stream_id.set(pv.common.stream_id.get());
  n.nak.msg_seq.set(pv.common.msg_seq.get());
  n.nak.msg_offset.set(pv.common.msg_offset.get());
  pending_naks_.push_back(n);
  counters_.naks_unknown_connection++;
}

size_t Endpoint::poll_tx(std::span<TxFrame> burst, uint64_t ready_planes, Nanos now) {
  size_t n = 0;
  while (ready_planes != 0 && n < burst.size() && !pending_naks_.empty()) {
    const PendingNak& p = pending_naks_.back();
    wire::CommonHeader h{};
    h.version = wire::kVersion << 4;
    h.opcode = static_cast<uint8_t>(wire::Opcode::kNak);
    h.dst_conn_id.set(p.dst_conn);
    h.stream_id.set(p.nak.stream_id.get());
    TxFrame& f = burst[n];
    const size_t udp_len = wire::packet_bytes(wire::Opcode::kNak, 0);
    if (f.capacity < wire::kUdpFrameHeaderBytes + udp_len) break;
    std::span<uint8_t> out(f.data, f.capacity);
    wire::encode_udp_headers(out, p.flow, wire::Ecn::kNotEct, 0, udp_len);
    wire::encode_packet(out.subspan(wire::kUdpFrameHeaderBytes), h, &p.nak, sizeof(p.nak), {});
    f.len = static_cast<uint32_t>(wire::kUdpFrameHeaderBytes + udp_len);
    f.plane = static_cast<uint8_t>(std::countr_zero(ready_planes | (1ull << 63)));
    pending_naks_.pop_back();
    ++n;
  }
  // Round robin over the connections, from the one after the last that sent,
  // until a whole round sends nothing. Only active ones are asked (see
  // ConnectionSchedule): one that has nothing to send while every plane is
  // ready stays quiet until a frame, a post or its deadline wakes it, so it
  // would have answered no to every poll in between.
  const size_t nc = connections_.size();
  schedule_.activate_due(now);
  if (ready_planes & ~seen_planes_) {  // a plane never seen ready: anyone may use it now
    seen_planes_ |= ready_planes;
    schedule_.activate_all();
  }
  const bool all_ready = (ready_planes & seen_planes_) == seen_planes_;
  size_t pos = tx_rr_, idle = 0;
  while (n < burst.size() && idle < schedule_.active()) {
    const size_t i = schedule_.next_active(pos);
    Connection* c = connections_[i].get();
    pos = (i + 1) % nc;
    const bool sent = c->poll_tx(burst[n], ready_planes, now);
    schedule_.set_deadline(i, c->next_deadline());
    if (sent) {
      ++n;
      idle = 0;
      tx_rr_ = pos;
    } else if (all_ready) {
      schedule_.deactivate(i);
    } else {
      ++idle;  // waits for a plane: ask again next round
    }
  }
  counters_.frames_out += n;
  return n;
}

Nanos Endpoint::next_deadline() const { return schedule_.earliest(); }

}  // namespace metaroce::transport
