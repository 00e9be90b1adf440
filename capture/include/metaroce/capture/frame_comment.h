// Where a captured frame was seen, and the pcapng comment that says so and
// what the emulator did to it. One text for every writer of captures: the
// daemon's capture taps (datapath/capture_tap.h) and the simulator's
// scenario captures (scenario/sim_backend.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace metaroce::capture {

enum class CapturePoint : uint8_t {
  kEndpointRx,     // an endpoint read it from its port
  kEndpointTx,     // an endpoint handed it to its port
  kFabricIn,       // the fabric read it from a host's port, before the emulator
  kFabricOut,      // the fabric sent it to a host's port, after the emulator
  kFabricDropped,  // the emulator dropped it (the cause is kept)
};
const char* capture_point_name(CapturePoint p);

// What the emulator did to the frame, in words: the cause of a drop
// (emulator::drop_cause_name) and the marks it left on a frame it delivered
// (emulator::frame_marks_text: "ECN CE marked, corrupted"). Empty: nothing.
struct FrameFate {
  std::string_view drop_cause;
  std::string_view marks;
};

// Room for the longest frame_comment.
inline constexpr size_t kFrameCommentBytes = 160;

// "fabric out (after the emulator), to host 1; emulator: ECN CE marked",
// "dropped by the emulator: random_loss, from host 0", "endpoint tx". At the
// fabric, host is the host the frame came from (in, dropped) or goes to (out).
// Written into buf, cut to fit; allocates nothing (one per captured frame).
std::string_view frame_comment(CapturePoint point, uint32_t host, const FrameFate& fate,
                               std::span<char, kFrameCommentBytes> buf);

}  // namespace metaroce::capture
