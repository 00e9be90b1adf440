// metaroce_connection_memory_bench: what one connection costs in memory, the
// figure that decides how many connections a daemon or a simulated cluster
// can hold (issue: cluster scale, "a daemon holds at least 16,000
// connections"). For each transport and configuration it creates --count
// connection pairs between two transport::Endpoints in this process and reads
// the heap in use (glibc mallinfo2, exact for this single-threaded process), so
// the figures are what the engine really allocates, not estimates from sizeof:
//   idle       per connection, once created (nothing posted or received);
//   requester  per connection, once one WRITE is posted on every stream (a
//              message of one chunk per path, so every path carries one);
//   responder  per connection, once those WRITEs have all arrived and completed.
// A connection's state grows when it first needs more (docs/architecture.md,
// "Memory per connection"); the engine's own account of it
// (ConnectionStats::state_bytes, EndpointCounters::connection_state_bytes, the
// daemon's /metrics) is printed beside the heap.
//
// Configurations: the daemon's defaults (a connection as `metarocectl
// connection create` or a traffic job makes it), then one parameter raised at
// a time, which splits the active cost into a base, a per-path and a per-stream
// part and shows what queue depth and message size add. Table and --json.
#include <CLI/CLI.hpp>
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "metaroce/transport/connection_params.h"
#include "metaroce/transport/endpoint.h"

namespace {

using namespace metaroce;
using transport::TransportKind;
namespace wire = metaroce::wire;

// The count the issue asks a daemon to hold (four times Meta's 4,000).
constexpr double kTargetConnections = 16'000;

struct Config {
  std::string name;
  uint32_t paths = 0, streams = 0, depth = 0, mtu = 0, max_message = 0;
};

// What the daemon gives a connection whose creator leaves everything out
// (connection_params.h), on the 4-plane lab: 2 paths per plane.
Config daemon_default() {
  Config c;
  c.name = "daemon default";
  c.paths = static_cast<uint32_t>(transport::kDefaultPathsPerPlane) * 4;
  c.streams = static_cast<uint32_t>(transport::kParamStreams.default_value);
  c.depth = static_cast<uint32_t>(transport::kParamQueueDepth.default_value);
  c.mtu = static_cast<uint32_t>(transport::kParamMtuPayload.default_value);
  c.max_message = static_cast<uint32_t>(transport::kParamMaxMessage.default_value);
  return c;
}

size_t heap_in_use() { return mallinfo2().uordblks; }

struct Row {
  std::string transport, config;
  uint32_t paths = 0, streams = 0, depth = 0, mtu = 0, max_message = 0, count = 0;
  // Heap per connection, and the engine's own account (state_bytes) beside it.
  double idle = 0, requester = 0, responder = 0;
  double idle_state = 0, requester_state = 0, responder_state = 0;
};

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
const wire::MacAddr kMacA{0x02, 0, 0, 0, 0, 1}, kMacB{0x02, 0, 0, 0, 0, 2};

std::unique_ptr<transport::Endpoint> make_endpoint(uint32_t ip, const wire::MacAddr& mac) {
  transport::EndpointConfig ec;
  ec.ip = ip, ec.mac = mac;
  return std::make_unique<transport::Endpoint>(ec);
}

// Frames from one endpoint to the other (a lossless wire with no delay, 1 us
// of virtual time per exchange, or straight to the next timer when nothing
// moved) until the requester has `expected` completions or a million rounds
// have passed. Returns the completions polled from the requester.
uint64_t exchange(transport::Endpoint& a, transport::Endpoint& b, uint64_t expected, std::vector<uint8_t>& buf) {
  constexpr size_t kBurst = 32;
  transport::TxFrame burst[kBurst];
  transport::Completion wc[256];
  transport::Nanos now = 0;
  uint64_t completed = 0;
  for (int round = 0; round < 1'000'000 && completed < expected; ++round) {
    size_t moved = 0;
    for (auto [from, to] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
      for (size_t i = 0; i < kBurst; ++i)
        burst[i] = {buf.data() + i * wire::kMaxFrameBytes, static_cast<uint32_t>(wire::kMaxFrameBytes), 0, 0};
      const size_t n = from->poll_tx({burst, kBurst}, ~0ull, now);
      for (size_t i = 0; i < n; ++i) to->on_frame({burst[i].data, burst[i].len}, now);
      moved += n;
    }
    for (size_t n; (n = a.poll_completions(wc)) > 0;) completed += n;
    while (b.poll_completions(wc) > 0) {
    }
    const transport::Nanos next = std::min(a.next_deadline(), b.next_deadline());
    now = moved || next == transport::kNever ? now + 1000 : std::max(now + 1000, next);
  }
  return completed;
}

Row measure(TransportKind kind, const Config& c, uint32_t count) {
  auto a = make_endpoint(kIpA, kMacA), b = make_endpoint(kIpB, kMacB);
  // A RoCEv2 QP is one path and one ordered stream.
  const uint32_t paths = kind == TransportKind::kMetaRoCE ? c.paths : 1;
  const uint32_t streams = kind == TransportKind::kMetaRoCE ? c.streams : 1;
  // One message of a chunk per path: smooth round-robin spraying puts one on each.
  const uint32_t message = paths * c.mtu;
  std::vector<uint8_t> src(message, 0x5A), dst(message), frames(32 * wire::kMaxFrameBytes);
  const auto lkey = a->register_memory(src.data(), src.size(), 0);
  const auto rkey = b->register_memory(dst.data(), dst.size(), transport::kAccessRemoteWrite);
  if (!lkey || !rkey) throw std::runtime_error("register_memory failed");
  auto create = [&](transport::Endpoint& ep, bool side_a, uint32_t i) {
    transport::ConnectionConfig cc;
    cc.transport = kind;
    cc.local_id = side_a ? i + 1 : i + 0x100001;
    cc.remote_id = side_a ? i + 0x100001 : i + 1;
    cc.peer_ip = side_a ? kIpB : kIpA;
    cc.peer_mac = side_a ? kMacB : kMacA;
    for (uint32_t p = 0; p < paths; ++p)
      cc.paths.push_back({static_cast<uint8_t>(p % 4), static_cast<uint16_t>(49152 + p)});
    cc.streams = static_cast<uint16_t>(streams);
    cc.max_outstanding_per_stream = c.depth;
    cc.mtu_payload = c.mtu;
    cc.max_message_bytes = c.max_message;
    std::string err;
    if (!ep.create_connection(cc, &err)) throw std::runtime_error(c.name + ": " + err);
  };
  const size_t h0 = heap_in_use();
  for (uint32_t i = 0; i < count; ++i) create(*a, true, i);
  const size_t h_idle = heap_in_use();
  const uint64_t s_idle = a->counters().connection_state_bytes;
  for (uint32_t i = 0; i < count; ++i) create(*b, false, i);

  const size_t h_posted_before = heap_in_use();
  for (uint32_t i = 0; i < count; ++i)
    for (uint16_t st = 0; st < streams; ++st) {
      transport::WorkRequest wr;
      wr.verb = transport::Verb::kWrite;
      wr.wr_id = i;
      wr.local_addr = reinterpret_cast<uint64_t>(src.data());
      wr.lkey = *lkey;
      wr.length = message;
      wr.remote_addr = reinterpret_cast<uint64_t>(dst.data());
      wr.rkey = *rkey;
      if (const auto e = a->post(i + 1, st, wr); e != transport::PostError::kOk)
        throw std::runtime_error(c.name + ": post: " + transport::post_error_name(e));
    }
  const size_t h_posted = heap_in_use();
  const uint64_t expected = static_cast<uint64_t>(count) * streams;
  const uint64_t completed = exchange(*a, *b, expected, frames);
  const size_t h_done = heap_in_use();
  if (completed != expected)
    throw std::runtime_error(c.name + ": " + std::to_string(completed) + " of " + std::to_string(expected) +
                             " WRITEs completed");

  Row r;
  r.transport = kind == TransportKind::kMetaRoCE ? "metaroce" : "rocev2";
  r.config = c.name;
  r.paths = paths;
  r.streams = streams, r.depth = c.depth, r.mtu = c.mtu, r.max_message = c.max_message, r.count = count;
  const double n = count;
  r.idle = static_cast<double>(h_idle - h0) / n;
  // The posts allocate on the requester only; the exchange then on the
  // responder only (the requester's state exists from its posts on).
  r.requester = r.idle + static_cast<double>(h_posted - h_posted_before) / n;
  r.responder = r.idle + static_cast<double>(h_done - h_posted) / n;
  r.idle_state = static_cast<double>(s_idle) / n;
  r.requester_state = static_cast<double>(a->counters().connection_state_bytes) / n;
  r.responder_state = static_cast<double>(b->counters().connection_state_bytes) / n;
  return r;
}

std::string human(double bytes) {
  char b[32];
  if (bytes >= 1e9) std::snprintf(b, sizeof b, "%.2f GB", bytes / 1e9);
  else if (bytes >= 1e6) std::snprintf(b, sizeof b, "%.2f MB", bytes / 1e6);
  else std::snprintf(b, sizeof b, "%.1f kB", bytes / 1e3);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t count = 200;
  std::string json;
  CLI::App app{"metaroce_connection_memory_bench: heap bytes per connection, idle and active, by transport and parameters"};
  app.add_option("--count", count, "connections per configuration")->check(CLI::Range(1u, 16384u))->capture_default_str();
  app.add_option("--json", json, "write the rows as JSON to this file");
  CLI11_PARSE(app, argc, argv);

  const Config base = daemon_default();
  std::vector<Config> configs = {base};
  auto vary = [&](const char* name, auto set) {
    Config c = base;
    c.name = name;
    set(c);
    configs.push_back(c);
  };
  vary("paths x2", [](Config& c) { c.paths *= 2; });
  vary("streams 2", [](Config& c) { c.streams = 2; });
  vary("streams 16", [](Config& c) { c.streams = 16; });
  vary("queue depth 64", [](Config& c) { c.depth = 64; });
  vary("max message 16 MiB", [](Config& c) { c.max_message = 16u << 20; });

  std::vector<Row> rows;
  try {
    for (const Config& c : configs)
      for (TransportKind k : {TransportKind::kMetaRoCE, TransportKind::kRoCEv2}) rows.push_back(measure(k, c, count));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metaroce_connection_memory_bench: %s\n", e.what());
    return 1;
  }

  std::printf("%-9s %-20s %5s %7s %5s %5s %9s %10s %10s %10s %14s %18s\n", "transport", "config", "paths", "streams",
              "depth", "mtu", "max msg", "idle", "requester", "responder", "idle x 16,000", "engine's account");
  nlohmann::json j = nlohmann::json::array();
  for (const Row& r : rows) {
    char account[64];
    std::snprintf(account, sizeof account, "%.0f/%.0f/%.0f B", r.idle_state, r.requester_state, r.responder_state);
    std::printf("%-9s %-20s %5u %7u %5u %5u %9u %10s %10s %10s %14s %18s\n", r.transport.c_str(), r.config.c_str(),
                r.paths, r.streams, r.depth, r.mtu, r.max_message, human(r.idle).c_str(), human(r.requester).c_str(),
                human(r.responder).c_str(), human(r.idle * kTargetConnections).c_str(), account);
    j.push_back({{"transport", r.transport},
                 {"config", r.config},
                 {"paths", r.paths},
                 {"streams", r.streams},
                 {"queue_depth", r.depth},
                 {"mtu_payload_bytes", r.mtu},
                 {"max_message_bytes", r.max_message},
                 {"connections", r.count},
                 {"idle_bytes_per_connection", r.idle},
                 {"requester_bytes_per_connection", r.requester},
                 {"responder_bytes_per_connection", r.responder},
                 {"idle_bytes_for_16000", r.idle * kTargetConnections},
                 {"idle_state_bytes_per_connection", r.idle_state},
                 {"requester_state_bytes_per_connection", r.requester_state},
                 {"responder_state_bytes_per_connection", r.responder_state}});
  }
  std::printf("heap per connection: idle = created; requester = after one WRITE posted on every stream (a chunk per\n"
              "path); responder = after those arrived. engine's account = ConnectionStats::state_bytes (idle/req/resp)\n");
  // The split of an active requester's cost, from the MetaRoCE rows measured above (same run).
  auto per = [&](const char* config) {
    for (const Row& r : rows)
      if (r.transport == "metaroce" && r.config == config) return r.requester;
    return 0.0;
  };
  const double b0 = per("daemon default");
  std::printf("MetaRoCE requester split: per path %s, per stream %s, base (no paths, no streams) %s\n",
              human((per("paths x2") - b0) / base.paths).c_str(), human(per("streams 2") - b0).c_str(),
              human(b0 - (per("paths x2") - b0) - (per("streams 2") - b0) * base.streams).c_str());
  if (!json.empty()) std::ofstream(json) << j.dump(2) << "\n";
  return 0;
}
