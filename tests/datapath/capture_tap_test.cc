// CaptureTap: what the filter keeps (points, planes, UDP port, MetaRoCE
// connection, RoCEv2 QP), the snap length, oldest-first draining, and a full
// ring counting what it could not keep instead of blocking or overwriting.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "metaroce/datapath/capture_tap.h"
#include "metaroce/emulator/fabric.h"
#include "metaroce/emulator/link.h"
#include "metaroce/wire/metaroce.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"

namespace {

namespace md = metaroce::datapath;
namespace w = metaroce::wire;
using md::CapturePoint;

std::vector<uint8_t> udp_frame(uint16_t dst_port, std::vector<uint8_t> payload) {
  w::UdpFlow f;
  f.src_ip = 0x0A000001;
  f.dst_ip = 0x0A000002;
  f.src_port = 49152;
  f.dst_port = dst_port;
  std::vector<uint8_t> frame(w::kUdpFrameHeaderBytes + payload.size());
  w::encode_udp_headers(frame, f, w::Ecn::kNotEct, 0, payload.size());
  std::memcpy(frame.data() + w::kUdpFrameHeaderBytes, payload.data(), payload.size());
  return frame;
}
std::vector<uint8_t> metaroce_frame(uint32_t dst_conn, uint32_t src_conn) {
  std::vector<uint8_t> p(44, 0);
  p[0] = w::kVersion << 4;
  p[1] = static_cast<uint8_t>(w::Opcode::kProbe);
  w::store_be32(&p[4], dst_conn);
  w::store_be32(&p[8], src_conn);
  return udp_frame(w::kDefaultUdpPort, p);
}
std::vector<uint8_t> rocev2_frame(uint32_t qp) {
  std::vector<uint8_t> p(16, 0);
  w::store_be32(&p[4], qp);
  return udp_frame(w::rocev2::kUdpPort, p);
}

std::vector<md::CaptureRecord> drain(md::CaptureTap& t, std::vector<std::vector<uint8_t>>* bytes = nullptr) {
  std::vector<md::CaptureRecord> out;
  t.drain([&](const md::CaptureRecord& r) {
    out.push_back(r);
    if (bytes) bytes->emplace_back(r.bytes.begin(), r.bytes.end());
  });
  return out;
}

TEST(CaptureTap, FilterKeepsOnlyWhatItNames) {
  md::CaptureFilter f;
  f.planes = 0b0101;  // planes 0 and 2
  f.endpoint_rx = false;
  f.connection = 0x102;
  md::CaptureTap tap(f, 64);
  tap.offer(CapturePoint::kEndpointTx, 0, 0, 1, metaroce_frame(0x102, 0x201));  // kept: dst conn
  tap.offer(CapturePoint::kEndpointTx, 2, 0, 2, metaroce_frame(0x201, 0x102));  // kept: src conn
  tap.offer(CapturePoint::kEndpointTx, 1, 0, 3, metaroce_frame(0x102, 0x201));  // plane 1
  tap.offer(CapturePoint::kEndpointRx, 0, 0, 4, metaroce_frame(0x102, 0x201));  // rx not wanted
  tap.offer(CapturePoint::kEndpointTx, 0, 0, 5, metaroce_frame(0x333, 0x444));  // other connection
  tap.offer(CapturePoint::kEndpointTx, 0, 0, 6, rocev2_frame(0x102));           // RoCEv2 QP 0x102: kept
  tap.offer(CapturePoint::kEndpointTx, 0, 0, 7, rocev2_frame(0x103));
  tap.offer(CapturePoint::kEndpointTx, 0, 0, 8, std::vector<uint8_t>(60, 0xFF));  // not IPv4/UDP
  const auto r = drain(tap);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].time, 1);
  EXPECT_EQ(r[1].time, 2);
  EXPECT_EQ(r[1].plane, 2);
  EXPECT_EQ(r[2].time, 6);
  EXPECT_EQ(tap.counters().kept, 3u);
  EXPECT_EQ(tap.counters().filtered_out, 5u);

  md::CaptureFilter by_port;
  by_port.udp_port = w::rocev2::kUdpPort;
  md::CaptureTap port_tap(by_port, 8);
  port_tap.offer(CapturePoint::kFabricIn, 0, 1, 1, rocev2_frame(7));
  port_tap.offer(CapturePoint::kFabricIn, 0, 1, 2, metaroce_frame(7, 8));
  EXPECT_EQ(drain(port_tap).size(), 1u);
}

TEST(CaptureTap, SnapLengthAndDropCauseAreKept) {
  md::CaptureFilter f;
  f.snap_length = 64;
  md::CaptureTap tap(f, 4);
  const auto frame = metaroce_frame(1, 2);
  tap.offer(CapturePoint::kFabricDropped, 3, 1, 42, frame, 1);
  std::vector<std::vector<uint8_t>> bytes;
  const auto r = drain(tap, &bytes);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].original_length, frame.size());
  ASSERT_EQ(bytes[0].size(), 64u);
  EXPECT_TRUE(std::equal(bytes[0].begin(), bytes[0].end(), frame.begin()));
  EXPECT_EQ(r[0].drop_cause, 1);
  EXPECT_EQ(r[0].host, 1);
  EXPECT_EQ(r[0].point, CapturePoint::kFabricDropped);
}

TEST(CaptureTap, AFullRingCountsAndKeepsTheOldest) {
  md::CaptureTap tap(md::CaptureFilter{}, 3);
  for (int i = 0; i < 5; ++i) tap.offer(CapturePoint::kEndpointRx, 0, 0, i, metaroce_frame(1, 2));
  EXPECT_EQ(tap.counters().kept, 3u);
  EXPECT_EQ(tap.counters().ring_full, 2u);
  auto r = drain(tap);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].time, 0);
  EXPECT_EQ(r[2].time, 2);
  // Drained slots are free again.
  tap.offer(CapturePoint::kEndpointRx, 0, 0, 9, metaroce_frame(1, 2));
  r = drain(tap);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].time, 9);
}

// A window on the worker's clock: nothing before it, nothing after it.
TEST(CaptureTap, KeepsOnlyFramesInsideItsTimeWindow) {
  md::CaptureFilter f;
  f.from = 100;
  f.until = 200;
  md::CaptureTap tap(f, 16);
  for (metaroce::transport::Nanos t : {99, 100, 150, 200, 201}) tap.offer(CapturePoint::kEndpointRx, 0, 0, t, metaroce_frame(1, 2));
  const auto r = drain(tap);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].time, 100);
  EXPECT_EQ(r[2].time, 200);
  EXPECT_EQ(tap.counters().filtered_out, 2u);
}

// The comment metaroced writes on each frame (and metaroce_netns_bench, to
// measure the same work): the point, and at the fabric node the host, the
// emulator's drop cause and what it did to a frame it delivered.
TEST(CaptureTap, CommentNamesThePointHostAndDropCause) {
  std::array<char, md::kCaptureCommentBytes> buf;
  md::CaptureRecord r;
  r.host = 2;
  r.point = CapturePoint::kEndpointTx;
  EXPECT_EQ(md::capture_comment(r, buf), "endpoint tx");
  r.point = CapturePoint::kFabricIn;
  EXPECT_EQ(md::capture_comment(r, buf), "fabric in (before the emulator), from host 2");
  r.point = CapturePoint::kFabricOut;
  EXPECT_EQ(md::capture_comment(r, buf), "fabric out (after the emulator), to host 2");
  r.marks = metaroce::emulator::kMarkEcnCe | metaroce::emulator::kMarkDuplicate;
  EXPECT_EQ(md::capture_comment(r, buf), "fabric out (after the emulator), to host 2; emulator: ECN CE marked, duplicate");
  r.point = CapturePoint::kFabricDropped;
  r.drop_cause = static_cast<uint8_t>(metaroce::emulator::DropCause::kRandomLoss);
  EXPECT_EQ(md::capture_comment(r, buf), "dropped by the emulator: random_loss, from host 2");
}

}  // namespace
