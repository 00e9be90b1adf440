// Which of an endpoint's connections poll_tx must ask, and when the earliest
// of their timers is due, so that an endpoint's work per poll grows with the
// connections that have something to do, not with all it holds (an idle
// connection costs nothing per poll; 16,000 of them must not slow the rest).
//
// A connection is active from the moment anything may have given it work (a
// frame for it, a post, its deadline passing) until it is asked and has
// nothing to send while every plane is ready. Deadlines are a mirror of each
// connection's next_deadline(), kept in a min-heap: an entry is current while
// it equals the slot's recorded deadline; older entries are skipped and
// removed when they surface or when the heaps are rebuilt.
//
// A deadline that has passed moves, once, from the pending heap to the due
// heap when activate_due() wakes its slot, and stays there until the slot's
// deadline is next recorded (it is asked, or touched). So each poll pays for
// the deadlines that passed since the last one, not for every connection
// still waiting its turn (with thousands due at once, re-walking them all on
// every poll was most of a worker's time). Nothing here allocates after
// resize(); a heap that fills is rebuilt in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "metaroce/transport/types.h"

namespace metaroce::transport {

class ConnectionSchedule {
 public:
  static constexpr size_t kNone = SIZE_MAX;

  // Control plane (allocates): n slots. Existing slots keep their state; new
  // ones are active with no deadline.
  void resize(size_t n);
  size_t size() const { return deadline_.size(); }
  // Control plane: slot leaves and the last slot takes its number (its state
  // moves with it), in O(log n), so removing one of thousands of connections
  // does not reschedule the rest.
  void swap_remove(size_t slot);

  // After any call into the slot's connection: it may have something to send,
  // and its next_deadline() is d.
  void touched(size_t slot, Nanos d) {
    activate(slot);
    set_deadline(slot, d);
  }
  void set_deadline(size_t slot, Nanos d);
  void activate(size_t slot);
  void activate_all();
  void deactivate(size_t slot);
  bool is_active(size_t slot) const { return (bits_[slot / 64] >> (slot % 64)) & 1; }
  size_t active() const { return active_; }

  // Every slot whose deadline is at or before now becomes active.
  void activate_due(Nanos now);
  // The earliest deadline of any slot (kNever when none).
  Nanos earliest();
  // The first active slot at or after `from`, wrapping around; kNone if none.
  size_t next_active(size_t from) const;

  // For tests: entries in the pending and due heaps, current or not.
  size_t heap_entries() const { return heap_.size(); }
  size_t due_entries() const { return due_.size(); }

 private:
  struct Entry {
    Nanos at;
    uint32_t slot;
  };
  // Current in the pending heap: the slot's deadline, not yet moved to due_.
  bool pending(const Entry& e) const {
    return e.slot < deadline_.size() && deadline_[e.slot] == e.at && !is_due_[e.slot];
  }
  // Current in the due heap: moved there and not recorded since.
  bool due(const Entry& e) const { return e.slot < deadline_.size() && deadline_[e.slot] == e.at && is_due_[e.slot]; }
  void push(Nanos at, size_t slot);
  void rebuild();

  std::vector<uint64_t> bits_;     // active slots
  std::vector<Nanos> deadline_;    // by slot; kNever: none
  std::vector<uint8_t> is_due_;    // by slot: its deadline has passed and sits in due_
  std::vector<Entry> heap_;        // pending deadlines, min-heap on at; capacity fixed by resize()
  std::vector<Entry> due_;         // passed deadlines, min-heap on at; capacity fixed by resize()
  size_t active_ = 0;
};

}  // namespace metaroce::transport

namespace metaroce::transport {

// Which connections sent data within the last `window` (the receiver's
// fair-share rate hint divides its capacity among them), in O(1) per packet:
// a list of slots ordered by when each last sent, oldest first. Times must not
// go backwards (one endpoint's clock); a slot older than the window leaves
// the list for good, since later calls can only be later.
class RecentSenders {
 public:
  // Control plane: n slots. Growing keeps the list; shrinking (slots were
  // renumbered) empties it.
  void resize(size_t n);
  // Control plane: slot leaves the list and the last slot takes its number
  // (keeping its place in the list).
  void swap_remove(size_t slot);
  void seen(size_t slot, Nanos now);
  size_t count(Nanos now, Nanos window);

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  struct Link {
    Nanos at = 0;
    uint32_t prev = kNil, next = kNil;
    bool listed = false;
  };
  void unlink(size_t slot);
  std::vector<Link> links_;
  uint32_t head_ = kNil, tail_ = kNil;
  size_t listed_ = 0;
};

}  // namespace metaroce::transport
