// UDP socket port over loopback (127.0.0.1 <-> 127.0.0.2, kernel-chosen
// ports): frames in = frames out with headers reconstructed (IPs, ports,
// DSCP/ECN), entropy sockets per source port and their cap, bad configs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "metaroce/datapath/memory_port.h"
#include "metaroce/datapath/port.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::datapath {
namespace {

constexpr uint32_t kIpA = 0x7F000001;  // 127.0.0.1
constexpr uint32_t kIpB = 0x7F000002;  // 127.0.0.2

PortConfig udp_config(const std::string& ip, uint16_t port = 0) {
  PortConfig c;
  c.kind = "udp";
  c.name = "udp-test";
  c.local_ip = ip;
  c.local_port = port;
  c.ring_size = 512;
  c.frame_size = 2048;
  c.burst = 32;
  return c;
}

std::unique_ptr<Port> must_open(const PortConfig& c) {
  std::string error;
  auto p = open_port(c, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

uint16_t port_of(const Port& p) { return udp_port_info(p)->local_port; }

// Ports that are free on `ip` right now (kept bound while choosing, so distinct).
std::vector<uint16_t> free_ports(uint32_t ip, size_t n) {
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  for (size_t i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(ip);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) break;
    socklen_t len = sizeof sa;
    getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    ports.push_back(ntohs(sa.sin_port));
    fds.push_back(fd);
  }
  for (int fd : fds) close(fd);
  return ports;
}

struct Sent {
  wire::UdpFlow flow;
  wire::Ecn ecn;
  uint8_t dscp;
  std::vector<uint8_t> payload;
};

std::vector<uint8_t> encode(const Sent& s) {
  std::vector<uint8_t> f(wire::kUdpFrameHeaderBytes + s.payload.size());
  EXPECT_EQ(wire::encode_udp_headers(f, s.flow, s.ecn, s.dscp, s.payload.size()), wire::kUdpFrameHeaderBytes);
  std::memcpy(f.data() + wire::kUdpFrameHeaderBytes, s.payload.data(), s.payload.size());
  return f;
}

Sent make(uint32_t src_ip, uint16_t src_port, uint32_t dst_ip, uint16_t dst_port, uint32_t seq,
          wire::Ecn ecn = wire::Ecn::kEct0, uint8_t dscp = 26, size_t len = 200) {
  Sent s;
  s.flow.src_ip = src_ip;
  s.flow.dst_ip = dst_ip;
  s.flow.src_port = src_port;
  s.flow.dst_port = dst_port;
  s.flow.src_mac = {0xaa, 0xbb, 0xcc, 0, 0, 1};  // not carried: the receiver synthesises MACs
  s.flow.dst_mac = {0xaa, 0xbb, 0xcc, 0, 0, 2};
  s.ecn = ecn;
  s.dscp = dscp;
  s.payload.resize(len);
  for (size_t i = 0; i < len; ++i) s.payload[i] = static_cast<uint8_t>(seq * 17 + i);
  if (len >= 4) std::memcpy(s.payload.data(), &seq, 4);
  return s;
}

size_t send(Port& p, const std::vector<Sent>& frames) {
  std::vector<std::vector<uint8_t>> bufs;
  for (const auto& s : frames) bufs.push_back(encode(s));
  std::vector<std::span<const uint8_t>> spans(bufs.begin(), bufs.end());
  const size_t n = p.tx_burst(spans);
  p.flush();
  return n;
}

// Receives frames (copied) until `want` arrived or a second passed.
std::vector<std::vector<uint8_t>> receive(Port& p, size_t want) {
  std::vector<std::vector<uint8_t>> got;
  RxFrame rx[32];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (got.size() < want && std::chrono::steady_clock::now() < deadline) {
    const size_t n = p.rx_burst(rx);
    for (size_t i = 0; i < n; ++i) got.emplace_back(rx[i].data, rx[i].data + rx[i].len);
    if (n == 0) {
      pollfd pfd{p.wait_fd(), POLLIN, 0};
      poll(&pfd, 1, 10);
    }
  }
  return got;
}

wire::MacAddr synth(uint32_t ip) {
  return {0x02, 0x00, static_cast<uint8_t>(ip >> 24), static_cast<uint8_t>(ip >> 16), static_cast<uint8_t>(ip >> 8),
          static_cast<uint8_t>(ip)};
}

void sort_by_seq(std::vector<std::vector<uint8_t>>& frames) {
  std::sort(frames.begin(), frames.end(), [](const auto& x, const auto& y) {
    uint32_t sx, sy;
    std::memcpy(&sx, x.data() + wire::kUdpFrameHeaderBytes, 4);
    std::memcpy(&sy, y.data() + wire::kUdpFrameHeaderBytes, 4);
    return sx < sy;
  });
}

void expect_frame(const std::vector<uint8_t>& got, const Sent& s) {
  const auto v = wire::decode_udp_frame(got);
  ASSERT_TRUE(v) << "received frame does not decode as Eth/IPv4/UDP";
  EXPECT_EQ(v->flow.src_ip, s.flow.src_ip);
  EXPECT_EQ(v->flow.dst_ip, s.flow.dst_ip);
  EXPECT_EQ(v->flow.src_port, s.flow.src_port);
  EXPECT_EQ(v->flow.dst_port, s.flow.dst_port);
  EXPECT_EQ(v->ecn, s.ecn);
  EXPECT_EQ(v->dscp, s.dscp);
  EXPECT_EQ(v->flow.src_mac, synth(s.flow.src_ip));
  EXPECT_EQ(v->flow.dst_mac, synth(s.flow.dst_ip));
  EXPECT_EQ(std::vector<uint8_t>(v->payload.begin(), v->payload.end()), s.payload);
  EXPECT_EQ(got.size(), wire::kUdpFrameHeaderBytes + s.payload.size());
}

TEST(UdpPort, FramesInEqualFramesOut) {
  auto a = must_open(udp_config("127.0.0.1"));
  auto b = must_open(udp_config("127.0.0.2"));
  ASSERT_TRUE(a && b);
  EXPECT_STREQ(a->kind(), "udp");
  EXPECT_EQ(a->name(), "udp-test");
  ASSERT_GE(a->wait_fd(), 0);
  const uint16_t pa = port_of(*a), pb = port_of(*b);
  ASSERT_NE(pa, 0);
  ASSERT_NE(pb, 0);

  std::vector<Sent> frames;
  for (uint32_t i = 0; i < 200; ++i) frames.push_back(make(kIpA, pa, kIpB, pb, i, wire::Ecn::kEct0, 26, 4 + i * 7));
  ASSERT_EQ(send(*a, frames), frames.size());
  const auto got = receive(*b, frames.size());
  ASSERT_EQ(got.size(), frames.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    expect_frame(got[i], frames[i]);
  }
  const PortStats sa = a->stats(), sb = b->stats();
  EXPECT_EQ(sa.tx_frames, frames.size());
  EXPECT_EQ(sb.rx_frames, frames.size());
  EXPECT_EQ(sa.tx_bytes, sb.rx_bytes);
  EXPECT_EQ(udp_port_info(*a)->source_sockets, 0u) << "src_port == local_port uses the main socket";

  // Reply direction.
  const Sent reply = make(kIpB, pb, kIpA, pa, 7, wire::Ecn::kNotEct, 0, 64);
  ASSERT_EQ(send(*b, {reply}), 1u);
  const auto back = receive(*a, 1);
  ASSERT_EQ(back.size(), 1u);
  expect_frame(back[0], reply);
}

TEST(UdpPort, EcnAndDscpPreservedPerPacket) {
  auto a = must_open(udp_config("127.0.0.1"));
  auto b = must_open(udp_config("127.0.0.2"));
  ASSERT_TRUE(a && b);
  const uint16_t pa = port_of(*a), pb = port_of(*b);
  std::vector<Sent> frames;
  const wire::Ecn ecns[] = {wire::Ecn::kNotEct, wire::Ecn::kEct1, wire::Ecn::kEct0, wire::Ecn::kCe};
  for (uint32_t i = 0; i < 16; ++i) frames.push_back(make(kIpA, pa, kIpB, pb, i, ecns[i % 4], (i * 5) % 64));
  ASSERT_EQ(send(*a, frames), frames.size());
  const auto got = receive(*b, frames.size());
  ASSERT_EQ(got.size(), frames.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    expect_frame(got[i], frames[i]);
  }
}

TEST(UdpPort, SourcePortsGetTheirOwnSocketsAndReceiveReplies) {
  auto a = must_open(udp_config("127.0.0.1"));
  auto b = must_open(udp_config("127.0.0.2"));
  ASSERT_TRUE(a && b);
  const uint16_t pa = port_of(*a), pb = port_of(*b);
  const auto entropy = free_ports(kIpA, 3);
  ASSERT_EQ(entropy.size(), 3u);
  std::vector<Sent> frames;
  for (uint32_t i = 0; i < 30; ++i) frames.push_back(make(kIpA, entropy[i % 3], kIpB, pb, i));
  ASSERT_EQ(send(*a, frames), frames.size());
  EXPECT_EQ(udp_port_info(*a)->source_sockets, 3u);
  auto got = receive(*b, frames.size());
  ASSERT_EQ(got.size(), frames.size());
  sort_by_seq(got);  // order holds per socket (per path), not across them
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    expect_frame(got[i], frames[i]);
  }
  // Replies to a path's source port arrive through that entropy socket.
  std::vector<Sent> replies;
  for (uint32_t i = 0; i < 3; ++i) replies.push_back(make(kIpB, pb, kIpA, entropy[i], 100 + i));
  replies.push_back(make(kIpB, pb, kIpA, pa, 200));
  ASSERT_EQ(send(*b, replies), replies.size());
  auto back = receive(*a, replies.size());
  ASSERT_EQ(back.size(), replies.size());
  sort_by_seq(back);
  for (size_t i = 0; i < replies.size(); ++i) {
    SCOPED_TRACE("reply " + std::to_string(i));
    expect_frame(back[i], replies[i]);
  }
}

// A port in udp_ports (RoCEv2's 4791 in the daemon; a free one here) is bound
// on local_ip and read beside the main socket: a peer's frame to it arrives
// with that destination port, and a frame from it as source port leaves from
// that socket, not from a new entropy socket.
TEST(UdpPort, FurtherListeningPortsAreBoundReadAndSentFrom) {
  const auto listen = free_ports(kIpB, 1);
  ASSERT_EQ(listen.size(), 1u);
  PortConfig cb = udp_config("127.0.0.2");
  cb.udp_ports = {0, listen[0]};  // 0 (none) and the main socket's own port are skipped
  auto a = must_open(udp_config("127.0.0.1"));
  auto b = must_open(cb);
  ASSERT_TRUE(a && b);
  const uint16_t pa = port_of(*a), pb = port_of(*b);
  const std::vector<Sent> to_b = {make(kIpA, pa, kIpB, listen[0], 1), make(kIpA, pa, kIpB, pb, 2)};
  ASSERT_EQ(send(*a, to_b), 2u);
  auto got = receive(*b, 2);
  ASSERT_EQ(got.size(), 2u);
  sort_by_seq(got);
  expect_frame(got[0], to_b[0]);
  expect_frame(got[1], to_b[1]);
  ASSERT_EQ(send(*b, {make(kIpB, listen[0], kIpA, pa, 3)}), 1u);
  EXPECT_EQ(udp_port_info(*b)->source_sockets, 0u) << "the listening socket is no entropy socket";
  EXPECT_EQ(udp_port_info(*b)->tx_entropy_fallback, 0u);
  const auto back = receive(*a, 1);
  ASSERT_EQ(back.size(), 1u);
  expect_frame(back[0], make(kIpB, listen[0], kIpA, pa, 3));
  // Taken by another socket: the open fails naming the field.
  std::string error;
  PortConfig again = udp_config("127.0.0.2");
  again.udp_ports = {listen[0]};
  EXPECT_EQ(open_port(again, &error), nullptr);
  EXPECT_EQ(error, "udp_ports: bind 127.0.0.2:" + std::to_string(listen[0]) + " failed: " + std::strerror(EADDRINUSE));
}

// Past kUdpMaxSourcePorts source ports a frame leaves from the main socket:
// its path loses its entropy, not the frame (a daemon with many connections
// dropped its own READ responses once it reached the cap), and it is counted.
TEST(UdpPort, PastTheSourceSocketCapFramesLeaveFromTheMainSocket) {
  auto a = must_open(udp_config("127.0.0.1"));
  auto b = must_open(udp_config("127.0.0.2"));
  ASSERT_TRUE(a && b);
  const uint16_t pb = port_of(*b);
  const auto ports = free_ports(kIpA, kUdpMaxSourcePorts + 4);
  ASSERT_EQ(ports.size(), kUdpMaxSourcePorts + 4);
  std::vector<Sent> frames;
  for (uint32_t i = 0; i < ports.size(); ++i) frames.push_back(make(kIpA, ports[i], kIpB, pb, i, wire::Ecn::kEct0, 0, 32));
  EXPECT_EQ(send(*a, frames), frames.size());
  const auto info = udp_port_info(*a);
  ASSERT_TRUE(info);
  EXPECT_LE(info->source_sockets, kUdpMaxSourcePorts);
  EXPECT_GE(info->tx_entropy_fallback, 4u);
  EXPECT_EQ(info->source_sockets + info->tx_entropy_fallback, ports.size());
  auto got = receive(*b, frames.size());
  ASSERT_EQ(got.size(), frames.size()) << "every frame arrives";
  sort_by_seq(got);
  size_t from_main = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    const auto v = wire::decode_udp_frame(got[i]);
    ASSERT_TRUE(v);
    if (v->flow.src_port == port_of(*a)) ++from_main;
    else EXPECT_EQ(v->flow.src_port, ports[i]);
  }
  EXPECT_EQ(from_main, info->tx_entropy_fallback);
  // A capped port keeps leaving from the main socket (no socket() per packet), counted again.
  EXPECT_EQ(send(*a, {frames.back()}), 1u);
  EXPECT_EQ(udp_port_info(*a)->tx_entropy_fallback, info->tx_entropy_fallback + 1);
  EXPECT_EQ(receive(*b, 1).size(), 1u);
}

TEST(UdpPort, NonUdpAndOversizeFramesAreCountedNotSent) {
  auto a = must_open(udp_config("127.0.0.1"));
  ASSERT_TRUE(a);
  std::vector<uint8_t> junk(100, 0x55);
  std::vector<uint8_t> big(4096, 0);
  std::span<const uint8_t> spans[] = {junk, big};
  EXPECT_EQ(a->tx_burst(spans), 2u);
  a->flush();
  const auto info = udp_port_info(*a);
  EXPECT_EQ(info->tx_not_udp, 1u);
  EXPECT_EQ(info->tx_oversize, 1u);
  EXPECT_EQ(a->stats().tx_frames, 0u);
  EXPECT_TRUE(a->tx_ready());
}

TEST(UdpPort, OversizeDatagramIsTruncatedOnReceive) {
  auto a = must_open(udp_config("127.0.0.1"));
  PortConfig small = udp_config("127.0.0.2");
  small.frame_size = 256;
  auto b = must_open(small);
  ASSERT_TRUE(a && b);
  const uint16_t pa = port_of(*a), pb = port_of(*b);
  ASSERT_EQ(send(*a, {make(kIpA, pa, kIpB, pb, 1, wire::Ecn::kEct0, 0, 1000),
                      make(kIpA, pa, kIpB, pb, 2, wire::Ecn::kEct0, 0, 100)}),
            2u);
  const auto got = receive(*b, 1);
  ASSERT_EQ(got.size(), 1u);
  expect_frame(got[0], make(kIpA, pa, kIpB, pb, 2, wire::Ecn::kEct0, 0, 100));
  EXPECT_EQ(b->stats().rx_truncated, 1u);
}

TEST(UdpPort, BadConfigErrorsNameTheField) {
  std::string error;
  auto expect_error = [&](const PortConfig& c, const std::string& prefix) {
    EXPECT_EQ(open_port(c, &error), nullptr);
    EXPECT_EQ(error.rfind(prefix, 0), 0u) << "got: " << error;
  };
  expect_error(udp_config(""), "local_ip: required");
  expect_error(udp_config("x"), "local_ip: not an IPv4 address 'x'");
  expect_error(udp_config("127.0.0.300"), "local_ip: not an IPv4 address '127.0.0.300'");
  expect_error(udp_config("192.0.2.77"), "local_ip: bind 192.0.2.77:");  // not a local address
  PortConfig c = udp_config("127.0.0.1");
  c.ring_size = 0;
  expect_error(c, "ring_size: must be in [1, ");

  auto a = must_open(udp_config("127.0.0.1"));
  ASSERT_TRUE(a);
  const uint16_t taken = port_of(*a);
  expect_error(udp_config("127.0.0.1", taken),
               "local_port: bind 127.0.0.1:" + std::to_string(taken) + " failed: " + std::strerror(EADDRINUSE));
}

TEST(UdpPort, WaitFdBecomesReadable) {
  auto a = must_open(udp_config("127.0.0.1"));
  auto b = must_open(udp_config("127.0.0.2"));
  ASSERT_TRUE(a && b);
  pollfd p{b->wait_fd(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);
  ASSERT_EQ(send(*a, {make(kIpA, port_of(*a), kIpB, port_of(*b), 1)}), 1u);
  EXPECT_EQ(poll(&p, 1, 1000), 1);
  EXPECT_EQ(receive(*b, 1).size(), 1u);
  EXPECT_EQ(poll(&p, 1, 0), 0);
}

TEST(UdpPort, InfoIsOnlyForUdpPorts) {
  PortConfig m;
  m.kind = "memory";
  m.ifname = "udp-info-" + std::to_string(getpid());
  auto mp = must_open(m);
  ASSERT_TRUE(mp);
  EXPECT_FALSE(udp_port_info(*mp).has_value());
  auto a = must_open(udp_config("127.0.0.1"));
  EXPECT_EQ(memory_port_end(*a), -1);
}

}  // namespace
}  // namespace metaroce::datapath
