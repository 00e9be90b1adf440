#include "metaroce/transport/connection_schedule.h"

#include <algorithm>
#include <bit>

namespace metaroce::transport {

namespace {
// Min-heap order for std::push_heap / pop_heap (which build max-heaps).
struct Later {
  template <typename E>
  bool operator()(const E& a, const E& b) const { return a.at > b.at; }
};
}  // namespace

void ConnectionSchedule::resize(size_t n) {
  const size_t old = deadline_.size();
  deadline_.resize(n, kNever);
  bits_.resize((n + 63) / 64, 0);
  if (n > old) {
    for (size_t s = old; s < n; ++s) activate(s);
  } else {
    // Slots past n are gone: clear their bits and count only what remains.
    if (n % 64 && !bits_.empty()) bits_.back() &= (uint64_t{1} << (n % 64)) - 1;
    active_ = 0;
    for (uint64_t w : bits_) active_ += static_cast<size_t>(std::popcount(w));
  }
  // Room for every slot's current entry and as many stale ones before a rebuild.
  const size_t cap = 2 * n + 64;
  heap_.reserve(cap);
  stack_.reserve(cap);
  rebuild();
}

void ConnectionSchedule::activate(size_t slot) {
  uint64_t& w = bits_[slot / 64];
  const uint64_t b = uint64_t{1} << (slot % 64);
  if (!(w & b)) {
    w |= b;
    ++active_;
  }
}

void ConnectionSchedule::activate_all() {
  for (size_t s = 0; s < deadline_.size(); ++s) activate(s);
}

void ConnectionSchedule::deactivate(size_t slot) {
  uint64_t& w = bits_[slot / 64];
  const uint64_t b = uint64_t{1} << (slot % 64);
  if (w & b) {
    w &= ~b;
    --active_;
  }
}

void ConnectionSchedule::set_deadline(size_t slot, Nanos d) {
  if (deadline_[slot] == d) return;
  deadline_[slot] = d;
  if (d != kNever) push(d, slot);
}

void ConnectionSchedule::push(Nanos at, size_t slot) {
  if (heap_.size() == heap_.capacity()) rebuild();  // drops every stale entry; never grows
  if (heap_.size() == heap_.capacity()) return;     // unreachable: capacity exceeds the slots
  heap_.push_back({at, static_cast<uint32_t>(slot)});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void ConnectionSchedule::rebuild() {
  heap_.clear();
  for (size_t s = 0; s < deadline_.size(); ++s)
    if (deadline_[s] != kNever) heap_.push_back({deadline_[s], static_cast<uint32_t>(s)});
  std::make_heap(heap_.begin(), heap_.end(), Later{});
}

void ConnectionSchedule::drop_stale_top() {
  while (!heap_.empty() && !current(heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
  }
}

void ConnectionSchedule::activate_due(Nanos now) {
  drop_stale_top();
  if (heap_.empty() || heap_.front().at > now) return;
  // Walk the part of the heap at or before now: a node's children are never
  // earlier than it, so the walk stops at the first later node of each branch.
  stack_.clear();
  stack_.push_back(0);
  while (!stack_.empty()) {
    const size_t i = stack_.back();
    stack_.pop_back();
    const Entry& e = heap_[i];
    if (e.at > now) continue;
    if (current(e)) activate(e.slot);
    for (size_t c = 2 * i + 1; c <= 2 * i + 2 && c < heap_.size(); ++c) stack_.push_back(static_cast<uint32_t>(c));
  }
}

Nanos ConnectionSchedule::earliest() {
  drop_stale_top();
  return heap_.empty() ? kNever : heap_.front().at;
}

size_t ConnectionSchedule::next_active(size_t from) const {
  const size_t n = deadline_.size();
  if (active_ == 0 || n == 0) return kNone;
  if (from >= n) from = 0;
  // From `from` to the end, then from 0 up to `from`.
  for (int pass = 0; pass < 2; ++pass) {
    const size_t begin = pass == 0 ? from : 0, end = pass == 0 ? n : from;
    if (begin >= end) continue;
    size_t w = begin / 64;
    uint64_t bits = bits_[w] & (~uint64_t{0} << (begin % 64));
    while (true) {
      if (bits) {
        const size_t s = w * 64 + static_cast<size_t>(std::countr_zero(bits));
        if (s < end) return s;
        break;
      }
      if (++w * 64 >= end) break;
      bits = bits_[w];
    }
  }
  return kNone;
}

}  // namespace metaroce::transport

namespace metaroce::transport {

void RecentSenders::resize(size_t n) {
  if (n >= links_.size()) {  // new slots have not sent; the others keep their place
    links_.resize(n);
    return;
  }
  links_.assign(n, Link{});  // slots were renumbered: start afresh
  head_ = tail_ = kNil;
  listed_ = 0;
}

void RecentSenders::unlink(size_t slot) {
  Link& l = links_[slot];
  (l.prev == kNil ? head_ : links_[l.prev].next) = l.next;
  (l.next == kNil ? tail_ : links_[l.next].prev) = l.prev;
  l.prev = l.next = kNil;
  l.listed = false;
  --listed_;
}

void RecentSenders::seen(size_t slot, Nanos now) {
  if (links_[slot].listed) unlink(slot);
  Link& l = links_[slot];
  l.at = now;
  l.prev = tail_;
  l.next = kNil;
  l.listed = true;
  (tail_ == kNil ? head_ : links_[tail_].next) = static_cast<uint32_t>(slot);
  tail_ = static_cast<uint32_t>(slot);
  ++listed_;
}

size_t RecentSenders::count(Nanos now, Nanos window) {
  while (head_ != kNil && now - links_[head_].at > window) unlink(head_);
  return listed_;
}

}  // namespace metaroce::transport
