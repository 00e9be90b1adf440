// metaroce_engine_bench: the transport engine's own ceiling. Two endpoints in
// one thread exchange frames through memory (no kernel, no ports, no
// emulator): a saturating WRITE stream, every frame handed straight to the
// peer. Prints, per transport and payload size, data packets and goodput per
// second of CPU time on the one core that runs both ends (both ends' work is
// counted, so a real host running one end does at least this much), and the
// ratio MetaRoCE / RoCEv2 measured in the same run. --json FILE writes the
// same rows for machines.
//
// The written data is compared with its source at the end ("verified"), so a
// fast but wrong engine does not read as fast.
#include <CLI/CLI.hpp>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "metaroce/transport/endpoint.h"
#include "metaroce/wire/metaroce.h"

namespace {

using namespace metaroce;
using transport::TransportKind;

// MetaRoCE's published per-core goal for this benchmark (issue: efficiency).
constexpr double kGoalPacketsPerCoreMetaRoce = 2e6;

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

transport::Nanos now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Options {
  double seconds = 1.0;
  uint32_t message_bytes = 65536;
  uint32_t depth = 16;
  uint32_t paths = 8;
  uint32_t planes = 4;
  std::vector<uint32_t> payloads = {1024, 4096};
  std::string json;
};

struct Row {
  std::string transport;
  uint32_t payload = 0;
  double cpu_s = 0, wall_s = 0;
  uint64_t data_packets = 0, frames = 0, bytes = 0, messages = 0, retransmits = 0;
  bool verified = false;
  double packets_per_core_s() const { return cpu_s > 0 ? static_cast<double>(data_packets) / cpu_s : 0; }
  double frames_per_core_s() const { return cpu_s > 0 ? static_cast<double>(frames) / cpu_s : 0; }
  double gbps_per_core() const { return cpu_s > 0 ? 8.0 * static_cast<double>(bytes) / cpu_s / 1e9 : 0; }
};

Row run(TransportKind kind, uint32_t payload, const Options& o) {
  transport::EndpointConfig ea, eb;
  ea.ip = 0x0A000001, ea.mac = {0x02, 0, 0, 0, 0, 1};
  eb.ip = 0x0A000002, eb.mac = {0x02, 0, 0, 0, 0, 2};
  transport::Endpoint a(ea), b(eb);

  transport::ConnectionConfig ca;
  ca.transport = kind;
  ca.local_id = 11;
  ca.remote_id = 22;
  ca.peer_ip = eb.ip;
  ca.peer_mac = eb.mac;
  const uint32_t paths = kind == TransportKind::kMetaRoCE ? o.paths : 1;
  for (uint32_t i = 0; i < paths; ++i)
    ca.paths.push_back({static_cast<uint8_t>(i % o.planes), static_cast<uint16_t>(49152 + i)});
  ca.max_outstanding_per_stream = o.depth;
  ca.recv_window_messages = std::max<uint32_t>(128, o.depth);
  ca.max_message_bytes = o.message_bytes;
  ca.mtu_payload = payload;
  transport::ConnectionConfig cb = ca;
  std::swap(cb.local_id, cb.remote_id);
  cb.peer_ip = ea.ip;
  cb.peer_mac = ea.mac;
  std::string err;
  if (!a.create_connection(ca, &err) || !b.create_connection(cb, &err)) throw std::runtime_error("connection: " + err);

  const size_t region = static_cast<size_t>(o.message_bytes) * o.depth;
  std::vector<uint8_t> src(region), dst(region, 0);
  for (size_t i = 0; i < region; ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  const uint32_t lkey = *a.register_memory(src.data(), region, transport::kAccessLocalWrite);
  const uint32_t rkey = *b.register_memory(dst.data(), region, transport::kAccessLocalWrite | transport::kAccessRemoteWrite);
  auto post = [&](uint32_t slot) {
    transport::WorkRequest wr;
    wr.wr_id = slot;
    wr.verb = transport::Verb::kWrite;
    wr.local_addr = reinterpret_cast<uint64_t>(src.data() + static_cast<size_t>(slot) * o.message_bytes);
    wr.lkey = lkey;
    wr.length = o.message_bytes;
    wr.remote_addr = reinterpret_cast<uint64_t>(dst.data() + static_cast<size_t>(slot) * o.message_bytes);
    wr.rkey = rkey;
    return a.post(ca.local_id, 0, wr) == transport::PostError::kOk;
  };
  for (uint32_t s = 0; s < o.depth; ++s)
    if (!post(s)) throw std::runtime_error("post failed");

  // Frame buffers: one burst per direction, reused.
  constexpr size_t kBurst = 32, kFrameBytes = 9216;
  std::vector<uint8_t> buffers(2 * kBurst * kFrameBytes);
  transport::TxFrame burst_a[kBurst], burst_b[kBurst];
  for (size_t i = 0; i < kBurst; ++i) {
    burst_a[i].data = buffers.data() + i * kFrameBytes, burst_a[i].capacity = kFrameBytes;
    burst_b[i].data = buffers.data() + (kBurst + i) * kFrameBytes, burst_b[i].capacity = kFrameBytes;
  }

  Row row;
  row.transport = kind == TransportKind::kMetaRoCE ? "metaroce" : "rocev2";
  row.payload = payload;
  const double cpu0 = thread_cpu_s();
  const auto wall0 = std::chrono::steady_clock::now();
  const auto until = wall0 + std::chrono::duration<double>(o.seconds);
  transport::Completion wc[64];
  uint64_t iterations = 0;
  for (;;) {
    const transport::Nanos now = now_ns();
    const size_t n = a.poll_tx(burst_a, ~0ull, now);
    for (size_t i = 0; i < n; ++i) b.on_frame({burst_a[i].data, burst_a[i].len}, now);
    const size_t m = b.poll_tx(burst_b, ~0ull, now);
    for (size_t i = 0; i < m; ++i) a.on_frame({burst_b[i].data, burst_b[i].len}, now);
    row.frames += n + m;
    size_t c;
    while ((c = a.poll_completions(wc)) > 0)
      for (size_t i = 0; i < c; ++i) {
        if (wc[i].status != transport::WcStatus::kSuccess)
          throw std::runtime_error(std::string("completion error: ") + transport::wc_status_name(wc[i].status));
        ++row.messages;
        row.bytes += wc[i].byte_len ? wc[i].byte_len : o.message_bytes;
        if (!post(static_cast<uint32_t>(wc[i].wr_id))) throw std::runtime_error("repost failed");
      }
    while (b.poll_completions(wc) > 0) {
    }
    if ((++iterations & 63) == 0 && std::chrono::steady_clock::now() >= until) break;
  }
  row.cpu_s = thread_cpu_s() - cpu0;
  row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const transport::ConnectionStats st = a.stats(ca.local_id);
  row.data_packets = st.data_packets_sent;
  row.retransmits = st.retransmits;
  // Every slot has been written at least once (messages >= depth): dst == src.
  row.verified = row.messages >= o.depth && std::memcmp(src.data(), dst.data(), region) == 0;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"metaroce_engine_bench: transport engine packets and Gb/s per core, two endpoints through memory"};
  app.add_option("--seconds", o.seconds, "per configuration")->check(CLI::Range(0.05, 60.0));
  app.add_option("--message", o.message_bytes, "WRITE size, bytes")->check(CLI::Range(1u, 1u << 24));
  app.add_option("--depth", o.depth, "WRITEs outstanding")->check(CLI::Range(1u, 1024u));
  app.add_option("--paths", o.paths, "MetaRoCE paths")->check(CLI::Range(1u, 64u));
  app.add_option("--payloads", o.payloads, "payload bytes per packet")->check(CLI::Range(64u, 8192u));
  app.add_option("--json", o.json, "write the rows as JSON to this file");
  CLI11_PARSE(app, argc, argv);

  std::vector<Row> rows;
  for (uint32_t p : o.payloads)
    for (TransportKind k : {TransportKind::kMetaRoCE, TransportKind::kRoCEv2}) {
      try {
        rows.push_back(run(k, p, o));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "metaroce_engine_bench: %s, payload %u: %s\n",
                     k == TransportKind::kMetaRoCE ? "metaroce" : "rocev2", p, e.what());
        return 1;
      }
    }

  std::printf("%-9s %7s %14s %14s %12s %9s %8s %9s\n", "transport", "payload", "data pkts/core", "frames/core",
              "Gb/s/core", "cpu s", "retx", "verified");
  for (const Row& r : rows)
    std::printf("%-9s %7u %12.3f M %12.3f M %12.2f %9.2f %8llu %9s\n", r.transport.c_str(), r.payload,
                r.packets_per_core_s() / 1e6, r.frames_per_core_s() / 1e6, r.gbps_per_core(), r.cpu_s,
                static_cast<unsigned long long>(r.retransmits), r.verified ? "yes" : "NO");
  nlohmann::json j = nlohmann::json::array();
  bool ok = true;
  for (size_t i = 0; i + 1 < rows.size(); i += 2) {
    const Row &m = rows[i], &r = rows[i + 1];
    const double ratio = r.gbps_per_core() > 0 ? m.gbps_per_core() / r.gbps_per_core() : 0;
    const bool goal = m.packets_per_core_s() >= kGoalPacketsPerCoreMetaRoce;
    std::printf("payload %u: MetaRoCE / RoCEv2 goodput per core %.2f; MetaRoCE %s the goal of %.0f M packets/s per core\n",
                m.payload, ratio, goal ? "meets" : "DOES NOT meet", kGoalPacketsPerCoreMetaRoce / 1e6);
    ok = ok && m.verified && r.verified;
  }
  for (const Row& r : rows)
    j.push_back({{"transport", r.transport},
                 {"payload_bytes", r.payload},
                 {"message_bytes", o.message_bytes},
                 {"cpu_s", r.cpu_s},
                 {"wall_s", r.wall_s},
                 {"data_packets", r.data_packets},
                 {"frames", r.frames},
                 {"bytes", r.bytes},
                 {"messages", r.messages},
                 {"retransmits", r.retransmits},
                 {"data_packets_per_core_s", r.packets_per_core_s()},
                 {"frames_per_core_s", r.frames_per_core_s()},
                 {"goodput_gbps_per_core", r.gbps_per_core()},
                 {"verified", r.verified}});
  if (!o.json.empty()) std::ofstream(o.json) << j.dump(2) << "\n";
  return ok ? 0 : 1;
}
