// MetaRoCE connection, acknowledgements at the sender: ACK blocks with SACK,
// loss marking, RTT estimation, congestion and path-health updates, per-chunk
// progress, and NAKs (RNR back-off or failing the message).
#include <algorithm>
#include <cmath>

#include "metaroce_connection.h"

namespace metaroce::transport::detail {

void MetaRoceConnection::on_ack(const wire::PacketView& pv, Nanos now) {
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

void MetaRoceConnection::on_ack_block(Path& p, const wire::AckBlock& b, Nanos now) {
  const uint32_t cum = b.cum_seq.get();
  if (seq_diff(cum, p.next_seq) > 0) return;  // acknowledges what we never sent
  uint32_t newly_acked_bytes = 0, newly_acked = 0;
  uint32_t highest = p.floor;
  bool any = false;
  for (uint32_t seq = p.floor; seq_diff(seq, p.next_seq) < 0; ++seq) {
    TxRecord& r = p.rec(seq);
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
      TxRecord& r = p.rec(seq);
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
  p.rto_armed_at = now;
  p.late_rto_deferred = false;
  p.last_answered_at = now;
  p.backoff = 0;
  p.tail_probe_rearmed = false;
  p.probe_backoff = 0;
  if (p.inflight > 0) p.pto_at = now + pto(p);
  else p.pto_at = kNever;
  // Congestion control: ECN-driven, per path and per connection.
  const bool ece = b.flags & wire::kAckFlagEce;
  if (ece) p.stats.ecn_echoes++;
  const double cut = p.cc.on_ack(newly_acked, newly_acked_bytes, ece ? b.ecn_count.get() : 0, p.floor, p.next_seq);
  conn_cc_.on_ack(newly_acked_bytes, ece, cut, paths_.size());
  // A slow route is left once the path's packets on it are resolved: moved
  // while some are in flight, the path's sequence would be reordered by the
  // two routes' queues and its SACK holes would count as losses.
  if (!p.reroute_pending && on_slow_route(p, now)) p.reroute_pending = true;
  if (p.reroute_pending && p.inflight == 0) rotate_entropy(p, true);
  // A fully acknowledged request now waits on the watermark: arm its timer.
  next_timer_at_ = std::min(next_timer_at_, std::min(p.pto_at, now + message_timeout()));
  // Health.
  const PathState before = p.health.state();
  if (p.health.evaluate(others_evidence(p)) == PathHealth::Action::kRotateEntropy) rotate_entropy(p);
  note_state(p, before);
}

// Whether the path's route queues far more than another route to the same
// peer through the same host links: srtt above kSlowRouteRatio x that of
// another live path of its plane, for rotate_after_slow_rtts of its own srtt
// in a row. Two flows that fill a leaf-spine link to the brim queue on it
// below a deep ECN threshold (the scenarios' default marks at 256 KiB,
// 420 us at 5 Gb/s), so no window shrinks, yet every message with a chunk on
// that path waits for its queue. Only paths of one plane are compared:
// planes may have different delays; and when every path of the plane queues
// as much, the host links or the receiver, not the route, are the cause.
// (Rotating on ECN-marked rounds while the other paths were clear, as PLB
// does, rotated paths in and out of collisions in cluster-permutation: more
// RTOs and 0.92 of the goodput after the spine's return.)
bool MetaRoceConnection::on_slow_route(Path& p, Nanos now) {
  const uint32_t after = cfg_.tuning.rotate_after_slow_rtts;
  double fastest = 0;
  if (after != 0 && p.srtt > 0 && p.health.state() != PathState::kDown)
    for (const Path& q : paths_)
      if (&q != &p && q.plane == p.plane && q.health.state() != PathState::kDown && q.srtt > 0)
        fastest = fastest == 0 ? q.srtt : std::min(fastest, q.srtt);
  if (fastest == 0 || p.srtt < kSlowRouteRatio * fastest) {
    p.slow_since = kNever;
    p.slow_samples = 0;
    return false;
  }
  if (p.slow_since == kNever) p.slow_since = now;
  if (p.slow_samples < kSlowRouteMinSamples) ++p.slow_samples;
  // Both: the time (a route, not a burst), and samples enough that srtt is
  // this route's (after a rotation it still holds the last route's) and that
  // one ACK after an idle spell does not count as a lasting state.
  return p.slow_samples >= kSlowRouteMinSamples && static_cast<double>(now - p.slow_since) >= after * p.srtt;
}

// The other live paths' loss, pooled; a down path's loss is its own, not the
// fabric's. answering_only also leaves out paths that timed out since their
// last ACK: when a plane fails, its paths time out together, and their
// mounting losses are the failure's, not the fabric's (PathHealth::rtos_to_down).
LossEvidence MetaRoceConnection::others_evidence(const Path& p, bool answering_only) const {
  LossEvidence others;
  for (const Path& q : paths_)
    if (&q != &p && q.health.state() != PathState::kDown && !(answering_only && q.health.timing_out()))
      others += q.health.evidence();
  return others;
}

void MetaRoceConnection::mark_lost(Path& p, TxRecord& r, bool count_in_health) {
  r.state = RecState::kLost;
  p.inflight--;
  p.inflight_bytes -= r.bytes;
  conn_inflight_bytes_ -= r.bytes;
  if (count_in_health) p.health.on_lost();
  p.stats.lost++;
  if (r.ref.kind != kKindProbe) queue_retransmit(r.ref);
}

void MetaRoceConnection::advance_floor(Path& p) {
  while (seq_diff(p.floor, p.next_seq) < 0) {
    TxRecord& r = p.rec(p.floor);
    if (r.state == RecState::kOutstanding) break;
    r.state = RecState::kFree;
    ++p.floor;
  }
}

void MetaRoceConnection::update_rtt(Path& p, double sample) {
  if (p.srtt == 0) {
    p.srtt = sample;
    p.rttvar = sample / 2;
  } else {
    p.rttvar = 0.75 * p.rttvar + 0.25 * std::abs(p.srtt - sample);
    p.srtt = 0.875 * p.srtt + 0.125 * sample;
  }
  // RFC 6298: srtt + max(G, 4 x rttvar), G the host's measured timer granularity.
  const double var = std::max(static_cast<double>(ep_.timer_granularity()), 4 * p.rttvar);
  p.rto = std::clamp<Nanos>(static_cast<Nanos>(p.srtt + var), cfg_.tuning.min_rto_ns, cfg_.tuning.max_rto_ns);
  p.stats.srtt_ns = p.srtt;
}

void MetaRoceConnection::rotate_entropy(Path& p, bool toward_home) {
  // Whatever was pending or judged concerned the route being left.
  p.reroute_pending = false;
  p.slow_since = kNever;
  p.slow_samples = 0;
  // A path on a detour (it rotated away from a failed route, which may have
  // come back) whose detour is slow returns to its configured port first:
  // that route was chosen with the others' in view (a balanced placement), a
  // random one collides with another flow's often. Not if it left home
  // because home was slow: then it moves on.
  const bool home = toward_home && p.src_port != p.base_port && !p.home_was_slow;
  if (p.src_port == p.base_port) p.home_was_slow = toward_home;
  // Else another ECMP route: a new source port in the ephemeral range.
  const uint32_t step = 7919u * (p.stats.entropy_rotations + 1) + p.id * 104729u;
  p.src_port = home ? p.base_port : static_cast<uint16_t>(49152u + (p.base_port + step) % 16384u);
  p.stats.src_port = p.src_port;
  p.stats.entropy_rotations++;
}

// Bookkeeping after a health transition: stats, and a fresh window for a path
// that comes back so it ramps up instead of bursting its old window.
void MetaRoceConnection::note_state(Path& p, PathState before) {
  if (p.health.state() == before) return;
  p.stats.state = p.health.state();
  p.stats.state_changes++;
  if (p.health.became_active()) p.cc.reset();
}

void MetaRoceConnection::chunk_acked(const ChunkRef& ref, Nanos now) {
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

void MetaRoceConnection::on_nak(const wire::PacketView& pv, Nanos now) {
  stats_.naks_received++;
  ep_.mutable_counters().naks_received[static_cast<size_t>(reject_code(static_cast<wire::NakCode>(pv.ext.nak.code)))]++;
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

}  // namespace metaroce::transport::detail
