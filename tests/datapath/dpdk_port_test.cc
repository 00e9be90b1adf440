// DPDK port (kind "dpdk") through the Port interface: net_af_packet over a
// veth pair between two network namespaces, net_ring pairs in memory, the
// error paths and back-pressure; net_af_xdp on veth when this machine can.
//
// One EAL per process. DPDK's EAL can be initialised once, so every test here
// passes the same eal_args (Env::eal_args), built once, lazily, by the first
// test that needs DPDK:
//   1. make namespaces A and B joined by two veth pairs (if this machine can),
//   2. from inside namespace A, open the loopback vdev "net_ring0"; that first
//      open runs rte_eal_init with --vdev=net_ring0 and
//      --vdev=net_af_packet0,iface=<A end>, so the AF_PACKET socket is created
//      (and stays) in namespace A.
// Everything else is hot-plugged per test (rte_dev_probe under ScopedNetns),
// so tests do not depend on each other or on their order, and each can also
// run alone in its own process (ctest runs one process per test). The test of
// a failing rte_eal_init needs a process whose EAL was never touched: it is a
// death test in "threadsafe" style, which re-executes this binary for it.
// No sleeps: every wait is a polling loop bounded by a deadline.
#include <gtest/gtest.h>
#include <rte_eth_ring.h>
#include <rte_ring.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/datapath/port.h"
#include "metaroce/wire/udp_frame.h"
#include "netns.h"

// Under -fsanitize=address (METAROCE_SANITIZE): DPDK's EAL argument parser
// and libxdp's UMEM set-up keep small allocations they never free; not ours.
extern "C" const char* __lsan_default_suppressions() { return "leak:librte_eal.so\nleak:libxdp.so\n"; }

namespace {

using metaroce::datapath::open_port;
using metaroce::datapath::Port;
using metaroce::datapath::PortConfig;
using metaroce::datapath::RxFrame;
using metaroce::testing::NetnsLab;
using metaroce::testing::ScopedNetns;
namespace wire = metaroce::wire;
using Clock = std::chrono::steady_clock;

// veth ends: A<->B for net_af_packet, XA<->XB for net_af_xdp.
constexpr const char* kIfA = "mrdA";
constexpr const char* kIfB = "mrdB";
constexpr const char* kIfXA = "mrdXA";
constexpr const char* kIfXB = "mrdXB";
constexpr const char* kMacA = "02:00:00:00:0a:01";
constexpr const char* kMacB = "02:00:00:00:0b:01";
constexpr const char* kMacXA = "02:00:00:00:0a:02";
constexpr const char* kMacXB = "02:00:00:00:0b:02";

// ---------------------------------------------------------------------------
// The process-wide environment

struct Env {
  std::string lab_skip;  // why there are no namespaces (empty: there are)
  std::unique_ptr<NetnsLab> lab;
  std::string ns_a, ns_b;
  std::vector<std::string> eal_args;
  std::string eal_error;       // set when the first open (EAL init) failed
  std::unique_ptr<Port> loop;  // net_ring0 from --vdev: the port that initialised the EAL
};

std::unique_ptr<Env>& env_slot() {
  static std::unique_ptr<Env> env;
  return env;
}

// The first CPU this process may run on: the EAL's main lcore.
int first_allowed_cpu() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) return c;
  return 0;
}

Env& env() {
  auto& slot = env_slot();
  if (slot) return *slot;
  slot = std::make_unique<Env>();
  Env& e = *slot;
  e.lab_skip = NetnsLab::skip_reason();
  if (e.lab_skip.empty()) {
    try {
      e.lab = std::make_unique<NetnsLab>();
      e.ns_a = e.lab->add_namespace("a");
      e.ns_b = e.lab->add_namespace("b");
      for (const auto& ns : {e.ns_a, e.ns_b})  // no IPv6 chatter (DAD, MLD) on the test links
        NetnsLab::exec(ns, "sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1");
      e.lab->add_veth(e.ns_a, kIfA, "", e.ns_b, kIfB, "", kMacA, kMacB);
      e.lab->add_veth(e.ns_a, kIfXA, "", e.ns_b, kIfXB, "", kMacXA, kMacXB);
    } catch (const std::exception& ex) {
      e.lab_skip = ex.what();
      e.lab.reset();
    }
  }
  e.eal_args = {"--no-huge",
                "-m",
                "512",
                "--no-shconf",
                "--file-prefix=mrdpdk" + std::to_string(getpid()),
                "--no-pci",
                "--no-telemetry",
                "-l",
                std::to_string(first_allowed_cpu()),
                "--log-level=*:warning",
                "--vdev=net_ring0"};
  if (e.lab) e.eal_args.push_back(std::string("--vdev=net_af_packet0,iface=") + kIfA);

  PortConfig c;
  c.kind = "dpdk";
  c.name = "loop";
  c.eal_args = e.eal_args;
  c.dpdk_device = "net_ring0";
  c.ring_size = 256;
  std::optional<ScopedNetns> in_a;
  if (e.lab) in_a.emplace(e.ns_a);  // --vdev=net_af_packet0 binds its socket in A
  e.loop = open_port(c, &e.eal_error);
  return e;
}

// Closes every port and removes the namespaces before the library's exit-time
// rte_eal_cleanup runs.
class DpdkEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { env_slot().reset(); }
};
const auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new DpdkEnvironment);

PortConfig config(const std::string& device, const std::string& name, uint32_t ring_size = 512) {
  PortConfig c;
  c.kind = "dpdk";
  c.name = name;
  c.eal_args = env().eal_args;
  c.dpdk_device = device;
  c.ring_size = ring_size;
  return c;
}

// Opens a port from inside a namespace (empty: the current one).
std::unique_ptr<Port> open_in(const std::string& ns, const PortConfig& c, std::string* error) {
  std::optional<ScopedNetns> in;
  if (!ns.empty()) in.emplace(ns);
  return open_port(c, error);
}

#define REQUIRE_EAL()                                                                 \
  do {                                                                                \
    if (!env().eal_error.empty()) FAIL() << "EAL set-up failed: " << env().eal_error; \
  } while (0)

#define REQUIRE_NETNS()                                                         \
  do {                                                                          \
    if (!env().lab_skip.empty()) GTEST_SKIP() << "SKIPPED: " << env().lab_skip; \
    REQUIRE_EAL();                                                              \
  } while (0)

// ---------------------------------------------------------------------------
// Traffic

wire::MacAddr mac(const char* text) { return *wire::parse_mac(text); }

wire::UdpFlow flow(const char* src_mac, const char* dst_mac, const char* src_ip, const char* dst_ip, uint16_t src_port,
                   uint16_t dst_port) {
  wire::UdpFlow f;
  f.src_mac = mac(src_mac);
  f.dst_mac = mac(dst_mac);
  f.src_ip = *wire::parse_ipv4(src_ip);
  f.dst_ip = *wire::parse_ipv4(dst_ip);
  f.src_port = src_port;
  f.dst_port = dst_port;
  return f;
}

// Frame i of a run: sizes from 60 to ~1500 bytes, payload = sequence number + pattern.
std::vector<std::vector<uint8_t>> make_frames(const wire::UdpFlow& f, size_t n) {
  std::vector<std::vector<uint8_t>> frames(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t payload = 18 + (i * 131) % 1440;
    auto& frame = frames[i];
    frame.resize(wire::kUdpFrameHeaderBytes + payload);
    const size_t h = wire::encode_udp_headers(frame, f, wire::Ecn::kEct0, 0, payload);
    EXPECT_EQ(h, wire::kUdpFrameHeaderBytes);
    const auto seq = static_cast<uint32_t>(i);
    std::memcpy(frame.data() + h, &seq, sizeof(seq));
    for (size_t j = sizeof(seq); j < payload; ++j) frame[h + j] = static_cast<uint8_t>(seq * 31 + j * 7);
  }
  return frames;
}

struct TransferResult {
  size_t sent = 0, received = 0, mismatched = 0, out_of_order = 0, foreign = 0;
  double seconds = 0;
  std::string first_problem;
  double pps() const { return seconds > 0 ? received / seconds : 0; }
};

// Sends frames on tx and expects every one on rx, in order and byte-exact.
// At most `window` frames are in flight (the receiving ring never overflows);
// frames of other flows (stray kernel traffic) are ignored.
TransferResult transfer(Port& tx, Port& rx, const wire::UdpFlow& f, size_t n, size_t window = 256,
                        std::chrono::seconds limit = std::chrono::seconds(10)) {
  const auto frames = make_frames(f, n);
  TransferResult r;
  std::vector<std::span<const uint8_t>> burst;
  burst.reserve(32);
  std::array<RxFrame, 32> got;
  const auto start = Clock::now();
  const auto deadline = start + limit;
  while (r.received < n && Clock::now() < deadline) {
    const size_t room = window - std::min(window, r.sent - r.received);
    const size_t k = std::min({size_t{32}, n - r.sent, room});
    if (k) {
      burst.clear();
      for (size_t i = 0; i < k; ++i) burst.emplace_back(frames[r.sent + i]);
      r.sent += tx.tx_burst(burst);
    }
    tx.flush();
    const size_t m = rx.rx_burst(got);
    for (size_t i = 0; i < m; ++i) {
      const std::span<const uint8_t> bytes(got[i].data, got[i].len);
      const auto view = wire::decode_udp_frame(bytes);
      if (!view || view->flow.dst_port != f.dst_port || view->flow.src_port != f.src_port) {
        ++r.foreign;
        continue;
      }
      uint32_t seq = 0;
      if (view->payload.size() >= sizeof(seq)) std::memcpy(&seq, view->payload.data(), sizeof(seq));
      if (seq != r.received) {
        ++r.out_of_order;
        if (r.first_problem.empty())
          r.first_problem =
              "frame " + std::to_string(seq) + " arrived when " + std::to_string(r.received) + " was expected";
      } else if (seq >= n || frames[seq].size() != bytes.size() ||
                 std::memcmp(frames[seq].data(), bytes.data(), bytes.size()) != 0) {
        ++r.mismatched;
        if (r.first_problem.empty()) r.first_problem = "frame " + std::to_string(seq) + " differs";
      }
      ++r.received;
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

void expect_clean(const TransferResult& r, size_t n, const std::string& what) {
  EXPECT_EQ(r.received, n) << what << ": sent " << r.sent << ", received " << r.received << " in " << r.seconds << " s";
  EXPECT_EQ(r.mismatched, 0u) << what << ": " << r.first_problem;
  EXPECT_EQ(r.out_of_order, 0u) << what << ": " << r.first_problem;
  std::printf("[   INFO   ] %s: %zu frames in %.3f s = %.0f pps (%zu foreign frames ignored)\n", what.c_str(),
              r.received, r.seconds, r.pps(), r.foreign);
}

// Receives everything queued on a port until it stays empty (bounded).
size_t drain(Port& p) {
  std::array<RxFrame, 32> got;
  size_t total = 0, idle = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (idle < 1000 && Clock::now() < deadline) {
    const size_t m = p.rx_burst(got);
    total += m;
    idle = m ? 0 : idle + 1;
  }
  return total;
}

// Two net_ring ports joined back to back (made with rte_eth_from_rings, so
// named "net_ring_<name>"); the rings are freed after the ports are closed.
struct RingPair {
  rte_ring* ab = nullptr;  // a -> b
  rte_ring* ba = nullptr;  // b -> a
  std::string a_name, b_name;
  std::string error;

  explicit RingPair(unsigned ring_capacity) {
    static int serial = 0;
    const std::string tag = "mrp" + std::to_string(serial++);
    ab = rte_ring_create((tag + "ab").c_str(), ring_capacity, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    ba = rte_ring_create((tag + "ba").c_str(), ring_capacity, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (!ab || !ba) {
      error = "rte_ring_create failed";
      return;
    }
    if (rte_eth_from_rings((tag + "a").c_str(), &ba, 1, &ab, 1, 0) < 0 ||
        rte_eth_from_rings((tag + "b").c_str(), &ab, 1, &ba, 1, 0) < 0) {
      error = "rte_eth_from_rings failed";
      return;
    }
    a_name = "net_ring_" + tag + "a";
    b_name = "net_ring_" + tag + "b";
  }
  ~RingPair() {  // the ports using the rings must be closed first
    rte_ring_free(ab);
    rte_ring_free(ba);
  }
};

// ---------------------------------------------------------------------------
// (1) net_af_packet across a veth pair between two namespaces

TEST(DpdkPort, AfPacketVethCarries10kFramesEachWayByteExact) {
  REQUIRE_NETNS();
  Env& e = env();
  std::string error;
  // A: the vdev from --vdev in eal_args (re-hot-plugged in A if an earlier test closed it).
  PortConfig ca = config("net_af_packet0", "plane-a");
  ca.ifname = kIfA;
  auto a = open_in(e.ns_a, ca, &error);
  ASSERT_TRUE(a) << error;
  // B: hot-plugged from inside namespace B.
  PortConfig cb = config("net_af_packet1", "plane-b");
  cb.ifname = kIfB;
  auto b = open_in(e.ns_b, cb, &error);
  ASSERT_TRUE(b) << error;
  EXPECT_STREQ(a->kind(), "dpdk");
  EXPECT_EQ(a->name(), "plane-a");
  EXPECT_TRUE(a->tx_ready());

  constexpr size_t kFrames = 10000;
  const auto ab = flow(kMacA, kMacB, "10.9.0.1", "10.9.0.2", 40001, 4793);
  const auto ba = flow(kMacB, kMacA, "10.9.0.2", "10.9.0.1", 40002, 4793);
  expect_clean(transfer(*a, *b, ab, kFrames), kFrames, "af_packet A->B");
  expect_clean(transfer(*b, *a, ba, kFrames), kFrames, "af_packet B->A");

  const auto sa = a->stats(), sb = b->stats();
  EXPECT_EQ(sa.tx_frames, kFrames);
  EXPECT_GE(sb.rx_frames, kFrames);
  EXPECT_EQ(sb.tx_frames, kFrames);
  EXPECT_GE(sa.rx_frames, kFrames);
  EXPECT_EQ(sa.rx_truncated, 0u);
  EXPECT_EQ(sb.rx_truncated, 0u);
}

TEST(DpdkPort, HotPluggedPortCanBeClosedAndOpenedAgain) {
  REQUIRE_NETNS();
  Env& e = env();
  PortConfig cb = config("net_af_packet2", "again");
  cb.ifname = kIfB;
  for (int round = 0; round < 3; ++round) {
    std::string error;
    auto b = open_in(e.ns_b, cb, &error);
    ASSERT_TRUE(b) << "round " << round << ": " << error;
  }
}

// ---------------------------------------------------------------------------
// (2) net_ring: in memory, no namespace needed

TEST(DpdkPort, VdevFromEalArgsLoopsBack) {
  REQUIRE_EAL();
  Port* loop = env().loop.get();
  ASSERT_TRUE(loop);
  const auto f = flow(kMacA, kMacA, "10.9.1.1", "10.9.1.1", 5000, 5001);
  expect_clean(transfer(*loop, *loop, f, 1000), 1000, "net_ring0 loopback");
}

TEST(DpdkPort, RingPairCarriesFramesBothWays) {
  REQUIRE_EAL();
  RingPair rings(1024);
  ASSERT_TRUE(rings.error.empty()) << rings.error;
  std::string error;
  {
    auto a = open_port(config(rings.a_name, "ring-a"), &error);
    ASSERT_TRUE(a) << error;
    auto b = open_port(config(rings.b_name, "ring-b"), &error);
    ASSERT_TRUE(b) << error;
    constexpr size_t kFrames = 10000;
    const auto ab = flow(kMacA, kMacB, "10.9.2.1", "10.9.2.2", 6000, 6001);
    const auto ba = flow(kMacB, kMacA, "10.9.2.2", "10.9.2.1", 6001, 6000);
    expect_clean(transfer(*a, *b, ab, kFrames), kFrames, "net_ring a->b");
    expect_clean(transfer(*b, *a, ba, kFrames), kFrames, "net_ring b->a");
    EXPECT_EQ(a->stats().tx_frames, kFrames);
    EXPECT_EQ(b->stats().rx_frames, kFrames);
    // Each side still holds its last rx burst, mbufs of the other side's pool:
    // release them before closing, so both pools are freed (not kept).
    EXPECT_EQ(drain(*a) + drain(*b), 0u);
  }
}

// ---------------------------------------------------------------------------
// (3) configuration errors: one line naming the field, no crash

TEST(DpdkPort, UnknownDeviceNameListsTheAvailableOnes) {
  REQUIRE_EAL();
  std::string error;
  auto p = open_port(config("no_such_port0", "x"), &error);
  EXPECT_FALSE(p);
  EXPECT_EQ(error.rfind("dpdk_device: no DPDK port named 'no_such_port0' (available: ", 0), 0u) << error;
  EXPECT_NE(error.find("net_ring0"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(DpdkPort, FailedHotPlugIsOneLineError) {
  REQUIRE_EAL();
  PortConfig c = config("net_af_packet9", "x");
  c.ifname = "mrd-nonexist";
  std::string error;
  auto p = open_port(c, &error);
  EXPECT_FALSE(p);
  EXPECT_NE(error.find("dpdk_device: no DPDK port named 'net_af_packet9'"), std::string::npos) << error;
  EXPECT_NE(error.find("hot-plugging 'net_af_packet9,iface=mrd-nonexist' failed"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(DpdkPort, FieldValidation) {
  REQUIRE_EAL();
  std::string error;
  EXPECT_FALSE(open_port(config("", "x"), &error));
  EXPECT_EQ(error.rfind("dpdk_device: required", 0), 0u) << error;
  EXPECT_FALSE(open_port(config("net_ring0", "x", 3), &error));
  EXPECT_EQ(error.rfind("ring_size: must be in", 0), 0u) << error;
  PortConfig q = config("net_ring0", "x");
  q.queue = 5;  // net_ring0 has one queue pair
  if (env().loop) {
    EXPECT_FALSE(open_port(q, &error));
    EXPECT_EQ(error.rfind("dpdk_device: 'net_ring0' is already open (port 'loop')", 0), 0u) << error;
  }
  RingPair rings(64);
  ASSERT_TRUE(rings.error.empty()) << rings.error;
  q.dpdk_device = rings.a_name;
  EXPECT_FALSE(open_port(q, &error));
  EXPECT_EQ(error.rfind("queue: '" + rings.a_name + "' has 1 rx / 1 tx queues (got queue 5)", 0), 0u) << error;
  auto a = open_port(config(rings.a_name, "x"), &error);  // the refused open left the device usable
  EXPECT_TRUE(a) << error;
}

TEST(DpdkPort, DifferentEalArgsAreRefused) {
  REQUIRE_EAL();
  PortConfig c = config("net_ring0", "x");
  c.eal_args = {"--no-huge", "-m", "64"};
  std::string error;
  EXPECT_FALSE(open_port(c, &error));
  EXPECT_EQ(error.rfind("eal_args: the DPDK EAL of this process was already initialised", 0), 0u) << error;
}

// Runs in a fresh process (death test): rte_eal_init must fail cleanly, then a
// corrected configuration must still work in the same process.
[[noreturn]] void bad_eal_args_then_good() {
  PortConfig bad;
  bad.kind = "dpdk";
  bad.dpdk_device = "net_ring0";
  bad.eal_args = {"--no-huge", "--not-an-eal-option"};
  std::string error;
  if (open_port(bad, &error)) std::_Exit(2);
  std::fprintf(stderr, "first: %s\n", error.c_str());
  if (error.rfind("eal_args: rte_eal_init failed: ", 0) != 0 || error.find('\n') != std::string::npos) std::_Exit(3);
  PortConfig good = bad;
  good.eal_args = {"--no-huge",
                   "-m",
                   "64",
                   "--no-shconf",
                   "--file-prefix=mrdpdkc" + std::to_string(getpid()),
                   "--no-pci",
                   "--no-telemetry",
                   "-l",
                   std::to_string(first_allowed_cpu()),
                   "--log-level=*:warning",
                   "--vdev=net_ring0"};
  auto p = open_port(good, &error);
  std::fprintf(stderr, "second: %s\n", p ? "opened" : error.c_str());
  if (!p) std::_Exit(4);
  p.reset();
  std::exit(0);  // runs the library's exit-time rte_eal_cleanup
}

TEST(DpdkPortDeathTest, BadEalArgsGiveAClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: its EAL was never initialised
  EXPECT_EXIT(bad_eal_args_then_good(), ::testing::ExitedWithCode(0),
              "first: eal_args: rte_eal_init failed: Invalid argument");
}

// ---------------------------------------------------------------------------
// (4) back-pressure

TEST(DpdkPort, FullDeviceRingRefusesAndCountsTxRingFull) {
  REQUIRE_EAL();
  RingPair rings(64);  // 63 usable slots a -> b
  ASSERT_TRUE(rings.error.empty()) << rings.error;
  std::string error;
  auto a = open_port(config(rings.a_name, "bp-a"), &error);
  ASSERT_TRUE(a) << error;
  auto b = open_port(config(rings.b_name, "bp-b"), &error);
  ASSERT_TRUE(b) << error;

  const auto frames = make_frames(flow(kMacA, kMacB, "10.9.3.1", "10.9.3.2", 7000, 7001), 200);
  std::vector<std::span<const uint8_t>> all(frames.begin(), frames.end());
  const size_t first = a->tx_burst(all);
  EXPECT_EQ(first, rte_ring_get_capacity(rings.ab));
  EXPECT_EQ(a->stats().tx_ring_full, all.size() - first);
  EXPECT_EQ(a->tx_burst(std::span(all).first(10)), 0u);  // still full: a normal result
  EXPECT_EQ(a->stats().tx_ring_full, all.size() - first + 10);
  EXPECT_EQ(a->stats().tx_frames, first);

  EXPECT_EQ(drain(*b), first);                            // the receiver frees room ...
  EXPECT_EQ(a->tx_burst(std::span(all).first(10)), 10u);  // ... and sending resumes
  EXPECT_EQ(drain(*b), 10u);
}

TEST(DpdkPort, ExhaustedMbufPoolClearsTxReadyUntilTheReceiverFrees) {
  REQUIRE_EAL();
  RingPair rings(4096);  // the device ring is larger than the sender's pool
  ASSERT_TRUE(rings.error.empty()) << rings.error;
  std::string error;
  auto a = open_port(config(rings.a_name, "pool-a", 32), &error);
  ASSERT_TRUE(a) << error;
  auto b = open_port(config(rings.b_name, "pool-b", 32), &error);
  ASSERT_TRUE(b) << error;

  const auto frames = make_frames(flow(kMacA, kMacB, "10.9.4.1", "10.9.4.2", 7000, 7001), 64);
  std::vector<std::span<const uint8_t>> burst(frames.begin(), frames.end());
  EXPECT_TRUE(a->tx_ready());
  size_t queued = 0;
  for (int i = 0; i < 1000 && a->tx_ready(); ++i) queued += a->tx_burst(burst);
  EXPECT_FALSE(a->tx_ready()) << "pool never ran out after " << queued << " frames";
  EXPECT_GT(queued, 0u);
  EXPECT_LT(queued, 4095u);  // bounded by the pool, not by the ring
  const uint64_t refused_before = a->stats().tx_ring_full;
  EXPECT_EQ(a->tx_burst(burst), 0u);
  EXPECT_EQ(a->stats().tx_ring_full, refused_before + burst.size());

  // The receiver's rx_burst() recycles the previous burst's mbufs (the sender's
  // pool); after draining, the pool is whole again.
  EXPECT_EQ(drain(*b), queued);
  EXPECT_TRUE(a->tx_ready());
  EXPECT_EQ(a->tx_burst(burst), burst.size());
  EXPECT_EQ(drain(*b), burst.size());
}

// ---------------------------------------------------------------------------
// net_af_xdp on veth, when the kernel and the PMD allow it here

TEST(DpdkPort, AfXdpVethCarriesFramesBothWays) {
  REQUIRE_NETNS();
  Env& e = env();
  std::string error;
  PortConfig cx = config("net_af_xdp0", "xdp-a");
  cx.ifname = kIfXA;
  cx.frame_size = 4096 + 256;  // too big: net_af_xdp mbufs must fit a page
  auto x = open_in(e.ns_a, cx, &error);
  EXPECT_FALSE(x);
  EXPECT_EQ(error.rfind("frame_size: net_af_xdp needs each mbuf within a ", 0), 0u) << error;
  cx.frame_size = 2048;
  x = open_in(e.ns_a, cx, &error);
  if (!x) GTEST_SKIP() << "SKIPPED: net_af_xdp on veth is not usable here: " << error;
  PortConfig cb = config("net_af_packet3", "xdp-peer");
  cb.ifname = kIfXB;
  auto b = open_in(e.ns_b, cb, &error);
  ASSERT_TRUE(b) << error;
  constexpr size_t kFrames = 10000;
  const auto xb = flow(kMacXA, kMacXB, "10.9.5.1", "10.9.5.2", 40003, 4793);
  const auto bx = flow(kMacXB, kMacXA, "10.9.5.2", "10.9.5.1", 40004, 4793);
  expect_clean(transfer(*x, *b, xb, kFrames), kFrames, "af_xdp A->B");
  expect_clean(transfer(*b, *x, bx, kFrames), kFrames, "af_xdp B->A");
  EXPECT_EQ(x->stats().rx_dropped, 0u);
}

}  // namespace
