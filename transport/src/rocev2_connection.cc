// RoCEv2 RC baseline: one path, strictly in-order PSNs, the responder NAKs the
// first out-of-sequence PSN and drops everything until it arrives, the
// requester goes back N; a retransmission timer is the fallback. A fixed
// window of unacknowledged packets stands in for the NIC's limit (no DCQCN:
// the baseline is measured, not tuned). WRITE, WRITE_WITH_IMM and SEND.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "connection.h"
#include "metaroce/transport/operations.h"
#include "metaroce/wire/rocev2.h"

namespace metaroce::transport {
namespace {

namespace rv = wire::rocev2;
// Frame buffers sized by max_frame_bytes (endpoint.h) hold RoCEv2's largest
// frame too: BTH, RETH, immediate, AETH, pad and ICRC around the payload.
static_assert(sizeof(rv::Bth) + sizeof(rv::Reth) + 4 + sizeof(rv::Aeth) + 3 + rv::kIcrcBytes <=
              max_frame_bytes(0) - wire::kUdpFrameHeaderBytes);

int32_t psn_diff(uint32_t a, uint32_t b) { return static_cast<int32_t>((a - b) << 8) >> 8; }
uint32_t psn_add(uint32_t a, uint32_t n) { return (a + n) & rv::kPsnMask; }

struct Wr {
  bool active = false, done = false;
  WorkRequest wr;
  uint8_t* local = nullptr;
  uint32_t first_psn = 0, npkts = 0;
  WcStatus status = WcStatus::kSuccess;
};

class RoceConnection final : public Connection {
 public:
  // The work-request and receive slots are allocated by the first post and
  // post_recv: an idle QP holds its object only.
  RoceConnection(Endpoint& ep, const ConnectionConfig& cfg)
      : Connection(ep, cfg), wrs_(cfg.max_outstanding_per_stream), posted_(cfg.recv_window_messages) {
    // Until the first RTT sample, as MetaRoCE's paths do (RFC 6298 2.1): a
    // first timer at min_rto_ns (200 us in the simulator) fired before the
    // first ACK of an idle 200 Mb/s fabric (about 290 us) and again on the
    // duplicates it sent, costing RoCEv2 a tenth of a compressed window.
    rto_ = std::clamp(cfg_.tuning.initial_rto_ns, cfg_.tuning.min_rto_ns, cfg_.tuning.max_rto_ns);
    dst_port_ = cfg_.peer_udp_port ? cfg_.peer_udp_port : rv::kUdpPort;
    stats_.transport = TransportKind::kRoCEv2;
    PathStats ps;
    ps.plane = cfg_.paths[0].plane;
    ps.src_port = cfg_.paths[0].src_port;
    stats_.paths.push_back(ps);
    state_bytes_ = sizeof(*this) + cfg_.paths.capacity() * sizeof(PathConfig) + stats_.paths.capacity() * sizeof(PathStats);
  }

  PostError post(uint16_t stream, const WorkRequest& wr) override {
    if (stream != 0) return PostError::kBadStream;  // an RC QP is one ordered stream
    if (!rocev2_supports(wr.verb)) return PostError::kUnsupported;
    if (wr.length == 0 || wr.length > cfg_.max_message_bytes) return PostError::kBadLength;
    if (wr_tail_ - wr_head_ >= wrs_.size()) return PostError::kQueueFull;
    uint8_t* local = nullptr;
    if (ep_.memory().check(wr.lkey, wr.local_addr, wr.length, 0, &local) != AccessCheck::kOk)
      return PostError::kLocalProtection;
    if (!wrs_.allocated()) hold(wrs_.allocate());
    Wr& w = wrs_[wr_tail_ % wrs_.size()];
    w = Wr{};
    w.active = true;
    w.wr = wr;
    w.local = local;
    w.npkts = (wr.length + cfg_.mtu_payload - 1) / cfg_.mtu_payload;
    w.first_psn = psn_alloc_;
    psn_alloc_ = psn_add(psn_alloc_, w.npkts);
    if (error_) w.done = true, w.status = WcStatus::kFlushed;
    ++wr_tail_;
    if (error_) release();
    return PostError::kOk;
  }

  PostError post_recv(uint16_t stream, const RecvRequest& rr) override {
    if (stream != 0) return PostError::kBadStream;
    if (posted_count_ - consumed_ >= posted_.size()) return PostError::kQueueFull;
    if (ep_.memory().check(rr.lkey, rr.addr, rr.length, kAccessLocalWrite, nullptr) != AccessCheck::kOk)
      return PostError::kLocalProtection;
    if (!posted_.allocated()) hold(posted_.allocate());
    posted_[posted_count_++ % posted_.size()] = rr;
    return PostError::kOk;
  }

  bool prepare(uint16_t stream, ConnectionUse use) override {
    if (stream != 0) return false;
    if (use == ConnectionUse::kRequest && !wrs_.allocated()) hold(wrs_.allocate());
    if (use == ConnectionUse::kPostReceives && !posted_.allocated()) hold(posted_.allocate());
    return use == ConnectionUse::kRequest || use == ConnectionUse::kPostReceives;
  }

  bool set_path_entropy(uint8_t path, uint16_t src_port) override {
    if (path != 0) return false;
    cfg_.paths[0].src_port = src_port;
    stats_.paths[0].src_port = src_port;
    return true;
  }

  void on_packet(const wire::UdpFrameView& v, std::span<const uint8_t> frame, Nanos now) override {
    rv::PacketView pv;
    // decode() checks the ICRC over exactly the frame bytes that carry the packet.
    wire::DecodeError why = wire::DecodeError::kNone;
    if (!rv::decode(frame, v.payload, pv, &why)) {
      auto& c = ep_.mutable_counters();
      (why == wire::DecodeError::kBadChecksum  ? c.drop_checksum
       : why == wire::DecodeError::kBadVersion ? c.drop_bad_version
       : why == wire::DecodeError::kBadOpcode  ? c.drop_bad_opcode
                                               : c.drop_decode)++;
      return;
    }
    if (pv.opcode == rv::Opcode::kAcknowledge) return on_ack(pv, now);
    responder(pv, v, now);
  }

  // ---------------------------------------------------------------- responder

  void responder(const rv::PacketView& pv, const wire::UdpFrameView& v, Nanos) {
    if (v.ecn == wire::Ecn::kCe) stats_.paths[0].ecn_echoes++;
    // After a fatal NAK the QP is in the error state: nothing more is placed
    // or answered (the requester has the NAK and flushes).
    if (resp_error_) {
      ep_.mutable_counters().drop_qp_error++;
      return;
    }
    const int32_t d = psn_diff(pv.psn, epsn_);
    if (d < 0) {  // duplicate: already placed; re-acknowledge
      stats_.duplicates_received++;
      ack_due_ = true;
      return;
    }
    if (d > 0) {  // out of sequence: NAK once, drop until the expected PSN arrives
      if (!nak_sent_) {
        nak_sent_ = true;
        queue_aeth(rv::kSyndromeNakPsnSeqError, epsn_);
        count_nak_sent(rv::kSyndromeNakPsnSeqError);
      }
      return;
    }
    const auto op = pv.opcode;
    const uint32_t plen = static_cast<uint32_t>(pv.payload.size());
    if (rv::is_write(op)) {
      if (rv::has_reth(op)) {
        msg_va_ = pv.reth->va.get();
        msg_rkey_ = pv.reth->rkey.get();
        msg_len_ = pv.reth->dma_len.get();
        msg_off_ = 0;
        // The whole range on the first packet, as InfiniBand does: a WRITE
        // that would run outside the region places nothing at all.
        uint8_t* base = nullptr;
        if (msg_len_ > 0 &&
            ep_.memory().check(msg_rkey_, msg_va_, msg_len_, kAccessRemoteWrite, &base) != AccessCheck::kOk)
          return nak_fatal(rv::kSyndromeNakRemoteAccess);
        in_write_ = true;
      } else if (!in_write_) {
        return nak_fatal(rv::kSyndromeNakInvalidRequest);
      }
      uint8_t* dst = nullptr;
      if (msg_off_ + plen > msg_len_ ||
          ep_.memory().check(msg_rkey_, msg_va_ + msg_off_, plen, kAccessRemoteWrite, &dst) != AccessCheck::kOk)
        return nak_fatal(rv::kSyndromeNakRemoteAccess);
      std::memcpy(dst, pv.payload.data(), plen);
      msg_off_ += plen;
      if (rv::is_last_or_only(op)) {
        in_write_ = false;
        if (rv::has_imm(op)) emit_recv(Verb::kWriteImm, msg_len_, pv.imm, false);
      }
    } else if (rv::is_send(op)) {
      if (op == rv::Opcode::kSendFirst || op == rv::Opcode::kSendOnly || op == rv::Opcode::kSendOnlyImm) msg_off_ = 0;
      if (posted_count_ == consumed_) {
        queue_aeth(rv::kSyndromeRnrNak, epsn_);
        count_nak_sent(rv::kSyndromeRnrNak);
        return;
      }
      const RecvRequest& rr = posted_[consumed_ % posted_.size()];
      uint8_t* dst = nullptr;
      if (msg_off_ + plen > rr.length ||
          ep_.memory().check(rr.lkey, rr.addr + msg_off_, plen, kAccessLocalWrite, &dst) != AccessCheck::kOk)
        return nak_fatal(rv::kSyndromeNakInvalidRequest);
      std::memcpy(dst, pv.payload.data(), plen);
      msg_off_ += plen;
      if (rv::is_last_or_only(op)) {
        emit_recv(rv::has_imm(op) ? Verb::kSendImm : Verb::kSend, msg_off_, pv.imm, true);
        ++consumed_;
      }
    } else {
      return nak_fatal(rv::kSyndromeNakInvalidRequest);
    }
    epsn_ = psn_add(epsn_, 1);
    nak_sent_ = false;
    // The MSN counts completed request messages (IBTA 9.7.5.1.2), not packets.
    if (rv::is_last_or_only(op)) msn_++;
    if (pv.ack_req || ++since_ack_ >= cfg_.tuning.ack_every) ack_due_ = true;
  }

  void nak_fatal(uint8_t syndrome) {
    resp_error_ = true;
    queue_aeth(syndrome, epsn_);
    count_nak_sent(syndrome);
  }

  void count_nak_sent(uint8_t syndrome) {
    stats_.naks_sent++;
    ep_.mutable_counters().naks_sent[static_cast<size_t>(rocev2_reject_code(syndrome))]++;
  }

  void emit_recv(Verb remote, uint32_t len, std::optional<uint32_t> imm, bool consume) {
    Completion c;
    c.conn = cfg_.local_id;
    c.verb = Verb::kRecv;
    c.remote_verb = remote;
    c.byte_len = len;
    c.has_imm = imm.has_value();
    c.imm = imm.value_or(0);
    if (consume) c.wr_id = posted_[consumed_ % posted_.size()].wr_id;
    ep_.push_completion(c);
  }

  void queue_aeth(uint8_t syndrome, uint32_t psn) {
    ctl_pending_ = true;
    ctl_syndrome_ = syndrome;
    ctl_psn_ = psn;
  }

  // ---------------------------------------------------------------- requester

  void on_ack(const rv::PacketView& pv, Nanos now) {
    const uint8_t syn = pv.aeth->syndrome;
    const uint32_t psn = pv.psn;
    if ((syn & 0xE0) == rv::kSyndromeAck) {
      acked_through(psn_add(psn, 1), now);
      return;
    }
    stats_.naks_received++;
    ep_.mutable_counters().naks_received[static_cast<size_t>(rocev2_reject_code(syn))]++;
    if (syn == rv::kSyndromeNakPsnSeqError) {
      acked_through(psn, now);
      // A NAK for a PSN already acknowledged is stale (reordered behind a
      // later ACK, or answering a held-back frame): the responder has
      // everything it asks for, so there is nothing to resend.
      if (psn_diff(psn, psn_una_) < 0) return;
      go_back(psn);
      return;
    }
    if ((syn & 0xE0) == rv::kSyndromeRnrNak) {
      acked_through(psn, now);
      if (++rnr_count_ > cfg_.tuning.rnr_retry_limit) return fail_head(WcStatus::kRnrRetryExceeded);
      go_back(psn);
      resume_at_ = now + cfg_.tuning.rnr_delay_ns;
      return;
    }
    // Fatal NAK: everything before psn is acknowledged, so the oldest unfinished
    // WR is the one holding psn; it fails and the rest is flushed (RC error state).
    acked_through(psn, now);
    fail_head(syn == rv::kSyndromeNakRemoteAccess ? WcStatus::kRemoteAccessError : WcStatus::kRemoteInvalidRequest);
  }

  // The oldest unfinished WR fails with st, the rest are flushed (RC error state).
  void fail_head(WcStatus st) {
    error_ = true;
    bool first = true;
    for (uint64_t i = wr_head_; i < wr_tail_; ++i) {
      Wr& w = wrs_[i % wrs_.size()];
      if (w.done) continue;
      w.done = true;
      w.status = first ? st : WcStatus::kFlushed;
      first = false;
    }
    release();
  }

  void acked_through(uint32_t una, Nanos now) {
    if (psn_diff(una, psn_una_) <= 0 || psn_diff(una, psn_max_) > 0) return;
    if (timing_ && psn_diff(una, timed_psn_) > 0) {
      update_rtt(static_cast<double>(now - timed_at_));
      timing_ = false;
    }
    psn_una_ = una;
    rnr_count_ = 0;
    retries_ = 0;
    last_progress_ = now;
    late_rto_deferred_ = false;
    // Karn (RFC 6298 5.7) until the first RTT sample: the backed-off timer
    // stays backed off. Reset on any progress, a minimum timeout shorter than
    // the first round trip (200 us against 100 us of delay each way) fired on
    // every window, each timeout resent the timed packet, and no sample ever
    // ended the cycle: RoCEv2 kept a third of its rate at 0% loss. Once the
    // RTT is known, progress resets the back-off as before (kept longer, it
    // grows to 2^8 timeouts under heavy loss, where samples are rare).
    if (srtt_ > 0) backoff_ = 0;
    if (psn_diff(psn_next_, psn_una_) < 0) psn_next_ = psn_una_;
    for (uint64_t i = wr_head_; i < wr_tail_; ++i) {
      Wr& w = wrs_[i % wrs_.size()];
      if (!w.done && psn_diff(psn_una_, psn_add(w.first_psn, w.npkts)) >= 0) w.done = true;
    }
    release();
  }

  void go_back(uint32_t psn) {
    // Never below the oldest unacknowledged PSN: those WRs are released.
    if (psn_diff(psn, psn_una_) < 0) psn = psn_una_;
    if (psn_diff(psn, psn_next_) >= 0) return;
    stats_.go_back_n++;
    if (timing_ && psn_diff(timed_psn_, psn) >= 0) timing_ = false;  // Karn: its ACK would be ambiguous
    psn_next_ = psn;
  }

  void release() {
    while (wr_head_ < wr_tail_) {
      Wr& w = wrs_[wr_head_ % wrs_.size()];
      if (!w.done) return;
      Completion c;
      c.wr_id = w.wr.wr_id;
      c.conn = cfg_.local_id;
      c.verb = w.wr.verb;
      c.status = w.status;
      c.byte_len = w.wr.length;
      if (w.status == WcStatus::kSuccess) {
        stats_.messages_completed++;
        stats_.payload_bytes_completed += w.wr.length;
      }
      ep_.push_completion(c);
      w.active = false;
      ++wr_head_;
    }
  }

  // The WR and packet index that carry psn, or nullptr.
  Wr* locate(uint32_t psn, uint32_t* index) {
    for (uint64_t i = wr_head_; i < wr_tail_; ++i) {
      Wr& w = wrs_[i % wrs_.size()];
      const int32_t d = psn_diff(psn, w.first_psn);
      if (d >= 0 && static_cast<uint32_t>(d) < w.npkts) {
        *index = static_cast<uint32_t>(d);
        return &w;
      }
    }
    return nullptr;
  }

  bool poll_tx(TxFrame& f, uint64_t ready, Nanos now) override {
    last_now_ = now;
    plane_blocked_ = !((ready >> cfg_.paths[0].plane) & 1);
    if (plane_blocked_) return false;
    if (ctl_pending_ || ack_due_) return send_aeth(f);
    // Retransmission timer: no progress for an RTO -> go back to the oldest unacknowledged PSN.
    const Nanos timeout = rto_ << std::min<uint32_t>(backoff_, 8);
    if (!error_ && psn_diff(psn_max_, psn_una_) > 0 && now - last_progress_ >= timeout) {
      if (!late_rto_deferred_ && timer_fired_late(last_progress_ + timeout, timeout, now, ep_.poll_lateness())) {
        late_rto_deferred_ = true;
        last_progress_ = now + late_timer_grace(srtt_, ep_.timer_granularity(), timeout) - timeout;
        stats_.late_timeouts_deferred++;
      } else {
        stats_.rtos++;
        stats_.paths[0].rtos++;
        ++backoff_;
        if (++retries_ > cfg_.tuning.retry_limit) {
          fail_head(WcStatus::kRetryExceeded);
          return false;
        }
        go_back(psn_una_);
        last_progress_ = now;
        late_rto_deferred_ = false;
      }
    }
    if (now < resume_at_ || error_) return false;
    if (static_cast<uint32_t>(psn_diff(psn_next_, psn_una_)) >= cfg_.tuning.rocev2_window_packets) return false;
    uint32_t idx = 0;
    Wr* w = locate(psn_next_, &idx);
    if (!w || w->done) return false;
    return send_data(f, *w, idx, now);
  }

  bool send_data(TxFrame& f, Wr& w, uint32_t idx, Nanos now) {
    const uint32_t off = idx * cfg_.mtu_payload;
    const uint32_t plen = std::min(cfg_.mtu_payload, w.wr.length - off);
    const bool first = idx == 0, last = idx + 1 == w.npkts;
    const bool write = w.wr.verb == Verb::kWrite || w.wr.verb == Verb::kWriteImm;
    const bool imm = w.wr.verb == Verb::kWriteImm || w.wr.verb == Verb::kSendImm;
    rv::Opcode op;
    if (write) op = first && last ? (imm ? rv::Opcode::kWriteOnlyImm : rv::Opcode::kWriteOnly)
                    : first       ? rv::Opcode::kWriteFirst
                    : last        ? (imm ? rv::Opcode::kWriteLastImm : rv::Opcode::kWriteLast)
                                  : rv::Opcode::kWriteMiddle;
    else op = first && last ? (imm ? rv::Opcode::kSendOnlyImm : rv::Opcode::kSendOnly)
              : first       ? rv::Opcode::kSendFirst
              : last        ? (imm ? rv::Opcode::kSendLastImm : rv::Opcode::kSendLast)
                            : rv::Opcode::kSendMiddle;
    rv::Reth reth{};
    reth.va.set(w.wr.remote_addr);
    reth.rkey.set(w.wr.rkey);
    reth.dma_len.set(w.wr.length);
    const uint32_t immv = w.wr.imm;
    const size_t udp_len = rv::payload_bytes(op, plen);
    if (f.capacity < wire::kUdpFrameHeaderBytes + udp_len) return false;
    std::span<uint8_t> out(f.data, wire::kUdpFrameHeaderBytes + udp_len);
    wire::encode_udp_headers(out, flow(cfg_.paths[0].src_port, dst_port_),
                             cfg_.tuning.ect ? wire::Ecn::kEct0 : wire::Ecn::kNotEct, 0, udp_len);
    const bool ack_req = last || ((psn_next_ & 0x7) == 0);
    rv::encode(out.subspan(wire::kUdpFrameHeaderBytes), op, cfg_.remote_id, psn_next_, ack_req,
               rv::has_reth(op) ? &reth : nullptr, rv::has_imm(op) ? &immv : nullptr, nullptr,
               {w.local + off, plen});
    rv::seal_icrc(out);
    f.len = static_cast<uint32_t>(out.size());
    f.plane = cfg_.paths[0].plane;
    const bool retx = psn_diff(psn_next_, psn_max_) < 0;
    if (retx) {
      stats_.retransmits++;
      stats_.paths[0].retransmits++;
    }
    if (psn_diff(psn_una_, psn_max_) == 0) {  // timer starts with the first packet in flight
      last_progress_ = now;
      late_rto_deferred_ = false;
    }
    if (!retx && !timing_) {  // Karn: time one first transmission at a time
      timing_ = true;
      timed_psn_ = psn_next_;
      timed_at_ = now;
    }
    psn_next_ = psn_add(psn_next_, 1);
    if (psn_diff(psn_next_, psn_max_) > 0) psn_max_ = psn_next_;
    stats_.data_packets_sent++;
    stats_.data_bytes_sent += plen;
    stats_.paths[0].packets_sent++;
    stats_.paths[0].bytes_sent += f.len;
    return true;
  }

  bool send_aeth(TxFrame& f) {
    rv::Aeth aeth{};
    uint32_t psn;
    if (ctl_pending_) {
      aeth.syndrome = ctl_syndrome_;
      psn = ctl_psn_;
    } else {
      aeth.syndrome = rv::kSyndromeAck;
      psn = psn_add(epsn_, rv::kPsnMask);  // epsn - 1: last in-order PSN
    }
    wire::store_be24(aeth.msn, msn_ & 0xFFFFFF);
    const size_t udp_len = rv::payload_bytes(rv::Opcode::kAcknowledge, 0);
    if (f.capacity < wire::kUdpFrameHeaderBytes + udp_len) return false;
    std::span<uint8_t> out(f.data, wire::kUdpFrameHeaderBytes + udp_len);
    wire::encode_udp_headers(out, flow(cfg_.paths[0].src_port, dst_port_), wire::Ecn::kNotEct, 0, udp_len);
    rv::encode(out.subspan(wire::kUdpFrameHeaderBytes), rv::Opcode::kAcknowledge, cfg_.remote_id, psn, false, nullptr,
               nullptr, &aeth, {});
    rv::seal_icrc(out);
    f.len = static_cast<uint32_t>(out.size());
    f.plane = cfg_.paths[0].plane;
    if (ctl_pending_) ctl_pending_ = false;
    else ack_due_ = false, since_ack_ = 0;
    return true;
  }

  // Timers only, and only those poll_tx can serve. An ACK or NAK owed
  // (ctl_pending_, ack_due_) is not a timer: it goes out at the first poll_tx
  // that offers this QP's plane, as MetaRoCE's owed ACKs do, and the endpoint
  // keeps the QP active until then (Endpoint::poll_tx asks it again while its
  // plane is not ready). Likewise a timer that had expired when the last
  // poll_tx found the plane full: poll_tx serves it only with the plane (it
  // could send nothing before), at the first poll that offers it. Reporting
  // either as due made a driver whose uplink was full poll again at once: the
  // simulator woke the host every nanosecond until the port drained (a
  // two-way RoCEv2 pair ran 5x slower than one way), and the live worker read
  // the stale time as a late timer (poll_lateness, timer_granularity).
  Nanos next_deadline() const override {
    if (error_) return kNever;  // nothing more will be sent
    Nanos d = kNever;
    if (psn_diff(psn_max_, psn_una_) > 0) d = last_progress_ + (rto_ << std::min<uint32_t>(backoff_, 8));
    if (resume_at_ > last_now_) d = std::min(d, resume_at_);
    if (plane_blocked_ && d <= last_now_) return kNever;  // served when the plane is offered
    return d;
  }

  ConnectionStats stats() const override {
    ConnectionStats s = stats_;
    s.state_bytes = state_bytes_;
    // In go-back-N a retransmission is spurious when the responder had already
    // accepted that PSN (it arrives as a duplicate there); the responder counts them.
    s.spurious_retransmits = 0;
    return s;
  }
  size_t state_bytes() const override { return state_bytes_; }
  void hold(size_t bytes) {
    state_bytes_ += bytes;
    ep_.add_connection_state_bytes(bytes);
  }

  size_t state_bytes_ = 0;
  SlotArray<Wr> wrs_;
  uint64_t wr_head_ = 0, wr_tail_ = 0;
  uint32_t psn_alloc_ = 0, psn_next_ = 0, psn_una_ = 0, psn_max_ = 0;
  Nanos last_progress_ = 0, resume_at_ = 0, rto_ = 0, last_now_ = 0;
  uint32_t backoff_ = 0;  // timer doublings: before the first RTT sample, kept until one (Karn)
  uint32_t retries_ = 0;  // timeouts since the last progress: what retry_limit bounds
  uint32_t rnr_count_ = 0;
  bool late_rto_deferred_ = false;  // this arming's timer fired late and was deferred (timer_fired_late)
  // The retransmission timeout follows the measured RTT (RFC 6298, with the
  // host's timer granularity as G), as an operator sets a NIC's local ACK
  // timeout above the fabric's RTT: a fixed timeout below the queueing delay
  // would make the baseline resend everything spuriously, which is a
  // misconfiguration, not go-back-N's behaviour under loss.
  bool timing_ = false;
  uint32_t timed_psn_ = 0;
  Nanos timed_at_ = 0;
  double srtt_ = 0, rttvar_ = 0;
  void update_rtt(double sample) {
    if (srtt_ == 0) {
      srtt_ = sample;
      rttvar_ = sample / 2;
    } else {
      rttvar_ = 0.75 * rttvar_ + 0.25 * std::abs(srtt_ - sample);
      srtt_ = 0.875 * srtt_ + 0.125 * sample;
    }
    const double var = std::max(static_cast<double>(ep_.timer_granularity()), 4 * rttvar_);
    rto_ = std::clamp<Nanos>(static_cast<Nanos>(srtt_ + var), cfg_.tuning.min_rto_ns, cfg_.tuning.max_rto_ns);
    stats_.paths[0].srtt_ns = srtt_;
  }
  bool error_ = false;
  uint16_t dst_port_ = 0;
  // Responder.
  uint32_t epsn_ = 0, msn_ = 0, since_ack_ = 0;
  bool nak_sent_ = false, ack_due_ = false, resp_error_ = false;
  bool plane_blocked_ = false;  // the last poll_tx found this QP's plane unable to take a frame
  bool ctl_pending_ = false;
  uint8_t ctl_syndrome_ = 0;
  uint32_t ctl_psn_ = 0;
  uint64_t msg_va_ = 0;
  uint32_t msg_rkey_ = 0, msg_len_ = 0, msg_off_ = 0;
  bool in_write_ = false;
  SlotArray<RecvRequest> posted_;
  uint64_t posted_count_ = 0, consumed_ = 0;
  ConnectionStats stats_;
};

}  // namespace

std::unique_ptr<Connection> make_rocev2_connection(Endpoint& ep, const ConnectionConfig& cfg) {
  return std::make_unique<RoceConnection>(ep, cfg);
}

}  // namespace metaroce::transport
