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
  is_due_.resize(n, 0);
  bits_.resize((n + 63) / 64, 0);
  if (n > old) {
    for (size_t s = old; s < n; ++s) activate(s);
  } else {
    // Slots past n are gone: clear their bits and count only what remains.
    if (n % 64 && !bits_.empty()) bits_.back() &= (uint64_t{1} << (n % 64)) - 1;
    active_ = 0;
    for (uint64_t w : bits_) active_ += static_cast<size_t>(std::popcount(w));
  }
  // Room for every slot's current entry and as many stale ones before a
  // rebuild; grown by doubling, so that adding slots one by one (a daemon
  // creating 16,000 connections) copies the heaps O(log n) times, not n.
  const size_t cap = 2 * n + 64;
  if (heap_.capacity() < cap) {
    heap_.reserve(std::max(cap, 2 * heap_.capacity()));
    due_.reserve(heap_.capacity());
  }
  rebuild();
}

void ConnectionSchedule::swap_remove(size_t slot) {
  const size_t last = deadline_.size() - 1;
  const bool last_active = is_active(last);
  deactivate(slot);
  deactivate(last);
  if (slot != last) {
    // The last slot's state moves to `slot`; its old entries (numbered last)
    // fall out of range below, so it gets one pending entry under its new
    // number (activate_due moves it to due_ again if it has passed).
    deadline_[slot] = deadline_[last];
    is_due_[slot] = 0;
    if (last_active) activate(slot);
    if (deadline_[slot] != kNever) push(deadline_[slot], slot);
  }
  deadline_.pop_back();
  is_due_.pop_back();
  if (deadline_.size() % 64 == 0) bits_.pop_back();
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
  // Asleep with a passed deadline (not recorded since it woke the slot): it
  // goes back to pending, so the next activate_due wakes it again.
  if (is_due_[slot]) set_deadline(slot, deadline_[slot]);
}

// Recording a deadline takes the slot out of due_ (its entry there is stale
// from now on) and files it as pending, even when its value has not changed.
void ConnectionSchedule::set_deadline(size_t slot, Nanos d) {
  if (deadline_[slot] == d && !is_due_[slot]) return;
  is_due_[slot] = 0;
  deadline_[slot] = d;
  if (d != kNever) push(d, slot);
}

void ConnectionSchedule::push(Nanos at, size_t slot) {
  if (heap_.size() == heap_.capacity()) rebuild();  // drops every stale entry; never grows
  if (heap_.size() == heap_.capacity()) return;     // unreachable: capacity exceeds the slots
  heap_.push_back({at, static_cast<uint32_t>(slot)});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

// Every recorded deadline back into the pending heap, once; due_ empties (the
// next activate_due moves what has passed again).
void ConnectionSchedule::rebuild() {
  heap_.clear();
  due_.clear();
  std::fill(is_due_.begin(), is_due_.end(), 0);
  for (size_t s = 0; s < deadline_.size(); ++s)
    if (deadline_[s] != kNever) heap_.push_back({deadline_[s], static_cast<uint32_t>(s)});
  std::make_heap(heap_.begin(), heap_.end(), Later{});
}

void ConnectionSchedule::activate_due(Nanos now) {
  while (!heap_.empty() && heap_.front().at <= now) {
    const Entry e = heap_.front();
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
    if (!pending(e)) continue;  // stale
    activate(e.slot);
    if (due_.size() == due_.capacity()) {
      // Only stale entries can fill it (one current entry per slot at most):
      // keep the current ones.
      std::erase_if(due_, [this](const Entry& x) { return !due(x); });
      std::make_heap(due_.begin(), due_.end(), Later{});
    }
    is_due_[e.slot] = 1;
    due_.push_back(e);
    std::push_heap(due_.begin(), due_.end(), Later{});
  }
}

Nanos ConnectionSchedule::earliest() {
  // One heap's earliest current entry, after dropping the stale ones above it.
  const auto front = [](std::vector<Entry>& h, auto current) {
    while (!h.empty() && !current(h.front())) {
      std::pop_heap(h.begin(), h.end(), Later{});
      h.pop_back();
    }
    return h.empty() ? kNever : h.front().at;
  };
  return std::min(front(heap_, [this](const Entry& e) { return pending(e); }),
                  front(due_, [this](const Entry& e) { return due(e); }));
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

void RecentSenders::swap_remove(size_t slot) {
  const size_t last = links_.size() - 1;
  if (links_[slot].listed) unlink(slot);
  if (slot != last && links_[last].listed) {
    // The last slot keeps its place in the list under its new number.
    Link& l = links_[slot];
    l = links_[last];
    (l.prev == kNil ? head_ : links_[l.prev].next) = static_cast<uint32_t>(slot);
    (l.next == kNil ? tail_ : links_[l.next].prev) = static_cast<uint32_t>(slot);
  } else if (slot != last) {
    links_[slot] = Link{};
  }
  links_.pop_back();
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
