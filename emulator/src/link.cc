#include "metaroce/emulator/link.h"

#include <algorithm>
#include <cmath>

#include "metaroce/wire/udp_frame.h"

namespace metaroce::emulator {

std::optional<std::string> validate(const LinkConfig& c) {
  if (!(c.rate_bps > 0) || !std::isfinite(c.rate_bps))
    return "rate_bps: must be a finite number > 0 (got " + std::to_string(c.rate_bps) + ")";
  if (c.prop_delay_ns < 0) return "prop_delay_ns: must be >= 0 (got " + std::to_string(c.prop_delay_ns) + ")";
  if (c.queue_limit_bytes == 0) return "queue_limit_bytes: must be > 0";
  if (c.queue_limit_packets == 0) return "queue_limit_packets: must be > 0";
  if (!(c.loss_probability >= 0.0 && c.loss_probability <= 1.0))
    return "loss_probability: must be in [0, 1] (got " + std::to_string(c.loss_probability) + ")";
  for (auto [name, v] : {std::pair{"duplicate_probability", c.duplicate_probability},
                         std::pair{"reorder_probability", c.reorder_probability},
                         std::pair{"corrupt_probability", c.corrupt_probability}})
    if (!(v >= 0.0 && v <= 1.0)) return std::string(name) + ": must be in [0, 1] (got " + std::to_string(v) + ")";
  if (c.reorder_delay_ns < 0) return "reorder_delay_ns: must be >= 0 (got " + std::to_string(c.reorder_delay_ns) + ")";
  if (c.overhead_bytes > 1024) return "overhead_bytes: must be in [0, 1024]";
  return std::nullopt;
}

const char* drop_cause_name(DropCause c) {
  switch (c) {
    case DropCause::kNone: return "none";
    case DropCause::kRandomLoss: return "random_loss";
    case DropCause::kQueueOverflow: return "queue_overflow";
    case DropCause::kLinkDown: return "link_down";
    case DropCause::kCorrupted: return "corrupted";
  }
  return "unknown";
}

Link::Link(const LinkConfig& config, uint64_t seed) : config_(config), rng_(seed) {}

void Link::drain(Nanos now) {
  const int64_t now_ps = now * 1000;
  while (!queue_.empty() && queue_.front().depart_ps <= now_ps) {
    backlog_bytes_ -= queue_.front().bytes;
    queue_.pop_front();
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
  for (const Queued& q : queue_) {
    remaining -= q.bytes;
    if (remaining <= target) return (q.depart_ps + 999) / 1000;
  }
  return now;
}

LinkVerdict Link::submit(std::span<uint8_t> frame, Nanos now) {
  LinkVerdict v;
  const uint32_t bytes = static_cast<uint32_t>(frame.size());
  counters_.packets_in++;
  counters_.bytes_in += bytes;
  if (!config_.up) {
    counters_.drops_link_down++;
    v.drop = DropCause::kLinkDown;
    return v;
  }
  drain(now);
  if (backlog_bytes_ + bytes > config_.queue_limit_bytes || queue_.size() >= config_.queue_limit_packets) {
    counters_.drops_queue_overflow++;
    v.drop = DropCause::kQueueOverflow;
    return v;
  }
  if (config_.ecn_threshold_bytes && backlog_bytes_ >= config_.ecn_threshold_bytes) {
    const auto ecn = wire::frame_ecn(frame);
    if (ecn == wire::Ecn::kEct0 || ecn == wire::Ecn::kEct1) {
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
  queue_.push_back({free_at_ps_, bytes});
  backlog_bytes_ += bytes;
  counters_.queue_high_water_bytes = std::max<uint64_t>(counters_.queue_high_water_bytes, backlog_bytes_);
  // Loss happens on the wire: the packet has used its share of the link.
  if (rng_.bernoulli(config_.loss_probability)) {
    counters_.drops_random_loss++;
    v.drop = DropCause::kRandomLoss;
    return v;
  }
  counters_.packets_out++;
  counters_.bytes_out += bytes;
  v.deliver_at = (free_at_ps_ + 999) / 1000 + config_.prop_delay_ns;
  if (rng_.bernoulli(config_.corrupt_probability) && !frame.empty()) {
    const uint64_t bit = rng_.below(frame.size() * 8);
    frame[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    counters_.corruptions++;
    v.corrupted = true;
  }
  if (rng_.bernoulli(config_.reorder_probability)) {
    v.deliver_at += config_.reorder_delay_ns;
    counters_.reorders++;
    v.reordered = true;
  }
  if (rng_.bernoulli(config_.duplicate_probability)) {
    v.duplicate_at = v.deliver_at;
    counters_.duplicates++;
  }
  return v;
}

}  // namespace metaroce::emulator
