// MetaRoCE connection: multipath, out-of-order placement, per-path sequence
// numbers with 256-bit SACK, immediate retransmission of exactly the missing
// packet, ECN AIMD per path and per connection, receiver rate hints.
// The mechanisms and our choices are specified in docs/spec/metaroce-wire-v1.md.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "congestion.h"
#include "connection.h"
#include "path_health.h"
#include "sack_window.h"

namespace metaroce::transport {
namespace {

using wire::Opcode;

constexpr uint32_t kRingSize = 256;  // per-path transmission records == SACK span
constexpr uint8_t kKindRequest = 0;
constexpr uint8_t kKindResponse = 1;
constexpr uint8_t kKindProbe = 2;

// A reference from a transmission record to the chunk it carried.
struct ChunkRef {
  uint16_t stream = 0;
  uint8_t kind = kKindRequest;
  uint8_t attempt = 0;  // the message's send round (RNR restarts start a new one)
  uint32_t msg_seq = 0;
  uint32_t chunk = 0;
};

enum class RecState : uint8_t { kFree, kOutstanding, kAcked, kLost };

struct TxRecord {
  ChunkRef ref;
  Nanos sent_at = 0;
  uint32_t bytes = 0;  // frame bytes, for window accounting
  uint32_t payload = 0;
  RecState state = RecState::kFree;
  bool retx = false;
};

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

struct Stream {
  // Send side.
  std::vector<TxMsg> req;        // indexed msg_seq % size
  uint32_t head_seq = 0;         // oldest request not yet completed to the user
  uint32_t next_seq = 0;         // next msg_seq to assign
  uint32_t cursor_seq = 0;       // first request that may still have unsent chunks
  uint32_t next_recv_seq = 0;    // SENDs posted so far
  uint32_t peer_watermark = 0;   // peer reports: all our requests below this are complete there
  std::vector<TxMsg> resp;       // responses we owe the peer, indexed msg_seq % size
  std::vector<uint32_t> resp_fifo;  // msg_seqs of responses in creation order
  uint32_t resp_fifo_head = 0, resp_fifo_tail = 0;
  bool error = false;
  // Receive side.
  std::vector<RxMsg> rx;         // indexed msg_seq % size
  uint32_t rx_base = 0;          // all peer messages below this are complete (the watermark)
  std::vector<RecvRequest> posted;
  uint32_t posted_count = 0, consumed_count = 0;
  bool rx_error = false;
};

struct Path {
  uint8_t id = 0;
  uint8_t plane = 0;
  uint16_t src_port = 0, base_port = 0;
  PathHealth health;
  PathCongestion cc;
  // Sender.
  uint32_t next_seq = 0, floor = 0;
  std::array<TxRecord, kRingSize> ring{};
  uint32_t inflight = 0;
  uint64_t inflight_bytes = 0;
  double srtt = 0, rttvar = 0;
  Nanos rto = 0;
  uint32_t backoff = 0;
  Nanos last_ack_at = 0;
  Nanos next_probe_at = 0;
  Nanos pto_at = kNever;
  bool probe_due = false;
  uint16_t probe_stream = 0;
  // Receiver.
  SackWindow rx;
  uint32_t rx_ce = 0, rx_since_ack = 0, rx_echo_ts = 0;
  uint16_t rx_entropy = 0, rx_stream = 0;
  bool ack_due = false;
  PathStats stats;
};

WcStatus status_for_nak(wire::NakCode c) {
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

wire::NakCode nak_for(AccessCheck a) {
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
  MetaRoceConnection(Endpoint& ep, const ConnectionConfig& cfg) : Connection(ep, cfg) {
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
      p.cc = PathCongestion(CcParams{static_cast<double>(mss_), static_cast<double>(t.init_cwnd_packets),
                                     static_cast<double>(t.max_cwnd_packets), t.additive_increase_packets,
                                     t.dctcp_gain});
      p.health = PathHealth(HealthParams{kLossGain, t.degraded_loss, t.degraded_ratio, t.down_after_rtos,
                                         t.up_after_probes, t.rotate_after_degraded_packets});
      p.rto = t.min_rto_ns;
      p.stats.plane = p.plane;
      p.stats.src_port = p.src_port;
    }
    conn_cc_ = ConnectionCongestion(mss_, t.conn_max_cwnd_packets);
    retx_.resize(paths_.size() * kRingSize * 2 + 64);
    naks_.resize(256);
  }

  // ---------------------------------------------------------------- verbs

  PostError post(uint16_t stream, const WorkRequest& wr) override {
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

  PostError post_recv(uint16_t stream, const RecvRequest& rr) override {
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

  bool set_path_entropy(uint8_t path, uint16_t src_port) override {
    if (path >= paths_.size()) return false;
    paths_[path].src_port = src_port;
    paths_[path].stats.src_port = src_port;
    return true;
  }

  // ---------------------------------------------------------------- receive

  void on_packet(const wire::UdpFrameView&, std::span<const uint8_t>, Nanos) override {}

  // The endpoint has validated the CRC and decoded the packet before dispatch.
  void on_metaroce_packet(const wire::UdpFrameView& v, const wire::PacketView& pv, Nanos now) override {
    last_now_ = now;
    if (pv.opcode == Opcode::kAck) return on_ack(pv, now);
    if (pv.opcode == Opcode::kNak) return on_nak(pv, now);
    const uint8_t path_id = pv.common.path_id;
    if (path_id >= paths_.size()) {
      ep_.mutable_counters().drop_decode++;
      return;
    }
    Path& p = paths_[path_id];
    if (!rx_path(p, pv, v, now)) return;
    if (pv.opcode != Opcode::kProbe) {
      ep_.note_active_sender(cfg_.local_id, now);
      rx_data(pv, now);
    } else {
      p.rx_stream = pv.common.stream_id.get();
    }
  }

  // Path-level receive: sequence window, SACK bits, ECN, ACK scheduling.
  // Returns false when the packet is outside the window and must be ignored.
  bool rx_path(Path& p, const wire::PacketView& pv, const wire::UdpFrameView& v, Nanos) {
    const uint32_t seq = pv.common.path_seq.get();
    const uint32_t floor = pv.common.path_floor.get();
    if (seq_diff(floor, seq) > 0 || seq_diff(seq, floor) >= static_cast<int32_t>(kRingSize)) {
      ep_.mutable_counters().drop_out_of_window++;
      return false;
    }
    const SackWindow::Result res = p.rx.on_packet(seq, floor);
    if (res == SackWindow::Result::kBeyondWindow) {
      ep_.mutable_counters().drop_out_of_window++;
      return false;
    }
    // kBelowWindow / kDuplicate: a late or repeated copy; the message layer dedupes its data.
    const bool in_order = res == SackWindow::Result::kNew && !p.rx.has_gap() && seq + 1 == p.rx.cum();
    if (v.ecn == wire::Ecn::kCe) p.rx_ce++;
    p.rx_echo_ts = pv.common.tx_ts.get();
    p.rx_entropy = v.flow.src_port;
    p.rx_stream = pv.common.stream_id.get();
    ++p.rx_since_ack;
    if (!in_order || (pv.common.flags & wire::kFlagAckReq) || p.rx_since_ack >= cfg_.tuning.ack_every ||
        pv.opcode == Opcode::kProbe)
      p.ack_due = true;
    return true;
  }

  void rx_data(const wire::PacketView& pv, Nanos now) {
    const uint16_t sid = pv.common.stream_id.get();
    if (sid >= streams_.size()) return nak(sid, pv, wire::NakCode::kInvalidRequest);
    Stream& s = streams_[sid];
    if (pv.opcode == Opcode::kReadResp || pv.opcode == Opcode::kAtomicResp) return rx_response(s, sid, pv, now);
    const uint32_t mseq = pv.common.msg_seq.get();
    const int32_t d = seq_diff(mseq, s.rx_base);
    if (d < 0) {
      stats_.duplicates_received++;
      return;
    }
    if (d >= static_cast<int32_t>(s.rx.size())) {
      ep_.mutable_counters().drop_out_of_window++;
      return;
    }
    RxMsg& m = s.rx[mseq % s.rx.size()];
    if (m.active && m.msg_seq == mseq && m.failed) return nak(sid, pv, m.nak);
    if (s.rx_error) return nak(sid, pv, wire::NakCode::kInvalidRequest);
    const uint32_t off = pv.common.msg_offset.get();
    const uint32_t mlen = pv.common.msg_len.get();
    const uint32_t plen = static_cast<uint32_t>(pv.payload.size());
    uint32_t chunks = 1;
    uint32_t chunk = 0;
    if (pv.opcode == Opcode::kWrite || pv.opcode == Opcode::kWriteImm || pv.opcode == Opcode::kSend ||
        pv.opcode == Opcode::kSendImm) {
      if (mlen == 0 || mlen > cfg_.max_message_bytes || off % cfg_.mtu_payload != 0 ||
          plen != std::min(cfg_.mtu_payload, mlen - off))
        return nak(sid, pv, wire::NakCode::kInvalidRequest);
      chunks = chunks_for(mlen);
      chunk = off / cfg_.mtu_payload;
    }
    if (!m.active) {
      m.active = true;
      m.complete = m.failed = m.exec_pending = false;
      m.req_path = pv.common.path_id;
      m.msg_seq = mseq;
      m.opcode = pv.opcode;
      m.len = mlen;
      m.chunks = chunks;
      m.received = 0;
      m.recv_status = WcStatus::kSuccess;
      m.bits.clear();
    } else if (m.msg_seq != mseq || m.opcode != pv.opcode || m.len != mlen) {
      return nak(sid, pv, wire::NakCode::kInvalidRequest);
    }
    if (m.complete || m.bits.test(chunk)) {
      stats_.duplicates_received++;
      return;
    }
    switch (pv.opcode) {
      case Opcode::kWrite:
      case Opcode::kWriteImm: {
        // Every packet checks the whole message's range (its address minus its
        // offset, for msg_len bytes): a message that would leave the region is
        // refused before any of its packets lands, whichever arrives first.
        const uint64_t addr = pv.ext.write.remote_addr.get();
        uint8_t* base = nullptr;
        const AccessCheck a = addr < off ? AccessCheck::kOutOfBounds
                                         : ep_.memory().check(pv.ext.write.rkey.get(), addr - off, mlen,
                                                              kAccessRemoteWrite, &base);
        if (a != AccessCheck::kOk) return fail_rx(s, sid, m, pv, nak_for(a));
        std::memcpy(base + off, pv.payload.data(), plen);
        m.imm = pv.ext.write.imm.get();
        break;
      }
      case Opcode::kSend:
      case Opcode::kSendImm: {
        const uint32_t rseq = pv.ext.send.recv_seq.get();
        if (seq_diff(rseq, s.consumed_count) < 0) return fail_rx(s, sid, m, pv, wire::NakCode::kInvalidRequest);
        if (seq_diff(rseq, s.posted_count) >= 0) {
          // No receive posted yet: refuse without recording, the sender retries.
          return nak(sid, pv, wire::NakCode::kRnr);
        }
        const RecvRequest& rr = s.posted[rseq % s.posted.size()];
        m.recv_seq = rseq;
        m.imm = pv.ext.send.imm.get();
        if (mlen > rr.length) {
          m.recv_status = WcStatus::kLocalLengthError;
          return fail_rx(s, sid, m, pv, wire::NakCode::kInvalidRequest);
        }
        uint8_t* dst = nullptr;
        if (ep_.memory().check(rr.lkey, rr.addr + off, plen, kAccessLocalWrite, &dst) != AccessCheck::kOk) {
          m.recv_status = WcStatus::kLocalProtectionError;
          return fail_rx(s, sid, m, pv, wire::NakCode::kInvalidRequest);
        }
        std::memcpy(dst, pv.payload.data(), plen);
        break;
      }
      case Opcode::kReadReq: {
        const uint32_t len = pv.ext.read_req.length.get();
        if (len > cfg_.max_message_bytes) return fail_rx(s, sid, m, pv, wire::NakCode::kInvalidRequest);
        const AccessCheck a = ep_.memory().check(pv.ext.read_req.rkey.get(), pv.ext.read_req.remote_addr.get(),
                                                 len, kAccessRemoteRead, nullptr);
        if (a != AccessCheck::kOk) return fail_rx(s, sid, m, pv, nak_for(a));
        m.req_addr = pv.ext.read_req.remote_addr.get();
        m.req_rkey = pv.ext.read_req.rkey.get();
        m.req_len = len;
        m.exec_pending = true;
        break;
      }
      case Opcode::kFetchAdd:
      case Opcode::kCmpSwap: {
        const uint64_t addr = pv.ext.atomic.remote_addr.get();
        if (addr & 7) return fail_rx(s, sid, m, pv, wire::NakCode::kInvalidRequest);
        const AccessCheck a = ep_.memory().check(pv.ext.atomic.rkey.get(), addr, 8, kAccessRemoteAtomic, nullptr);
        if (a != AccessCheck::kOk) return fail_rx(s, sid, m, pv, nak_for(a));
        m.req_addr = addr;
        m.req_rkey = pv.ext.atomic.rkey.get();
        m.req_operand = pv.ext.atomic.operand.get();
        m.req_compare = pv.ext.atomic.compare.get();
        m.exec_pending = true;
        break;
      }
      default: return;
    }
    m.bits.set(chunk);
    if (++m.received == m.chunks) m.complete = true;
    slide_rx(s, sid);
  }

  // Marks a peer message failed: NAK it, stop the stream (RC semantics per stream).
  void fail_rx(Stream& s, uint16_t sid, RxMsg& m, const wire::PacketView& pv, wire::NakCode code) {
    m.failed = true;
    m.complete = true;
    m.nak = code;
    nak(sid, pv, code);
    slide_rx(s, sid);
  }

  void slide_rx(Stream& s, uint16_t sid) {
    while (true) {
      RxMsg& m = s.rx[s.rx_base % s.rx.size()];
      if (!m.active || m.msg_seq != s.rx_base || !m.complete) return;
      if (m.failed) {
        // Do not slide past a failed message: its NAK must be seen first (it is
        // repeated for every later packet of the message), and the stream stops.
        if (m.opcode == Opcode::kSend || m.opcode == Opcode::kSendImm) {
          if (m.recv_status != WcStatus::kSuccess && s.consumed_count == m.recv_seq) {
            emit_recv(s, sid, m, m.recv_status);
            s.consumed_count++;
          }
        }
        s.rx_error = true;
        return;
      }
      if (m.exec_pending) {
        // No room for the response yet: stay here; a freed response slot slides again.
        if (!execute_request(s, sid, m)) return;
        m.exec_pending = false;
        if (m.failed) continue;
      }
      if (m.opcode == Opcode::kSend || m.opcode == Opcode::kSendImm) {
        emit_recv(s, sid, m, WcStatus::kSuccess);
        s.consumed_count++;
      } else if (m.opcode == Opcode::kWriteImm) {
        emit_recv(s, sid, m, WcStatus::kSuccess);
      }
      m.active = false;
      ++s.rx_base;
    }
  }

  // Executes a READ or atomic at the head of its stream. False: no response slot.
  bool execute_request(Stream& s, uint16_t sid, RxMsg& m) {
    const bool read = m.opcode == Opcode::kReadReq;
    uint8_t* p = nullptr;
    // Re-checked at execution: the region may have been deregistered meanwhile.
    const AccessCheck a = ep_.memory().check(m.req_rkey, m.req_addr, read ? m.req_len : 8,
                                             read ? kAccessRemoteRead : kAccessRemoteAtomic, &p);
    if (a != AccessCheck::kOk) {
      m.failed = true;
      m.nak = nak_for(a);
      queue_nak(sid, m.msg_seq, 0, m.nak, m.req_path);
      return true;
    }
    TxMsg* r = new_response(s, m.msg_seq);
    if (!r) return false;
    if (read) {
      r->opcode = Opcode::kReadResp;
      r->local = p;
      r->length = m.req_len;
      r->chunks = chunks_for(m.req_len);
    } else {
      uint64_t old;
      std::memcpy(&old, p, 8);
      uint64_t nv = old;
      if (m.opcode == Opcode::kFetchAdd) nv = old + m.req_operand;
      else if (old == m.req_compare) nv = m.req_operand;
      std::memcpy(p, &nv, 8);
      r->opcode = Opcode::kAtomicResp;
      r->operand = old;
      r->length = 0;
      r->chunks = 1;
    }
    return true;
  }

  void emit_recv(Stream& s, uint16_t sid, const RxMsg& m, WcStatus st) {
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

  TxMsg* new_response(Stream& s, uint32_t mseq) {
    if (s.resp_fifo_tail - s.resp_fifo_head >= s.resp_fifo.size()) return nullptr;
    TxMsg& r = s.resp[mseq % s.resp.size()];
    if (r.active) return nullptr;
    r.active = true;
    r.done = false;
    r.msg_seq = mseq;
    r.next_chunk = r.acked_chunks = 0;
    r.acked.clear();
    r.resume_at = 0;
    r.last_progress = last_now_;
    s.resp_fifo[s.resp_fifo_tail++ % s.resp_fifo.size()] = mseq;
    return &r;
  }

  // READ / atomic responses arriving at the requester.
  void rx_response(Stream& s, uint16_t sid, const wire::PacketView& pv, Nanos now) {
    const uint32_t mseq = pv.common.msg_seq.get();
    if (seq_diff(mseq, s.head_seq) < 0 || seq_diff(mseq, s.next_seq) >= 0) {
      stats_.duplicates_received++;
      return;
    }
    TxMsg& m = s.req[mseq % s.req.size()];
    if (!m.active || m.msg_seq != mseq || m.done) {
      stats_.duplicates_received++;
      return;
    }
    const uint32_t plen = static_cast<uint32_t>(pv.payload.size());
    if (pv.opcode == Opcode::kReadResp) {
      const uint32_t off = pv.common.msg_offset.get();
      if (m.opcode != Opcode::kReadReq || pv.common.msg_len.get() != m.read_len || off % cfg_.mtu_payload ||
          plen != std::min(cfg_.mtu_payload, m.read_len - off)) {
        ep_.mutable_counters().drop_decode++;
        return;
      }
      const uint32_t chunk = off / cfg_.mtu_payload;
      if (!m.resp_bits.set(chunk)) {
        stats_.duplicates_received++;
        return;
      }
      std::memcpy(m.local + off, pv.payload.data(), plen);
    } else {
      if (m.opcode != Opcode::kFetchAdd && m.opcode != Opcode::kCmpSwap) {
        ep_.mutable_counters().drop_decode++;
        return;
      }
      if (!m.resp_bits.set(0)) {
        stats_.duplicates_received++;
        return;
      }
      const uint64_t original = pv.ext.atomic_resp.original.get();
      std::memcpy(m.local, &original, 8);
    }
    m.last_progress = now;
    if (++m.resp_received == m.resp_chunks) {
      m.done = true;
      release_completions(s, sid);
    }
  }

  void nak(uint16_t sid, const wire::PacketView& pv, wire::NakCode code) {
    queue_nak(sid, pv.common.msg_seq.get(), pv.common.msg_offset.get(), code, pv.common.path_id);
  }
  void queue_nak(uint16_t sid, uint32_t msg_seq, uint32_t offset, wire::NakCode code, uint8_t path) {
    stats_.naks_sent++;
    if (nak_tail_ - nak_head_ >= naks_.size()) return;  // the sender's message timer recovers
    wire::NakExt& n = naks_[nak_tail_++ % naks_.size()];
    n = wire::NakExt{};
    n.code = static_cast<uint8_t>(code);
    n.stream_id.set(sid);
    n.msg_seq.set(msg_seq);
    n.msg_offset.set(offset);
    nak_path_ = path < paths_.size() ? path : 0;
  }

  // ---------------------------------------------------------------- acks at the sender

  void on_ack(const wire::PacketView& pv, Nanos now) {
    const uint32_t hint = pv.ext.ack.rate_hint_kbps.get();
    rate_hint_kbps_ = hint;
    const uint16_t sid = pv.common.stream_id.get();
    if (sid < streams_.size()) {
      Stream& s = streams_[sid];
      const uint32_t wm = pv.common.msg_seq.get();
      if (seq_diff(wm, s.peer_watermark) > 0 && seq_diff(wm, s.next_seq) <= 0) {
        s.peer_watermark = wm;
        release_completions(s, sid);
      }
    }
    for (const wire::AckBlock& b : pv.ack_blocks) {
      if (b.path_id >= paths_.size()) continue;
      on_ack_block(paths_[b.path_id], b, now);
    }
  }

  void on_ack_block(Path& p, const wire::AckBlock& b, Nanos now) {
    const uint32_t cum = b.cum_seq.get();
    if (seq_diff(cum, p.next_seq) > 0) return;  // acknowledges what we never sent
    uint32_t newly_acked_bytes = 0, newly_acked = 0;
    uint32_t highest = p.floor;
    bool any = false;
    for (uint32_t seq = p.floor; seq_diff(seq, p.next_seq) < 0; ++seq) {
      TxRecord& r = p.ring[seq % kRingSize];
      if (!sack_covers(cum, b.sack, seq)) continue;
      any = true;
      highest = seq;
      if (r.state == RecState::kOutstanding) {
        r.state = RecState::kAcked;
        p.inflight--;
        p.inflight_bytes -= r.bytes;
        conn_inflight_bytes_ -= r.bytes;
        newly_acked_bytes += r.bytes;
        ++newly_acked;
        p.health.on_delivered();
        chunk_acked(r.ref, now);
        p.stats.payload_bytes_acked += r.payload;
      } else if (r.state == RecState::kLost) {
        // We gave up on it and resent elsewhere, yet it arrived: a spurious retransmit.
        r.state = RecState::kAcked;
        p.stats.spurious_retransmits++;
        stats_.spurious_retransmits++;
        chunk_acked(r.ref, now);
      }
    }
    if (!any && seq_diff(cum, p.floor) <= 0) {
      // Nothing new; still counts as a sign of life for a down path's probes below.
    }
    // Loss: on a FIFO path, a hole below a SACKed seq is a lost packet.
    const uint32_t thresh = cfg_.tuning.reorder_threshold;
    if (any) {
      for (uint32_t seq = p.floor; seq_diff(seq, highest) < 0; ++seq) {
        TxRecord& r = p.ring[seq % kRingSize];
        if (r.state != RecState::kOutstanding) continue;
        if (static_cast<uint32_t>(seq_diff(highest, seq)) < thresh) continue;
        mark_lost(p, r);
      }
    }
    advance_floor(p);
    // RTT from the echoed timestamp of the packet that triggered this block.
    const uint32_t echo = b.echo_ts.get();
    const uint32_t rtt32 = static_cast<uint32_t>(now) - echo;
    if (echo != 0 && rtt32 < 1'000'000'000u) update_rtt(p, static_cast<double>(rtt32));
    p.last_ack_at = now;
    p.backoff = 0;
    if (p.inflight > 0) p.pto_at = now + pto(p);
    else p.pto_at = kNever;
    // Congestion control: ECN-driven, per path and per connection.
    const bool ece = b.flags & wire::kAckFlagEce;
    if (ece) p.stats.ecn_echoes++;
    const double cut = p.cc.on_ack(newly_acked, newly_acked_bytes, ece ? b.ecn_count.get() : 0, p.floor, p.next_seq);
    conn_cc_.on_ack(newly_acked_bytes, ece, cut, paths_.size());
    // A fully acknowledged request now waits on the watermark: arm its timer.
    next_timer_at_ = std::min(next_timer_at_, std::min(p.pto_at, now + message_timeout()));
    // Health.
    double others = 0;
    for (const Path& q : paths_)
      if (&q != &p) others += q.health.loss();
    const double mean = paths_.size() > 1 ? others / static_cast<double>(paths_.size() - 1) : 0.0;
    const PathState before = p.health.state();
    if (p.health.evaluate(mean) == PathHealth::Action::kRotateEntropy) rotate_entropy(p);
    note_state(p, before);
  }

  static constexpr double kLossGain = 1.0 / 64;

  void mark_lost(Path& p, TxRecord& r) {
    r.state = RecState::kLost;
    p.inflight--;
    p.inflight_bytes -= r.bytes;
    conn_inflight_bytes_ -= r.bytes;
    p.health.on_lost();
    p.stats.lost++;
    if (r.ref.kind != kKindProbe) queue_retransmit(r.ref);
  }

  void advance_floor(Path& p) {
    while (seq_diff(p.floor, p.next_seq) < 0) {
      TxRecord& r = p.ring[p.floor % kRingSize];
      if (r.state == RecState::kOutstanding) break;
      r.state = RecState::kFree;
      ++p.floor;
    }
  }

  void update_rtt(Path& p, double sample) {
    if (p.srtt == 0) {
      p.srtt = sample;
      p.rttvar = sample / 2;
    } else {
      p.rttvar = 0.75 * p.rttvar + 0.25 * std::abs(p.srtt - sample);
      p.srtt = 0.875 * p.srtt + 0.125 * sample;
    }
    p.rto = std::clamp<Nanos>(static_cast<Nanos>(p.srtt + 4 * p.rttvar), cfg_.tuning.min_rto_ns,
                              cfg_.tuning.max_rto_ns);
    p.stats.srtt_ns = p.srtt;
  }

  Nanos pto(const Path& p) const {
    return std::max<Nanos>(static_cast<Nanos>(2 * p.srtt), cfg_.tuning.min_pto_ns) << std::min<uint32_t>(p.backoff, 10);
  }

  void rotate_entropy(Path& p) {
    // Move to another ECMP route: a new source port in the ephemeral range.
    const uint32_t step = 7919u * (p.stats.entropy_rotations + 1) + p.id * 104729u;
    p.src_port = static_cast<uint16_t>(49152u + (p.base_port + step) % 16384u);
    p.stats.src_port = p.src_port;
    p.stats.entropy_rotations++;
  }

  // Bookkeeping after a health transition: stats, and a fresh window for a path
  // that comes back so it ramps up instead of bursting its old window.
  void note_state(Path& p, PathState before) {
    if (p.health.state() == before) return;
    p.stats.state = p.health.state();
    p.stats.state_changes++;
    if (p.health.became_active()) p.cc.reset();
  }

  void chunk_acked(const ChunkRef& ref, Nanos now) {
    if (ref.kind == kKindProbe || ref.stream >= streams_.size()) return;
    Stream& s = streams_[ref.stream];
    if (ref.kind == kKindResponse) {
      TxMsg& r = s.resp[ref.msg_seq % s.resp.size()];
      if (!r.active || r.msg_seq != ref.msg_seq || ref.chunk >= r.chunks || !r.acked.set(ref.chunk)) return;
      if (++r.acked_chunks == r.chunks) {
        r.active = false;
        while (s.resp_fifo_head != s.resp_fifo_tail) {
          const TxMsg& h = s.resp[s.resp_fifo[s.resp_fifo_head % s.resp_fifo.size()] % s.resp.size()];
          if (h.active) break;
          ++s.resp_fifo_head;
        }
        slide_rx(s, ref.stream);  // a request may have been waiting for this slot
      }
      return;
    }
    TxMsg& m = s.req[ref.msg_seq % s.req.size()];
    if (!m.active || m.msg_seq != ref.msg_seq || ref.attempt != m.attempt || ref.chunk >= m.chunks ||
        !m.acked.set(ref.chunk))
      return;
    m.acked_chunks++;
    m.last_progress = now;
    m.timeouts = 0;
  }

  // Requests complete in post order: writes and sends once the peer's watermark
  // passes them (all data placed there), reads and atomics once the response is in.
  void release_completions(Stream& s, uint16_t sid) {
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

  void fail_message(uint16_t sid, TxMsg& m, WcStatus st) {
    Stream& s = streams_[sid];
    if (!m.done) {
      m.done = true;
      m.status = st;
    }
    m.next_chunk = m.chunks;  // send nothing more of it
    if (st != WcStatus::kSuccess && !s.error) {
      s.error = true;
      for (uint32_t q = s.head_seq; q != s.next_seq; ++q) {
        TxMsg& o = s.req[q % s.req.size()];
        if (&o != &m && !o.done && seq_diff(q, m.msg_seq) > 0) {
          o.done = true;
          o.status = WcStatus::kFlushed;
          o.next_chunk = o.chunks;
        }
      }
    }
    release_completions(s, sid);
  }

  void on_nak(const wire::PacketView& pv, Nanos now) {
    stats_.naks_received++;
    const uint16_t sid = pv.ext.nak.stream_id.get();
    if (sid >= streams_.size()) return;
    Stream& s = streams_[sid];
    const uint32_t mseq = pv.ext.nak.msg_seq.get();
    const auto code = static_cast<wire::NakCode>(pv.ext.nak.code);
    if (seq_diff(mseq, s.head_seq) < 0 || seq_diff(mseq, s.next_seq) >= 0) return;
    TxMsg& m = s.req[mseq % s.req.size()];
    if (!m.active || m.done) return;
    if (code == wire::NakCode::kRnr) {
      if (m.resume_at > now) return;  // already backing off
      if (++m.rnr_count > cfg_.tuning.rnr_retry_limit) return fail_message(sid, m, WcStatus::kRnrRetryExceeded);
      restart_message(s, m, now + cfg_.tuning.rnr_delay_ns);
      return;
    }
    fail_message(sid, m, status_for_nak(code));
  }

  // Sends the whole message again from its first chunk, not before resume_at.
  void restart_message(Stream& s, TxMsg& m, Nanos resume_at) {
    m.acked.clear();
    m.acked_chunks = 0;
    m.next_chunk = 0;
    ++m.attempt;
    m.resume_at = resume_at;
    m.last_progress = resume_at;
    next_timer_at_ = std::min(next_timer_at_, resume_at);
    if (seq_diff(m.msg_seq, s.cursor_seq) < 0) s.cursor_seq = m.msg_seq;
  }

  // ---------------------------------------------------------------- transmit

  bool poll_tx(TxFrame& f, uint64_t ready, Nanos now) override {
    last_now_ = now;
    if (now >= next_timer_at_) service_timers(now);
    if (send_acks_and_naks(f, ready, now)) return true;
    if (send_probe(f, ready, now)) return true;
    if (pacing_blocked(now)) return false;
    while (retx_head_ != retx_tail_) {
      const ChunkRef ref = retx_[retx_head_ % retx_.size()];
      TxMsg* m = msg_for(ref);
      if (!m || (ref.kind == kKindRequest && (m->done || ref.attempt != m->attempt)) || m->acked.test(ref.chunk) ||
          ref.chunk >= m->next_chunk) {
        ++retx_head_;  // stale: completed, acked meanwhile, or from a round a restart replaced
        continue;
      }
      const int pi = pick_path(ready, true);
      if (pi < 0) return false;
      ++retx_head_;
      emit_chunk(f, paths_[pi], ref, *m, now, true);
      return true;
    }
    return send_new(f, ready, now);
  }

  bool send_new(TxFrame& f, uint64_t ready, Nanos now) {
    const size_t n = streams_.size();
    for (size_t k = 0; k < n; ++k) {
      const uint16_t sid = static_cast<uint16_t>((stream_rr_ + k) % n);
      Stream& s = streams_[sid];
      // Responses first: the peer is waiting on them.
      for (uint32_t q = s.resp_fifo_head; q != s.resp_fifo_tail; ++q) {
        TxMsg& r = s.resp[s.resp_fifo[q % s.resp_fifo.size()] % s.resp.size()];
        if (!r.active || r.next_chunk >= r.chunks) continue;
        const int pi = pick_path(ready, false);
        if (pi < 0) return false;
        ChunkRef ref{sid, kKindResponse, 0, r.msg_seq, r.next_chunk++};
        emit_chunk(f, paths_[pi], ref, r, now, false);
        stream_rr_ = sid + 1;
        return true;
      }
      while (s.cursor_seq != s.next_seq) {
        TxMsg& m = s.req[s.cursor_seq % s.req.size()];
        if (m.done || m.next_chunk >= m.chunks) {
          ++s.cursor_seq;
          continue;
        }
        if (m.resume_at > now) break;  // RNR back-off holds this stream's order
        // Do not run further ahead of the peer's receive window.
        if (seq_diff(m.msg_seq, s.peer_watermark) >= static_cast<int32_t>(cfg_.recv_window_messages)) break;
        const int pi = pick_path(ready, false);
        if (pi < 0) return false;
        ChunkRef ref{sid, kKindRequest, m.attempt, m.msg_seq, m.next_chunk++};
        emit_chunk(f, paths_[pi], ref, m, now, false);
        stream_rr_ = sid + 1;
        return true;
      }
    }
    return false;
  }

  TxMsg* msg_for(const ChunkRef& ref) {
    if (ref.stream >= streams_.size()) return nullptr;
    Stream& s = streams_[ref.stream];
    TxMsg& m = ref.kind == kKindResponse ? s.resp[ref.msg_seq % s.resp.size()] : s.req[ref.msg_seq % s.req.size()];
    if (!m.active || m.msg_seq != ref.msg_seq) return nullptr;
    return &m;
  }

  // Spraying: the eligible path with the most free window, weighted by health.
  int pick_path(uint64_t ready, bool retransmit) {
    if (conn_inflight_bytes_ + mss_ > conn_cc_.cwnd()) return -1;
    int best = -1;
    double best_score = 0;
    const size_t n = paths_.size();
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (path_rr_ + k) % n;
      Path& p = paths_[i];
      const PathState st = p.health.state();
      if (st == PathState::kDown || !((ready >> p.plane) & 1)) continue;
      if (p.next_seq - p.floor >= kRingSize - 1) continue;
      const double room = p.cc.cwnd() - static_cast<double>(p.inflight_bytes);
      if (room < mss_) continue;
      double score = room;
      if (st == PathState::kDegraded) score *= cfg_.tuning.degraded_weight;
      if (retransmit && st == PathState::kActive) score *= 2;  // resend on a healthy path
      if (score > best_score) {
        best_score = score;
        best = static_cast<int>(i);
      }
    }
    if (best >= 0) path_rr_ = static_cast<size_t>(best) + 1;
    return best;
  }

  void emit_chunk(TxFrame& f, Path& p, const ChunkRef& ref, TxMsg& m, Nanos now, bool retx) {
    const uint32_t off = ref.chunk * cfg_.mtu_payload;
    uint32_t plen = 0;
    if (m.opcode == Opcode::kWrite || m.opcode == Opcode::kWriteImm || m.opcode == Opcode::kSend ||
        m.opcode == Opcode::kSendImm || m.opcode == Opcode::kReadResp)
      plen = std::min(cfg_.mtu_payload, m.length - off);
    wire::CommonHeader h{};
    uint8_t flags = 0;
    if (ref.chunk == 0) flags |= wire::kFlagFirst;
    if (ref.chunk + 1 == m.chunks) flags |= wire::kFlagLast | wire::kFlagAckReq;
    if (retx) flags |= wire::kFlagRetx;
    union {
      wire::WriteExt write;
      wire::SendExt send;
      wire::ReadReqExt read;
      wire::AtomicExt atomic;
      wire::AtomicRespExt aresp;
    } ext{};
    size_t ext_len = wire::ext_header_bytes(m.opcode);
    switch (m.opcode) {
      case Opcode::kWrite:
      case Opcode::kWriteImm:
        ext.write.remote_addr.set(m.remote_addr + off);
        ext.write.rkey.set(m.rkey);
        ext.write.imm.set(m.opcode == Opcode::kWriteImm ? m.imm : 0);
        break;
      case Opcode::kSend:
      case Opcode::kSendImm:
        ext.send.recv_seq.set(m.recv_seq);
        ext.send.imm.set(m.opcode == Opcode::kSendImm ? m.imm : 0);
        break;
      case Opcode::kReadReq:
        ext.read.remote_addr.set(m.remote_addr);
        ext.read.rkey.set(m.rkey);
        ext.read.length.set(m.read_len);
        break;
      case Opcode::kFetchAdd:
      case Opcode::kCmpSwap:
        ext.atomic.remote_addr.set(m.remote_addr);
        ext.atomic.rkey.set(m.rkey);
        ext.atomic.operand.set(m.operand);
        ext.atomic.compare.set(m.compare);
        break;
      case Opcode::kAtomicResp: ext.aresp.original.set(m.operand); break;
      default: break;
    }
    fill_header(h, m.opcode, flags, p, ref.stream, plen, now);
    h.msg_seq.set(m.msg_seq);
    h.msg_offset.set(off);
    h.msg_len.set(m.opcode == Opcode::kReadReq || m.opcode == Opcode::kFetchAdd || m.opcode == Opcode::kCmpSwap ||
                          m.opcode == Opcode::kAtomicResp
                      ? 0
                      : m.length);
    const size_t len = write_frame(f, p, h, &ext, ext_len, m.local ? m.local + off : nullptr, plen);
    if (len == 0) return;
    record(p, ref, static_cast<uint32_t>(len), plen, now, retx);
    stats_.data_packets_sent++;
    stats_.data_bytes_sent += plen;
    if (retx) {
      stats_.retransmits++;
      p.stats.retransmits++;
    }
  }

  void fill_header(wire::CommonHeader& h, Opcode op, uint8_t flags, const Path& p, uint16_t stream, uint32_t plen,
                   Nanos now) {
    h.version = wire::kVersion << 4;
    h.opcode = static_cast<uint8_t>(op);
    h.flags = flags;
    h.path_id = p.id;
    h.dst_conn_id.set(cfg_.remote_id);
    h.src_conn_id.set(cfg_.local_id);
    h.stream_id.set(stream);
    h.payload_len.set(static_cast<uint16_t>(plen));
    h.path_seq.set(wire::is_data_opcode(op) ? p.next_seq : 0);
    h.path_floor.set(wire::is_data_opcode(op) ? p.floor : 0);
    uint32_t ts = static_cast<uint32_t>(now);
    h.tx_ts.set(ts ? ts : 1);  // 0 means "no timestamp"
  }

  size_t write_frame(TxFrame& f, const Path& p, const wire::CommonHeader& h, const void* ext, size_t ext_len,
                     const uint8_t* payload, uint32_t plen, std::span<const wire::AckBlock> blocks = {}) {
    const auto op = static_cast<Opcode>(h.opcode);
    const size_t udp_len = wire::packet_bytes(op, plen, blocks.size());
    if (f.capacity < wire::kUdpFrameHeaderBytes + udp_len) return 0;
    std::span<uint8_t> out(f.data, f.capacity);
    const wire::Ecn ecn = (cfg_.tuning.ect && wire::is_data_opcode(op)) ? wire::Ecn::kEct0 : wire::Ecn::kNotEct;
    const bool ack = op == Opcode::kAck || op == Opcode::kNak;
    wire::encode_udp_headers(out, flow(ack ? p.rx_entropy : p.src_port, dst_port_), ecn, 0, udp_len);
    auto udp = out.subspan(wire::kUdpFrameHeaderBytes, udp_len);
    size_t n;
    if (blocks.empty()) {
      uint8_t* body = wire::begin_packet(udp, h, ext, ext_len);
      if (plen) std::memcpy(body, payload, plen);
      n = wire::finish_packet(udp, ext_len, plen);
    } else {
      n = wire::encode_packet(udp, h, ext, ext_len, {}, blocks);
    }
    if (n == 0) return 0;
    f.len = static_cast<uint32_t>(wire::kUdpFrameHeaderBytes + n);
    f.plane = p.plane;
    return f.len;
  }

  void record(Path& p, const ChunkRef& ref, uint32_t bytes, uint32_t payload, Nanos now, bool retx) {
    TxRecord& r = p.ring[p.next_seq % kRingSize];
    r.ref = ref;
    r.sent_at = now;
    r.bytes = bytes;
    r.payload = payload;
    r.state = RecState::kOutstanding;
    r.retx = retx;
    ++p.next_seq;
    ++p.inflight;
    p.inflight_bytes += bytes;
    conn_inflight_bytes_ += bytes;
    p.stats.packets_sent++;
    p.stats.bytes_sent += bytes;
    if (p.pto_at == kNever) p.pto_at = now + pto(p);
    if (p.last_ack_at == 0 || p.inflight == 1) p.last_ack_at = now;
    tokens_ -= bytes;
    next_timer_at_ = std::min(next_timer_at_, std::min(p.pto_at, p.last_ack_at + (p.rto << std::min<uint32_t>(p.backoff, 8))));
  }

  bool send_acks_and_naks(TxFrame& f, uint64_t ready, Nanos now) {
    if (nak_head_ != nak_tail_) {
      Path& p = paths_[nak_path_];
      if ((ready >> p.plane) & 1) {
        const wire::NakExt& n = naks_[nak_head_++ % naks_.size()];
        wire::CommonHeader h{};
        fill_header(h, Opcode::kNak, 0, p, n.stream_id.get(), 0, now);
        if (write_frame(f, p, h, &n, sizeof(n), nullptr, 0)) return true;
      }
    }
    for (size_t k = 0; k < paths_.size(); ++k) {
      Path& p = paths_[(ack_rr_ + k) % paths_.size()];
      if (!p.ack_due || !((ready >> p.plane) & 1)) continue;
      wire::AckBlock b{};
      b.path_id = p.id;
      b.flags = p.rx_ce ? wire::kAckFlagEce : 0;
      b.ecn_count.set(static_cast<uint16_t>(std::min<uint32_t>(p.rx_ce, 0xFFFF)));
      b.cum_seq.set(p.rx.cum());
      b.echo_ts.set(p.rx_echo_ts);
      p.rx.copy_bits(b.sack);
      wire::AckExt ext{};
      ext.rate_hint_kbps.set(ep_.rate_hint_kbps(now));
      ext.num_blocks = 1;
      wire::CommonHeader h{};
      const uint16_t sid = p.rx_stream < streams_.size() ? p.rx_stream : 0;
      fill_header(h, Opcode::kAck, 0, p, sid, 0, now);
      h.msg_seq.set(streams_[sid].rx_base);  // the stream's receive watermark
      if (write_frame(f, p, h, &ext, sizeof(ext), nullptr, 0, {&b, 1}) == 0) return false;
      p.ack_due = false;
      p.rx_ce = 0;
      p.rx_since_ack = 0;
      ack_rr_ = (ack_rr_ + k + 1) % paths_.size();
      return true;
    }
    return false;
  }

  bool send_probe(TxFrame& f, uint64_t ready, Nanos now) {
    for (Path& p : paths_) {
      if (!p.probe_due || !((ready >> p.plane) & 1)) continue;
      if (p.health.state() == PathState::kDown) {
        // Unanswered probes of a down path are given up, so probing never stalls.
        for (uint32_t seq = p.floor; seq_diff(seq, p.next_seq) < 0; ++seq) {
          TxRecord& r = p.ring[seq % kRingSize];
          if (r.state == RecState::kOutstanding) mark_lost(p, r);
        }
        advance_floor(p);
      }
      if (p.next_seq - p.floor >= kRingSize - 1) continue;
      wire::CommonHeader h{};
      fill_header(h, Opcode::kProbe, wire::kFlagAckReq, p, p.probe_stream, 0, now);
      if (write_frame(f, p, h, nullptr, 0, nullptr, 0) == 0) return false;
      ChunkRef ref{p.probe_stream, kKindProbe, 0, 0, 0};
      // Probes are tracked for loss detection but not counted in the window.
      record(p, ref, 0, 0, now, false);
      p.probe_due = false;
      p.stats.probes++;
      return true;
    }
    return false;
  }

  bool pacing_blocked(Nanos now) {
    if (rate_hint_kbps_ == 0) return false;
    const double rate_Bpns = rate_hint_kbps_ * 1000.0 / 8e9;
    tokens_ = std::min(kPacingBurst, tokens_ + rate_Bpns * static_cast<double>(now - tokens_at_));
    tokens_at_ = now;
    if (tokens_ >= 0) return false;
    pacing_until_ = now + static_cast<Nanos>(-tokens_ / rate_Bpns) + 1;
    return true;
  }
  static constexpr double kPacingBurst = 256 * 1024;

  // ---------------------------------------------------------------- timers

  void service_timers(Nanos now) {
    const TransportTuning& t = cfg_.tuning;
    Nanos next = kNever;
    for (Path& p : paths_) {
      if (p.inflight > 0 && p.health.state() != PathState::kDown) {
        const Nanos rto_at = p.last_ack_at + (p.rto << std::min<uint32_t>(p.backoff, 8));
        if (now >= rto_at) {
          on_rto(p, now);
        } else if (p.pto_at != kNever && now >= p.pto_at) {
          // Tail-loss probe: a sequenced PROBE makes the receiver reveal the hole.
          p.probe_due = true;
          p.probe_stream = 0;
          p.pto_at = now + pto(p) * 2;
        }
      }
      if (p.health.state() == PathState::kDown && now >= p.next_probe_at) {
        p.probe_due = true;
        p.next_probe_at = now + t.probe_interval_ns;
      }
      if (p.inflight > 0 && p.health.state() != PathState::kDown) {
        next = std::min(next, p.last_ack_at + (p.rto << std::min<uint32_t>(p.backoff, 8)));
        next = std::min(next, p.pto_at);
      }
      if (p.health.state() == PathState::kDown) next = std::min(next, p.next_probe_at);
    }
    // Message timers: the oldest request of each stream must make progress.
    bool any_usable = false;
    for (const Path& p : paths_) any_usable |= p.health.state() != PathState::kDown;
    for (size_t sid = 0; sid < streams_.size(); ++sid) {
      Stream& s = streams_[sid];
      if (s.head_seq == s.next_seq) continue;
      TxMsg& m = s.req[s.head_seq % s.req.size()];
      if (m.done) continue;
      if (m.resume_at > now) {
        next = std::min(next, m.resume_at);
        continue;
      }
      const bool all_acked = m.acked_chunks == m.chunks;
      const Nanos timeout = message_timeout();
      if (all_acked && now - m.last_progress >= timeout) {
        // Everything was received at path level, yet no watermark/response:
        // first ask (probe with this stream), then resend the whole message.
        if (++m.timeouts > t.retry_limit) {
          fail_message(static_cast<uint16_t>(sid), m, WcStatus::kRetryExceeded);
          continue;
        }
        if (m.timeouts % 2 == 1) {
          for (Path& p : paths_)
            if (p.health.state() != PathState::kDown) {
              p.probe_due = true;
              p.probe_stream = static_cast<uint16_t>(sid);
              break;
            }
          m.last_progress = now;
        } else {
          restart_message(s, m, now);
        }
      }
      // Every path down: nothing can be resent; give up after the retry budget
      // (the probes keep looking, and a path that returns resets the clock).
      if (!all_acked && !any_usable && now - m.last_progress >= timeout) {
        if (++m.timeouts > t.retry_limit) {
          fail_message(static_cast<uint16_t>(sid), m, WcStatus::kRetryExceeded);
          continue;
        }
        m.last_progress = now;
      }
      if (all_acked || !any_usable) next = std::min(next, m.last_progress + timeout);
    }
    if (pacing_until_ > now) next = std::min(next, pacing_until_);
    next_timer_at_ = next;
  }

  Nanos message_timeout() const {
    double srtt = 0;
    for (const Path& p : paths_) srtt = std::max(srtt, p.srtt);
    return std::max<Nanos>(static_cast<Nanos>(4 * srtt), cfg_.tuning.min_rto_ns);
  }

  void on_rto(Path& p, Nanos now) {
    p.stats.rtos++;
    stats_.rtos++;
    // Everything outstanding on this path is presumed lost and resent on the best paths.
    for (uint32_t seq = p.floor; seq_diff(seq, p.next_seq) < 0; ++seq) {
      TxRecord& r = p.ring[seq % kRingSize];
      if (r.state == RecState::kOutstanding) mark_lost(p, r);
    }
    advance_floor(p);
    p.cc.on_timeout();
    p.backoff++;
    p.last_ack_at = now;
    p.pto_at = kNever;
    const PathState before = p.health.state();
    if (p.health.on_rto() == PathHealth::Action::kRotateEntropy) {
      rotate_entropy(p);
      p.next_probe_at = now;
    }
    note_state(p, before);
    // A path that went quiet gets a probe so its fate is learned quickly.
    p.probe_due = true;
  }

  Nanos next_deadline() const override {
    Nanos d = next_timer_at_;
    if (pacing_until_ > last_now_) d = std::min(d, pacing_until_);
    return d;
  }

  ConnectionStats stats() const override {
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

  uint32_t chunks_for(uint32_t len) const { return len == 0 ? 1 : (len + cfg_.mtu_payload - 1) / cfg_.mtu_payload; }

  void queue_retransmit(const ChunkRef& ref) {
    if (retx_tail_ - retx_head_ >= retx_.size()) return;  // cannot happen: bounded by records
    retx_[retx_tail_++ % retx_.size()] = ref;
  }

  uint32_t mss_ = 0, frame_overhead_ = 0, max_chunks_ = 0;
  uint16_t dst_port_ = 0;
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
  size_t stream_rr_ = 0, path_rr_ = 0, ack_rr_ = 0;
  Nanos next_timer_at_ = kNever;
  Nanos last_now_ = 0;
  ConnectionStats stats_;
};

}  // namespace

std::unique_ptr<Connection> make_metaroce_connection(Endpoint& ep, const ConnectionConfig& cfg) {
  return std::make_unique<MetaRoceConnection>(ep, cfg);
}

}  // namespace metaroce::transport
