#include "metaroce/emulator/link.h"

#include <algorithm>
#include <cmath>

#include "metaroce/wire/udp_frame.h"
#include "range_check.h"

namespace metaroce::emulator {

using detail::format_number;
using detail::in_unit;

std::optional<std::string> validate(const LinkConfig& c) {
  if (!(c.rate_bps > 0 && c.rate_bps <= kMaxLinkRateBps))
    return "rate_bps: must be in (0, " + format_number(kMaxLinkRateBps) + "] bits/s (got " + format_number(c.rate_bps) + ")";
  if (c.prop_delay_ns < 0 || c.prop_delay_ns > kMaxLinkDelayNs)
    return "prop_delay_ns: must be in [0, " + std::to_string(kMaxLinkDelayNs) + "] ns (got " + std::to_string(c.prop_delay_ns) + ")";
  if (c.queue_limit_bytes == 0 || c.queue_limit_bytes > kMaxQueueLimitBytes)
    return "queue_limit_bytes: must be in [1, " + std::to_string(kMaxQueueLimitBytes) + "] (got " +
           std::to_string(c.queue_limit_bytes) + ")";
  if (c.queue_limit_packets == 0 || c.queue_limit_packets > kMaxQueueLimitPackets)
    return "queue_limit_packets: must be in [1, " + std::to_string(kMaxQueueLimitPackets) + "] (got " +
           std::to_string(c.queue_limit_packets) + ")";
  if (c.ecn_threshold_bytes > kMaxQueueLimitBytes)
    return "ecn_threshold_bytes: must be in [0, " + std::to_string(kMaxQueueLimitBytes) + "] (got " +
           std::to_string(c.ecn_threshold_bytes) + ")";
  if (c.overhead_bytes > 1024) return "overhead_bytes: must be in [0, 1024] (got " + std::to_string(c.overhead_bytes) + ")";
  for (auto [name, v] : {std::pair{"loss_probability", c.loss_probability},
                         std::pair{"duplicate_probability", c.duplicate_probability},
                         std::pair{"reorder_probability", c.reorder_probability},
                         std::pair{"corrupt_probability", c.corrupt_probability},
                         std::pair{"red_max_p", c.red_max_p}})
    if (auto e = in_unit(name, v)) return e;
  if (c.reorder_delay_ns < 0 || c.reorder_delay_ns > kMaxLinkDelayNs)
    return "reorder_delay_ns: must be in [0, " + std::to_string(kMaxLinkDelayNs) + "] ns (got " +
           std::to_string(c.reorder_delay_ns) + ")";
  if (c.red_max_bytes < c.red_min_bytes)
    return "red_max_bytes: must be >= red_min_bytes (" + std::to_string(c.red_min_bytes) + ")";
  if (c.flap.period_ns < 0 || c.flap.down_ns < 0 || (c.flap.period_ns > 0 && c.flap.down_ns >= c.flap.period_ns))
    return "flap: needs period_ns = 0 (stop) or period_ns > down_ns >= 0 (got period " + std::to_string(c.flap.period_ns) +
           ", down " + std::to_string(c.flap.down_ns) + ")";
  if (auto e = validate(c.loss)) return e;
  if (auto e = validate(c.delay)) return e;
  if (auto e = validate(c.reorder)) return e;
  return std::nullopt;
}

LossConfig effective_loss(const LinkConfig& c) {
  if (c.loss.kind != LossConfig::Kind::kNone || !(c.loss_probability > 0)) return c.loss;
  LossConfig bernoulli = c.loss;
  bernoulli.kind = LossConfig::Kind::kBernoulli;
  bernoulli.probability = c.loss_probability;
  return bernoulli;
}

const char* drop_cause_name(DropCause c) {
  switch (c) {
    case DropCause::kNone: return "none";
    case DropCause::kRandomLoss: return "random_loss";
    case DropCause::kQueueOverflow: return "queue_overflow";
    case DropCause::kLinkDown: return "link_down";
    case DropCause::kCorrupted: return "corrupted";
    case DropCause::kNoRoute: return "no_route";
  }
  return "unknown";
}

Link::Link(const LinkConfig& config, uint64_t seed) : config_(config), rng_(seed) { build_models(); }

void Link::build_models() {
  const LossConfig l = effective_loss(config_);
  loss_ = LossModel(l);
  delay_ = DelayModel(config_.delay);
  reorder_ = Reorderer(config_.reorder);
  wire_impaired_ = l.kind != LossConfig::Kind::kNone || config_.delay.delay_ns != 0 || config_.delay.jitter_ns != 0 ||
                   config_.reorder.probability > 0 || config_.reorder_probability > 0 ||
                   config_.duplicate_probability > 0 || config_.corrupt_probability > 0;
}

void Link::reconfigure(const LinkConfig& config, Nanos) {
  config_ = config;
  build_models();
}

void Link::drain(Nanos now) {
  const int64_t now_ps = now * 1000;
  while (count_ > 0 && ring_[head_].depart_ps <= now_ps) {
    backlog_bytes_ -= ring_[head_].bytes;
    head_ = (head_ + 1) & (ring_.size() - 1);
    --count_;
  }
}

uint64_t Link::backlog_bytes(Nanos now) {
  drain(now);
  return backlog_bytes_;
}

Nanos Link::drained_to(uint64_t target, Nanos now) {
  drain(now);
  uint64_t remaining = backlog_bytes_;
  if (remaining <= target) return now;
  for (size_t i = 0; i < count_; ++i) {
    const Queued& q = ring_[(head_ + i) & (ring_.size() - 1)];
    remaining -= q.bytes;
    if (remaining <= target) return (q.depart_ps + 999) / 1000;
  }
  return now;
}

bool Link::is_up(Nanos now) const {
  if (!config_.up) return false;
  const FlapConfig& f = config_.flap;
  if (f.period_ns <= 0 || now < f.start_ns) return true;
  const Nanos phase = (now - f.start_ns) % f.period_ns;
  return phase < f.period_ns - f.down_ns;
}

LinkVerdict Link::submit(std::span<uint8_t> frame, Nanos now) {
  LinkVerdict v;
  const uint32_t bytes = static_cast<uint32_t>(frame.size());
  counters_.packets_in++;
  counters_.bytes_in += bytes;
  if (!is_up(now)) {
    counters_.drops_link_down++;
    v.drop = DropCause::kLinkDown;
    return v;
  }
  drain(now);
  if (backlog_bytes_ + bytes > config_.queue_limit_bytes || count_ >= config_.queue_limit_packets) {
    counters_.drops_queue_overflow++;
    v.drop = DropCause::kQueueOverflow;
    return v;
  }
  bool mark = config_.ecn_threshold_bytes && backlog_bytes_ >= config_.ecn_threshold_bytes;
  if (!mark && config_.red_max_bytes > 0 && backlog_bytes_ >= config_.red_min_bytes) {
    const double span = static_cast<double>(config_.red_max_bytes - config_.red_min_bytes);
    const double p = backlog_bytes_ >= config_.red_max_bytes
                         ? 1.0
                         : config_.red_max_p * (span > 0 ? (backlog_bytes_ - config_.red_min_bytes) / span : 1.0);
    mark = rng_.bernoulli(p);
  }
  if (mark) {
    const auto ecn = wire::frame_ecn(frame);
    if (ecn == wire::Ecn::kEct0 || ecn == wire::Ecn::kEct1) {  // non-ECT frames are never marked
      wire::set_frame_ecn(frame, wire::Ecn::kCe);
      counters_.ecn_marks++;
      v.ecn_marked = true;
    }
  }
  const int64_t now_ps = now * 1000;
  const int64_t start_ps = std::max(now_ps, free_at_ps_);
  const double wire_bits = 8.0 * (bytes + config_.overhead_bytes);
  const int64_t ser_ps = static_cast<int64_t>(std::llround(wire_bits * 1e12 / config_.rate_bps));
  free_at_ps_ = start_ps + ser_ps;
  if (count_ == ring_.size()) {  // deepest queue so far: grow (control-path rare event)
    std::vector<Queued> bigger(ring_.size() * 2);
    for (size_t i = 0; i < count_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
  }
  ring_[(head_ + count_) & (ring_.size() - 1)] = {free_at_ps_, bytes};
  ++count_;
  backlog_bytes_ += bytes;
  counters_.queue_high_water_bytes = std::max<uint64_t>(counters_.queue_high_water_bytes, backlog_bytes_);
  const Nanos departed = (free_at_ps_ + 999) / 1000 + config_.prop_delay_ns;
  if (!wire_impaired_) {  // a clean wire: no random draws at all
    v.deliver_at = departed;
    counters_.packets_out++;
    counters_.bytes_out += bytes;
    delay_hist_.record(v.deliver_at - now);
    return v;
  }
  if (loss_.drop(rng_)) {
    counters_.drops_random_loss++;
    v.drop = DropCause::kRandomLoss;
    return v;
  }
  if (config_.corrupt_probability > 0 && rng_.bernoulli(config_.corrupt_probability) && !frame.empty()) {
    const uint64_t bit = rng_.below(frame.size() * 8);
    frame[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    counters_.corruptions++;
    v.corrupted = true;
  }
  if (reorder_.send_now(rng_)) {
    v.deliver_at = departed;  // skips the extra delay: overtakes frames still delayed
    v.reordered = true;
    counters_.reorders++;
  } else {
    v.deliver_at = delay_.arrival(departed, rng_);
  }
  if (config_.reorder_probability > 0 && rng_.bernoulli(config_.reorder_probability)) {
    v.deliver_at += config_.reorder_delay_ns;
    v.reordered = true;
    counters_.reorders++;
  }
  if (config_.duplicate_probability > 0 && rng_.bernoulli(config_.duplicate_probability)) {
    v.duplicate_at = v.deliver_at;
    counters_.duplicates++;
  }
  counters_.packets_out++;
  counters_.bytes_out += bytes;
  delay_hist_.record(v.deliver_at - now);
  return v;
}

}  // namespace metaroce::emulator
