#include "metaroce/sim/workload.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace metaroce::sim {

WriteWorkload::WriteWorkload(Simulator& sim, transport::Endpoint& src, int src_host, transport::Endpoint& dst,
                             std::vector<uint32_t> src_conns, const WriteWorkloadConfig& cfg)
    : sim_(sim), src_(src), src_host_(src_host), dst_(dst), cfg_(cfg) {
  if (cfg_.streams == 0) throw std::invalid_argument("streams: must be >= 1");
  if (cfg_.slots != 0 && cfg_.slots < cfg_.depth) throw std::invalid_argument("slots: must be >= depth");
  slots_ = cfg_.slots_per_lane();
  if (slots_ == 0) throw std::invalid_argument("depth: must be >= 1");
  planned_ = cfg_.messages * src_conns.size();
  connections_ = src_conns.size();
  const size_t lanes = src_conns.size() * cfg_.streams;
  const size_t total_slots = lanes * slots_;
  // Two pattern offsets per destination slot (8 bytes apart), so every
  // outstanding message reads its own window and a slot's successive messages
  // differ. The pattern is random and aperiodic: windows at different offsets
  // differ, so bytes placed in the wrong slot or at the wrong offset show.
  pattern_.resize(cfg_.message_bytes + 16 * total_slots);
  fill_random_pattern(pattern_, cfg_.seed);
  dst_region_.assign(total_slots * cfg_.message_bytes, 0xEE);
  if (!pattern_.empty())
    src_key_ = *src_.register_memory(pattern_.data(), pattern_.size(), transport::kAccessLocalWrite);
  if (!dst_region_.empty())
    dst_key_ = *dst_.register_memory(dst_region_.data(), dst_region_.size(),
                                     transport::kAccessLocalWrite | transport::kAccessRemoteWrite);
  lanes_.reserve(lanes);
  for (size_t ci = 0; ci < src_conns.size(); ++ci) {
    for (uint16_t s = 0; s < cfg_.streams; ++s) {
      Lane lane;
      lane.conn = src_conns[ci];
      lane.conn_index = static_cast<uint32_t>(ci);
      lane.stream = s;
      lane.first_slot = static_cast<uint32_t>(lanes_.size() * slots_);
      lane.slots.resize(slots_);
      if (cfg_.messages) lane.unposted = cfg_.messages / cfg_.streams + (s < cfg_.messages % cfg_.streams ? 1 : 0);
      lanes_.push_back(std::move(lane));
    }
  }
  // Room for a finite workload's messages, or a start: thousands of
  // workloads run at once in a collective job, most with few messages.
  const size_t expect = planned_ ? std::min<uint64_t>(planned_, 1 << 16) : 1 << 10;
  samples_.reserve(expect);
  if (cfg_.record_latency) latencies_.reserve(expect);
}

const uint8_t* WriteWorkload::source(const Lane& lane, uint32_t idx, uint32_t use) const {
  return pattern_.data() + 16 * static_cast<size_t>(lane.first_slot + idx) + 8 * (use & 1);
}

uint8_t* WriteWorkload::destination(const Lane& lane, uint32_t idx) {
  return dst_region_.data() + static_cast<size_t>(lane.first_slot + idx) * cfg_.message_bytes;
}

void WriteWorkload::post_one(Lane& lane) {
  const uint32_t idx = lane.next_slot;
  Slot& slot = lane.slots[idx];
  if (slot.busy || lane.unposted == 0) return;
  if (lane.unposted != UINT64_MAX) --lane.unposted;
  lane.next_slot = (lane.next_slot + 1) % slots_;
  slot.busy = true;
  ++slot.uses;
  slot.posted_at = sim_.now();
  transport::WorkRequest wr;
  wr.wr_id = (static_cast<uint64_t>(&lane - lanes_.data()) << 32) | idx;
  wr.verb = transport::Verb::kWrite;
  wr.local_addr = reinterpret_cast<uint64_t>(source(lane, idx, slot.uses));
  wr.lkey = src_key_;
  wr.length = cfg_.message_bytes;
  wr.remote_addr = reinterpret_cast<uint64_t>(destination(lane, idx));
  wr.rkey = dst_key_;
  if (src_.post(lane.conn, lane.stream, wr) != transport::PostError::kOk) {
    slot.busy = false;
    ++errors_;
  }
}

void WriteWorkload::start() {
  for (Lane& lane : lanes_)
    for (uint32_t i = 0; i < std::min(cfg_.depth, slots_); ++i) post_one(lane);
  sim_.kick(src_host_);
}

void WriteWorkload::on_activity(int host) {
  if (host != src_host_) return;
  transport::Completion wc[64];
  size_t n;
  while ((n = src_.poll_completions(wc)) > 0)
    for (size_t i = 0; i < n; ++i) on_completion(wc[i]);
  // The simulator services the host right after this hook.
}

void WriteWorkload::on_completion(const transport::Completion& wc) {
  const size_t li = wc.wr_id >> 32;
  const uint32_t idx = static_cast<uint32_t>(wc.wr_id);
  if (li >= lanes_.size() || idx >= slots_) {
    ++errors_;
    return;
  }
  Lane& lane = lanes_[li];
  lane.slots[idx].busy = false;
  if (wc.status != transport::WcStatus::kSuccess) {
    ++errors_;
    return;
  }
  uint8_t* dst = destination(lane, idx);
  if (std::memcmp(dst, source(lane, idx, lane.slots[idx].uses), cfg_.message_bytes) != 0) ++verify_failures_;
  std::memset(dst, 0xEE, cfg_.message_bytes);
  bytes_ += cfg_.message_bytes;
  lane.bytes += cfg_.message_bytes;
  ++messages_;
  samples_.push_back({sim_.now(), bytes_});
  if (cfg_.record_latency) latencies_.push_back(sim_.now() - lane.slots[idx].posted_at);
  if (!stopped_) post_one(lane);
}

std::vector<uint64_t> WriteWorkload::bytes_by_connection() const {
  std::vector<uint64_t> out(connections_, 0);
  for (const Lane& l : lanes_) out[l.conn_index] += l.bytes;
  return out;
}

void fill_random_pattern(std::vector<uint8_t>& bytes, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull | 1;
  for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(bytes.data() + i, &x, 8);
  }
  for (size_t i = bytes.size() & ~size_t{7}; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(x >> (8 * (i % 8)));
}

uint64_t bytes_between(const std::vector<Sample>& samples, Nanos from, Nanos to) {
  auto at = [&](Nanos t) -> uint64_t {
    auto it = std::upper_bound(samples.begin(), samples.end(), t, [](Nanos v, const Sample& s) { return v < s.at; });
    return it == samples.begin() ? 0 : std::prev(it)->bytes;
  };
  return at(to) - at(from);
}

uint64_t WriteWorkload::bytes_between(Nanos from, Nanos to) const { return sim::bytes_between(samples_, from, to); }

}  // namespace metaroce::sim
