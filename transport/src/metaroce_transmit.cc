// MetaRoCE connection, the transmit path: poll_tx and what it sends next (NAKs,
// ACKs, probes, retransmissions, responses, new data), path choice (spraying),
// pacing to the receiver's rate hint, frame writing and transmission records.
#include <algorithm>
#include <bit>
#include <cstring>
#include <span>

#include "metaroce_connection.h"

namespace metaroce::transport::detail {

static_assert(kParamPaths.max <= 64, "acks_due_ holds a bit per path");

bool MetaRoceConnection::poll_tx(TxFrame& f, uint64_t ready, Nanos now) {
  last_now_ = now;
  if (!active()) return false;  // nothing posted and nothing received: nothing to send
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

bool MetaRoceConnection::send_new(TxFrame& f, uint64_t ready, Nanos now) {
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

TxMsg* MetaRoceConnection::msg_for(const ChunkRef& ref) {
  if (ref.stream >= streams_.size()) return nullptr;
  Stream& s = streams_[ref.stream];
  TxMsg& m = ref.kind == kKindResponse ? s.resp[ref.msg_seq % s.resp.size()] : s.req[ref.msg_seq % s.req.size()];
  if (!m.active || m.msg_seq != ref.msg_seq) return nullptr;
  return &m;
}

// Spraying: smooth weighted round-robin over the paths that have room for a
// packet (weight 1 when active, tuning.degraded_weight when degraded). Each
// eligible path earns its weight per pick and the chosen one pays the round's
// total, so every eligible path gets its share in every round. Choosing by free
// window instead starves a path whose window collapsed after one timeout while
// the application, not the windows, limits what is in flight: the others then
// always have more room, and the collapsed path never sends again, never grows
// its window and never learns that its plane failed.
// A path whose timer fired carries only its probe until something on it is
// answered (backoff back to 0): data sent into a silent path waits out an ever
// longer timer. A retransmission goes to an active path when one has room.
// A path leaving a slow route takes nothing new until what it carries is
// resolved (on_slow_route).
int MetaRoceConnection::pick_path(uint64_t ready, bool retransmit) {
  if (conn_inflight_bytes_ + mss_ > conn_cc_.cwnd()) return -1;
  auto eligible = [&](const Path& p) {
    return p.health.state() != PathState::kDown && p.backoff == 0 && !p.reroute_pending && ((ready >> p.plane) & 1) &&
           p.has_record_room() &&
           p.cc.cwnd() - static_cast<double>(p.inflight_bytes) >= mss_;
  };
  bool active_only = false;
  if (retransmit)
    for (const Path& p : paths_) active_only |= p.health.state() == PathState::kActive && eligible(p);
  int best = -1;
  double total = 0;
  for (size_t i = 0; i < paths_.size(); ++i) {
    Path& p = paths_[i];
    if (!eligible(p)) continue;
    const bool active = p.health.state() == PathState::kActive;
    if (active_only && !active) continue;
    const double weight = active ? 1.0 : cfg_.tuning.degraded_weight;
    p.spray_credit += weight;
    total += weight;
    if (best < 0 || p.spray_credit > paths_[best].spray_credit) best = static_cast<int>(i);
  }
  if (best >= 0) paths_[best].spray_credit -= total;
  return best;
}

void MetaRoceConnection::emit_chunk(TxFrame& f, Path& p, const ChunkRef& ref, TxMsg& m, Nanos now, bool retx) {
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

void MetaRoceConnection::fill_header(wire::CommonHeader& h, Opcode op, uint8_t flags, const Path& p,
                                     uint16_t stream, uint32_t plen, Nanos now) {
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

size_t MetaRoceConnection::write_frame(TxFrame& f, const Path& p, const wire::CommonHeader& h,
                                       const void* ext, size_t ext_len, const uint8_t* payload,
                                       uint32_t plen, std::span<const wire::AckBlock> blocks) {
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

void MetaRoceConnection::record(Path& p, const ChunkRef& ref, uint32_t bytes, uint32_t payload, Nanos now, bool retx) {
  // Every record in use: double them (has_record_room stops short of kRingSize).
  if (p.next_seq - p.floor > p.ring_mask) grow_ring(p, 2 * (p.ring_mask + 1));
  TxRecord& r = p.rec(p.next_seq);
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
  if (p.rto_armed_at == 0 || p.inflight == 1) {
    p.rto_armed_at = now;
    p.late_rto_deferred = false;
  }
  tokens_ -= bytes;
  next_timer_at_ = std::min(next_timer_at_, std::min(p.pto_at, p.rto_armed_at + (p.rto << std::min<uint32_t>(p.backoff, 8))));
}

bool MetaRoceConnection::send_acks_and_naks(TxFrame& f, uint64_t ready, Nanos now) {
  if (nak_head_ != nak_tail_) {
    Path& p = paths_[nak_path_];
    if ((ready >> p.plane) & 1) {
      const wire::NakExt& n = naks_[nak_head_++ % naks_.size()];
      wire::CommonHeader h{};
      fill_header(h, Opcode::kNak, 0, p, n.stream_id.get(), 0, now);
      if (write_frame(f, p, h, &n, sizeof(n), nullptr, 0)) return true;
    }
  }
  // The due paths in turn from ack_rr_: those at or after it, then the rest.
  for (uint64_t rest = acks_due_; rest != 0;) {
    const uint64_t from_rr = rest & (~0ull << ack_rr_);
    const unsigned i = static_cast<unsigned>(std::countr_zero(from_rr ? from_rr : rest));
    rest &= ~(1ull << i);
    Path& p = paths_[i];
    if (!((ready >> p.plane) & 1)) continue;
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
    acks_due_ &= ~(1ull << i);
    p.rx_ce = 0;
    p.rx_since_ack = 0;
    ack_rr_ = (i + 1) % paths_.size();
    return true;
  }
  return false;
}

bool MetaRoceConnection::send_probe(TxFrame& f, uint64_t ready, Nanos now) {
  for (uint64_t rest = probes_due_; rest != 0; rest &= rest - 1) {
    Path& p = paths_[std::countr_zero(rest)];
    if (!((ready >> p.plane) & 1)) continue;
    if (p.health.state() == PathState::kDown) {
      // Unanswered probes of a down path are given up, so probing never stalls.
      for (uint32_t seq = p.floor; seq_diff(seq, p.next_seq) < 0; ++seq) {
        TxRecord& r = p.rec(seq);
        if (r.state == RecState::kOutstanding) mark_lost(p, r);
      }
      advance_floor(p);
    }
    if (!p.has_record_room()) continue;
    wire::CommonHeader h{};
    fill_header(h, Opcode::kProbe, wire::kFlagAckReq, p, p.probe_stream, 0, now);
    if (write_frame(f, p, h, nullptr, 0, nullptr, 0) == 0) return false;
    ChunkRef ref{p.probe_stream, kKindProbe, 0, 0, 0};
    // Probes are tracked for loss detection but not counted in the window.
    record(p, ref, 0, 0, now, false);
    probes_due_ &= ~path_bit(p);
    p.stats.probes++;
    return true;
  }
  return false;
}

bool MetaRoceConnection::pacing_blocked(Nanos now) {
  if (rate_hint_kbps_ == 0) return false;
  const double rate_Bpns = rate_hint_kbps_ * 1000.0 / 8e9;
  tokens_ = std::min(kPacingBurst, tokens_ + rate_Bpns * static_cast<double>(now - tokens_at_));
  tokens_at_ = now;
  if (tokens_ >= 0) return false;
  pacing_until_ = now + static_cast<Nanos>(-tokens_ / rate_Bpns) + 1;
  return true;
}

void MetaRoceConnection::queue_retransmit(const ChunkRef& ref) {
  // Full only while a lazily used connection's records are below their cap
  // (ensure_transmit): more lost at once than ever before.
  if (retx_tail_ - retx_head_ >= retx_.size()) grow_retransmit_queue(std::max<size_t>(2 * retx_.size(), 64));
  retx_[retx_tail_++ % retx_.size()] = ref;
}

}  // namespace metaroce::transport::detail
