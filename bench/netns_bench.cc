// metaroce_netns_bench: real packets in a network-namespace lab (2 hosts x P
// planes of veth into a fabric namespace).
//
//  1. Forwarding: frames/s through the fabric namespace for a minimal
//     forwarder (rx_burst -> tx_burst), the FabricNode with impairments off,
//     and with all of them on; over AF_XDP and, when built, DPDK
//     (net_af_packet) ports. Generator and sink are AF_XDP ports in the hosts.
//  2. Goodput: saturating, verified WRITEs host 0 -> host 1 over all planes
//     through the FabricNode at each loss rate, MetaRoCE and RoCEv2 in the
//     same run, and the retained ratio (goodput at loss / at zero loss), with
//     the sending thread's CPU time: goodput per busy core.
//  3. Efficiency: a minimal AF_XDP sender (a tight tx_burst loop of frames
//     the size of MetaRoCE's data packets) through the same fabric node: its
//     payload rate per busy core, and MetaRoCE's goodput per busy core as a
//     fraction of it. And kernel TCP (iperf3, one stream) against MetaRoCE on
//     plane 0 alone, through the same fabric node at the same loss.
//  4. Capture cost: the fabric node's forwarding rate and MetaRoCE's goodput
//     with a capture of every point off and on (a tap drained into a pcapng
//     file by its own thread, as metaroced does), and what the capture wrote
//     and could not write.
//
// Needs root and AF_XDP; otherwise prints SKIPPED with the reason. Figures on
// a shared 2-core machine are noisy in absolute terms: read the ratios.
#include <CLI/CLI.hpp>
#include <array>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <pthread.h>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unistd.h>

#include "metaroce/capture/pcapng.h"
#include "metaroce/datapath/netns.h"
#include "metaroce/datapath/port.h"
#include "metaroce/datapath/worker.h"
#include "metaroce/lab/config.h"
#include "metaroce/lab/ops.h"
#include "metaroce/wire/metaroce.h"

using namespace metaroce;
using datapath::Nanos;
using datapath::Port;
using datapath::PortConfig;
using datapath::ScopedNetns;

namespace {

PortConfig port_config(const std::string& kind, const std::string& ifname, bool bridge, uint32_t index) {
  PortConfig c;
  c.kind = kind;
  c.name = ifname;
  c.ifname = ifname;
  c.frame_size = 2048;
  c.bridge_mode = bridge;
  c.xdp_mode = "skb";
  c.udp_ports = {wire::kDefaultUdpPort, 4791};
  if (kind == "dpdk") {
    c.eal_args = {"--no-huge", "-m", "1024", "--no-shconf", "--file-prefix=mrbench" + std::to_string(getpid()),
                  "--no-pci", "--no-telemetry", "-l", "0", "--log-level=*:warning"};
    c.dpdk_device = "net_af_packet" + std::to_string(index) + ",iface=" + ifname;
  }
  return c;
}

std::unique_ptr<Port> open_in(const std::string& ns, const PortConfig& c) {
  ScopedNetns in(ns);
  std::string err;
  auto p = datapath::open_port(c, &err);
  if (!p) throw std::runtime_error(c.ifname + ": " + err);
  return p;
}

// CPU time a running thread has consumed, in seconds.
double thread_cpu_s(std::thread& t) {
  clockid_t id;
  timespec ts{};
  if (pthread_getcpuclockid(t.native_handle(), &id) != 0 || clock_gettime(id, &ts) != 0) return 0;
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// The payload and UDP payload of one full MetaRoCE WRITE packet in these runs.
constexpr uint32_t kMtuPayload = 1024;
const size_t kDataPacketUdpBytes = wire::packet_bytes(wire::Opcode::kWrite, kMtuPayload);

// One UDP frame host 0 -> host 1 on plane 0 with `udp_payload` bytes after
// the headers: what the generators send.
std::vector<uint8_t> host0_to_host1_frame(const lab::LabConfig& cfg, size_t udp_payload) {
  std::vector<uint8_t> frame(wire::kUdpFrameHeaderBytes + udp_payload);
  wire::UdpFlow flow;
  flow.src_mac = lab::host_mac(cfg, 0, 0);
  flow.dst_mac = lab::host_mac(cfg, 1, 0);
  flow.src_ip = lab::host_ip(cfg, 0, 0);
  flow.dst_ip = lab::host_ip(cfg, 1, 0);
  flow.src_port = 50000;
  flow.dst_port = wire::kDefaultUdpPort;
  wire::encode_udp_headers(frame, flow, wire::Ecn::kEct0, 0, udp_payload);
  return frame;
}

emulator::LinkConfig all_impairments(double loss) {
  emulator::LinkConfig c;
  c.prop_delay_ns = 20'000;
  c.loss.kind = emulator::LossConfig::Kind::kBernoulli;
  c.loss.probability = loss;
  c.delay.jitter_ns = 5'000;
  c.delay.distribution = emulator::DelayConfig::Distribution::kNormal;
  c.duplicate_probability = 0.001;
  c.corrupt_probability = 0.001;
  c.ecn_threshold_bytes = 256 * 1024;
  return c;
}

// ---------------------------------------------------------------- capture

// A capture on a worker, as the daemon runs one: a tap the worker fills and a
// thread that drains it into a pcapng file (deleted afterwards).
class BenchCapture {
 public:
  BenchCapture() : tap_(datapath::CaptureFilter{}, 3640) {  // 32 MiB of 9216-byte slots, as metaroced
    path_ = "/tmp/metaroce-netns-bench-" + std::to_string(getpid()) + ".pcapng";
    writer_ = std::make_unique<capture::PcapngWriter>(path_, std::vector<capture::PcapngInterface>(8, {"plane", 65535}),
                                                      "metaroce_netns_bench");
    thread_ = std::thread([this] {
      while (!stop_) {
        drain();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the daemon's drain period
      }
      drain();
    });
  }
  ~BenchCapture() {
    finish();
    std::remove(path_.c_str());
  }
  // Stops draining after a last pass; the counts stay readable.
  void finish() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
      writer_.reset();
    }
  }
  datapath::CaptureTap* tap() { return &tap_; }
  uint64_t written() const { return written_; }
  uint64_t not_written() const { return tap_.counters().ring_full; }

 private:
  // The daemon's per-frame work (CaptureManager::drain_all): the same comment.
  void drain() {
    std::array<char, datapath::kCaptureCommentBytes> comment;
    tap_.drain([&](const datapath::CaptureRecord& r) {
      if (writer_->write(r.plane, static_cast<uint64_t>(r.time), r.bytes, datapath::capture_comment(r, comment)))
        ++written_;
    });
  }
  datapath::CaptureTap tap_;
  std::string path_;
  std::unique_ptr<capture::PcapngWriter> writer_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> written_{0};
  std::thread thread_;
};

// ---------------------------------------------------------------- forwarding

struct ForwardResult {
  std::string ports, forwarder;
  double offered_pps = 0, delivered_pps = 0;
  uint64_t captured = 0, capture_not_written = 0;  // with_capture: frames written to the file, and not
};

// with_capture (FabricNode modes): a capture of every point runs on the node.
ForwardResult forwarding(const lab::LabConfig& cfg, const std::string& kind, const std::string& mode, double seconds,
                         uint32_t dpdk_index, bool with_capture = false) {
  std::unique_ptr<BenchCapture> cap;
  if (with_capture) cap = std::make_unique<BenchCapture>();
  const std::string fab = lab::fabric_netns(cfg.name);
  std::atomic<bool> stop{false}, sink_ready{false}, fwd_ready{false};
  std::atomic<uint64_t> sent{0}, received{0};
  std::string error;
  std::thread sink([&] {
    try {
      auto port = open_in(lab::host_netns(cfg.name, 1), port_config("afxdp", "p0", false, 0));
      sink_ready = true;
      datapath::RxFrame rx[64];
      while (!stop) received += port->rx_burst(rx);
    } catch (const std::exception& e) {
      error = e.what();
      sink_ready = true;
    }
  });
  std::thread fwd([&] {
    try {
      ScopedNetns in(fab);
      auto a = open_in(fab, port_config(kind, lab::fabric_ifname(0, 0), true, dpdk_index));
      auto b = open_in(fab, port_config(kind, lab::fabric_ifname(1, 0), true, dpdk_index + 1));
      if (mode == "minimal") {
        fwd_ready = true;
        datapath::RxFrame rx[64];
        std::span<const uint8_t> out[64];
        while (!stop) {
          const size_t n = a->rx_burst(rx);
          for (size_t i = 0; i < n; ++i) out[i] = {rx[i].data, rx[i].len};
          if (n) b->tx_burst({out, n});
          b->flush();
        }
        return;
      }
      datapath::FabricNode::Config c;
      c.fabric.hosts = 2;
      c.fabric.planes = 1;
      c.fabric.port.prop_delay_ns = 0;
      if (mode == "impaired") c.fabric.ecmp = all_impairments(0.01);
      else c.fabric.ecmp.prop_delay_ns = 0;
      c.host_macs = {{lab::host_mac(cfg, 0, 0), lab::host_mac(cfg, 1, 0)}};
      c.frame_size = 2048;
      c.idle.busy_poll = true;
      std::vector<std::vector<Port*>> ports{{a.get(), b.get()}};
      datapath::FabricNode node(c, ports);
      if (cap) node.set_capture(cap->tap());
      fwd_ready = true;
      node.run(stop, {});
    } catch (const std::exception& e) {
      error = e.what();
      fwd_ready = true;
    }
  });
  while (!sink_ready || !fwd_ready) std::this_thread::yield();
  ForwardResult r{kind, mode};
  if (!error.empty()) {
    stop = true;
    sink.join();
    fwd.join();
    throw std::runtime_error(error);
  }
  std::thread gen([&] {
    auto port = open_in(lab::host_netns(cfg.name, 0), port_config("afxdp", "p0", false, 0));
    const std::vector<uint8_t> frame = host0_to_host1_frame(cfg, 64);
    std::span<const uint8_t> burst[32];
    for (auto& f : burst) f = frame;
    const Nanos end = datapath::monotonic_ns() + static_cast<Nanos>(seconds * 1e9);
    while (datapath::monotonic_ns() < end) {
      sent += port->tx_burst(burst);
      port->flush();
    }
  });
  gen.join();
  const uint64_t got_at_end = received;
  stop = true;
  sink.join();
  fwd.join();
  r.offered_pps = sent / seconds;
  r.delivered_pps = got_at_end / seconds;
  if (cap) {
    cap->finish();
    r.captured = cap->written();
    r.capture_not_written = cap->not_written();
  }
  return r;
}

// ---------------------------------------------------------------- fabric node

// The fabric node in the lab's fabric namespace, on its own thread: the
// first `planes` planes, 10 us of delay and `loss` on the ECMP links, no rate
// limit. The constructor returns once it runs (or throws why it could not);
// the destructor stops it.
class FabricThread {
 public:
  FabricThread(const lab::LabConfig& cfg, uint32_t planes, double loss) {
    thread_ = std::thread([this, &cfg, planes, loss] {
      try {
        const std::string fab = lab::fabric_netns(cfg.name);
        ScopedNetns in(fab);
        std::vector<std::unique_ptr<Port>> owned;
        std::vector<std::vector<Port*>> ports(planes, std::vector<Port*>(2));
        for (uint32_t p = 0; p < planes; ++p)
          for (uint32_t h = 0; h < 2; ++h) {
            owned.push_back(open_in(fab, port_config("afxdp", lab::fabric_ifname(h, p), true, 0)));
            ports[p][h] = owned.back().get();
          }
        datapath::FabricNode::Config c;
        c.fabric.hosts = 2;
        c.fabric.planes = planes;
        c.fabric.port.prop_delay_ns = 0;
        c.fabric.ecmp.prop_delay_ns = 10'000;
        c.fabric.ecmp.loss_probability = loss;
        for (uint32_t p = 0; p < planes; ++p) c.host_macs.push_back({lab::host_mac(cfg, 0, p), lab::host_mac(cfg, 1, p)});
        c.frame_size = 2048;
        datapath::FabricNode node(c, ports);
        ready_ = true;
        node.run(stop_, {});
      } catch (const std::exception& e) {
        error_ = e.what();
        ready_ = true;
      }
    });
    while (!ready_) std::this_thread::yield();
    if (!error_.empty()) {
      thread_.join();
      throw std::runtime_error(error_);
    }
  }
  ~FabricThread() {
    stop_ = true;
    thread_.join();
  }
  FabricThread(const FabricThread&) = delete;
  FabricThread& operator=(const FabricThread&) = delete;

 private:
  std::atomic<bool> stop_{false}, ready_{false};
  std::string error_;
  std::thread thread_;
};

// ---------------------------------------------------------------- goodput

struct GoodputResult {
  std::string transport;
  uint32_t planes = 0;
  double loss = 0, goodput_gbps = 0, retained = 0;
  double sender_cores = 0;  // the sending endpoint thread's CPU time / the window
  uint64_t messages = 0, retransmits = 0, verify_failures = 0, errors = 0;
  double gbps_per_core() const { return sender_cores > 0 ? goodput_gbps / sender_cores : 0; }
};

// planes_used: the connection's planes (the first ones); 0 for all.
// with_capture: a capture of every frame the sending endpoint sends and receives.
GoodputResult goodput(const lab::LabConfig& cfg, transport::TransportKind kind, double loss, double seconds,
                      uint32_t planes_used = 0, BenchCapture* with_capture = nullptr) {
  const uint32_t P = cfg.planes;
  const uint32_t used = planes_used == 0 ? P : std::min(planes_used, P);
  std::atomic<bool> stop_hosts{false};
  FabricThread fabric(cfg, P, loss);
  // Endpoints: one MetaRoCE connection with a path per plane, or one RoCEv2 QP per plane.
  transport::EndpointConfig ea, eb;
  ea.ip = lab::host_ip(cfg, 0, 0), ea.mac = lab::host_mac(cfg, 0, 0);
  eb.ip = lab::host_ip(cfg, 1, 0), eb.mac = lab::host_mac(cfg, 1, 0);
  transport::Endpoint a(ea), b(eb);
  std::vector<uint32_t> conns;
  auto connect = [&](uint32_t id, std::vector<transport::PathConfig> paths) {
    transport::ConnectionConfig c;
    c.transport = kind;
    c.local_id = id;
    c.remote_id = id + 100;
    c.peer_ip = eb.ip;
    c.peer_mac = eb.mac;
    c.paths = paths;
    c.mtu_payload = kMtuPayload;
    c.max_message_bytes = 64 * 1024;
    c.max_outstanding_per_stream = 16;
    c.tuning.min_rto_ns = transport::kParamMinRto.default_value;  // a host's real clock, as the daemon's
    c.tuning.min_pto_ns = transport::kParamMinPto.default_value;
    transport::ConnectionConfig d = c;
    std::swap(d.local_id, d.remote_id);
    d.peer_ip = ea.ip;
    d.peer_mac = ea.mac;
    std::string err;
    if (!a.create_connection(c, &err) || !b.create_connection(d, &err)) throw std::runtime_error(err);
    conns.push_back(id);
  };
  if (kind == transport::TransportKind::kMetaRoCE) {
    std::vector<transport::PathConfig> paths;
    for (uint32_t p = 0; p < used; ++p) paths.push_back({static_cast<uint8_t>(p), static_cast<uint16_t>(50000 + p)});
    connect(1, paths);
  } else {
    for (uint32_t p = 0; p < used; ++p) connect(1 + p, {{static_cast<uint8_t>(p), static_cast<uint16_t>(50000 + p)}});
  }
  constexpr uint32_t kMsg = 64 * 1024, kSlots = 32, kDepth = 16;
  const size_t lane = static_cast<size_t>(kSlots) * kMsg;
  std::vector<uint8_t> src(lane * conns.size()), dst(lane * conns.size(), 0xEE);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  const uint32_t ks = *a.register_memory(src.data(), src.size(), 0);
  const uint32_t kd = *b.register_memory(dst.data(), dst.size(), transport::kAccessRemoteWrite);
  GoodputResult r{transport::transport_name(kind), used, loss};
  std::atomic<uint64_t> bytes_window{0};
  std::atomic<bool> measuring{false};
  std::vector<uint32_t> next_slot(conns.size(), 0), inflight(conns.size(), 0);
  auto post = [&](size_t ci) {
    const uint32_t slot = next_slot[ci]++ % kSlots;
    const size_t off = ci * lane + static_cast<size_t>(slot) * kMsg;
    transport::WorkRequest wr{(ci << 32) | slot, transport::Verb::kWrite, reinterpret_cast<uint64_t>(&src[off]), ks,
                              kMsg, reinterpret_cast<uint64_t>(&dst[off]), kd};
    if (a.post(conns[ci], 0, wr) == transport::PostError::kOk) inflight[ci]++;
  };
  for (size_t ci = 0; ci < conns.size(); ++ci)
    for (uint32_t i = 0; i < kDepth; ++i) post(ci);
  auto host = [&](transport::Endpoint& ep, uint32_t h, std::function<void(Nanos)> iter) {
    std::vector<std::unique_ptr<Port>> owned;
    std::vector<Port*> ports;
    for (uint32_t p = 0; p < P; ++p) {
      owned.push_back(open_in(lab::host_netns(cfg.name, h), port_config("afxdp", lab::host_ifname(p), false, 0)));
      ports.push_back(owned.back().get());
    }
    datapath::EndpointWorker w(ep, ports);
    if (h == 0 && with_capture) w.set_capture(with_capture->tap());
    w.run(stop_hosts, iter);
  };
  auto a_iter = [&](Nanos) {
    transport::Completion wc[32];
    size_t n;
    while ((n = a.poll_completions(wc)) > 0)
      for (size_t i = 0; i < n; ++i) {
        const size_t ci = wc[i].wr_id >> 32, slot = wc[i].wr_id & 0xFFFFFFFF;
        inflight[ci]--;
        if (wc[i].status != transport::WcStatus::kSuccess) {
          r.errors++;
          continue;
        }
        const size_t off = ci * lane + slot * kMsg;
        if (std::memcmp(&dst[off], &src[off], kMsg) != 0) r.verify_failures++;
        std::memset(&dst[off], 0xEE, kMsg);
        r.messages++;
        if (measuring) bytes_window += kMsg;
        post(ci);
      }
  };
  std::thread tb(host, std::ref(b), 1, nullptr);
  std::thread ta(host, std::ref(a), 0, a_iter);
  const double warmup = std::min(0.3, seconds / 4);
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup));  // benchmark pacing, not synchronisation
  measuring = true;
  const Nanos t0 = datapath::monotonic_ns();
  const double cpu0 = thread_cpu_s(ta);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds - warmup));
  measuring = false;
  const double window = (datapath::monotonic_ns() - t0) / 1e9;
  r.sender_cores = (thread_cpu_s(ta) - cpu0) / window;
  stop_hosts = true;
  ta.join();
  tb.join();
  r.goodput_gbps = 8.0 * bytes_window / window / 1e9;
  for (uint32_t c : conns) r.retransmits += a.stats(c).retransmits;
  return r;
}

// ---------------------------------------------------------------- efficiency

struct RawSendResult {
  double offered_gbps = 0, delivered_gbps = 0;  // payload bits (as MetaRoCE's data packets carry)
  double sender_cores = 0;
  double gbps_per_core() const { return sender_cores > 0 ? delivered_gbps / sender_cores : 0; }
};

// A minimal AF_XDP sender on host 0's plane-0 port: tx_burst of frames the
// size of a full MetaRoCE data packet, as fast as it can, through a clean
// fabric node to a sink on host 1. What a transport could send per core if
// it did nothing but hand the port frames.
RawSendResult raw_sender(const lab::LabConfig& cfg, double seconds) {
  FabricThread fabric(cfg, 1, 0.0);
  std::atomic<bool> stop{false}, ready_sink{false};
  std::atomic<uint64_t> received{0};
  std::string error;
  std::thread sink([&] {
    try {
      auto port = open_in(lab::host_netns(cfg.name, 1), port_config("afxdp", lab::host_ifname(0), false, 0));
      ready_sink = true;
      datapath::RxFrame rx[64];
      while (!stop) received += port->rx_burst(rx);
    } catch (const std::exception& e) {
      error = e.what();
      ready_sink = true;
    }
  });
  while (!ready_sink) std::this_thread::yield();
  std::atomic<uint64_t> sent{0};
  uint64_t sent_in_window = 0;
  std::thread gen([&] {
    try {
      auto port = open_in(lab::host_netns(cfg.name, 0), port_config("afxdp", lab::host_ifname(0), false, 0));
      const std::vector<uint8_t> frame = host0_to_host1_frame(cfg, kDataPacketUdpBytes);
      std::span<const uint8_t> burst[32];
      for (auto& f : burst) f = frame;
      while (!stop) {
        const size_t n = port->tx_burst(burst);
        port->flush();
        sent += n;
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  const double warmup = std::min(0.3, seconds / 4);
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup));  // benchmark pacing, not synchronisation
  const uint64_t sent0 = sent, got0 = received;
  const double cpu0 = thread_cpu_s(gen);
  const Nanos t0 = datapath::monotonic_ns();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds - warmup));
  const double window = (datapath::monotonic_ns() - t0) / 1e9;
  const double cpu = thread_cpu_s(gen) - cpu0;
  sent_in_window = sent - sent0;
  const uint64_t got = received - got0;
  stop = true;
  gen.join();
  sink.join();
  if (!error.empty()) throw std::runtime_error(error);
  RawSendResult r;
  r.offered_gbps = 8.0 * kMtuPayload * sent_in_window / window / 1e9;
  r.delivered_gbps = 8.0 * kMtuPayload * got / window / 1e9;
  r.sender_cores = cpu / window;
  return r;
}

struct TcpResult {
  bool ran = false;
  std::string why_not;
  double goodput_gbps = 0, retransmits = 0;
};

// Kernel TCP (iperf3, one stream) host 0 -> host 1 over plane 0 through the
// fabric node (the only plane on which it forwards kernel traffic), at `loss`
// on its ECMP links, as in goodput().
TcpResult kernel_tcp(const lab::LabConfig& cfg, double loss, double seconds) {
  TcpResult r;
  if (std::system("command -v iperf3 >/dev/null 2>&1") != 0) {
    r.why_not = "iperf3 is not installed";
    return r;
  }
  std::optional<FabricThread> fabric;
  fabric.emplace(cfg, 1, loss);
  const std::string h0 = lab::host_netns(cfg.name, 0), h1 = lab::host_netns(cfg.name, 1);
  const std::string server_ip = lab::ip_to_string(lab::host_ip(cfg, 1, 0));
  const std::string out = "/tmp/" + cfg.name + "-iperf3.json";
  // One-shot server (-1) in host 1; the client starts once it listens (checked
  // with ss, for at most 5 s), and retries a refused connect a few times.
  const std::string server = "ip netns exec " + h1 + " iperf3 -s -1 -p 5301 >/dev/null 2>&1 &";
  std::system(server.c_str());
  const std::string listening = "ip netns exec " + h1 + " ss -Hltn 'sport = :5301' | grep -q .";
  for (int i = 0; i < 50 && std::system(listening.c_str()) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling a process we started, bounded
  int rc = 1;
  for (int attempt = 0; attempt < 5 && rc != 0; ++attempt) {
    const std::string client = "ip netns exec " + h0 + " iperf3 -c " + server_ip + " -p 5301 -J --connect-timeout 500 -t " +
                               std::to_string(std::max(1, static_cast<int>(seconds))) + " > " + out + " 2>/dev/null";
    rc = std::system(client.c_str());
  }
  fabric.reset();
  std::system(("pkill -f 'iperf3 -s -1 -p 5301' >/dev/null 2>&1; true"));
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  std::remove(out.c_str());
  if (rc != 0 || !j.is_object() || !j.contains("end") || !j["end"].contains("sum_received")) {
    r.why_not = "iperf3 did not complete through the fabric node";
    if (j.is_object() && j.contains("error") && j["error"].is_string()) r.why_not += ": " + j["error"].get<std::string>();
    return r;
  }
  r.ran = true;
  r.goodput_gbps = j["end"]["sum_received"].value("bits_per_second", 0.0) / 1e9;
  r.retransmits = j["end"]["sum_sent"].value("retransmits", 0.0);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fabric-node forwarding rate and MetaRoCE vs RoCEv2 goodput on real packets in a netns lab"};
  uint32_t planes = 4;
  double seconds = 2;
  std::string losses_text = "0,0.01,0.1", json_path;
  bool no_forwarding = false, no_goodput = false, no_efficiency = false, no_capture = false;
  double tcp_loss = 0.01;
  app.add_option("--planes", planes, "planes for the goodput runs")->check(CLI::Range(1u, 8u));
  app.add_option("--seconds", seconds, "length of each run")->check(CLI::Range(0.5, 60.0));
  app.add_option("--losses", losses_text, "loss rates for the goodput runs");
  app.add_flag("--no-forwarding", no_forwarding, "skip the forwarding runs");
  app.add_flag("--no-goodput", no_goodput, "skip the goodput runs");
  app.add_flag("--no-efficiency", no_efficiency, "skip the raw-sender and kernel-TCP comparisons");
  app.add_flag("--no-capture", no_capture, "skip the capture-cost runs (capture off and on)");
  app.add_option("--tcp-loss", tcp_loss, "loss for the kernel TCP vs MetaRoCE comparison")->check(CLI::Range(0.0, 0.5));
  app.add_option("--json", json_path, "write the results as JSON");
  CLI11_PARSE(app, argc, argv);
  std::vector<double> losses;
  for (size_t pos = 0; pos <= losses_text.size();) {
    const size_t comma = std::min(losses_text.find(',', pos), losses_text.size());
    losses.push_back(std::stod(losses_text.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  if (geteuid() != 0) {
    std::printf("SKIPPED: needs root (network namespaces, AF_XDP)\n");
    return 0;
  }
  const auto kinds = datapath::supported_port_kinds();
  if (std::find(kinds.begin(), kinds.end(), "afxdp") == kinds.end()) {
    std::printf("SKIPPED: AF_XDP port not built\n");
    return 0;
  }
  lab::LabConfig cfg;
  cfg.name = "mrb" + std::to_string(getpid() % 10000);
  cfg.hosts = 2;
  cfg.planes = planes;
  cfg.mtu = 1500;
  for (uint32_t p = 0; p < planes; ++p) cfg.subnets.push_back({(10u << 24) | ((180u + p) << 16), 24});
  lab::Ip ip;
  std::string err;
  lab::UpReport report;
  if (!lab::lab_up(cfg, ip, &report, &err)) {
    std::printf("SKIPPED: cannot bring the lab up: %s\n", err.c_str());
    lab::lab_down(cfg.name, ip, nullptr, &err);
    return 0;
  }
  nlohmann::json out = {{"forwarding", nlohmann::json::array()}, {"goodput", nlohmann::json::array()}};
  double metaroce_per_core = 0;  // at zero loss over all planes, from the goodput runs
  int rc = 0;
  try {
    if (!no_forwarding) {
      std::printf("Forwarding through the fabric namespace (64 B payload, one plane, %.1f s each)\n", seconds);
      std::printf("%-6s %-10s %14s %14s %8s\n", "ports", "forwarder", "offered_pps", "delivered_pps", "vs_min");
      std::vector<std::string> port_kinds{"afxdp"};
      if (std::find(kinds.begin(), kinds.end(), "dpdk") != kinds.end()) port_kinds.push_back("dpdk");
      uint32_t dpdk_index = 0;
      for (const auto& k : port_kinds) {
        double minimal = 0;
        for (const char* mode : {"minimal", "clean", "impaired"}) {
          const ForwardResult f = forwarding(cfg, k, mode, seconds, dpdk_index);
          dpdk_index += 2;
          if (std::string(mode) == "minimal") minimal = f.delivered_pps;
          const double ratio = minimal > 0 ? f.delivered_pps / minimal : 0;
          std::printf("%-6s %-10s %14.0f %14.0f %8.3f\n", k.c_str(), mode, f.offered_pps, f.delivered_pps, ratio);
          out["forwarding"].push_back({{"ports", k}, {"forwarder", mode}, {"offered_pps", f.offered_pps},
                                       {"delivered_pps", f.delivered_pps}, {"vs_minimal", ratio}});
        }
      }
    }
    if (!no_goodput) {
      std::printf("\nGoodput host0 -> host1 over %u planes through the fabric node (64 KiB WRITEs, verified)\n", planes);
      std::printf("%-9s %7s %10s %9s %10s %9s %8s %6s %10s\n", "transport", "loss", "goodput", "retained", "messages",
                  "retransmit", "verified", "cores", "Gb/s/core");
      for (auto t : {transport::TransportKind::kMetaRoCE, transport::TransportKind::kRoCEv2}) {
        double base = 0;
        for (double l : losses) {
          GoodputResult g = goodput(cfg, t, l, seconds);
          if (l == 0) base = g.goodput_gbps;
          g.retained = base > 0 ? g.goodput_gbps / base : 0;
          const bool ok = g.verify_failures == 0 && g.errors == 0 && g.messages > 0;
          rc |= ok ? 0 : 1;
          std::printf("%-9s %6.2f%% %6.3f Gb %9.3f %10llu %9llu %8s %6.2f %10.3f\n", g.transport.c_str(), l * 100,
                      g.goodput_gbps, g.retained, static_cast<unsigned long long>(g.messages),
                      static_cast<unsigned long long>(g.retransmits), ok ? "yes" : "NO", g.sender_cores,
                      g.gbps_per_core());
          if (l == 0 && t == transport::TransportKind::kMetaRoCE) metaroce_per_core = g.gbps_per_core();
          out["goodput"].push_back({{"transport", g.transport}, {"loss", l}, {"planes", planes},
                                    {"goodput_gbps", g.goodput_gbps}, {"retained", g.retained},
                                    {"messages", g.messages}, {"retransmits", g.retransmits},
                                    {"data_verified", ok}, {"sender_cores", g.sender_cores},
                                    {"goodput_gbps_per_core", g.gbps_per_core()}});
        }
      }
    }
    if (!no_efficiency) {
      std::printf("\nEfficiency: payload per busy core of the sending thread (%u B packets, AF_XDP)\n", kMtuPayload);
      const RawSendResult raw = raw_sender(cfg, seconds);
      nlohmann::json e = {{"raw_sender", {{"offered_gbps", raw.offered_gbps},
                                          {"delivered_gbps", raw.delivered_gbps},
                                          {"sender_cores", raw.sender_cores},
                                          {"delivered_gbps_per_core", raw.gbps_per_core()}}}};
      std::printf("%-34s %10s %6s %10s\n", "sender", "delivered", "cores", "Gb/s/core");
      std::printf("%-34s %7.3f Gb %6.2f %10.3f\n", "minimal AF_XDP sender (plane 0)", raw.delivered_gbps,
                  raw.sender_cores, raw.gbps_per_core());
      if (!no_goodput) {
        const double ratio = raw.gbps_per_core() > 0 ? metaroce_per_core / raw.gbps_per_core() : 0;
        std::printf("%-34s %10s %6s %10.3f  (%.2f x the minimal sender; goal >= 0.80)\n",
                    "MetaRoCE, 0% loss, all planes", "", "", metaroce_per_core, ratio);
        e["metaroce_gbps_per_core"] = metaroce_per_core;
        e["metaroce_vs_raw_per_core"] = ratio;
      }
      std::printf("\nKernel TCP (iperf3, one stream) vs MetaRoCE on plane 0 alone, %.1f%% loss, same fabric node\n",
                  tcp_loss * 100);
      const TcpResult tcp = kernel_tcp(cfg, tcp_loss, seconds);
      const GoodputResult mr = goodput(cfg, transport::TransportKind::kMetaRoCE, tcp_loss, seconds, 1);
      std::printf("%-34s %10s %10s\n", "transport", "goodput", "retransmit");
      if (tcp.ran)
        std::printf("%-34s %7.3f Gb %10.0f\n", "kernel TCP (iperf3)", tcp.goodput_gbps, tcp.retransmits);
      else
        std::printf("%-34s %10s  SKIPPED: %s\n", "kernel TCP (iperf3)", "-", tcp.why_not.c_str());
      std::printf("%-34s %7.3f Gb %10llu\n", "MetaRoCE (1 plane)", mr.goodput_gbps,
                  static_cast<unsigned long long>(mr.retransmits));
      if (tcp.ran && tcp.goodput_gbps > 0)
        std::printf("MetaRoCE / kernel TCP: %.2f (goal >= 1)\n", mr.goodput_gbps / tcp.goodput_gbps);
      e["tcp"] = {{"loss", tcp_loss}, {"ran", tcp.ran}, {"why_not", tcp.why_not}, {"goodput_gbps", tcp.goodput_gbps},
                  {"retransmits", tcp.retransmits}, {"metaroce_one_plane_gbps", mr.goodput_gbps},
                  {"metaroce_vs_tcp", tcp.ran && tcp.goodput_gbps > 0 ? mr.goodput_gbps / tcp.goodput_gbps : 0.0}};
      rc |= (mr.verify_failures == 0 && mr.errors == 0 && mr.messages > 0) ? 0 : 1;
      out["efficiency"] = e;
    }
    if (!no_capture) {
      // The same runs with capture off and on, one after the other in this run.
      std::printf("\nCapture cost: capture off and on, every point, into a pcapng file (%.1f s each)\n", seconds);
      std::printf("%-40s %14s %14s %8s %12s %12s\n", "run", "off", "on", "on/off", "captured", "not_written");
      const ForwardResult f_off = forwarding(cfg, "afxdp", "clean", seconds, 0);
      const ForwardResult f_on = forwarding(cfg, "afxdp", "clean", seconds, 0, true);
      const double f_ratio = f_off.delivered_pps > 0 ? f_on.delivered_pps / f_off.delivered_pps : 0;
      std::printf("%-40s %10.0f pps %10.0f pps %8.3f %12llu %12llu\n", "fabric node forwarding (64 B, 1 plane)",
                  f_off.delivered_pps, f_on.delivered_pps, f_ratio, static_cast<unsigned long long>(f_on.captured),
                  static_cast<unsigned long long>(f_on.capture_not_written));
      const GoodputResult g_off = goodput(cfg, transport::TransportKind::kMetaRoCE, 0, seconds);
      BenchCapture cap;
      const GoodputResult g_on = goodput(cfg, transport::TransportKind::kMetaRoCE, 0, seconds, 0, &cap);
      cap.finish();
      const double g_ratio = g_off.goodput_gbps > 0 ? g_on.goodput_gbps / g_off.goodput_gbps : 0;
      std::printf("%-40s %11.3f Gb %11.3f Gb %8.3f %12llu %12llu\n", "MetaRoCE goodput, sender captured",
                  g_off.goodput_gbps, g_on.goodput_gbps, g_ratio, static_cast<unsigned long long>(cap.written()),
                  static_cast<unsigned long long>(cap.not_written()));
      out["capture"] = {{"forwarding_pps_off", f_off.delivered_pps}, {"forwarding_pps_on", f_on.delivered_pps},
                        {"forwarding_on_vs_off", f_ratio}, {"forwarding_captured", f_on.captured},
                        {"forwarding_not_written", f_on.capture_not_written},
                        {"goodput_gbps_off", g_off.goodput_gbps}, {"goodput_gbps_on", g_on.goodput_gbps},
                        {"goodput_on_vs_off", g_ratio}, {"goodput_captured", cap.written()},
                        {"goodput_not_written", cap.not_written()}};
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    rc = 1;
  }
  lab::lab_down(cfg.name, ip, nullptr, &err);
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return rc;
}
