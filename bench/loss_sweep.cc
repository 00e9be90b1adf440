// metaroce_loss_sweep: saturating, verified WRITE traffic for MetaRoCE and the
// RoCEv2 go-back-N baseline through the simulated lossy fabric, at a range of
// loss rates, plus a no-loss case with planes of unequal delay.
//
// Prints a table; --json FILE writes one object per run. Figures are ratios
// measured in one run (retained = goodput at loss / goodput at zero loss for
// the same transport), so they do not depend on how fast this machine is.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "metaroce/sim/transfer.h"
#include "metaroce/wire/crc.h"

using metaroce::sim::PlaneSpec;
using metaroce::sim::TransferConfig;
using metaroce::sim::TransferResult;
using metaroce::transport::TransportKind;

namespace {

struct Row {
  std::string transport, scenario;
  double loss;
  size_t planes;
  TransferResult r;
  double retained = 0;
  double wall_s = 0;
};

std::vector<double> parse_list(const std::string& s) {
  std::vector<double> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    const double x = std::stod(item, &used);
    if (used != item.size()) throw std::invalid_argument("not a number: " + item);
    v.push_back(x);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"MetaRoCE vs RoCEv2 loss sweep in the deterministic simulator"};
  std::string losses_text = "0,0.001,0.01,0.02,0.05,0.1";
  std::string skew_text = "2,4,8,16";
  std::string json_path;
  size_t planes = 4;
  double rate_gbps = 25;
  double delay_us = 2;
  double duration_ms = 10, warmup_ms = 1;
  uint32_t message_bytes = 64 * 1024, depth = 16;
  uint64_t seed = 1;
  bool no_skew = false, no_faults = false;
  double fault_ms = 4;
  std::string only;
  app.add_option("--losses", losses_text, "comma-separated loss probabilities in [0,1], both directions");
  app.add_option("--planes", planes, "number of planes")->check(CLI::Range(1, 64));
  app.add_option("--rate-gbps", rate_gbps, "rate of each plane, Gb/s")->check(CLI::Range(0.001, 1000.0));
  app.add_option("--delay-us", delay_us, "one-way delay of each plane, us")->check(CLI::Range(0.0, 100000.0));
  app.add_option("--skew-delays-us", skew_text, "per-plane delays for the no-loss skew case (one per plane)");
  app.add_flag("--no-skew", no_skew, "skip the delay-skew case");
  app.add_flag("--no-faults", no_faults, "skip the plane-failure and gray-failure cases");
  app.add_option("--fault-ms", fault_ms, "fault cases: healthy, faulty and healthy again for this long each, ms")
      ->check(CLI::Range(0.2, 1000.0));
  app.add_option("--duration-ms", duration_ms, "simulated time per run, ms")->check(CLI::Range(0.1, 10000.0));
  app.add_option("--warmup-ms", warmup_ms, "excluded from goodput, ms")->check(CLI::Range(0.0, 10000.0));
  app.add_option("--message-bytes", message_bytes, "WRITE size")->check(CLI::Range(1u, 1u << 24));
  app.add_option("--depth", depth, "outstanding WRITEs per connection")->check(CLI::Range(1u, 1024u));
  app.add_option("--seed", seed, "run seed (every random source derives from it)");
  app.add_option("--transport", only, "run only this transport")->check(CLI::IsMember({"metaroce", "rocev2"}));
  app.add_option("--json", json_path, "write results as a JSON array to FILE");
  CLI11_PARSE(app, argc, argv);

  std::vector<double> losses, skew;
  try {
    losses = parse_list(losses_text);
    skew = parse_list(skew_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: --losses/--skew-delays-us: %s\n", e.what());
    return 2;
  }
  for (double l : losses)
    if (!(l >= 0 && l <= 1)) {
      std::fprintf(stderr, "error: --losses: each value must be in [0, 1] (got %g)\n", l);
      return 2;
    }
  if (warmup_ms >= duration_ms) {
    std::fprintf(stderr, "error: --warmup-ms must be below --duration-ms\n");
    return 2;
  }
  if (!no_skew && skew.size() != planes) {
    std::fprintf(stderr, "error: --skew-delays-us needs one delay per plane (%zu planes, got %zu)\n", planes,
                 skew.size());
    return 2;
  }

  std::vector<Row> rows;
  // What every run shares: transport, planes, the WRITE workload and the seed.
  auto base_config = [&](TransportKind t, std::vector<PlaneSpec> specs) {
    TransferConfig c;
    c.transport = t;
    c.planes = std::move(specs);
    c.workload.message_bytes = message_bytes;
    c.workload.depth = depth;
    c.workload.slots = std::max<uint32_t>(depth * 2, 32);
    c.workload.seed = seed;
    c.seed = seed;
    return c;
  };
  auto run = [&](TransportKind t, const std::string& scenario, double loss, std::vector<PlaneSpec> specs) {
    TransferConfig c = base_config(t, specs);
    c.duration_ns = static_cast<int64_t>(duration_ms * 1e6);
    c.warmup_ns = static_cast<int64_t>(warmup_ms * 1e6);
    const auto t0 = std::chrono::steady_clock::now();
    Row row{metaroce::transport::transport_name(t), scenario, loss, specs.size(), metaroce::sim::run_transfer(c)};
    row.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rows.push_back(row);
  };
  auto uniform = [&](double loss) {
    std::vector<PlaneSpec> v(planes);
    for (auto& p : v) {
      p.rate_bps = rate_gbps * 1e9;
      p.delay_ns = static_cast<int64_t>(delay_us * 1000);
      p.loss = loss;
    }
    return v;
  };
  for (TransportKind t : {TransportKind::kMetaRoCE, TransportKind::kRoCEv2}) {
    if (!only.empty() && only != metaroce::transport::transport_name(t)) continue;
    for (double l : losses) run(t, "uniform", l, uniform(l));
    if (!no_skew) {
      auto v = uniform(0);
      for (size_t i = 0; i < planes; ++i) v[i].delay_ns = static_cast<int64_t>(skew[i] * 1000);
      run(t, "delay_skew", 0, v);
    }
  }
  // Fault cases: goodput before, during and after a fault, and time to recover.
  struct FaultRow {
    std::string transport, scenario;
    double before = 0, during = 0, after = 0;
    double recover_us = -1, return_us = -1;  // -1: never within the window
    TransferResult r;
  };
  std::vector<FaultRow> faults;
  auto fault_case = [&](TransportKind t, const std::string& scenario) {
    TransferConfig c = base_config(t, uniform(0));
    c.duration_ns = static_cast<int64_t>(fault_ms * 3 * 1e6);
    c.warmup_ns = 0;
    c.interval_ns = 20'000;
    const int64_t t1 = static_cast<int64_t>(fault_ms * 1e6), t2 = 2 * t1;
    metaroce::emulator::LinkSelector sel;
    sel.plane = 0;
    if (scenario == "gray_failure") {
      c.ecmp_links = 4;
      c.paths_per_plane = 4;
      sel.ecmp = metaroce::sim::ecmp_link_of_path(c, 0, 0);  // where plane 0's first path runs
      metaroce::emulator::LinkPatch bad, good;
      metaroce::emulator::LossConfig l;
      l.kind = metaroce::emulator::LossConfig::Kind::kBernoulli;
      l.probability = 0.10;
      bad.loss = l;
      good.loss = metaroce::emulator::LossConfig{};
      c.timeline.set(t1, sel, bad, "one ECMP link of plane 0 at 10% loss");
      c.timeline.set(t2, sel, good, "that link healthy again");
    } else {
      c.timeline.down(t1, sel);
      c.timeline.up(t2, sel);
    }
    FaultRow f{metaroce::transport::transport_name(t), scenario};
    f.r = metaroce::sim::run_transfer(c);
    const auto& iv = f.r.interval_gbps;
    const size_t i1 = static_cast<size_t>(t1 / c.interval_ns), i2 = static_cast<size_t>(t2 / c.interval_ns);
    auto mean = [&](size_t a, size_t b) {
      double sum = 0;
      for (size_t i = a; i < b && i < iv.size(); ++i) sum += iv[i];
      return b > a ? sum / static_cast<double>(b - a) : 0.0;
    };
    // Steady levels from the second half of each phase; recovery = first interval
    // after the change that reaches 90% of the level the new phase settles at.
    f.before = mean(i1 / 2, i1);
    f.during = mean((i1 + i2) / 2, i2);
    f.after = mean(i2 + (i2 - i1) / 2, iv.size());
    auto first_reaching = [&](size_t from, size_t to, double level) -> double {
      for (size_t i = from; i < to && i < iv.size(); ++i)
        if (iv[i] >= 0.9 * level) return static_cast<double>((i + 1 - from) * c.interval_ns) / 1000.0;
      return -1;
    };
    f.recover_us = first_reaching(i1, i2, f.during);
    f.return_us = first_reaching(i2, iv.size(), f.after);
    faults.push_back(f);
  };
  if (!no_faults) {
    for (TransportKind t : {TransportKind::kMetaRoCE, TransportKind::kRoCEv2}) {
      if (!only.empty() && only != metaroce::transport::transport_name(t)) continue;
      fault_case(t, "plane_failure");
      fault_case(t, "gray_failure");
    }
  }

  // retained: against the same transport's zero-loss uniform run.
  for (Row& row : rows) {
    for (const Row& base : rows)
      if (base.transport == row.transport && base.scenario == "uniform" && base.loss == 0 && base.r.goodput_gbps > 0)
        row.retained = row.r.goodput_gbps / base.r.goodput_gbps;
  }

  std::printf("MetaRoCE vs RoCEv2, simulated: %zu planes x %.0f Gb/s, %.1f us one-way, %u B WRITEs, depth %u, "
              "%.1f ms per run (%.1f ms warm-up), seed %llu\n",
              planes, rate_gbps, delay_us, message_bytes, depth, duration_ms, warmup_ms,
              static_cast<unsigned long long>(seed));
  std::printf("%-9s %-10s %7s %6s %10s %8s %9s %10s %9s %7s %8s\n", "transport", "scenario", "loss", "planes",
              "goodput", "retained", "of_capac", "retransmit", "spurious", "rtos", "verified");
  for (const Row& row : rows) {
    std::printf("%-9s %-10s %6.2f%% %6zu %7.2f Gb %8.3f %9.3f %10llu %9llu %7llu %8s\n", row.transport.c_str(),
                row.scenario.c_str(), row.loss * 100, row.planes, row.r.goodput_gbps, row.retained,
                row.r.goodput_gbps / row.r.capacity_gbps, static_cast<unsigned long long>(row.r.retransmits),
                static_cast<unsigned long long>(row.r.spurious_retransmits),
                static_cast<unsigned long long>(row.r.rtos), row.r.data_verified ? "yes" : "NO");
  }
  if (!faults.empty()) {
    std::printf("\nFaults (plane 0 of %zu): %.1f ms healthy, %.1f ms with the fault, %.1f ms healthy again; "
                "recover = time to 90%% of the new steady goodput\n",
                planes, fault_ms, fault_ms, fault_ms);
    std::printf("%-9s %-13s %10s %10s %10s %11s %11s %10s %8s\n", "transport", "scenario", "before", "during",
                "after", "recover_us", "return_us", "retransmit", "verified");
    for (const FaultRow& f : faults)
      std::printf("%-9s %-13s %7.2f Gb %7.2f Gb %7.2f Gb %11.0f %11.0f %10llu %8s\n", f.transport.c_str(),
                  f.scenario.c_str(), f.before, f.during, f.after, f.recover_us, f.return_us,
                  static_cast<unsigned long long>(f.r.retransmits), f.r.data_verified ? "yes" : "NO");
  }
  bool all_verified = true;
  for (const FaultRow& f : faults) all_verified &= f.r.data_verified;
  for (const Row& row : rows) all_verified &= row.r.data_verified || row.r.messages == 0;

  if (!json_path.empty()) {
    nlohmann::json out = nlohmann::json::array();
    for (const Row& row : rows) {
      nlohmann::json planes_json = nlohmann::json::array();
      nlohmann::json j = {
          {"transport", row.transport},
          {"scenario", row.scenario},
          {"loss", row.loss},
          {"planes", row.planes},
          {"goodput_gbps", row.r.goodput_gbps},
          {"capacity_gbps", row.r.capacity_gbps},
          {"capacity_fraction", row.r.goodput_gbps / row.r.capacity_gbps},
          {"retained", row.retained},
          {"retransmits", row.r.retransmits},
          {"spurious_retransmits", row.r.spurious_retransmits},
          {"rtos", row.r.rtos},
          {"data_packets", row.r.data_packets},
          {"messages", row.r.messages},
          {"bytes", row.r.bytes},
          {"data_verified", row.r.data_verified},
          {"verify_failures", row.r.verify_failures},
          {"error_completions", row.r.error_completions},
          {"link_drops_random", row.r.link_drops_random},
          {"link_drops_queue_overflow", row.r.link_drops_queue},
          {"ecn_marks", row.r.ecn_marks},
          {"link_reorders", row.r.link_reorders},
          {"link_duplicates", row.r.link_duplicates},
          {"interval_gbps", row.r.interval_gbps},
          {"seed", seed},
          {"duration_ms", duration_ms},
          {"warmup_ms", warmup_ms},
          {"message_bytes", message_bytes},
          {"sim_events", row.r.events},
          {"wall_seconds", row.wall_s},
      };
      out.push_back(j);
    }
    for (const FaultRow& f : faults) {
      out.push_back({{"transport", f.transport},
                     {"scenario", f.scenario},
                     {"planes", planes},
                     {"goodput_before_gbps", f.before},
                     {"goodput_during_gbps", f.during},
                     {"goodput_after_gbps", f.after},
                     {"recover_us", f.recover_us},
                     {"return_us", f.return_us},
                     {"retransmits", f.r.retransmits},
                     {"spurious_retransmits", f.r.spurious_retransmits},
                     {"rtos", f.r.rtos},
                     {"data_verified", f.r.data_verified},
                     {"interval_gbps", f.r.interval_gbps},
                     {"interval_us", 20},
                     {"fault_ms", fault_ms},
                     {"seed", seed}});
    }
    std::ofstream f(json_path);
    if (!f) {
      std::fprintf(stderr, "error: --json: cannot write %s\n", json_path.c_str());
      return 2;
    }
    f << out.dump(2) << "\n";
    std::printf("wrote %s\n", json_path.c_str());
  }
  return all_verified ? 0 : 1;
}
