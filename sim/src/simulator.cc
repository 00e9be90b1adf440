#include "metaroce/sim/simulator.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "metaroce/wire/udp_frame.h"

namespace metaroce::sim {

TwoHostFabric::TwoHostFabric(const std::vector<PlaneConfig>& planes, uint64_t seed, uint32_t nic_queue_bytes)
    : nic_queue_bytes_(nic_queue_bytes) {
  links_.reserve(planes.size() * 2);
  for (size_t p = 0; p < planes.size(); ++p) {
    links_.emplace_back(planes[p].a_to_b, emulator::Random::derive(seed, p * 2));
    links_.emplace_back(planes[p].b_to_a, emulator::Random::derive(seed, p * 2 + 1));
  }
}

Route TwoHostFabric::forward(int from, uint8_t plane, std::span<uint8_t> frame, Nanos now) {
  Route r;
  if (plane >= planes() || from < 0 || from > 1) {
    r.drop = emulator::DropCause::kLinkDown;
    return r;
  }
  const emulator::LinkVerdict v = link(from, plane).submit(frame, now);
  r.drop = v.drop;
  r.to_host = 1 - from;
  r.deliver_at = v.deliver_at;
  r.duplicate_at = v.duplicate_at;
  r.pos.from = static_cast<uint32_t>(from);
  r.pos.to = static_cast<uint32_t>(1 - from);
  r.pos.plane = plane;
  r.pos.hop = emulator::Hop::kDelivered;
  r.pos.marks = (v.ecn_marked ? emulator::kMarkEcnCe : 0) | (v.corrupted ? emulator::kMarkCorrupted : 0) |
                (v.reordered ? emulator::kMarkReordered : 0);
  return r;
}

bool TwoHostFabric::egress_ready(int host, uint8_t plane, Nanos now) {
  return link(host, plane).ready(nic_queue_bytes_, now);
}

Nanos TwoHostFabric::egress_ready_at(int host, uint8_t plane, Nanos now) {
  return link(host, plane).ready_at(nic_queue_bytes_, now);
}

void TwoHostFabric::set_plane_up(uint8_t plane, bool up) {
  link(0, plane).set_up(up);
  link(1, plane).set_up(up);
}

Route EmulatedFabric::step(emulator::FramePosition pos, std::span<uint8_t> frame, Nanos now) {
  if (runner_) runner_->apply_due(now);  // changes take effect at exactly their instant
  Route r;
  Nanos at = 0, dup = -1;
  r.drop = f_.forward(pos, frame, now, &at, &dup);
  if (r.drop != emulator::DropCause::kNone) return r;
  r.deliver_at = at;
  r.duplicate_at = dup;
  r.pos = pos;
  r.in_transit = pos.hop != emulator::Hop::kDelivered;
  r.to_host = static_cast<int>(pos.to);
  return r;
}

Route EmulatedFabric::forward(int from_host, uint8_t plane, std::span<uint8_t> frame, Nanos now) {
  emulator::FramePosition pos;
  pos.from = static_cast<uint32_t>(from_host);
  pos.plane = plane;
  return step(pos, frame, now);
}

Route EmulatedFabric::advance(const emulator::FramePosition& pos, std::span<uint8_t> frame, Nanos now) {
  return step(pos, frame, now);
}

Simulator::Simulator(Fabric& fabric) : fabric_(fabric) {}
Simulator::~Simulator() = default;

int Simulator::add_host(transport::Endpoint* ep) {
  hosts_.push_back(ep);
  wake_at_.push_back(transport::kNever);
  egress_ready_at_.resize(hosts_.size() * fabric_.planes(), 0);
  return static_cast<int>(hosts_.size() - 1);
}

void Simulator::push(Nanos at, Kind k, uint32_t index) {
  // Past these the key's fields would overlap: a run this large is refused,
  // never silently misordered.
  if (index > kMaxIndex) throw std::length_error("simulator: more than 16,777,215 frames or controls at once");
  if (seq_ >> (64 - kIndexBits - kKindBits)) throw std::length_error("simulator: more than 2^38 events scheduled");
  queue_.push({at, (seq_++ << (kIndexBits + kKindBits)) | (static_cast<uint64_t>(k) << kIndexBits) | index});
}

void Simulator::at(Nanos t, std::function<void()> fn) {
  controls_.push_back(std::move(fn));
  push(std::max(t, now_), Kind::kControl, static_cast<uint32_t>(controls_.size() - 1));
}

void Simulator::kick(int host) { schedule_wake(host, now_); }

void Simulator::schedule_wake(int host, Nanos at) {
  at = std::max(at, now_);
  // Keep only the earliest pending wake; later stale events are harmless no-ops.
  if (wake_at_[host] <= at && wake_at_[host] >= now_) return;
  wake_at_[host] = at;
  push(at, Kind::kWake, static_cast<uint32_t>(host));
}

uint32_t Simulator::alloc_packet() {
  if (free_packets_.empty()) {
    packets_.emplace_back();
    packets_.back().data.resize(frame_capacity_);
    return static_cast<uint32_t>(packets_.size() - 1);
  }
  const uint32_t i = free_packets_.back();
  free_packets_.pop_back();
  return i;
}

void Simulator::service(int host) {
  transport::Endpoint& ep = *hosts_[host];
  constexpr size_t kBurst = 16;
  transport::TxFrame burst[kBurst];
  uint32_t slots[kBurst];
  const size_t planes = fabric_.planes();
  const auto ready_planes = [&] {
    uint64_t ready = 0;
    for (size_t p = 0; p < planes; ++p)
      if (egress_ready(host, p)) ready |= 1ull << p;
    return ready;
  };
  while (true) {
    for (size_t i = 0; i < kBurst; ++i) {
      slots[i] = alloc_packet();
      burst[i] = {packets_[slots[i]].data.data(), static_cast<uint32_t>(packets_[slots[i]].data.size()), 0, 0};
    }
    size_t sent = 0;
    const size_t n = ep.poll_tx_paced({burst, kBurst}, now_, ready_planes, [&](const transport::TxFrame& f) {
      Packet& pk = packets_[slots[sent]];
      pk.len = f.len;
      if (frame_observer_)
        frame_observer_({FrameEvent::Kind::kSent, now_, host, f.plane, emulator::DropCause::kNone, 0, {pk.data.data(), pk.len}});
      route(slots[sent++], fabric_.forward(host, f.plane, {pk.data.data(), pk.len}, now_), host, f.plane);
      egress_ready_at(host, f.plane) = fabric_.egress_ready_at(host, f.plane, now_);
    });
    for (size_t i = n; i < kBurst; ++i) free_packets_.push_back(slots[i]);
    if (n < kBurst) break;
  }
  // Sleep until the engine's next timer or, for a plane whose uplink is full,
  // until it can take a frame again: work blocked on a full uplink (data, an
  // owed ACK) waits for the port, not for a clock tick. With no plane able to
  // take a frame the engine cannot act at all (its timers run inside poll_tx,
  // which is offered a plane or not called), so the host sleeps until the
  // first plane drains whatever its deadlines say. A deadline at or before now
  // otherwise is a timer poll_tx did not serve; it is retried 1 ns later.
  Nanos drained = transport::kNever;
  bool any_ready = false;
  for (size_t p = 0; p < planes; ++p) {
    if (egress_ready(host, p)) any_ready = true;
    else drained = std::min(drained, egress_ready_at(host, p));
  }
  const Nanos next = any_ready ? std::min(ep.next_deadline(), drained) : drained;
  if (next != transport::kNever) schedule_wake(host, std::max(next, now_ + 1));
}

void Simulator::route(uint32_t slot, const Route& r, int from, uint8_t plane) {
  if (r.drop != emulator::DropCause::kNone || r.to_host < 0 || r.to_host >= static_cast<int>(hosts_.size())) {
    if (frame_observer_) {
      const Packet& pk = packets_[slot];
      const emulator::DropCause cause = r.drop != emulator::DropCause::kNone ? r.drop : emulator::DropCause::kNoRoute;
      frame_observer_({FrameEvent::Kind::kDropped, now_, from, plane, cause, 0, {pk.data.data(), pk.len}});
    }
    free_packets_.push_back(slot);
    return;
  }
  packets_[slot].in_transit = r.in_transit;
  packets_[slot].pos = r.pos;
  packets_[slot].to_host = r.to_host;
  push(r.deliver_at, Kind::kDeliver, slot);
  if (r.duplicate_at >= 0) {
    const uint32_t copy = alloc_packet();  // may grow packets_: index again, no references held
    packets_[copy].len = packets_[slot].len;
    packets_[copy].in_transit = r.in_transit;
    packets_[copy].pos = r.pos;
    packets_[copy].pos.marks |= emulator::kMarkDuplicate;
    packets_[copy].to_host = r.to_host;
    std::memcpy(packets_[copy].data.data(), packets_[slot].data.data(), packets_[slot].len);
    push(r.duplicate_at, Kind::kDeliver, copy);
  }
}

void Simulator::EventQueue::push(const Event& e) {
  // Scheduling into the past would be popped out of order: a bug, never silently misordered.
  if (e.at < last_at) throw std::logic_error("simulator: an event scheduled before the last one run");
  // Keys grow with every push (their high bits are the sequence), and a
  // bucket is only refilled from a higher one while it is empty (below), so
  // every bucket stays in key order by appending: bucket 0, whose events
  // share one time, pops in the order they were scheduled.
  bucket[bucket_of(e.at, last_at)].push_back(e);
  ++size;
}

const Simulator::Event* Simulator::EventQueue::next_due(Nanos until) {
  if (head0 < bucket[0].size()) return bucket[0][head0].at <= until ? &bucket[0][head0] : nullptr;
  if (size == 0) return nullptr;
  unsigned b = 1;
  while (bucket[b].empty()) ++b;
  std::vector<Event>& from = bucket[b];
  Nanos least = from.front().at;
  for (const Event& e : from) least = std::min(least, e.at);
  if (least > until) return nullptr;
  bucket[0].clear();
  head0 = 0;
  last_at = least;
  // Every event of bucket b moves, in order, to one of the lower buckets,
  // which are all empty: they stay in key order.
  for (const Event& e : from) bucket[bucket_of(e.at, last_at)].push_back(e);
  from.clear();
  return &bucket[0][0];
}

void Simulator::EventQueue::pop() {
  ++head0;
  --size;
}

void Simulator::run_until(Nanos t) {
  for (const Event* next = queue_.next_due(t); next; next = queue_.next_due(t)) {
    const Event e = *next;
    queue_.pop();
    now_ = e.at;
    ++events_;
    const uint32_t index = static_cast<uint32_t>(e.key & kMaxIndex);
    switch (static_cast<Kind>((e.key >> kIndexBits) & ((1u << kKindBits) - 1))) {
      case Kind::kDeliver: {
        Packet& pk = packets_[index];
        if (pk.in_transit) {  // reached the next fabric hop
          const emulator::FramePosition pos = pk.pos;
          route(index, fabric_.advance(pos, {pk.data.data(), pk.len}, now_), static_cast<int>(pos.from), pos.plane);
          break;
        }
        const int host = pk.to_host;
        if (frame_observer_)
          frame_observer_({FrameEvent::Kind::kDelivered, now_, host, pk.pos.plane, emulator::DropCause::kNone, pk.pos.marks,
                           {pk.data.data(), pk.len}});
        hosts_[host]->on_frame({pk.data.data(), pk.len}, now_);
        free_packets_.push_back(index);
        if (activity_) activity_(host);
        service(host);
        break;
      }
      case Kind::kWake: {
        const int host = static_cast<int>(index);
        ++wakes_;
        if (wake_at_[host] == e.at) wake_at_[host] = transport::kNever;
        if (activity_) activity_(host);
        service(host);
        break;
      }
      case Kind::kControl:
        controls_[index]();
        break;
    }
  }
  now_ = std::max(now_, t);
}

}  // namespace metaroce::sim
