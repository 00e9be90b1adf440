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
  frame_overhead_ = wire::kUdpFrameHeaderBytes + sizeof(wire::CommonHeader) + sizeof(wire::WriteExt) +
                    wire::kCrcBytes;
  mss_ = cfg_.mtu_payload + frame_overhead_;
  max_chunks_ = (cfg_.max_message_bytes + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
  bitmap_words_ = (max_chunks_ + 63) / 64;
  dst_port_ = cfg_.peer_udp_port ? cfg_.peer_udp_port : wire::kDefaultUdpPort;
  conn_cc_ = ConnectionCongestion(mss_, cfg_.tuning.conn_max_cwnd_packets);
  // The endpoint adds this to its total once the connection exists; hold()
  // reports each growth after that.
  state_bytes_ = sizeof(*this) + cfg_.paths.capacity() * sizeof(PathConfig);
}

// ---------------------------------------------------------------- state on first need

Path MetaRoceConnection::make_path(size_t i) const {
  const TransportTuning& t = cfg_.tuning;
  Path p;
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
  p.health = PathHealth(HealthParams{.loss_gain = kPathLossGain,
                                     .degraded_loss = t.degraded_loss,
                                     .degraded_ratio = t.degraded_ratio,
                                     .down_after_rtos = t.down_after_rtos,
                                     .up_after_probes = t.up_after_probes,
                                     .rotate_after_degraded_packets = t.rotate_after_degraded_packets});
  p.rto = std::clamp(t.initial_rto_ns, t.min_rto_ns, t.max_rto_ns);
  p.stats.plane = p.plane;
  p.stats.src_port = p.src_port;
  return p;
}

void MetaRoceConnection::activate() {
  if (active()) return;
  streams_.reserve(cfg_.streams);
  for (uint16_t i = 0; i < cfg_.streams; ++i) streams_.emplace_back(cfg_);
  paths_.reserve(cfg_.paths.size());
  for (size_t i = 0; i < cfg_.paths.size(); ++i) paths_.push_back(make_path(i));
  naks_.resize(256);
  hold(streams_.capacity() * sizeof(Stream) + paths_.capacity() * sizeof(Path) +
       naks_.capacity() * sizeof(wire::NakExt));
}

void MetaRoceConnection::ensure_transmit() {
  if (retx_.empty()) size_transmit(prepared_ ? kRingSize : kInitialRingSize);  // once: every post calls this
}

void MetaRoceConnection::size_transmit(uint32_t records) {
  for (Path& p : paths_)
    if (!p.ring || p.ring_mask + 1 < records) grow_ring(p, records);
  // Every record of every path lost at once, twice over, and room to spare:
  // with the records at their cap queue_retransmit never finds it full; while
  // they grow, it doubles when it does.
  const size_t entries = paths_.size() * records * 2 + 64;
  if (retx_.size() < entries) grow_retransmit_queue(entries);
}

// Gives a path `size` records (a power of two, more than it has), keeping
// [floor, next_seq) at their seqs.
void MetaRoceConnection::grow_ring(Path& p, uint32_t size) {
  const uint32_t old_size = p.ring ? p.ring_mask + 1 : 0;
  auto ring = std::make_unique<TxRecord[]>(size);
  for (uint32_t seq = p.floor; seq_diff(seq, p.next_seq) < 0; ++seq) ring[seq & (size - 1)] = p.rec(seq);
  p.ring = std::move(ring);
  p.ring_mask = size - 1;
  hold((size - old_size) * sizeof(TxRecord));
}

// Gives the retransmit queue `size` entries (more than it has), keeping its
// queued entries in order.
void MetaRoceConnection::grow_retransmit_queue(size_t size) {
  std::vector<ChunkRef> bigger(size);
  for (uint64_t i = retx_head_; i != retx_tail_; ++i) bigger[i - retx_head_] = retx_[i % retx_.size()];
  hold((size - retx_.size()) * sizeof(ChunkRef));
  retx_tail_ -= retx_head_;
  retx_head_ = 0;
  retx_.swap(bigger);
}

void MetaRoceConnection::ensure_requests(Stream& s) {
  if (!s.req.allocated()) hold(s.req.allocate(bitmap_words_, &TxMsg::acked, &TxMsg::resp_bits));
  ensure_transmit();
}

// A response only uses its acked bitmap (resp_bits is the requester's).
void MetaRoceConnection::ensure_responses(Stream& s) {
  if (!s.resp.allocated()) hold(s.resp.allocate(bitmap_words_, &TxMsg::acked) + s.resp_fifo.allocate());
  ensure_transmit();
}

void MetaRoceConnection::ensure_receive_window(Stream& s) {
  if (!s.rx.allocated()) hold(s.rx.allocate(bitmap_words_, &RxMsg::bits));
}

void MetaRoceConnection::ensure_posted_receives(Stream& s) {
  if (!s.posted.allocated()) hold(s.posted.allocate());
}

void MetaRoceConnection::hold(size_t bytes) {
  state_bytes_ += bytes;
  ep_.add_connection_state_bytes(bytes);
}

// ---------------------------------------------------------------- verbs

PostError MetaRoceConnection::post(uint16_t stream, const WorkRequest& wr) {
  if (stream >= cfg_.streams) return PostError::kBadStream;
  activate();
  Stream& s = streams_[stream];
  if (s.next_seq - s.head_seq >= s.req.size()) return PostError::kQueueFull;
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
  ensure_requests(s);
  TxMsg& m = s.req[s.next_seq % s.req.size()];
  {  // reset the slot, keeping its bitmaps' storage (no allocation per request)
    const ChunkBitmap acked = m.acked, resp_bits = m.resp_bits;
    m = TxMsg{};
    m.acked = acked;
    m.resp_bits = resp_bits;
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
  if (stream >= cfg_.streams) return PostError::kBadStream;
  activate();
  Stream& s = streams_[stream];
  if (s.posted_count - s.consumed_count >= s.posted.size()) return PostError::kQueueFull;
  if (rr.length == 0) return PostError::kBadLength;
  if (ep_.memory().check(rr.lkey, rr.addr, rr.length, kAccessLocalWrite, nullptr) != AccessCheck::kOk)
    return PostError::kLocalProtection;
  ensure_posted_receives(s);
  s.posted[s.posted_count % s.posted.size()] = rr;
  ++s.posted_count;
  return PostError::kOk;
}

bool MetaRoceConnection::prepare(uint16_t stream, ConnectionUse use) {
  if (stream >= cfg_.streams) return false;
  activate();
  Stream& s = streams_[stream];
  prepared_ = true;  // a control-plane moment: from now on records come at their cap
  if (!retx_.empty()) size_transmit(kRingSize);  // records allocated before, lazily: to the cap now
  switch (use) {
    case ConnectionUse::kRequest: ensure_requests(s); break;
    case ConnectionUse::kReceive: ensure_receive_window(s); break;
    case ConnectionUse::kRespond: ensure_responses(s); break;
    case ConnectionUse::kPostReceives: ensure_posted_receives(s); break;
  }
  return true;
}

bool MetaRoceConnection::set_path_entropy(uint8_t path, uint16_t src_port) {
  if (path >= cfg_.paths.size()) return false;
  activate();
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
  s.state_bytes = state_bytes_;
  auto add = [&](const Path& p) {
    PathStats ps = p.stats;
    ps.inflight = p.inflight;
    ps.loss_ewma = p.health.loss();
    ps.cwnd_bytes = p.cc.cwnd();
    s.paths.push_back(ps);
  };
  // An idle connection's paths are what activate() would build.
  if (active())
    for (const Path& p : paths_) add(p);
  else
    for (size_t i = 0; i < cfg_.paths.size(); ++i) add(make_path(i));
  return s;
}

}  // namespace detail

std::unique_ptr<Connection> make_metaroce_connection(Endpoint& ep, const ConnectionConfig& cfg) {
  return std::make_unique<detail::MetaRoceConnection>(ep, cfg);
}

}  // namespace metaroce::transport
