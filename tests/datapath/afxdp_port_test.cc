// AF_XDP port over a veth pair between two throw-away network namespaces.
//
// Every netns test checks NetnsLab::skip_reason() (root, iproute2, netns) and
// that the kernel has AF_XDP sockets, and says SKIPPED with the reason when
// not. Synchronisation is poll() on wait_fd() with timeouts under an overall
// deadline, never a sleep. The ports run their XDP program in skb (generic)
// mode, which every veth supports, except where a test says otherwise.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "metaroce/datapath/port.h"
#include "metaroce/wire/udp_frame.h"
#include "netns.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

namespace metaroce::datapath {
namespace {

using metaroce::testing::NetnsLab;
using metaroce::testing::ScopedNetns;
using Clock = std::chrono::steady_clock;

constexpr const char* kMacA = "02:00:00:00:77:01";
constexpr const char* kMacB = "02:00:00:00:77:02";
constexpr const char* kIpA = "10.77.0.1";
constexpr const char* kIpB = "10.77.0.2";
constexpr uint16_t kMetaroceUdpPort = 4794;

// Output of a shell command (stdout and stderr).
std::string capture(const std::string& cmd) {
  std::string out;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof(buf), f)) out.append(buf, n);
  pclose(f);
  return out;
}

size_t count_of(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

// XDP program ids in `ip link show` output ("prog/xdp id 42 ...").
std::vector<std::string> xdp_prog_ids(const std::string& ip_link) {
  std::vector<std::string> ids;
  const std::regex re("prog/xdp id ([0-9]+)");
  for (auto it = std::sregex_iterator(ip_link.begin(), ip_link.end(), re); it != std::sregex_iterator(); ++it) {
    ids.push_back((*it)[1].str());
  }
  return ids;
}

wire::UdpFlow flow_a_to_b(uint16_t dst_port) {
  wire::UdpFlow flow;
  flow.src_mac = *wire::parse_mac(kMacA);
  flow.dst_mac = *wire::parse_mac(kMacB);
  flow.src_ip = *wire::parse_ipv4(kIpA);
  flow.dst_ip = *wire::parse_ipv4(kIpB);
  flow.src_port = 49152;
  flow.dst_port = dst_port;
  return flow;
}

// A UDP frame of frame_len bytes whose payload is a function of seq.
std::vector<uint8_t> make_frame(const wire::UdpFlow& flow, uint32_t seq, size_t frame_len) {
  std::vector<uint8_t> frame(frame_len);
  const size_t payload = frame_len - wire::kUdpFrameHeaderBytes;
  EXPECT_EQ(wire::encode_udp_headers(frame, flow, wire::Ecn::kEct0, 0, payload), wire::kUdpFrameHeaderBytes);
  uint8_t* p = frame.data() + wire::kUdpFrameHeaderBytes;
  std::memcpy(p, &seq, sizeof(seq));
  for (size_t i = sizeof(seq); i < payload; ++i) p[i] = static_cast<uint8_t>(seq * 31 + i * 7);
  return frame;
}

PortConfig afxdp_config(const std::string& ifname) {
  PortConfig c;
  c.kind = "afxdp";
  c.name = ifname;
  c.ifname = ifname;
  c.xdp_mode = "skb";
  c.frame_size = 2048;  // 4096-byte UMEM chunks: no hugepages needed
  c.ring_size = 2048;
  c.udp_ports = {kMetaroceUdpPort};
  return c;
}

std::unique_ptr<Port> open_in(const std::string& ns, const PortConfig& config, std::string* error) {
  ScopedNetns in(ns);
  return open_port(config, error);
}

bool wait_readable(const Port& port, int timeout_ms) {
  pollfd p{port.wait_fd(), POLLIN, 0};
  return poll(&p, 1, timeout_ms) > 0;
}

std::vector<std::span<const uint8_t>> spans_of(const std::vector<std::vector<uint8_t>>& frames, size_t begin,
                                               size_t count) {
  std::vector<std::span<const uint8_t>> out;
  for (size_t i = begin; i < begin + count && i < frames.size(); ++i) out.emplace_back(frames[i]);
  return out;
}

class AfxdpPortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = NetnsLab::skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    const int probe = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (probe < 0) GTEST_SKIP() << "kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS): " << std::strerror(errno);
    close(probe);
    lab_ = std::make_unique<NetnsLab>();
    ns_a_ = lab_->add_namespace("a");
    ns_b_ = lab_->add_namespace("b");
    lab_->add_veth(ns_a_, "va", std::string(kIpA) + "/24", ns_b_, "vb", std::string(kIpB) + "/24", kMacA, kMacB);
  }

  std::string ip_link_b() const { return capture("ip -n " + ns_b_ + " link show dev vb"); }

  // B's kernel's count of UDP datagrams to a port nobody listens on (Udp NoPorts), -1 if unread.
  long long udp_no_ports_b() const {
    std::istringstream snmp(capture("ip netns exec " + ns_b_ + " cat /proc/net/snmp"));
    std::string names, values, line;
    while (std::getline(snmp, line)) {
      if (line.rfind("Udp: ", 0) == 0) (names.empty() ? names : values) = line;
    }
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value) {
      if (name == "NoPorts") return std::stoll(value);
    }
    return -1LL;
  }

  std::unique_ptr<NetnsLab> lab_;  // declared first: outlives the ports a test opens
  std::string ns_a_, ns_b_;
};

// (1) 10,000 UDP frames from A's port arrive at B's port byte-exact and in
// order. The sender keeps at most `window` frames in flight so B's rings can
// never overflow (veth is FIFO and lossless below that).
TEST_F(AfxdpPortTest, TransfersTenThousandFramesInOrderByteExact) {
  std::string err;
  auto a = open_in(ns_a_, afxdp_config("va"), &err);
  ASSERT_TRUE(a) << err;
  auto b = open_in(ns_b_, afxdp_config("vb"), &err);
  ASSERT_TRUE(b) << err;
  EXPECT_STREQ(a->kind(), "afxdp");
  EXPECT_GE(b->wait_fd(), 0);

  constexpr size_t kFrames = 10000, kWindow = 512, kBurst = 32;
  const wire::UdpFlow flow = flow_a_to_b(kMetaroceUdpPort);
  std::vector<std::vector<uint8_t>> frames;
  frames.reserve(kFrames);
  for (uint32_t i = 0; i < kFrames; ++i) frames.push_back(make_frame(flow, i, 60 + (i * 131) % 1454));  // <= 1514 B

  size_t sent = 0, received = 0, mismatches = 0, first_mismatch = kFrames;
  std::vector<RxFrame> rx(64);
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(10);
  while (received < kFrames && Clock::now() < deadline) {
    while (sent < kFrames && sent - received < kWindow && a->tx_ready()) {
      const size_t n = std::min({kBurst, kFrames - sent, kWindow - (sent - received)});
      const auto batch = spans_of(frames, sent, n);
      const size_t accepted = a->tx_burst(batch);
      sent += accepted;
      if (accepted < n) break;
    }
    a->flush();
    const size_t got = b->rx_burst(rx);
    for (size_t i = 0; i < got; ++i, ++received) {
      const auto& want = received < kFrames ? frames[received] : frames.back();
      if (received >= kFrames || rx[i].len != want.size() || std::memcmp(rx[i].data, want.data(), want.size()) != 0) {
        if (mismatches++ == 0) first_mismatch = received;
      }
    }
    if (got == 0) wait_readable(*b, 20);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  EXPECT_EQ(received, kFrames) << "sent " << sent;
  EXPECT_EQ(mismatches, 0u) << "first mismatch at frame " << first_mismatch;
  const PortStats sa = a->stats(), sb = b->stats();
  EXPECT_EQ(sa.tx_frames, kFrames);
  EXPECT_EQ(sb.rx_frames, kFrames);
  EXPECT_EQ(sb.rx_dropped, 0u);
  EXPECT_GT(sa.wakeups, 0u);  // copy mode: the TX ring always asks for a kick
  const double pps = received / seconds;
  std::printf("[          ] afxdp veth skb mode: %zu frames in %.3f s = %.0f pps (%llu TX kicks)\n", received, seconds,
              pps, static_cast<unsigned long long>(sa.wakeups));
  RecordProperty("pps", static_cast<int>(pps));
}

// (2) With B's port taking UDP 4794 only, everything else reaches B's kernel:
// ARP and ICMP (ping works), and UDP to another port (counted by B's UDP stack).
TEST_F(AfxdpPortTest, NonMatchingTrafficGoesToTheKernel) {
  std::string err;
  auto b = open_in(ns_b_, afxdp_config("vb"), &err);
  ASSERT_TRUE(b) << err;

  EXPECT_EQ(NetnsLab::exec(ns_a_, std::string("ping -c 3 -i 0.2 -W 2 ") + kIpB), 0) << "ARP/ICMP did not pass";

  // UDP to port 9999, sent by A's own AF_XDP port: B's kernel gets it
  // (Udp NoPorts, nobody listens) and B's port does not.
  auto a = open_in(ns_a_, afxdp_config("va"), &err);
  ASSERT_TRUE(a) << err;
  const auto udp_no_ports = [&] { return udp_no_ports_b(); };
  const long long before = udp_no_ports();
  ASSERT_GE(before, 0);
  constexpr size_t kFrames = 20;
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 0; i < kFrames; ++i) frames.push_back(make_frame(flow_a_to_b(9999), i, 100));
  const auto batch = spans_of(frames, 0, kFrames);
  ASSERT_EQ(a->tx_burst(batch), kFrames);
  a->flush();
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  long long delivered = 0;
  while ((delivered = udp_no_ports() - before) < static_cast<long long>(kFrames) && Clock::now() < deadline) {
    a->flush();
    wait_readable(*b, 20);  // also a bounded pause before looking again
  }
  EXPECT_EQ(delivered, static_cast<long long>(kFrames));
  std::vector<RxFrame> rx(64);
  EXPECT_EQ(b->rx_burst(rx), 0u);
  EXPECT_EQ(b->stats().rx_frames, 0u);
}

// (2b) IPv4 with options goes to the kernel even to the port's UDP port: the
// XDP program takes what the userspace decoder does (no options), so that the
// UDP header is at a constant offset (a variable one needs CAP_PERFMON to load).
TEST_F(AfxdpPortTest, IpOptionsGoToTheKernel) {
  std::string err;
  auto b = open_in(ns_b_, afxdp_config("vb"), &err);
  ASSERT_TRUE(b) << err;
  auto a = open_in(ns_a_, afxdp_config("va"), &err);
  ASSERT_TRUE(a) << err;
  const auto udp_no_ports = [&] { return udp_no_ports_b(); };
  // A frame to UDP 4794 (nobody listens in B's kernel) with one 4-byte option (NOPs):
  // IHL 6, total length and header checksum fixed up.
  std::vector<std::vector<uint8_t>> frames;
  constexpr size_t kFrames = 10, kIp = wire::kEthHeaderBytes, kOptions = 4;
  for (uint32_t i = 0; i < kFrames; ++i) {
    std::vector<uint8_t> f = make_frame(flow_a_to_b(kMetaroceUdpPort), i, 100);
    f.insert(f.begin() + kIp + wire::kIpv4HeaderBytes, kOptions, 0x01);
    f[kIp] = 0x46;
    const uint16_t total = static_cast<uint16_t>(((f[kIp + 2] << 8) | f[kIp + 3]) + kOptions);
    f[kIp + 2] = static_cast<uint8_t>(total >> 8);
    f[kIp + 3] = static_cast<uint8_t>(total);
    f[kIp + 10] = f[kIp + 11] = 0;
    const uint16_t sum = wire::ipv4_checksum(f.data() + kIp, wire::kIpv4HeaderBytes + kOptions);
    f[kIp + 10] = static_cast<uint8_t>(sum >> 8);
    f[kIp + 11] = static_cast<uint8_t>(sum);
    frames.push_back(std::move(f));
  }
  const long long before = udp_no_ports();
  ASSERT_GE(before, 0);
  ASSERT_EQ(a->tx_burst(spans_of(frames, 0, kFrames)), kFrames);
  a->flush();
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  long long delivered = 0;
  while ((delivered = udp_no_ports() - before) < static_cast<long long>(kFrames) && Clock::now() < deadline) {
    a->flush();
    wait_readable(*b, 20);  // also a bounded pause before looking again
  }
  EXPECT_EQ(delivered, static_cast<long long>(kFrames)) << "B's kernel did not get the frames with IP options";
  std::vector<RxFrame> rx(64);
  EXPECT_EQ(b->rx_burst(rx), 0u);
  EXPECT_EQ(b->stats().rx_frames, 0u);
}

// (3) In bridge mode every frame goes to the port: an ICMP echo request sent by
// A's kernel (static neighbour entry, so no ARP is needed) shows up at B's
// port, and B's kernel never sees it (the ping gets no reply).
TEST_F(AfxdpPortTest, BridgeModeRedirectsEverything) {
  std::string err;
  PortConfig config = afxdp_config("vb");
  config.bridge_mode = true;
  auto b = open_in(ns_b_, config, &err);
  ASSERT_TRUE(b) << err;
  ASSERT_EQ(NetnsLab::exec(ns_a_, std::string("ip neigh replace ") + kIpB + " lladdr " + kMacB +
                                      " dev va nud permanent"),
            0);

  EXPECT_NE(NetnsLab::exec(ns_a_, std::string("ping -c 2 -i 0.2 -W 1 ") + kIpB), 0)
      << "B's kernel answered: the frames were not redirected";

  const uint32_t dst = *wire::parse_ipv4(kIpB);
  bool seen = false;
  std::vector<RxFrame> rx(64);
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  while (!seen && Clock::now() < deadline) {
    const size_t got = b->rx_burst(rx);
    for (size_t i = 0; i < got; ++i) {
      const uint8_t* f = rx[i].data;
      if (rx[i].len < 14 + 20 + 8 || f[12] != 0x08 || f[13] != 0x00) continue;
      const uint8_t* ip = f + 14;
      const uint32_t ip_dst = (uint32_t{ip[16]} << 24) | (uint32_t{ip[17]} << 16) | (uint32_t{ip[18]} << 8) | ip[19];
      const uint8_t* icmp = ip + (ip[0] & 0x0f) * 4;
      if (ip[9] == 1 && ip_dst == dst && icmp + 1 <= f + rx[i].len && icmp[0] == 8) seen = true;
    }
    if (got == 0) wait_readable(*b, 50);
  }
  EXPECT_TRUE(seen) << "no ICMP echo request reached B's AF_XDP port";
}

// (4) Back-pressure: more frames than the ring holds are refused, counted in
// tx_ring_full, and accepted again once completions return the frames.
TEST_F(AfxdpPortTest, BackPressureWhenRingIsFull) {
  std::string err;
  PortConfig config = afxdp_config("va");
  config.ring_size = 64;
  auto a = open_in(ns_a_, config, &err);
  ASSERT_TRUE(a) << err;
  ASSERT_TRUE(a->tx_ready());

  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 0; i < 200; ++i) frames.push_back(make_frame(flow_a_to_b(kMetaroceUdpPort), i, 128));
  const auto batch = spans_of(frames, 0, frames.size());
  const size_t accepted = a->tx_burst(batch);
  EXPECT_EQ(accepted, 64u);
  EXPECT_EQ(a->stats().tx_ring_full, 200u - accepted);
  EXPECT_FALSE(a->tx_ready());

  const auto deadline = Clock::now() + std::chrono::seconds(3);
  while (!a->tx_ready() && Clock::now() < deadline) {
    a->flush();
    pollfd p{a->wait_fd(), POLLOUT, 0};
    poll(&p, 1, 10);
  }
  ASSERT_TRUE(a->tx_ready()) << "completions never returned the TX frames";
  EXPECT_GT(a->tx_burst(batch), 0u);
  a->flush();
  EXPECT_EQ(a->stats().tx_frames, accepted + 64u);
}

// (5) A run that dies without closing its port leaves its XDP program on the
// interface (netlink-attached programs outlive their process). The next open
// finds it, sees its owner is gone, detaches it and attaches a fresh one; the
// close leaves the interface without XDP.
TEST_F(AfxdpPortTest, StaleProgramOfCrashedRunIsReplaced) {
  const PortConfig config = afxdp_config("vb");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the "crashing" run: open, then exit without any destructor
    try {
      ScopedNetns in(ns_b_);
      std::string err;
      auto port = open_port(config, &err);
      _exit(port ? 0 : 1);  // while the port is open: its destructor never runs
    } catch (...) {
    }
    _exit(2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child could not open the port";
  const auto stale = xdp_prog_ids(ip_link_b());
  ASSERT_EQ(stale.size(), 1u) << ip_link_b();

  std::string err;
  auto b = open_in(ns_b_, config, &err);
  ASSERT_TRUE(b) << err;
  const std::string attached = ip_link_b();
  const auto fresh = xdp_prog_ids(attached);
  ASSERT_EQ(fresh.size(), 1u) << attached;
  EXPECT_NE(fresh[0], stale[0]) << "the stale program is still attached";
  EXPECT_EQ(count_of(attached, "xdpgeneric"), 1u) << attached;

  // A second port on the same interface while the first is alive is refused,
  // not treated as stale.
  auto second = open_in(ns_b_, config, &err);
  EXPECT_FALSE(second);
  EXPECT_NE(err.find("in use by another metaroce AF_XDP port"), std::string::npos) << err;

  b.reset();  // closed from the root namespace: the port detaches in its own
  const std::string after = ip_link_b();
  EXPECT_EQ(after.find("xdp"), std::string::npos) << after;

  // Reopening at once works although the kernel frees the closed socket's
  // queue asynchronously.
  b = open_in(ns_b_, config, &err);
  EXPECT_TRUE(b) << err;
}

// xdp_mode "auto" on veth: native XDP attaches, and frames still flow.
TEST_F(AfxdpPortTest, AutoModeUsesNativeXdpOnVeth) {
  std::string err;
  auto a = open_in(ns_a_, afxdp_config("va"), &err);
  ASSERT_TRUE(a) << err;
  PortConfig config = afxdp_config("vb");
  config.xdp_mode = "auto";
  config.zero_copy = true;  // veth has no zero-copy: falls back to copy mode
  auto b = open_in(ns_b_, config, &err);
  ASSERT_TRUE(b) << err;
  const std::string link = ip_link_b();
  EXPECT_EQ(count_of(link, "xdpgeneric"), 0u) << link;
  EXPECT_EQ(xdp_prog_ids(link).size(), 1u) << link;

  constexpr size_t kFrames = 1000;
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 0; i < kFrames; ++i) frames.push_back(make_frame(flow_a_to_b(kMetaroceUdpPort), i, 200));
  size_t sent = 0, received = 0, bad = 0;
  std::vector<RxFrame> rx(64);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (received < kFrames && Clock::now() < deadline) {
    if (sent < kFrames && sent - received < 256) sent += a->tx_burst(spans_of(frames, sent, 32));
    a->flush();
    const size_t got = b->rx_burst(rx);
    for (size_t i = 0; i < got; ++i, ++received) {
      if (received >= kFrames || rx[i].len != frames[received].size() ||
          std::memcmp(rx[i].data, frames[received].data(), rx[i].len) != 0) {
        ++bad;
      }
    }
    if (got == 0) wait_readable(*b, 20);
  }
  EXPECT_EQ(received, kFrames);
  EXPECT_EQ(bad, 0u);
}

// Two queues on a two-queue veth: one socket each, wait_fd() is an epoll set.
TEST_F(AfxdpPortTest, TwoQueuesOnMultiQueueVeth) {
  ASSERT_EQ(metaroce::testing::run_cmd("ip -n " + ns_a_ + " link add mqa numtxqueues 2 numrxqueues 2 type veth peer name mqb netns " +
                                       ns_b_ + " numtxqueues 2 numrxqueues 2"),
            0);
  ASSERT_EQ(metaroce::testing::run_cmd("ip -n " + ns_a_ + " link set mqa address " + kMacA + " up"), 0);
  ASSERT_EQ(metaroce::testing::run_cmd("ip -n " + ns_b_ + " link set mqb address " + kMacB + " up"), 0);
  std::string err;
  PortConfig ca = afxdp_config("mqa"), cb = afxdp_config("mqb");
  ca.queues = cb.queues = 2;
  auto a = open_in(ns_a_, ca, &err);
  ASSERT_TRUE(a) << err;
  auto b = open_in(ns_b_, cb, &err);
  ASSERT_TRUE(b) << err;

  PortConfig too_many = afxdp_config("mqb");
  too_many.queue = 1;
  too_many.queues = 2;
  EXPECT_FALSE(open_in(ns_b_, too_many, &err));
  EXPECT_EQ(err.rfind("queues: ", 0), 0u) << err;

  constexpr size_t kFrames = 500;
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 0; i < kFrames; ++i) frames.push_back(make_frame(flow_a_to_b(kMetaroceUdpPort), i, 300));
  size_t sent = 0, received = 0;
  std::vector<RxFrame> rx(64);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (received < kFrames && Clock::now() < deadline) {
    if (sent < kFrames && sent - received < 256) sent += a->tx_burst(spans_of(frames, sent, 32));
    a->flush();
    const size_t got = b->rx_burst(rx);
    received += got;
    if (got == 0) wait_readable(*b, 20);
  }
  EXPECT_EQ(received, kFrames);
}

// Configuration errors name the field; these need neither root nor namespaces.
TEST(AfxdpPortConfig, ErrorsNameTheField) {
  std::string err;
  PortConfig c = afxdp_config("mr-no-such-if0");
  EXPECT_FALSE(open_port(c, &err));
  EXPECT_EQ(err, "ifname: no such interface 'mr-no-such-if0'");

  c = afxdp_config("lo");
  c.xdp_mode = "turbo";
  EXPECT_FALSE(open_port(c, &err));
  EXPECT_EQ(err.rfind("xdp_mode: ", 0), 0u) << err;

  c = afxdp_config("lo");
  c.ring_size = 1000;
  EXPECT_FALSE(open_port(c, &err));
  EXPECT_EQ(err.rfind("ring_size: ", 0), 0u) << err;

  c = afxdp_config("lo");
  c.udp_ports.assign(17, 4794);
  EXPECT_FALSE(open_port(c, &err));
  EXPECT_EQ(err.rfind("udp_ports: ", 0), 0u) << err;

  c = afxdp_config("lo");
  c.frame_size = 4352;  // PortConfig's default: above what a page-sized UMEM chunk holds
  EXPECT_FALSE(open_port(c, &err));
  EXPECT_EQ(err.rfind("frame_size: ", 0), 0u) << err;

  c = afxdp_config("");
  EXPECT_FALSE(open_port(c, &err));
  EXPECT_EQ(err.rfind("ifname: ", 0), 0u) << err;

  bool listed = false;
  for (const auto& kind : supported_port_kinds()) listed |= kind == "afxdp";
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace metaroce::datapath
