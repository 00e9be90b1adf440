// Emulator throughput: frames per second per core through one Link and through
// the whole Fabric (full mesh: three hops, with no impairments and with all of
// them on; two-tier Clos: four hops, every spine live or one withdrawn).
// Google Benchmark; run with --benchmark_format=json for machines. The figure
// that matters is items_per_second (frames/s on one core) and its ratio between
// the clean and the fully impaired configuration.
#include <benchmark/benchmark.h>

#include <vector>

#include "metaroce/emulator/fabric.h"
#include "metaroce/emulator/link.h"
#include "metaroce/wire/udp_frame.h"

namespace {

using namespace metaroce;

std::vector<uint8_t> make_frame(uint16_t src_port, size_t payload, wire::Ecn ecn, uint32_t dst_ip = 0x0A000002) {
  std::vector<uint8_t> f(wire::kUdpFrameHeaderBytes + payload);
  wire::UdpFlow flow;
  flow.src_ip = 0x0A000001;
  flow.dst_ip = dst_ip;
  flow.src_port = src_port;
  flow.dst_port = 4794;
  wire::encode_udp_headers(f, flow, ecn, 0, payload);
  return f;
}

emulator::LinkConfig all_impairments() {
  emulator::LinkConfig c;
  c.rate_bps = 400e9;
  c.ecn_threshold_bytes = 64 * 1024;
  c.red_min_bytes = 32 * 1024;
  c.red_max_bytes = 256 * 1024;
  c.red_max_p = 0.1;
  c.loss.kind = emulator::LossConfig::Kind::kGilbertElliott;
  c.loss.ge_p = 0.01;
  c.loss.ge_r = 0.3;
  c.delay.delay_ns = 5000;
  c.delay.jitter_ns = 1000;
  c.delay.distribution = emulator::DelayConfig::Distribution::kParetoNormal;
  c.reorder.probability = 0.01;
  c.duplicate_probability = 0.01;
  c.corrupt_probability = 0.001;
  c.flap.period_ns = 1'000'000'000;
  c.flap.down_ns = 1;
  return c;
}

// Frames are offered at the link's own rate so the queue stays short and
// every stage runs: the cost measured is the emulator's, not queue growth.
void run_link(benchmark::State& state, const emulator::LinkConfig& c) {
  emulator::Link link(c, 1);
  auto frame = make_frame(49152, 1024, wire::Ecn::kEct0);
  const int64_t gap_ns = static_cast<int64_t>(8.0 * (frame.size() + c.overhead_bytes) * 1e9 / c.rate_bps) + 1;
  int64_t now = 0;
  for (auto _ : state) {
    frame[wire::kEthHeaderBytes + 1] = static_cast<uint8_t>(wire::Ecn::kEct0);  // undo marks
    benchmark::DoNotOptimize(link.submit(frame, now));
    now += gap_ns;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_LinkClean(benchmark::State& state) {
  emulator::LinkConfig c;
  c.rate_bps = 400e9;
  run_link(state, c);
}
void BM_LinkAllImpairments(benchmark::State& state) { run_link(state, all_impairments()); }

void run_fabric(benchmark::State& state, bool impaired) {
  emulator::FabricConfig fc;
  fc.planes = 4;
  fc.ecmp_links = 8;
  fc.port.rate_bps = 400e9;
  fc.ecmp = impaired ? all_impairments() : fc.port;
  emulator::Fabric fabric(fc);
  std::vector<std::vector<uint8_t>> frames;
  for (uint16_t p = 0; p < 64; ++p) frames.push_back(make_frame(static_cast<uint16_t>(49152 + p), 1024, wire::Ecn::kEct0));
  int64_t now = 0;
  size_t i = 0;
  for (auto _ : state) {
    auto& f = frames[i++ & 63];
    emulator::FramePosition pos;
    pos.from = 0;
    pos.plane = static_cast<uint8_t>(i & 3);
    int64_t at = now, dup;
    // Walk all three hops, each at the time the previous one delivers.
    while (pos.hop != emulator::Hop::kDelivered &&
           fabric.forward(pos, f, at, &at, &dup) == emulator::DropCause::kNone) {
    }
    now += 25;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_FabricThreeHopsClean(benchmark::State& state) { run_fabric(state, false); }
void BM_FabricThreeHopsAllImpairments(benchmark::State& state) { run_fabric(state, true); }

// A two-tier Clos per plane: 64 hosts on 8 leaves, 8 spines, 4 planes; frames
// from host 0 to host 9 (another leaf) cross four hops. With a spine down and
// withdrawn, the leaf checks its ECMP group for every frame of the plane
// (the slow path) and moves the dead spine's flows.
void run_clos(benchmark::State& state, bool spine_down) {
  emulator::FabricConfig fc;
  fc.topology = emulator::Topology::kClos;
  fc.hosts = 64;
  fc.planes = 4;
  fc.hosts_per_leaf = 8;
  fc.spines = 8;
  for (uint32_t h = 0; h < fc.hosts; ++h) fc.host_ips.push_back(0x0A000001 + h);
  fc.port.rate_bps = 400e9;
  fc.ecmp = fc.port;
  emulator::Fabric fabric(fc);
  if (spine_down) {
    emulator::LinkSelector sel;
    sel.spine = 3;
    emulator::LinkPatch down;
    down.up = false;
    fabric.apply(sel, down, 0);
  }
  std::vector<std::vector<uint8_t>> frames;
  for (uint16_t p = 0; p < 64; ++p)
    frames.push_back(make_frame(static_cast<uint16_t>(49152 + p), 1024, wire::Ecn::kEct0, 0x0A000001 + 9));
  int64_t now = fc.withdraw_after_ns + fc.remote_withdraw_after_ns;
  size_t i = 0;
  for (auto _ : state) {
    auto& f = frames[i++ & 63];
    emulator::FramePosition pos;
    pos.from = 0;
    pos.plane = static_cast<uint8_t>(i & 3);
    int64_t at = now, dup;
    while (pos.hop != emulator::Hop::kDelivered &&
           fabric.forward(pos, f, at, &at, &dup) == emulator::DropCause::kNone) {
    }
    now += 25;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_FabricClosFourHopsClean(benchmark::State& state) { run_clos(state, false); }
void BM_FabricClosFourHopsSpineWithdrawn(benchmark::State& state) { run_clos(state, true); }

BENCHMARK(BM_LinkClean);
BENCHMARK(BM_LinkAllImpairments);
BENCHMARK(BM_FabricThreeHopsClean);
BENCHMARK(BM_FabricThreeHopsAllImpairments);
BENCHMARK(BM_FabricClosFourHopsClean);
BENCHMARK(BM_FabricClosFourHopsSpineWithdrawn);

}  // namespace

BENCHMARK_MAIN();
