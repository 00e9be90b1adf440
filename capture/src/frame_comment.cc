#include "metaroce/capture/frame_comment.h"

#include <algorithm>
#include <cstdio>

namespace metaroce::capture {

const char* capture_point_name(CapturePoint p) {
  switch (p) {
    case CapturePoint::kEndpointRx: return "endpoint rx";
    case CapturePoint::kEndpointTx: return "endpoint tx";
    case CapturePoint::kFabricIn: return "fabric in (before the emulator)";
    case CapturePoint::kFabricOut: return "fabric out (after the emulator)";
    case CapturePoint::kFabricDropped: return "dropped by the emulator";
  }
  return "?";
}

std::string_view frame_comment(CapturePoint point, uint32_t host, const FrameFate& fate,
                               std::span<char, kFrameCommentBytes> buf) {
  const char* name = capture_point_name(point);
  const int cause_len = static_cast<int>(std::min<size_t>(fate.drop_cause.size(), 64));
  const int marks_len = static_cast<int>(std::min<size_t>(fate.marks.size(), 64));
  int n = 0;
  switch (point) {
    case CapturePoint::kFabricDropped:
      n = std::snprintf(buf.data(), buf.size(), "%s: %.*s, from host %u", name, cause_len, fate.drop_cause.data(), host);
      break;
    case CapturePoint::kFabricIn: n = std::snprintf(buf.data(), buf.size(), "%s, from host %u", name, host); break;
    case CapturePoint::kFabricOut:
      n = marks_len ? std::snprintf(buf.data(), buf.size(), "%s, to host %u; emulator: %.*s", name, host, marks_len,
                                    fate.marks.data())
                    : std::snprintf(buf.data(), buf.size(), "%s, to host %u", name, host);
      break;
    default: n = std::snprintf(buf.data(), buf.size(), "%s", name); break;
  }
  return {buf.data(), std::min(static_cast<size_t>(std::max(n, 0)), buf.size() - 1)};
}

}  // namespace metaroce::capture
