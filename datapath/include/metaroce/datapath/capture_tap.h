// A capture tap on a worker: frames the worker sees at its capture points are
// filtered and copied into a single-producer single-consumer ring that
// another thread drains (into a pcapng file). The worker never allocates,
// locks or waits here: when the ring is full the frame is counted, not kept.
// With no tap installed a worker pays one pointer test per point.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metaroce/capture/frame_comment.h"
#include "metaroce/transport/types.h"

namespace metaroce::datapath {

using transport::Nanos;

// Where a frame was seen (capture/frame_comment.h).
using capture::CapturePoint;

struct CaptureFilter {
  uint64_t planes = ~0ull;          // bit p: plane p
  bool endpoint_rx = true, endpoint_tx = true;
  bool fabric_in = true, fabric_out = true, fabric_dropped = true;
  uint16_t udp_port = 0;            // nonzero: only UDP frames with this source or destination port
  uint32_t connection = 0;          // nonzero: MetaRoCE frames to or from this connection id, RoCEv2 frames to this QP
  uint32_t snap_length = 9216;      // bytes kept of each frame (9216: a worker's largest frame, all of it)
  // Only frames seen in [from, until] (CLOCK_MONOTONIC): a tap armed ahead
  // of a window keeps nothing before it, and nothing after it however late
  // it is taken off.
  Nanos from = 0, until = INT64_MAX;
  bool wants(CapturePoint p) const;
};

// One kept frame, as the consumer sees it.
struct CaptureRecord {
  Nanos time = 0;                   // CLOCK_MONOTONIC
  CapturePoint point = CapturePoint::kEndpointRx;
  uint8_t drop_cause = 0;           // emulator::DropCause, for kFabricDropped
  uint8_t marks = 0;                // emulator::FrameMark bits, for kFabricOut
  uint16_t plane = 0;
  uint16_t host = 0;                // fabric node: the host the frame came from (in, dropped) or goes to (out)
  uint32_t original_length = 0;
  std::span<const uint8_t> bytes;   // at most snap_length bytes
};

// Room for the longest capture_comment.
inline constexpr size_t kCaptureCommentBytes = capture::kFrameCommentBytes;

// The pcapng comment on a kept frame (capture::frame_comment): its capture
// point and, at the fabric node, the host it came from or goes to, for a drop
// the emulator's cause ("dropped by the emulator: random_loss, from host 1"),
// and for a frame the emulator delivered what it did to it ("...; emulator:
// ECN CE marked"). Written into buf, cut to fit: the thread that drains a tap
// formats one per frame, so metaroced and metaroce_netns_bench (which
// measures what a capture costs) share this and it allocates nothing.
std::string_view capture_comment(const CaptureRecord& r, std::span<char, kCaptureCommentBytes> buf);

struct CaptureCounters {
  uint64_t kept = 0;          // copied into the ring
  uint64_t filtered_out = 0;  // not matching the filter
  uint64_t ring_full = 0;     // matching, but the consumer was behind: not captured
};

class CaptureTap {
 public:
  // slots: frames the ring holds (allocated here, not on the worker).
  CaptureTap(const CaptureFilter& filter, size_t slots);
  CaptureTap(const CaptureTap&) = delete;
  CaptureTap& operator=(const CaptureTap&) = delete;

  // Worker thread only.
  void offer(CapturePoint point, uint32_t plane, uint32_t host, Nanos time, std::span<const uint8_t> frame,
             uint8_t drop_cause = 0, uint8_t marks = 0);

  // Consumer thread only: hands every kept frame, oldest first, to f(const
  // CaptureRecord&) and frees its slot; returns how many.
  template <typename F>
  size_t drain(F&& f) {
    size_t n = 0;
    const uint64_t head = head_.load(std::memory_order_acquire);
    for (uint64_t t = tail_.load(std::memory_order_relaxed); t != head; ++t, ++n) {
      const Slot& s = slots_[t % slots_.size()];
      CaptureRecord r = s.record;
      r.bytes = {&bytes_[(t % slots_.size()) * filter_.snap_length], s.captured};
      f(static_cast<const CaptureRecord&>(r));
      tail_.store(t + 1, std::memory_order_release);
    }
    return n;
  }

  // Any thread (relaxed reads of the worker's counts).
  CaptureCounters counters() const;
  const CaptureFilter& filter() const { return filter_; }

 private:
  bool matches(std::span<const uint8_t> frame) const;
  struct Slot {
    CaptureRecord record;
    uint32_t captured = 0;
  };
  CaptureFilter filter_;
  std::vector<Slot> slots_;
  std::vector<uint8_t> bytes_;  // slots x snap_length
  std::atomic<uint64_t> head_{0}, tail_{0};
  std::atomic<uint64_t> kept_{0}, filtered_out_{0}, ring_full_{0};
};

}  // namespace metaroce::datapath
