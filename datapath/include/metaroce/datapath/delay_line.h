// Frames held until a time: the real-clock counterpart of the simulator's
// event queue, used wherever the emulator delays frames inline (endpoint
// placement, fabric node). Fixed pool of frame buffers and a binary heap
// reserved up front: push/pop never allocate. When the pool is exhausted,
// push() refuses and the caller counts a drop with its own named cause.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "metaroce/emulator/fabric.h"

namespace metaroce::datapath {

using Nanos = int64_t;

class DelayLine {
 public:
  struct Held {
    Nanos due;
    uint64_t seq;      // FIFO among equal times
    uint32_t slot;
    uint32_t len;
    emulator::FramePosition pos;  // where it goes next (fabric node), or plane/direction (inline)
  };

  DelayLine(size_t frames, size_t frame_size) : frame_size_(frame_size), storage_(frames * frame_size) {
    free_.reserve(frames);
    for (size_t i = frames; i-- > 0;) free_.push_back(static_cast<uint32_t>(i));
    heap_.reserve(frames);
  }

  // Copies frame; false when no buffer is free or the frame is too large.
  bool push(Nanos due, std::span<const uint8_t> frame, const emulator::FramePosition& pos) {
    if (free_.empty() || frame.size() > frame_size_) return false;
    const uint32_t slot = free_.back();
    free_.pop_back();
    std::memcpy(&storage_[slot * frame_size_], frame.data(), frame.size());
    heap_.push_back({due, seq_++, slot, static_cast<uint32_t>(frame.size()), pos});
    sift_up(heap_.size() - 1);
    return true;
  }

  size_t frame_size() const { return frame_size_; }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  Nanos next_due() const { return heap_.empty() ? INT64_MAX : heap_[0].due; }

  // The earliest held frame if due at now; its bytes stay valid until release().
  const Held* peek_due(Nanos now) const { return !heap_.empty() && heap_[0].due <= now ? &heap_[0] : nullptr; }
  std::span<uint8_t> bytes(const Held& h) { return {&storage_[h.slot * frame_size_], h.len}; }
  // Removes the earliest frame (after peek_due) and returns its buffer to the pool.
  void pop() {
    free_.push_back(heap_[0].slot);
    heap_[0] = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
  }
  // Re-schedules the earliest frame (it moves on to its next hop) without copying.
  void reschedule_top(Nanos due, const emulator::FramePosition& pos) {
    heap_[0].due = due;
    heap_[0].seq = seq_++;
    heap_[0].pos = pos;
    sift_down(0);
  }

 private:
  static bool before(const Held& a, const Held& b) { return a.due != b.due ? a.due < b.due : a.seq < b.seq; }
  void sift_up(size_t i) {
    while (i > 0) {
      const size_t p = (i - 1) / 2;
      if (!before(heap_[i], heap_[p])) break;
      std::swap(heap_[i], heap_[p]);
      i = p;
    }
  }
  void sift_down(size_t i) {
    for (;;) {
      const size_t l = 2 * i + 1, r = l + 1;
      size_t m = i;
      if (l < heap_.size() && before(heap_[l], heap_[m])) m = l;
      if (r < heap_.size() && before(heap_[r], heap_[m])) m = r;
      if (m == i) return;
      std::swap(heap_[i], heap_[m]);
      i = m;
    }
  }

  size_t frame_size_;
  std::vector<uint8_t> storage_;
  std::vector<uint32_t> free_;
  std::vector<Held> heap_;
  uint64_t seq_ = 0;
};

}  // namespace metaroce::datapath
