#include "metaroce/datapath/capture_tap.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

#include "metaroce/emulator/fabric.h"
#include "metaroce/emulator/link.h"
#include "metaroce/wire/bytes.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/rocev2.h"

namespace metaroce::datapath {

std::string_view capture_comment(const CaptureRecord& r, std::span<char, kCaptureCommentBytes> buf) {
  std::array<char, emulator::kFrameMarksTextBytes> marks;
  capture::FrameFate fate;
  if (r.point == CapturePoint::kFabricDropped)
    fate.drop_cause = emulator::drop_cause_name(static_cast<emulator::DropCause>(r.drop_cause));
  if (r.point == CapturePoint::kFabricOut) fate.marks = emulator::frame_marks_text(r.marks, marks);
  return capture::frame_comment(r.point, r.host, fate, buf);
}

bool CaptureFilter::wants(CapturePoint p) const {
  switch (p) {
    case CapturePoint::kEndpointRx: return endpoint_rx;
    case CapturePoint::kEndpointTx: return endpoint_tx;
    case CapturePoint::kFabricIn: return fabric_in;
    case CapturePoint::kFabricOut: return fabric_out;
    case CapturePoint::kFabricDropped: return fabric_dropped;
  }
  return false;
}

CaptureTap::CaptureTap(const CaptureFilter& filter, size_t slots)
    : filter_(filter), slots_(std::max<size_t>(slots, 1)), bytes_(slots_.size() * filter.snap_length) {}

// The UDP header fields the filter needs, read from an Ethernet/IPv4 frame;
// anything else (ARP, IPv6, TCP) matches only a filter without them.
bool CaptureTap::matches(std::span<const uint8_t> f) const {
  if (filter_.udp_port == 0 && filter_.connection == 0) return true;
  if (f.size() < 14 + 20 + 8 || wire::load_be16(&f[12]) != 0x0800 || f[14 + 9] != 17) return false;
  const size_t ihl = static_cast<size_t>(f[14] & 0x0F) * 4;
  if (ihl < 20 || f.size() < 14 + ihl + 8) return false;
  const uint8_t* udp = &f[14 + ihl];
  const uint16_t src = wire::load_be16(udp), dst = wire::load_be16(udp + 2);
  if (filter_.udp_port != 0 && src != filter_.udp_port && dst != filter_.udp_port) return false;
  if (filter_.connection == 0) return true;
  const std::span<const uint8_t> payload = f.subspan(14 + ihl + 8);
  if (dst == wire::rocev2::kUdpPort)  // BTH: destination QP, 24 bits at offset 5
    return payload.size() >= 8 && (wire::load_be32(&payload[4]) & 0xFFFFFF) == filter_.connection;
  // MetaRoCE (any other port: the daemon's port is configurable): dst and src connection ids.
  return payload.size() >= 12 && payload[0] == (wire::kVersion << 4) &&
         (wire::load_be32(&payload[4]) == filter_.connection || wire::load_be32(&payload[8]) == filter_.connection);
}

void CaptureTap::offer(CapturePoint point, uint32_t plane, uint32_t host, Nanos time, std::span<const uint8_t> frame,
                       uint8_t drop_cause, uint8_t marks) {
  if (!filter_.wants(point) || time < filter_.from || time > filter_.until || plane >= 64 ||
      !((filter_.planes >> plane) & 1) || !matches(frame)) {
    filtered_out_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_.load(std::memory_order_acquire) >= slots_.size()) {
    ring_full_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Slot& s = slots_[head % slots_.size()];
  s.captured = static_cast<uint32_t>(std::min<size_t>(frame.size(), filter_.snap_length));
  s.record.time = time;
  s.record.point = point;
  s.record.drop_cause = drop_cause;
  s.record.marks = marks;
  s.record.plane = static_cast<uint16_t>(plane);
  s.record.host = static_cast<uint16_t>(host);
  s.record.original_length = static_cast<uint32_t>(frame.size());
  std::memcpy(&bytes_[(head % slots_.size()) * filter_.snap_length], frame.data(), s.captured);
  head_.store(head + 1, std::memory_order_release);
  kept_.fetch_add(1, std::memory_order_relaxed);
}

CaptureCounters CaptureTap::counters() const {
  return {kept_.load(std::memory_order_relaxed), filtered_out_.load(std::memory_order_relaxed),
          ring_full_.load(std::memory_order_relaxed)};
}

}  // namespace metaroce::datapath
