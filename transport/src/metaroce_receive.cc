// MetaRoCE connection, the receive path: per-path sequence window and ACK
// scheduling, out-of-order data placement, the responder side (READ/atomic
// execution in stream order, responses, NAKs) and READ/atomic responses at the requester.
#include <algorithm>
#include <cstring>

#include "metaroce_connection.h"

namespace metaroce::transport::detail {

// The endpoint has validated the CRC and decoded the packet before dispatch.
void MetaRoceConnection::on_metaroce_packet(const wire::UdpFrameView& v, const wire::PacketView& pv, Nanos now) {
  last_now_ = now;
  activate();
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
    ep_.note_active_sender(slot, now);
    rx_data(pv, now);
  } else {
    p.rx_stream = pv.common.stream_id.get();
  }
}

// Path-level receive: sequence window, SACK bits, ECN, ACK scheduling.
// Returns false when the packet is outside the window and must be ignored.
bool MetaRoceConnection::rx_path(Path& p, const wire::PacketView& pv, const wire::UdpFrameView& v, Nanos) {
  const uint32_t seq = pv.common.path_seq.get();
  const uint32_t floor = pv.common.path_floor.get();
  if (seq_diff(floor, seq) > 0 || seq_diff(seq, floor) >= static_cast<int32_t>(kRingSize)) {
    ep_.mutable_counters().drop_out_of_window++;
    return false;
  }
  const bool late = p.rx.later_arrived(seq);
  const SackWindow::Result res = p.rx.on_packet(seq, floor);
  if (res == SackWindow::Result::kBeyondWindow) {
    ep_.mutable_counters().drop_out_of_window++;
    return false;
  }
  if (late && res == SackWindow::Result::kNew) ep_.mutable_counters().rx_reordered_in_path++;
  // kBelowWindow / kDuplicate: a late or repeated copy; the message layer dedupes its data.
  const bool in_order = res == SackWindow::Result::kNew && !p.rx.has_gap() && seq + 1 == p.rx.cum();
  if (v.ecn == wire::Ecn::kCe) p.rx_ce++;
  p.rx_echo_ts = pv.common.tx_ts.get();
  p.rx_entropy = v.flow.src_port;
  p.rx_stream = pv.common.stream_id.get();
  ++p.rx_since_ack;
  if (!in_order || (pv.common.flags & wire::kFlagAckReq) || p.rx_since_ack >= cfg_.tuning.ack_every ||
      pv.opcode == Opcode::kProbe)
    acks_due_ |= path_bit(p);
  return true;
}

void MetaRoceConnection::rx_data(const wire::PacketView& pv, Nanos now) {
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
  ensure_receive_window(s);
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
void MetaRoceConnection::fail_rx(Stream& s, uint16_t sid, RxMsg& m, const wire::PacketView& pv, wire::NakCode code) {
  m.failed = true;
  m.complete = true;
  m.nak = code;
  nak(sid, pv, code);
  slide_rx(s, sid);
}

void MetaRoceConnection::slide_rx(Stream& s, uint16_t sid) {
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
bool MetaRoceConnection::execute_request(Stream& s, uint16_t sid, RxMsg& m) {
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

TxMsg* MetaRoceConnection::new_response(Stream& s, uint32_t mseq) {
  if (s.resp_fifo_tail - s.resp_fifo_head >= s.resp_fifo.size()) return nullptr;
  ensure_responses(s);
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
void MetaRoceConnection::rx_response(Stream& s, uint16_t sid, const wire::PacketView& pv, Nanos now) {
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

void MetaRoceConnection::nak(uint16_t sid, const wire::PacketView& pv, wire::NakCode code) {
  queue_nak(sid, pv.common.msg_seq.get(), pv.common.msg_offset.get(), code, pv.common.path_id);
}

void MetaRoceConnection::queue_nak(uint16_t sid, uint32_t msg_seq, uint32_t offset, wire::NakCode code, uint8_t path) {
  stats_.naks_sent++;
  ep_.mutable_counters().naks_sent[static_cast<size_t>(reject_code(code))]++;
  if (nak_tail_ - nak_head_ >= naks_.size()) return;  // the sender's message timer recovers
  wire::NakExt& n = naks_[nak_tail_++ % naks_.size()];
  n = wire::NakExt{};
  n.code = static_cast<uint8_t>(code);
  n.stream_id.set(sid);
  n.msg_seq.set(msg_seq);
  n.msg_offset.set(offset);
  nak_path_ = path < paths_.size() ? path : 0;
}

}  // namespace metaroce::transport::detail
