// MetaRoCE connection, the user-facing side: construction, posting work and
// receive requests, completions to the user (in post order, flushed after an
// error), statistics, and make_metaroce_connection.
#include <algorithm>
#include <memory>
#include <utility>

#include "metaroce_connection.h"

namespace metaroce::transport {
namespace detail {

MetaRoceConnection::MetaRoceConnection(Endpoint& ep, const ConnectionConfig& cfg) : Connection(ep, cfg) {
  const TransportTuning& t = cfg_.tuning;
  frame_overhead_ = wire::kUdpFrameHeaderBytes + sizeof(wire::CommonHeader) + sizeof(wire::WriteExt) +
                    wire::kCrcBytes;
  mss_ = cfg_.mtu_payload + frame_overhead_;
  max_chunks_ = (cfg_.max_message_bytes + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
  dst_port_ = cfg_.peer_udp_port ? cfg_.peer_udp_port : wire::kDefaultUdpPort;
  streams_.resize(cfg_.streams);
  const uint32_t resp_cap = 2 * cfg_.recv_window_messages;
  for (Stream& s : streams_) {
    s.req.resize(cfg_.max_outstanding_per_stream);
    for (TxMsg& m : s.req) {
      m.acked.resize(max_chunks_);
      m.resp_bits.resize(max_chunks_);
    }
    s.resp.resize(resp_cap);
    for (TxMsg& m : s.resp) m.acked.resize(max_chunks_);
    s.resp_fifo.resize(resp_cap);
    s.rx.resize(cfg_.recv_window_messages);
    for (RxMsg& m : s.rx) m.bits.resize(max_chunks_);
    s.posted.resize(cfg_.recv_window_messages);
  }
  paths_.resize(cfg_.paths.size());
  for (size_t i = 0; i < paths_.size(); ++i) {
    Path& p = paths_[i];
    p.id = static_cast<uint8_t>(i);
    p.plane = cfg_.paths[i].plane;
    p.src_port = p.base_port = cfg_.paths[i].src_port;
    p.rx_entropy = p.src_port;
    // Designated initialisers: a field added to either struct cannot shift the others.
    p.cc = PathCongestion(CcParams{.mss = static_cast<double>(mss_),
                                   .init_cwnd_packets = static_cast<double>(t.init_cwnd_packets),
                                   .max_cwnd_packets = static_cast<double>(t.max_cwnd_packets),
                                   .additive_increase_packets = t.additive_increase_packets,
                                   .gain = t.dctcp_gain});
    p.health = PathHealth(HealthParams{.loss_gain = kLossGain,
                                       .degraded_loss = t.degraded_loss,
                                       .degraded_ratio = t.degraded_ratio,
                                       .down_after_rtos = t.down_after_rtos,
                                       .up_after_probes = t.up_after_probes,
                                       .rotate_after_degraded_packets = t.rotate_after_degraded_packets});
    p.rto = std::clamp(t.initial_rto_ns, t.min_rto_ns, t.max_rto_ns);
    p.stats.plane = p.plane;
    p.stats.src_port = p.src_port;
  }
  conn_cc_ = ConnectionCongestion(mss_, t.conn_max_cwnd_packets);
  retx_.resize(paths_.size() * kRingSize * 2 + 64);
  naks_.resize(256);
}

// ---------------------------------------------------------------- verbs

PostError MetaRoceConnection::post(uint16_t stream, const WorkRequest& wr) {
  if (stream >= streams_.size()) return PostError::kBadStream;
  Stream& s = streams_[stream];
  if (s.next_seq - s.head_seq >= s.req.size()) return PostError::kQueueFull;
  TxMsg& m = s.req[s.next_seq % s.req.size()];
  uint8_t* local = nullptr;
  const bool atomic = wr.verb == Verb::kFetchAdd || wr.verb == Verb::kCmpSwap;
  if (atomic) {
    if (wr.length != 8) return PostError::kBadLength;
    if ((wr.remote_addr | wr.local_addr) & 7) return PostError::kBadAlignment;
  } else if (wr.length == 0 || wr.length > cfg_.max_message_bytes) {
    return PostError::kBadLength;
  }
  const uint32_t right = (wr.verb == Verb::kRead || atomic) ? kAccessLocalWrite : 0;
  if (ep_.memory().check(wr.lkey, wr.local_addr, wr.length, right, &local) != AccessCheck::kOk)
    return PostError::kLocalProtection;
  {  // reset the slot, keeping the bitmaps' storage (no allocation per request)
    ChunkBitmap acked = std::move(m.acked), resp_bits = std::move(m.resp_bits);
    m = TxMsg{};
    m.acked = std::move(acked);
    m.resp_bits = std::move(resp_bits);
    m.acked.clear();
    m.resp_bits.clear();
  }
  m.active = true;
  m.msg_seq = s.next_seq;
  m.verb = wr.verb;
  m.wr_id = wr.wr_id;
  m.local = local;
  m.remote_addr = wr.remote_addr;
  m.rkey = wr.rkey;
  m.imm = wr.imm;
  switch (wr.verb) {
    case Verb::kWrite: m.opcode = Opcode::kWrite; break;
    case Verb::kWriteImm: m.opcode = Opcode::kWriteImm; break;
    case Verb::kSend: m.opcode = Opcode::kSend; break;
    case Verb::kSendImm: m.opcode = Opcode::kSendImm; break;
    case Verb::kRead: m.opcode = Opcode::kReadReq; break;
    case Verb::kFetchAdd: m.opcode = Opcode::kFetchAdd; break;
    case Verb::kCmpSwap: m.opcode = Opcode::kCmpSwap; break;
    case Verb::kRecv: return PostError::kUnsupported;
  }
  if (m.opcode == Opcode::kSend || m.opcode == Opcode::kSendImm) m.recv_seq = s.next_recv_seq++;
  if (m.opcode == Opcode::kReadReq) {
    m.read_len = wr.length;
    m.length = 0;
    m.chunks = 1;
    m.resp_chunks = chunks_for(wr.length);
  } else if (atomic) {
    m.length = 0;
    m.chunks = 1;
    m.resp_chunks = 1;
    m.operand = wr.verb == Verb::kFetchAdd ? wr.compare_add : wr.swap;
    m.compare = wr.verb == Verb::kCmpSwap ? wr.compare_add : 0;
  } else {
    m.length = wr.length;
    m.chunks = chunks_for(wr.length);
  }
  m.last_progress = last_now_;
  ++s.next_seq;
  if (s.error) fail_message(stream, m, WcStatus::kFlushed);
  return PostError::kOk;
}

PostError MetaRoceConnection::post_recv(uint16_t stream, const RecvRequest& rr) {
  if (stream >= streams_.size()) return PostError::kBadStream;
  Stream& s = streams_[stream];
  if (s.posted_count - s.consumed_count >= s.posted.size()) return PostError::kQueueFull;
  if (rr.length == 0) return PostError::kBadLength;
  if (ep_.memory().check(rr.lkey, rr.addr, rr.length, kAccessLocalWrite, nullptr) != AccessCheck::kOk)
    return PostError::kLocalProtection;
  s.posted[s.posted_count % s.posted.size()] = rr;
  ++s.posted_count;
  return PostError::kOk;
}

bool MetaRoceConnection::set_path_entropy(uint8_t path, uint16_t src_port) {
  if (path >= paths_.size()) return false;
  paths_[path].src_port = src_port;
  paths_[path].stats.src_port = src_port;
  return true;
}

// ---------------------------------------------------------------- completions

// Requests complete in post order: writes and sends once the peer's watermark
// passes them (all data placed there), reads and atomics once the response is in.
void MetaRoceConnection::release_completions(Stream& s, uint16_t sid) {
  while (s.head_seq != s.next_seq) {
    TxMsg& m = s.req[s.head_seq % s.req.size()];
    if (!m.done) {
      const bool placed = m.opcode != Opcode::kReadReq && m.opcode != Opcode::kFetchAdd &&
                          m.opcode != Opcode::kCmpSwap && seq_diff(s.peer_watermark, m.msg_seq) > 0;
      if (!placed) return;
      m.done = true;
    }
    Completion c;
    c.wr_id = m.wr_id;
    c.conn = cfg_.local_id;
    c.stream = sid;
    c.verb = m.verb;
    c.status = m.status;
    c.byte_len = m.verb == Verb::kRead ? m.read_len : m.length ? m.length : 8;
    if (m.status == WcStatus::kSuccess) {
      stats_.messages_completed++;
      stats_.payload_bytes_completed += c.byte_len;
    }
    ep_.push_completion(c);
    m.active = false;
    ++s.head_seq;
    if (seq_diff(s.cursor_seq, s.head_seq) < 0) s.cursor_seq = s.head_seq;
  }
}

void MetaRoceConnection::fail_message(uint16_t sid, TxMsg& m, WcStatus st) {
  Stream& s = streams_[sid];
  if (!m.done) {
    m.done = true;
    m.status = st;
  }
  m.next_chunk = m.chunks;  // send nothing more of it
  if (st != WcStatus::kSuccess) {
    // Everything after the first failed message is flushed, even a message a NAK
    // already failed: the receiver refuses every message after a failed one, and
    // that refusal can overtake the failed message's own NAK (lost, or on a
    // faster path). A later message never completes successfully before an
    // earlier one (completion follows the receiver's in-order watermark).
    s.error = true;
    for (uint32_t q = m.msg_seq + 1; q != s.next_seq; ++q) {
      TxMsg& o = s.req[q % s.req.size()];
      if (!o.active || o.msg_seq != q || (o.done && o.status == WcStatus::kSuccess)) continue;
      o.done = true;
      o.status = WcStatus::kFlushed;
      o.next_chunk = o.chunks;
    }
  }
  release_completions(s, sid);
}

void MetaRoceConnection::emit_recv(Stream& s, uint16_t sid, const RxMsg& m, WcStatus st) {
  Completion c;
  c.conn = cfg_.local_id;
  c.stream = sid;
  c.verb = Verb::kRecv;
  c.status = st;
  c.byte_len = m.len;
  c.remote_verb = m.opcode == Opcode::kSend ? Verb::kSend : m.opcode == Opcode::kSendImm ? Verb::kSendImm
                                                                                         : Verb::kWriteImm;
  c.has_imm = m.opcode == Opcode::kSendImm || m.opcode == Opcode::kWriteImm;
  c.imm = m.imm;
  if (m.opcode != Opcode::kWriteImm) c.wr_id = s.posted[m.recv_seq % s.posted.size()].wr_id;
  ep_.push_completion(c);
}

// ---------------------------------------------------------------- stats

ConnectionStats MetaRoceConnection::stats() const {
  ConnectionStats s = stats_;
  s.transport = TransportKind::kMetaRoCE;
  s.conn_cwnd_bytes = conn_cc_.cwnd();
  s.rate_hint_kbps = rate_hint_kbps_;
  for (const Path& p : paths_) {
    PathStats ps = p.stats;
    ps.inflight = p.inflight;
    ps.loss_ewma = p.health.loss();
    ps.cwnd_bytes = p.cc.cwnd();
    s.paths.push_back(ps);
  }
  return s;
}

}  // namespace detail

std::unique_ptr<Connection> make_metaroce_connection(Endpoint& ep, const ConnectionConfig& cfg) {
  return std::make_unique<detail::MetaRoceConnection>(ep, cfg);
}

}  // namespace metaroce::transport
