#include "metaroce/sim/workload.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace metaroce::sim {

WriteWorkload::WriteWorkload(Simulator& sim, transport::Endpoint& src, int src_host, transport::Endpoint& dst,
                             std::vector<uint32_t> src_conns, const WriteWorkloadConfig& cfg)
    : sim_(sim), src_(src), src_host_(src_host), dst_(dst), cfg_(cfg) {
  if (cfg_.slots < cfg_.depth) throw std::invalid_argument("slots: must be >= depth");
  const size_t lane_bytes = static_cast<size_t>(cfg_.slots) * cfg_.message_bytes;
  connections_ = src_conns.size();
  for (size_t ci = 0; ci < src_conns.size(); ++ci) {
    const uint32_t conn = src_conns[ci];
    for (uint16_t s = 0; s < cfg_.streams; ++s) {
      Lane lane;
      lane.conn = conn;
      lane.conn_index = static_cast<uint32_t>(ci);
      lane.stream = s;
      buffers_.emplace_back(lane_bytes);
      lane.src = buffers_.back().data();
      buffers_.emplace_back(lane_bytes, 0xEE);
      lane.dst = buffers_.back().data();
      lane.src_key = *src_.register_memory(lane.src, lane_bytes, transport::kAccessLocalWrite);
      lane.dst_key = *dst_.register_memory(lane.dst, lane_bytes, transport::kAccessLocalWrite |
                                                                      transport::kAccessRemoteWrite);
      lane.slots.resize(cfg_.slots);
      lanes_.push_back(std::move(lane));
    }
  }
  samples_.reserve(1 << 16);
  if (cfg_.record_latency) latencies_.reserve(1 << 16);
}

void WriteWorkload::fill(uint8_t* p, uint64_t message_id) {
  uint64_t x = message_id * 0x9E3779B97F4A7C15ull ^ cfg_.seed;
  const size_t words = cfg_.message_bytes / 8;
  for (size_t i = 0; i < words; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i * 8, &x, 8);
  }
  for (size_t i = words * 8; i < cfg_.message_bytes; ++i) p[i] = static_cast<uint8_t>(x >> (i % 8));
}

void WriteWorkload::post_one(Lane& lane) {
  const uint32_t idx = lane.next_slot;
  Slot& slot = lane.slots[idx];
  if (slot.busy) return;
  lane.next_slot = (lane.next_slot + 1) % cfg_.slots;
  slot.busy = true;
  slot.message_id = next_message_++;
  slot.posted_at = sim_.now();
  uint8_t* src = lane.src + static_cast<size_t>(idx) * cfg_.message_bytes;
  fill(src, slot.message_id);
  transport::WorkRequest wr;
  wr.wr_id = (static_cast<uint64_t>(&lane - lanes_.data()) << 32) | idx;
  wr.verb = transport::Verb::kWrite;
  wr.local_addr = reinterpret_cast<uint64_t>(src);
  wr.lkey = lane.src_key;
  wr.length = cfg_.message_bytes;
  wr.remote_addr = reinterpret_cast<uint64_t>(lane.dst + static_cast<size_t>(idx) * cfg_.message_bytes);
  wr.rkey = lane.dst_key;
  if (src_.post(lane.conn, lane.stream, wr) != transport::PostError::kOk) {
    slot.busy = false;
    ++errors_;
  }
}

void WriteWorkload::start() {
  for (Lane& lane : lanes_)
    for (uint32_t i = 0; i < cfg_.depth; ++i) post_one(lane);
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
  if (li >= lanes_.size() || idx >= cfg_.slots) {
    ++errors_;
    return;
  }
  Lane& lane = lanes_[li];
  lane.slots[idx].busy = false;
  if (wc.status != transport::WcStatus::kSuccess) {
    ++errors_;
    return;
  }
  uint8_t* dst = lane.dst + static_cast<size_t>(idx) * cfg_.message_bytes;
  const uint8_t* src = lane.src + static_cast<size_t>(idx) * cfg_.message_bytes;
  if (std::memcmp(dst, src, cfg_.message_bytes) != 0) ++verify_failures_;
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

uint64_t WriteWorkload::bytes_between(Nanos from, Nanos to) const {
  auto at = [&](Nanos t) -> uint64_t {
    auto it = std::upper_bound(samples_.begin(), samples_.end(), t,
                               [](Nanos v, const Sample& s) { return v < s.at; });
    return it == samples_.begin() ? 0 : std::prev(it)->bytes;
  };
  return at(to) - at(from);
}

}  // namespace metaroce::sim
