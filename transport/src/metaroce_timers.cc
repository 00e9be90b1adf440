// MetaRoCE connection, timers: per-path RTO and tail-loss probe (PTO), probes of
// down paths, per-stream message timeouts and whole-message restarts, and the
// next deadline the endpoint must wake the connection at.
#include <algorithm>

#include "metaroce_connection.h"

namespace metaroce::transport::detail {

void MetaRoceConnection::service_timers(Nanos now) {
  const TransportTuning& t = cfg_.tuning;
  Nanos next = kNever;
  for (Path& p : paths_) {
    if (p.inflight > 0 && p.health.state() != PathState::kDown) {
      const Nanos timeout = p.rto << std::min<uint32_t>(p.backoff, 8);
      const Nanos rto_at = p.rto_armed_at + timeout;
      // The first tail-loss probe since the last ACK. When every path went
      // quiet at once it comes in the RTO's place if the RTO would come first
      // (RFC 8985 7.2, as Linux does): a silence that a stalled peer, not
      // loss, caused then ends with the probe's answer instead of a resend of
      // everything in flight. While other paths are answered, the silence is
      // evidence against this path and the RTO keeps its time.
      const Nanos tlp_at = others_answered_after(p, now) ? p.pto_at : std::min(p.pto_at, rto_at);
      if (!p.tail_probe_rearmed && now >= tlp_at) {
        // A sequenced PROBE makes the receiver reveal the hole; an RTO then
        // needs a whole unanswered timeout after it.
        probes_due_ |= path_bit(p);
        p.probe_stream = 0;
        p.pto_at = now + pto(p) * 2;
        p.rto_armed_at = now;
        p.late_rto_deferred = false;
        p.tail_probe_rearmed = true;
      } else if (now >= rto_at && !p.late_rto_deferred && timer_fired_late(rto_at, timeout, now, ep_.poll_lateness())) {
        p.late_rto_deferred = true;
        p.rto_armed_at = now + late_timer_grace(p.srtt, ep_.timer_granularity(), timeout) - timeout;
        stats_.late_timeouts_deferred++;
      } else if (now >= rto_at) {
        on_rto(p, now);
      } else if (p.pto_at != kNever && now >= p.pto_at) {
        // Later probes (every 2 x PTO until an ACK) do not move the RTO.
        probes_due_ |= path_bit(p);
        p.probe_stream = 0;
        p.pto_at = now + pto(p) * 2;
      }
    }
    if (p.health.state() == PathState::kDown && now >= p.next_probe_at) {
      probes_due_ |= path_bit(p);
      // A dead plane is probed ever less often (up to max_probe_interval), so it costs little
      // while it is down and is found again within that interval when it returns.
      // The interval doubles every kProbesPerInterval unanswered probes.
      const Nanos interval = t.probe_interval_ns << std::min<uint32_t>(p.probe_backoff / kProbesPerInterval, 16);
      p.next_probe_at = now + std::min(interval, std::max(t.probe_interval_ns, t.max_probe_interval_ns));
      ++p.probe_backoff;
    }
    if (p.inflight > 0 && p.health.state() != PathState::kDown) {
      next = std::min(next, p.rto_armed_at + (p.rto << std::min<uint32_t>(p.backoff, 8)));
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
            probes_due_ |= path_bit(p);
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

// Evidence against path p at `now`: another usable path was answered in the
// second half of p's silence, so it kept talking while p did not (always, for
// a connection with one path: there is nothing to compare with). Answers that
// merely came a little later than p's last one are no evidence: when the host
// or the peer stalls, every path goes quiet within a few hundred microseconds.
bool MetaRoceConnection::others_answered_after(const Path& p, Nanos now) const {
  if (paths_.size() == 1) return true;
  const Nanos since = p.last_answered_at + (now - p.last_answered_at) / 2;
  for (const Path& q : paths_)
    if (&q != &p && q.health.state() != PathState::kDown && q.last_answered_at > since) return true;
  return false;
}

Nanos MetaRoceConnection::message_timeout() const {
  double srtt = 0;
  for (const Path& p : paths_) srtt = std::max(srtt, p.srtt);
  return std::max<Nanos>(static_cast<Nanos>(4 * srtt) + ep_.timer_granularity(), cfg_.tuning.min_rto_ns);
}

Nanos MetaRoceConnection::pto(const Path& p) const {
  return std::max<Nanos>(static_cast<Nanos>(2 * p.srtt), cfg_.tuning.min_pto_ns) << std::min<uint32_t>(p.backoff, 10);
}

void MetaRoceConnection::on_rto(Path& p, Nanos now) {
  p.stats.rtos++;
  stats_.rtos++;
  // Everything outstanding on this path is presumed lost and resent on the
  // best paths. For the path's loss estimate that is one loss event, not one
  // per packet: their fate is unknown (a silence may be delay, not loss), and
  // a path that keeps timing out is judged by its timeouts (PathHealth::on_rto).
  for (uint32_t seq = p.floor; seq_diff(seq, p.next_seq) < 0; ++seq) {
    TxRecord& r = p.rec(seq);
    if (r.state == RecState::kOutstanding) mark_lost(p, r, false);
  }
  p.health.on_lost();
  advance_floor(p);
  if (p.reroute_pending) rotate_entropy(p, true);  // nothing of the path is in flight now
  p.cc.on_timeout();
  p.backoff++;
  p.rto_armed_at = now;
  p.late_rto_deferred = false;
  p.tail_probe_rearmed = true;  // no tail-loss probe after a timeout until an ACK
  p.pto_at = kNever;
  const PathState before = p.health.state();
  if (p.health.on_rto(others_answered_after(p, now), others_evidence(p, true).loss()) == PathHealth::Action::kRotateEntropy) {
    rotate_entropy(p);
    p.next_probe_at = now;
    p.probe_backoff = 0;
  }
  note_state(p, before);
  // A path that went quiet gets a probe so its fate is learned quickly.
  probes_due_ |= path_bit(p);
}

// Sends the whole message again from its first chunk, not before resume_at.
void MetaRoceConnection::restart_message(Stream& s, TxMsg& m, Nanos resume_at) {
  m.acked.clear();
  m.acked_chunks = 0;
  m.next_chunk = 0;
  ++m.attempt;
  m.resume_at = resume_at;
  m.last_progress = resume_at;
  next_timer_at_ = std::min(next_timer_at_, resume_at);
  if (seq_diff(m.msg_seq, s.cursor_seq) < 0) s.cursor_seq = m.msg_seq;
}

Nanos MetaRoceConnection::next_deadline() const {
  Nanos d = next_timer_at_;
  if (pacing_until_ > last_now_) d = std::min(d, pacing_until_);
  return d;
}

}  // namespace metaroce::transport::detail
