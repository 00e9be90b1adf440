#include "metaroce/sim/ring_allreduce.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace metaroce::sim {
namespace {

// wr_id = global step << kConnBits | connection index within the position:
// a completion names its share, and one from another step shows.
constexpr unsigned kConnBits = 24;
constexpr uint64_t kConnMask = (uint64_t{1} << kConnBits) - 1;

std::string conns_field(size_t i) { return "conns[" + std::to_string(i) + "]"; }

}  // namespace

RingAllReduceWorkload::RingAllReduceWorkload(Simulator& sim, std::vector<transport::Endpoint*> ring_endpoints,
                                             std::vector<int> ring_hosts, std::vector<std::vector<uint32_t>> conns,
                                             const RingAllReduceConfig& cfg)
    : sim_(sim), cfg_(cfg) {
  const size_t n = ring_endpoints.size();
  if (n < 2)
    throw std::invalid_argument("ring_endpoints: a ring needs at least 2 positions, got " + std::to_string(n));
  if (ring_hosts.size() != n)
    throw std::invalid_argument("ring_hosts: " + std::to_string(ring_hosts.size()) + " hosts for " +
                                std::to_string(n) + " ring endpoints");
  if (conns.size() != n)
    throw std::invalid_argument("conns: " + std::to_string(conns.size()) + " connection lists for " +
                                std::to_string(n) + " ring endpoints");
  if (cfg_.buffer_bytes == 0) throw std::invalid_argument("buffer_bytes: must be > 0");
  for (size_t i = 0; i < n; ++i) {
    const std::string pos = std::to_string(i);
    if (ring_endpoints[i] == nullptr) throw std::invalid_argument("ring_endpoints[" + pos + "]: null");
    if (ring_hosts[i] < 0)
      throw std::invalid_argument("ring_hosts[" + pos + "]: host " + std::to_string(ring_hosts[i]) + " is negative");
    for (size_t j = 0; j < i; ++j) {
      if (ring_endpoints[j] == ring_endpoints[i])
        throw std::invalid_argument("ring_endpoints[" + pos + "]: the same endpoint as position " + std::to_string(j));
      if (ring_hosts[j] == ring_hosts[i])
        throw std::invalid_argument("ring_hosts[" + pos + "]: host " + std::to_string(ring_hosts[i]) +
                                    " is position " + std::to_string(j) + "'s as well");
    }
    if (conns[i].empty()) throw std::invalid_argument(conns_field(i) + ": position " + pos + " has no connections");
    if (conns[i].size() > kConnMask)
      throw std::invalid_argument(conns_field(i) + ": more than " + std::to_string(kConnMask) + " connections");
    std::vector<uint32_t> sorted = conns[i];
    std::sort(sorted.begin(), sorted.end());
    if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end())
      throw std::invalid_argument(conns_field(i) + ": connection " + std::to_string(*dup) + " listed twice");
  }

  chunk_ = chunk_bytes_for(n, cfg_.buffer_bytes);
  steps_ = static_cast<uint32_t>(2 * (n - 1));
  // Position i at global step g reads window (g x n + i) mod (2n + 1): the
  // positions of one step read different windows, and the WRITEs into one
  // destination slot (g and g + 2, same position) differ too, as 2n is not a
  // multiple of 2n + 1. The pattern is random and aperiodic, so different
  // windows hold different bytes and a misplaced WRITE shows.
  windows_ = static_cast<uint32_t>(2 * n + 1);
  pattern_.resize(size_t{chunk_} + 8 * size_t{windows_});
  fill_random_pattern(pattern_, cfg_.seed);
  dst_region_.assign(n * 2 * size_t{chunk_}, 0xEE);  // buffer_bytes_for's terms, allocated

  int max_host = 0;
  for (int h : ring_hosts) max_host = std::max(max_host, h);
  position_of_host_.assign(static_cast<size_t>(max_host) + 1, -1);
  positions_.resize(n);
  size_t flat = 0;
  for (size_t i = 0; i < n; ++i) {
    Position& p = positions_[i];
    p.ep = ring_endpoints[i];
    p.host = ring_hosts[i];
    p.conns = std::move(conns[i]);
    p.first_conn = flat;
    flat += p.conns.size();
    p.slots = dst_region_.data() + i * 2 * size_t{chunk_};
    const auto lkey = p.ep->register_memory(pattern_.data(), pattern_.size(), transport::kAccessLocalWrite);
    const auto rkey = p.ep->register_memory(p.slots, 2 * size_t{chunk_},
                                            transport::kAccessLocalWrite | transport::kAccessRemoteWrite);
    if (!lkey || !rkey)
      throw std::runtime_error("ring_endpoints[" + std::to_string(i) + "]: could not register the buffers");
    p.lkey = *lkey;
    p.rkey = *rkey;
    position_of_host_[static_cast<size_t>(p.host)] = static_cast<int>(i);
  }
  bytes_by_conn_.assign(flat, 0);
  samples_.reserve(1 << 16);
  if (cfg_.record_latency) latencies_.reserve(1 << 10);
}

uint64_t RingAllReduceWorkload::max_outstanding(const std::vector<std::vector<uint32_t>>& conns) {
  size_t most = 0;
  for (const auto& c : conns) most = std::max(most, c.size());
  return most;
}

const uint8_t* RingAllReduceWorkload::source(uint32_t i, uint64_t global) const {
  const uint64_t window = (global * positions_.size() + i) % windows_;
  return pattern_.data() + 8 * window;
}

void RingAllReduceWorkload::share(uint32_t j, size_t m, uint32_t* offset, uint32_t* length) const {
  const uint32_t base = static_cast<uint32_t>(chunk_ / m), extra = static_cast<uint32_t>(chunk_ % m);
  *offset = j * base + std::min(j, extra);
  *length = base + (j < extra ? 1 : 0);
}

void RingAllReduceWorkload::fail(uint32_t i, uint32_t conn, const char* what, const char* name) {
  ++errors_;
  positions_[i].failed = true;
  if (!first_error_.empty()) return;
  first_error_ = "position " + std::to_string(i) + " (host " + std::to_string(positions_[i].host) + "), iteration " +
                 std::to_string(iteration_) + " step " + std::to_string(positions_[i].steps_done) + ", connection " +
                 std::to_string(conn) + ": " + what + " " + name;
}

void RingAllReduceWorkload::start() {
  if (started_) return;
  started_ = true;
  start_iteration();
}

void RingAllReduceWorkload::start_iteration() {
  iteration_start_ = sim_.now();
  positions_finished_ = 0;
  for (Position& p : positions_) p.steps_done = 0;
  for (uint32_t i = 0; i < positions_.size(); ++i) try_post(i);
}

void RingAllReduceWorkload::try_post(uint32_t i) {
  const Position& p = positions_[i];
  if (stopped_ || p.failed || p.posting || p.steps_done >= steps_) return;
  const Position& pred = positions_[(i + positions_.size() - 1) % positions_.size()];
  // Step k forwards what the predecessor placed here at step k - 1.
  if (p.steps_done > 0 && pred.steps_done < p.steps_done) return;
  post_step(i);
}

void RingAllReduceWorkload::post_step(uint32_t i) {
  Position& p = positions_[i];
  const Position& next = positions_[(i + 1) % positions_.size()];
  const uint32_t step = p.steps_done;
  const uint64_t global = global_step(step);
  const uint8_t* src = source(i, global);
  uint8_t* dst = next.slots + (step & 1) * size_t{chunk_};
  p.posting = true;
  note_step(RingStepEvent::Kind::kPosted, i, step);
  for (uint32_t j = 0; j < p.conns.size(); ++j) {
    uint32_t offset, length;
    share(j, p.conns.size(), &offset, &length);
    if (length == 0) continue;
    transport::WorkRequest wr;
    wr.wr_id = (global << kConnBits) | j;
    wr.verb = transport::Verb::kWrite;
    wr.local_addr = reinterpret_cast<uint64_t>(src + offset);
    wr.lkey = p.lkey;
    wr.length = length;
    wr.remote_addr = reinterpret_cast<uint64_t>(dst + offset);
    wr.rkey = next.rkey;
    const transport::PostError e = p.ep->post(p.conns[j], 0, wr);
    if (e != transport::PostError::kOk) {
      fail(i, p.conns[j], "post", transport::post_error_name(e));
      break;  // the position is stopped: the other shares would never make a step
    }
    ++p.outstanding;
  }
  sim_.kick(p.host);
}

void RingAllReduceWorkload::on_activity(int host) {
  if (host < 0 || static_cast<size_t>(host) >= position_of_host_.size() || position_of_host_[host] < 0) return;
  transport::Endpoint& ep = *positions_[position_of_host_[host]].ep;
  transport::Completion wc[64];
  size_t got;
  while ((got = ep.poll_completions(wc)) > 0)
    for (size_t k = 0; k < got; ++k) on_completion(host, wc[k]);
  // The simulator services the host right after this hook.
}

void RingAllReduceWorkload::on_completion(int host, const transport::Completion& wc) {
  if (host < 0 || static_cast<size_t>(host) >= position_of_host_.size() || position_of_host_[host] < 0) {
    ++errors_;
    if (first_error_.empty())
      first_error_ = "host " + std::to_string(host) + ", connection " + std::to_string(wc.conn) +
                     ": a completion at a host that is no position of the ring";
    return;
  }
  const uint32_t i = static_cast<uint32_t>(position_of_host_[host]);
  Position& p = positions_[i];
  const uint32_t j = static_cast<uint32_t>(wc.wr_id & kConnMask);
  const uint32_t step = p.steps_done;
  const uint64_t global = global_step(step);
  if (j >= p.conns.size() || p.conns[j] != wc.conn || !p.posting || p.outstanding == 0 ||
      (wc.wr_id >> kConnBits) != (global & (~uint64_t{0} >> kConnBits))) {
    fail(i, wc.conn, "completion", "that is not of this position's step outstanding");
    return;
  }
  --p.outstanding;
  if (wc.status != transport::WcStatus::kSuccess) {
    fail(i, wc.conn, "completion", transport::wc_status_name(wc.status));
  } else {
    uint32_t offset, length;
    share(j, p.conns.size(), &offset, &length);
    uint8_t* dst = positions_[(i + 1) % positions_.size()].slots + (step & 1) * size_t{chunk_} + offset;
    if (std::memcmp(dst, source(i, global) + offset, length) != 0) ++verify_failures_;
    std::memset(dst, 0xEE, length);
    bytes_ += length;
    bytes_by_conn_[p.first_conn + j] += length;
    ++messages_;
    samples_.push_back({sim_.now(), bytes_});
  }
  if (p.outstanding > 0 || p.failed) return;

  p.posting = false;
  ++p.steps_done;
  note_step(RingStepEvent::Kind::kCompleted, i, step);
  if (p.steps_done < steps_) {
    try_post(i);
  } else if (++positions_finished_ == positions_.size()) {
    ++iterations_;
    if (cfg_.record_latency) latencies_.push_back(sim_.now() - iteration_start_);
    ++iteration_;
    if (!stopped_ && !done()) start_iteration();
    return;
  }
  // The successor may have been waiting for this step's data.
  try_post((i + 1) % static_cast<uint32_t>(positions_.size()));
}

uint64_t RingAllReduceWorkload::bytes_between(Nanos from, Nanos to) const { return sim::bytes_between(samples_, from, to); }

}  // namespace metaroce::sim
