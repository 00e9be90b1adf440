// Reports (scenario/src/report_*.cc): report.json round-trips the Report,
// timeseries.csv has one row per run and interval, report.html is well formed
// with its plots and escapes text, format_number, summary_table and
// write_report. The page as Chromium renders it: report_html_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "metaroce/scenario/report.h"
#include "report_fixtures.h"

namespace ms = metaroce::scenario;
namespace fs = std::filesystem;

namespace metaroce::scenario::testing {

// A completion-time distribution (LatencySummary::cdf_us) through a
// summary's figures: min at 0 %, the median at 50 %, p99 at 99 %, max at
// 100 %, straight between them (the simulator's runs have one).
std::vector<double> cdf_through(const LatencySummary& l) {
  std::vector<double> cdf;
  for (size_t i = 0; i < kLatencyCdfPoints; ++i) {
    const double q = static_cast<double>(i);
    cdf.push_back(i <= 50  ? l.min_us + (l.median_us - l.min_us) * q / 50
                  : i <= 99 ? l.median_us + (l.p99_us - l.median_us) * (q - 50) / 49
                            : l.max_us);
  }
  return cdf;
}

// A loss sweep (0, 1%, 5%) of MetaRoCE against RoCEv2 on 4 planes x 25 Gb/s,
// 8 intervals of 250 ms per run, plane 1 down from 0.5 s to 1.5 s, latency
// with its distribution (RoCEv2 at 5% loss has no samples) and one failed
// assertion. Shared with report_html_test.cc.
Report make_sweep_report(const std::string& rocev2_name) {
  Report r;
  r.scenario_name = "loss-sweep";
  r.description = "Retained throughput vs random loss 0-5%, MetaRoCE vs RoCEv2 (plane 1 fails briefly)";
  r.source = "configs/scenarios/loss-sweep.yaml";
  r.mode = "sim";
  r.version = "0.9.0";
  r.started_at = "2024-05-01T12:00:00Z";
  r.seed = 7;
  r.scenario_yaml =
      "name: loss-sweep\n# <script>alert('yaml')</script> & \"quotes\"\njobs:\n"
      "  - {name: metaroce, transport: metaroce}\nsweep: {parameter: loss, values: [0, 1%, 5%]}\n";
  r.planes = 4;
  r.plane_rate_bps = 25e9;
  const std::vector<double> losses = {0, 0.01, 0.05};
  for (double loss : losses) {
    for (int j = 0; j < 2; ++j) {
      RunResult run;
      const bool meta = j == 0;
      run.job = meta ? "metaroce" : rocev2_name;
      run.transport = meta ? "metaroce" : "rocev2";
      run.op = "write";
      run.sweep_parameter = "loss";
      run.sweep_value = loss;
      run.seed = 7 + static_cast<uint64_t>(j);
      const double base = meta ? 92e9 * (1 - 1.5 * loss) : 88e9 * std::exp(-45 * loss);
      double sum = 0;
      for (int k = 0; k < 8; ++k) {
        Interval iv;
        iv.t0_s = 0.25 * k;
        iv.t1_s = iv.t0_s + 0.25;
        const bool down = iv.t0_s >= 0.5 && iv.t1_s <= 1.5;
        iv.goodput_bps = base * (k == 0 ? 0.8 : 1.0) * (down ? (meta ? 0.74 : 0.35) : 1.0);
        sum += iv.goodput_bps;
        iv.retransmits = static_cast<uint64_t>(loss * 20000 + (down ? 300 : 0) + k);
        iv.loss_seen = loss * (meta ? 1.0 : 1.6);
        for (int p = 0; p < 4; ++p) {
          const double share = down ? (p == 1 ? 0.0 : 1.0 / 3) : 0.25;
          iv.plane_utilisation.push_back(iv.goodput_bps * share / 25e9);
          iv.plane_bytes.push_back(iv.goodput_bps * share * 0.25 / 8);
        }
        iv.queue_bytes = 4096.0 * (k % 3);
        iv.ecn_marks = static_cast<uint64_t>(k);
        run.intervals.push_back(iv);
      }
      run.goodput_bps = sum / 8;
      run.bytes = static_cast<uint64_t>(run.goodput_bps * 2 / 8);
      run.messages = run.bytes / 16384;
      run.retransmits = static_cast<uint64_t>(loss * 160000) + 2400;
      run.spurious_retransmits = meta ? 12 : 0;
      run.rtos = meta ? 1 : static_cast<uint64_t>(3 + loss * 400);
      run.data_packets = run.bytes / 4096;
      run.path_state_changes = meta ? 6 : 0;
      run.verified = true;
      run.verification = "passed";
      if (!(j == 1 && loss == 0.05)) {
        run.latency.samples = 50000;
        run.latency.min_us = 6.5;
        run.latency.median_us = meta ? 11.2 + 100 * loss : 10.8 + 900 * loss;
        run.latency.avg_us = run.latency.median_us * 1.3;
        run.latency.p99_us = meta ? 48.5 + 400 * loss : 250 + 4000 * loss;
        run.latency.p999_us = meta ? 120.25 + 900 * loss : 1800 + 9000 * loss;
        run.latency.max_us = run.latency.p999_us * 3;
        run.latency.cdf_us = cdf_through(run.latency);
      }
      run.events = {{0.5, "plane 1 down"}, {1.5, "plane 1 up"}};
      r.runs.push_back(run);
    }
  }
  r.assertions = {
      {"retained: metaroce >= 0.85 at every loss value", true, "min retained 92.5% at loss 5% (>= 85.0%)"},
      {"data_errors: all <= 0", true, "0 verification failures", false, 0.0},
      {"retained: " + rocev2_name + " >= 0.5 at every loss value", false, "retained 10.5% at loss 5% (< 50.0%)"},
  };
  return r;
}

// One plane of four fails from 2 s to 4 s of a 6 s run (no sweep).
Report make_fault_report() {
  Report r;
  r.scenario_name = "plane-failure";
  r.description = "One plane of four fails and returns, under 0.5% loss <script>document.title='x'</script>";
  r.source = "configs/scenarios/plane-failure.yaml";
  r.mode = "live";
  r.version = "0.9.0";
  r.started_at = "2024-05-01T12:30:00Z";
  r.seed = 1;
  r.scenario_yaml = "name: plane-failure\ntimeline:\n  - {at: 2s, action: down, plane: 1, label: plane 1 down}\n";
  r.planes = 4;
  r.plane_rate_bps = 25e9;
  for (int j = 0; j < 2; ++j) {
    const bool meta = j == 0;
    RunResult run;
    run.job = meta ? "metaroce" : "rocev2";
    run.transport = meta ? "metaroce" : "rocev2";
    run.op = "write";
    double sum = 0;
    for (int k = 0; k < 24; ++k) {
      Interval iv;
      iv.t0_s = 0.25 * k;
      iv.t1_s = iv.t0_s + 0.25;
      const bool down = iv.t0_s >= 2.0 && iv.t1_s <= 4.0;
      const double base = meta ? 9.1e9 : 8.4e9;
      iv.goodput_bps = base * (down ? (meta ? (k == 8 ? 0.45 : 0.74) : (k < 10 ? 0.3 : 0.05)) : 1.0) *
                       (1 + 0.02 * std::sin(k));
      sum += iv.goodput_bps;
      iv.retransmits = static_cast<uint64_t>(down ? 400 + 10 * k : 40);
      iv.loss_seen = down ? 0.02 : 0.005;
      iv.rtos = down && k == 8 ? 2 : 0;
      iv.path_state_changes = down && k == 8 ? 1 : 0;
      for (int p = 0; p < 4; ++p) {
        const double share = down ? (p == 1 ? 0.0 : meta ? 1.0 / 3 : 0.25) : 0.25;
        iv.plane_utilisation.push_back(std::min(1.0, iv.goodput_bps * share / 2.5e9));
        iv.plane_bytes.push_back(iv.goodput_bps * share * 0.25 / 8);
      }
      run.intervals.push_back(iv);
    }
    run.goodput_bps = sum / 24;
    run.bytes = static_cast<uint64_t>(run.goodput_bps * 6 / 8);
    run.retransmits = meta ? 5400 : 7100;
    run.spurious_retransmits = meta ? 31 : 2;
    run.rtos = meta ? 2 : 57;
    run.path_state_changes = meta ? 4 : 0;
    run.verified = true;
    run.verification = "passed";
    run.latency = {80000, 5.1, 14.3, 19.9, 88.0, 2100.5, 9100};
    if (!meta) run.latency = {40000, 6.0, 15.2, 250.4, 8200, 52000, 210000};
    run.events = {{2.0, "plane 1 down"}, {4.0, "plane 1 up"}};
    run.seed = 1;
    r.runs.push_back(run);
  }
  r.assertions = {{"goodput_ratio: metaroce [2.5s, 4s] / [0.5s, 2s] >= 0.6", true, "0.74 >= 0.60"},
                  {"job_succeeded: metaroce", true, "done"}};
  return r;
}

// The fault report on a clos (8 hosts on 2 leaves, 2 spines, per plane):
// the topology and, per plane, the tiers' link utilisation for every run and
// interval. Shared with report_html_test.cc.
Report make_clos_report() {
  Report r = make_fault_report();
  r.scenario_name = "clos-spine-failure";
  r.topology = TopologySummary{8, 4, 2, 2, 25e9, 50e9, 1.0, 4 * (2 * 8 + 2 * 2 * 2)};
  r.plane_rate_bps = 8 * 25e9;
  for (RunResult& run : r.runs) {
    const double m = run.job == "metaroce" ? 1.0 : 0.8;
    for (size_t k = 0; k < run.intervals.size(); ++k) {
      Interval& iv = run.intervals[k];
      for (int p = 0; p < 4; ++p)
        iv.tiers.push_back(TierLoad{0.25 * m, 0.9 * m, 0.2 * m + 0.01 * p, (p == 1 && k >= 8 && k < 16 ? 1.0 : 0.5) * m});
    }
    for (int p = 0; p < 4; ++p) run.tiers.push_back(TierLoad{0.24 * m, 0.91 * m, 0.19 * m + 0.01 * p, 0.7 * m});
  }
  return r;
}

}  // namespace metaroce::scenario::testing

namespace {

using namespace metaroce::scenario::testing;  // report_fixtures.h

struct Tagged {
  std::string pointer, text;
};
// Elements carrying data-key hold plain text only: pointer and text of each.
std::vector<Tagged> data_keys(const std::string& html) {
  std::vector<Tagged> out;
  const std::string attr = "data-key=\"";
  for (size_t p = html.find(attr); p != std::string::npos; p = html.find(attr, p + 1)) {
    const size_t b = p + attr.size(), e = html.find('"', b);
    const size_t gt = html.find('>', e), lt = html.find('<', gt);
    out.push_back({html_unescape(html.substr(b, e - b)), html_unescape(html.substr(gt + 1, lt - gt - 1))});
  }
  return out;
}

// The page's plot specs (report_plots.cc), as report_charts.js reads them.
nlohmann::json plot_specs(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"report-plots\">";
  const size_t sb = html.find(open);
  if (sb == std::string::npos) return nullptr;
  const size_t se = html.find("</script>", sb);
  return nlohmann::json::parse(html.substr(sb + open.size(), se - sb - open.size()));
}

TEST(ReportJson, RoundTripsKeyFields) {
  const ms::Report r = make_sweep_report("rocev2");
  const std::string text = ms::report_json(r);
  EXPECT_EQ(text.rfind("{\n  \"scenario_name\": \"loss-sweep\",\n  \"description\"", 0), 0u) << text.substr(0, 200);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["scenario_name"], r.scenario_name);
  EXPECT_EQ(j["description"], r.description);
  EXPECT_EQ(j["source"], r.source);
  EXPECT_EQ(j["mode"], "sim");
  EXPECT_EQ(j["version"], "0.9.0");
  EXPECT_EQ(j["started_at"], "2024-05-01T12:00:00Z");
  EXPECT_EQ(j["seed"], 7);
  EXPECT_EQ(j["scenario_yaml"], r.scenario_yaml);
  EXPECT_EQ(j["planes"], 4);
  EXPECT_DOUBLE_EQ(j["plane_rate_bps"].get<double>(), 25e9);
  ASSERT_EQ(j["runs"].size(), 6u);
  const auto& run = j["runs"][5];
  EXPECT_EQ(run["job"], "rocev2");
  EXPECT_EQ(run["transport"], "rocev2");
  EXPECT_EQ(run["sweep_parameter"], "loss");
  EXPECT_DOUBLE_EQ(run["sweep_value"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(run["goodput_bps"].get<double>(), r.runs[5].goodput_bps);
  EXPECT_EQ(run["retransmits"], r.runs[5].retransmits);
  EXPECT_EQ(run["rtos"], r.runs[5].rtos);
  EXPECT_EQ(run["verification"], "passed");
  EXPECT_EQ(run["latency"]["samples"], 0);
  EXPECT_DOUBLE_EQ(j["runs"][0]["latency"]["p999_us"].get<double>(), r.runs[0].latency.p999_us);
  ASSERT_EQ(run["intervals"].size(), 8u);
  ASSERT_EQ(run["intervals"][3]["plane_utilisation"].size(), 4u);
  EXPECT_DOUBLE_EQ(run["intervals"][3]["plane_utilisation"][1].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(run["intervals"][3]["goodput_bps"].get<double>(), r.runs[5].intervals[3].goodput_bps);
  EXPECT_DOUBLE_EQ(run["intervals"][7]["t1_s"].get<double>(), 2.0);
  ASSERT_EQ(run["events"].size(), 2u);
  EXPECT_DOUBLE_EQ(run["events"][1]["t_s"].get<double>(), 1.5);
  EXPECT_EQ(run["events"][1]["label"], "plane 1 up");
  ASSERT_EQ(j["assertions"].size(), 3u);
  EXPECT_FALSE(j["assertions"][2]["passed"].get<bool>());
  EXPECT_EQ(j["assertions"][2]["detail"], r.assertions[2].detail);
  EXPECT_FALSE(j["assertions"][0].contains("value"));
  EXPECT_EQ(j["assertions"][1]["value"].get<double>(), 0.0);
  // Derived: retained against the same job at the first sweep value.
  EXPECT_FALSE(j["derived"]["passed"].get<bool>());
  EXPECT_EQ(j["derived"]["assertions_failed"], 1);
  EXPECT_NEAR(j["derived"]["runs"][5]["retained"].get<double>(), r.runs[5].goodput_bps / r.runs[1].goodput_bps, 1e-12);
  EXPECT_DOUBLE_EQ(j["derived"]["runs"][0]["retained"].get<double>(), 1.0);
  // Stable: the same report gives the same text.
  EXPECT_EQ(text, ms::report_json(r));
}

// When the RTOs and path changes happened, interval by interval, in the JSON
// (read back) and the CSV: a fault run's totals alone do not say whether a
// healthy path flipped at the fault or elsewhere.
TEST(ReportJson, IntervalsCarryRtosAndPathStateChanges) {
  const ms::Report r = make_fault_report();
  const auto j = nlohmann::json::parse(ms::report_json(r));
  EXPECT_EQ(j["runs"][0]["intervals"][8]["rtos"], 2);
  EXPECT_EQ(j["runs"][0]["intervals"][8]["path_state_changes"], 1);
  EXPECT_EQ(j["runs"][0]["intervals"][9]["rtos"], 0);
  std::string err;
  const auto back = ms::parse_report_json(ms::report_json(r), "r.json", &err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(back->runs[0].intervals[8].rtos, 2u);
  EXPECT_EQ(back->runs[0].intervals[8].path_state_changes, 1u);
  auto missing = j;
  missing["runs"][0]["intervals"][8].erase("rtos");
  EXPECT_FALSE(ms::parse_report_json(missing.dump(), "r.json", &err));
  EXPECT_NE(err.find("/runs/0/intervals/8"), std::string::npos) << err;
  EXPECT_NE(err.find("rtos"), std::string::npos) << err;
  // CSV: interval 8 (2.00-2.25 s) of run 0 has 2 RTOs and 1 path change.
  const std::string csv = ms::timeseries_csv(r);
  const size_t row = csv.find("\n0,metaroce,metaroce,,,2,2.25,");
  ASSERT_NE(row, std::string::npos) << csv.substr(0, 400);
  const std::string line = csv.substr(row + 1, csv.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find(",0.02,2,1,"), std::string::npos) << line;
}

// Capture windows: report.json lists each with its window and counts and
// reads back; the page links each file (escaped) and shows its counts with
// their JSON pointers; the terminal summary names each file.
TEST(ReportJson, CapturesRoundTripAndAreLinked) {
  ms::Report r = make_fault_report();
  ms::CaptureResult c;
  c.run = 1;
  c.run_label = "metaroce";
  c.event = "plane 1 <down>";
  c.at_s = 2, c.from_s = 1.95, c.to_s = 2.05;
  c.where = "both";
  c.planes = {1};
  c.snap_length = 128;
  c.file = "captures/01-metaroce-plane-1-down.pcapng";
  c.frames = 1234;
  c.frames_not_written = 5;
  c.frames_truncated = 1200;
  c.captured_from_s = 1.951;
  c.captured_to_s = 2.052;
  c.t0_unix_ns = 1'700'000'000'123'456'789ull;
  c.sources = {"h0+fabric", "h1"};
  c.note = "wall-clock timestamps";
  r.captures.push_back(c);
  ms::CaptureResult none = c;
  none.run = 2, none.file.clear(), none.frames = 0, none.captured_from_s.reset(), none.captured_to_s.reset();
  none.note = "not captured: the run ended at 1.000 s, before the window began";
  r.captures.push_back(none);
  const auto j = nlohmann::json::parse(ms::report_json(r));
  ASSERT_EQ(j["captures"].size(), 2u);
  EXPECT_EQ(j["captures"][0]["file"], c.file);
  EXPECT_EQ(j["captures"][0]["frames"], 1234);
  EXPECT_EQ(j["captures"][0]["frames_not_written"], 5);
  EXPECT_DOUBLE_EQ(j["captures"][0]["captured_to_s"].get<double>(), 2.052);
  EXPECT_EQ(j["captures"][0]["t0_unix_ns"].get<uint64_t>(), 1'700'000'000'123'456'789ull);
  EXPECT_FALSE(j["captures"][1].contains("captured_from_s"));
  std::string err;
  const auto back = ms::parse_report_json(ms::report_json(r), "r.json", &err);
  ASSERT_TRUE(back) << err;
  ASSERT_EQ(back->captures.size(), 2u);
  EXPECT_EQ(ms::report_json(*back), ms::report_json(r)) << "every capture field reads back";
  const std::string html = ms::report_html(r);
  EXPECT_NE(html.find("<h2>Packet captures</h2>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"captures/01-metaroce-plane-1-down.pcapng\">"), std::string::npos);
  EXPECT_NE(html.find("plane 1 &lt;down&gt;"), std::string::npos);
  EXPECT_NE(html.find("data-key=\"/captures/0/frames\""), std::string::npos);
  EXPECT_NE(html.find("[1.950, 2.050]"), std::string::npos);
  EXPECT_NE(html.find("[1.951, 2.052]"), std::string::npos);
  const std::string table = ms::summary_table(r);
  EXPECT_NE(table.find("run 1 plane 1 <down> [1.950, 2.050] s: captures/01-metaroce-plane-1-down.pcapng, 1234 frames, 5 "
                       "not written"),
            std::string::npos)
      << table;
  // A report without captures has no such section, and older report.json files (no "captures") still read.
  EXPECT_EQ(ms::report_html(make_fault_report()).find("Packet captures"), std::string::npos);
  auto old = nlohmann::json::parse(ms::report_json(make_fault_report()));
  old.erase("captures");
  EXPECT_TRUE(ms::parse_report_json(old.dump(), "old.json", &err)) << err;
}

// The completion-time distribution: in each run's "latency" object when the
// run has one (simulator), read back value for value; absent for a run
// without one (live, or no samples), and a report.json without it reads.
TEST(ReportJson, LatencyCdfRoundTrips) {
  const ms::Report r = make_sweep_report("rocev2");
  ASSERT_EQ(r.runs[0].latency.cdf_us.size(), ms::kLatencyCdfPoints);
  const std::string text = ms::report_json(r);
  const auto j = nlohmann::json::parse(text);
  const auto& cdf = j.at("runs").at(0).at("latency").at("cdf_us");
  ASSERT_EQ(cdf.size(), ms::kLatencyCdfPoints);
  EXPECT_EQ(cdf.at(0).get<double>(), r.runs[0].latency.min_us);
  EXPECT_EQ(cdf.at(50).get<double>(), r.runs[0].latency.median_us);
  EXPECT_EQ(cdf.at(99).get<double>(), r.runs[0].latency.p99_us);
  EXPECT_EQ(cdf.at(100).get<double>(), r.runs[0].latency.max_us);
  EXPECT_FALSE(j.at("runs").at(5).at("latency").contains("cdf_us")) << "no samples, no distribution";
  EXPECT_EQ(ms::report_json(make_fault_report()).find("cdf_us"), std::string::npos) << "live runs have none";
  std::string err;
  const auto back = ms::parse_report_json(text, "report.json", &err);
  ASSERT_TRUE(back) << err;
  ASSERT_EQ(back->runs.size(), r.runs.size());
  for (size_t i = 0; i < r.runs.size(); ++i) EXPECT_EQ(back->runs[i].latency.cdf_us, r.runs[i].latency.cdf_us) << i;
  EXPECT_EQ(ms::report_json(*back), text);
  // A report written before cdf_us existed reads, without a distribution.
  auto old = j;
  for (auto& run : old.at("runs")) run.at("latency").erase("cdf_us");
  const auto old_back = ms::parse_report_json(old.dump(), "old.json", &err);
  ASSERT_TRUE(old_back) << err;
  EXPECT_TRUE(old_back->runs[0].latency.cdf_us.empty());
}

// A malformed cdf_us is refused, the message naming the value's JSON pointer.
TEST(ReportJson, MalformedLatencyCdfNamesItsPath) {
  const auto good = nlohmann::json::parse(ms::report_json(make_sweep_report("rocev2")));
  auto refused = [&](const std::function<void(nlohmann::json&)>& spoil) {
    auto j = good;
    spoil(j.at("runs").at(2).at("latency").at("cdf_us"));
    std::string err;
    EXPECT_FALSE(ms::parse_report_json(j.dump(), "r.json", &err)) << j.at("runs").at(2).at("latency").dump();
    return err;
  };
  EXPECT_EQ(refused([](auto& c) { c.erase(c.size() - 1); }),
            "r.json: /runs/2/latency/cdf_us: must have 101 values (0 to 100 %), has 100");
  EXPECT_EQ(refused([](auto& c) { c.push_back(1e6); }),
            "r.json: /runs/2/latency/cdf_us: must have 101 values (0 to 100 %), has 102");
  EXPECT_EQ(refused([](auto& c) { c = nlohmann::json::object(); }), "r.json: /runs/2/latency/cdf_us: must be an array");
  EXPECT_EQ(refused([](auto& c) { c[0] = -1.5; }), "r.json: /runs/2/latency/cdf_us/0: must be a number >= 0");
  EXPECT_EQ(refused([](auto& c) { c[7] = nullptr; }), "r.json: /runs/2/latency/cdf_us/7: must be a number >= 0");
  EXPECT_EQ(refused([](auto& c) { c[7] = "8 us"; }), "r.json: /runs/2/latency/cdf_us/7: must be a number or null");
  ASSERT_EQ(good.at("runs").at(2).at("latency").at("cdf_us").at(0), 6.5);  // min_us
  EXPECT_EQ(refused([](auto& c) { c[1] = 6.25; }),
            "r.json: /runs/2/latency/cdf_us/1: must not be less than the value before it (6.25 < 6.5)");
}

TEST(ReportJson, FaultWindowDerived) {
  const auto j = nlohmann::json::parse(ms::report_json(make_fault_report()));
  const auto& d = j["derived"]["runs"][0];
  EXPECT_DOUBLE_EQ(d["fault_from_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(d["fault_to_s"].get<double>(), 4.0);
  EXPECT_GT(d["fault_retained"].get<double>(), 0.6);
  EXPECT_LT(d["fault_retained"].get<double>(), 0.8);
  EXPECT_LT(j["derived"]["runs"][1]["fault_retained"].get<double>(), 0.3);
  EXPECT_FALSE(d.contains("retained"));  // no sweep
  EXPECT_TRUE(j["derived"]["passed"].get<bool>());
}

// "Degrade or stop?": a run per outcome, 6 s, a fault at 2 s (per-interval
// goodput given as a share of 10 Gb/s), and a live run the host limited.
TEST(ReportOutcome, UnaffectedDegradedStoppedAndInconclusive) {
  auto run = [](const std::string& name, const std::vector<double>& share) {
    ms::RunResult r;
    r.job = name;
    r.transport = "metaroce";
    for (size_t k = 0; k < share.size(); ++k)
      r.intervals.push_back({0.5 * static_cast<double>(k), 0.5 * static_cast<double>(k + 1), share[k] * 10e9});
    r.events = {{2.0, "plane 1 down"}};
    return r;
  };
  ms::Report r;
  r.mode = "live";
  r.runs.push_back(run("steady", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  r.runs.push_back(run("slower", {1, 1, 1, 1, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75}));
  r.runs.push_back(run("blip", {1, 1, 1, 1, 0.0, 1, 1, 1, 1, 1, 1, 1}));         // 0.5 s stall: degraded
  r.runs.push_back(run("stuck", {1, 1, 1, 1, 0.02, 0.0, 0.01, 0.6, 1, 1, 1, 1}));  // 1.5 s stall: stopped
  // A live job drains after the duration: its last, partial interval of
  // completions (6-6.5 s) is no stall.
  r.runs.push_back(run("drained", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.03}));
  r.duration_s = 6;
  const auto j = nlohmann::json::parse(ms::report_json(r));
  const auto& d = j["derived"]["runs"];
  EXPECT_EQ(d[0]["outcome"], "unaffected");
  EXPECT_EQ(d[1]["outcome"], "degraded");
  EXPECT_EQ(d[2]["outcome"], "degraded");
  EXPECT_DOUBLE_EQ(d[2]["stopped_s"].get<double>(), 0.5);
  EXPECT_EQ(d[3]["outcome"], "stopped");
  EXPECT_DOUBLE_EQ(d[3]["stopped_s"].get<double>(), 1.5);
  EXPECT_EQ(d[4]["outcome"], "unaffected");
  EXPECT_FALSE(d[4].contains("stopped_s"));
  EXPECT_DOUBLE_EQ(j["duration_s"].get<double>(), 6.0);
  EXPECT_EQ(j["derived"]["verdict"], "PASS");  // no assertions, every run faithful
  const std::string table = ms::summary_table(r);
  EXPECT_NE(table.find("slower (MetaRoCE): degraded: kept 75% of its goodput during the faults"), std::string::npos)
      << table;
  EXPECT_NE(table.find("stuck (MetaRoCE): stopped:"), std::string::npos) << table;
  EXPECT_NE(table.find("stalled (below 5% of its baseline) for 1.5 s"), std::string::npos) << table;

  // The host limited one run: INCONCLUSIVE everywhere, with the reason, even though every assertion passed.
  r.runs[1].fidelity.measured = true;
  r.runs[1].fidelity.problems = {"h0 endpoint worker: waited for a CPU 30.0% of the run (limit 5.0%)"};
  r.assertions.push_back({"job_succeeded all", true, "done"});
  const auto ji = nlohmann::json::parse(ms::report_json(r));
  EXPECT_EQ(ji["derived"]["verdict"], "INCONCLUSIVE");
  EXPECT_FALSE(ji["derived"]["faithful"].get<bool>());
  EXPECT_EQ(ji["runs"][1]["fidelity"]["problems"][0], r.runs[1].fidelity.problems[0]);
  EXPECT_NE(ms::summary_table(r).find("INCONCLUSIVE: this host's datapath"), std::string::npos);
  const std::string html = ms::report_html(r);
  EXPECT_NE(html.find("verdict inconclusive"), std::string::npos);
  EXPECT_EQ(html.find("verdict pass"), std::string::npos) << "an INCONCLUSIVE run never shows PASS";
  EXPECT_NE(html.find("<h2>Fidelity</h2>"), std::string::npos);
  EXPECT_NE(html.find("<h2>Degrade or stop?</h2>"), std::string::npos);
}

TEST(ReportJson, NonFiniteAndInvalidUtf8DoNotThrow) {
  ms::Report r = make_fault_report();
  r.runs[0].goodput_bps = std::nan("");
  r.description = "bad \xff byte";
  const auto j = nlohmann::json::parse(ms::report_json(r));
  EXPECT_TRUE(j["runs"][0]["goodput_bps"].is_null());
  EXPECT_NE(ms::report_html(r).find("n/a"), std::string::npos);
}

TEST(ReportCsv, HeaderAndOneRowPerRunAndInterval) {
  const ms::Report r = make_sweep_report("rocev2, \"the baseline\"");
  const std::string csv = ms::timeseries_csv(r);
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header,
            "run,job,transport,sweep_parameter,sweep_value,t0_s,t1_s,goodput_gbps,retransmits,loss_seen,rtos,"
            "path_state_changes,queue_bytes,ecn_marks,plane0_util,plane1_util,plane2_util,plane3_util");
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 6u * 8u);
  EXPECT_EQ(rows[0].rfind("0,metaroce,metaroce,loss,0,0,0.25,", 0), 0u) << rows[0];
  EXPECT_EQ(rows[8].rfind("1,\"rocev2, \"\"the baseline\"\"\",rocev2,loss,0,0,0.25,", 0), 0u) << rows[8];
  EXPECT_EQ(rows[47].rfind("5,", 0), 0u);
  // Plane columns as wide as the widest run; a narrower run leaves them empty.
  ms::Report narrow = make_fault_report();
  narrow.runs[1].intervals[0].plane_utilisation.resize(2);
  const std::string c2 = ms::timeseries_csv(narrow);
  EXPECT_NE(c2.find("plane3_util\n"), std::string::npos);
  EXPECT_EQ(count(c2, "\n"), 1u + 48u);
  EXPECT_NE(c2.find(",,\n"), std::string::npos);
}

TEST(ReportHtml, WellFormedWithPlotsAndEscaping) {
  const ms::Report r = make_sweep_report("rocev2<script>alert(1)</script>");
  const std::string html = ms::report_html(r);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<figure class=\"plot\""), count(html, "</figure>"));
  EXPECT_EQ(count(html, "<figure class=\"plot\""), 5u);
  for (const char* id : {"plot-goodput", "plot-retained", "plot-planes", "plot-latency", "plot-latency-cdf"})
    EXPECT_NE(html.find("<figure class=\"plot\" id=\"" + std::string(id) + "\" role=\"group\" aria-label=\""),
              std::string::npos)
        << id;
  EXPECT_EQ(html.find("plot-goodput-bars"), std::string::npos);
  // A canvas per chart: 3 goodput panels, 1 retained, 6 plane-load plots, 1
  // latency, 3 completion-time CDF panels.
  EXPECT_EQ(count(html, "<canvas"), count(html, "</canvas>"));
  EXPECT_EQ(count(html, "<canvas"), 14u);
  EXPECT_EQ(count(html, "<table"), count(html, "</table>"));
  EXPECT_EQ(count(html, "<section"), count(html, "</section>"));
  // No raw markup from names, the description or the YAML: the only scripts
  // are the page's three (Chart.js, the plot specs, report_charts.js).
  EXPECT_EQ(count(html, "<script"), 3u);
  EXPECT_EQ(count(html, "</script>"), 3u);
  EXPECT_EQ(html.find("rocev2<script"), std::string::npos);
  EXPECT_NE(html.find("rocev2\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"), std::string::npos);  // in the specs
  EXPECT_NE(html.find("rocev2&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("# &lt;script&gt;alert(&#39;yaml&#39;)&lt;/script&gt; &amp; &quot;quotes&quot;"), std::string::npos);
  // No external resources: nothing loaded by address, and no address outside
  // the embedded Chart.js (whose licence header names its home page).
  const size_t lib = html.find("<script>/*!\n * Chart.js v");
  ASSERT_NE(lib, std::string::npos) << "Chart.js is embedded";
  const size_t lib_end = html.find("</script>", lib);
  const std::string own = html.substr(0, lib) + html.substr(lib_end);
  EXPECT_EQ(own.find("http://"), std::string::npos);
  EXPECT_EQ(own.find("https://"), std::string::npos);
  for (const char* load : {" src=", " href=", "<link", "@import", "url("}) EXPECT_EQ(html.find(load), std::string::npos) << load;
  EXPECT_NE(html.find("<details>"), std::string::npos);
  EXPECT_NE(html.find("FAIL: "), std::string::npos);
  EXPECT_NE(html.find("Skipped (0 samples): rocev2&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("SIM"), std::string::npos);
  EXPECT_NE(html.find(r.description), std::string::npos);
  EXPECT_NE(html.find("plane 1 down"), std::string::npos);
  // Every data-key is a JSON pointer into report.json and shows format_number of its value.
  const auto j = nlohmann::json::parse(ms::report_json(r));
  const auto keys = data_keys(html);
  EXPECT_GT(keys.size(), 60u);
  for (const auto& k : keys) {
    const nlohmann::json::json_pointer ptr(k.pointer);
    ASSERT_TRUE(j.contains(ptr)) << k.pointer;
    ASSERT_TRUE(j.at(ptr).is_number()) << k.pointer;
    EXPECT_EQ(k.text, ms::format_number(k.pointer.substr(k.pointer.rfind('/') + 1), j.at(ptr).get<double>()))
        << k.pointer;
  }
  // Every value the charts are drawn from is its report.json number in the
  // plot's unit (report_html_test.cc checks what Chart.js drew of them).
  const auto specs = plot_specs(html);
  size_t plotted = 0;
  for (const auto& c : specs)
    for (const auto& ds : c.at("datasets"))
      for (const auto& pt : ds.at("points")) {
        // A cdf's value is its x; its y the share the point's index stands for.
        const bool cdf = c.at("kind") == "cdf";
        const auto& value = pt.at(cdf ? "x" : "y");
        if (!pt.contains("p")) {
          EXPECT_TRUE(value.is_null()) << "a plotted value without its JSON pointer";
          continue;
        }
        const std::string pointer = pt.at("p");
        const nlohmann::json::json_pointer ptr(pointer);
        ASSERT_TRUE(j.contains(ptr)) << ptr;
        ASSERT_TRUE(j.at(ptr).is_number()) << ptr;
        double want = j.at(ptr).get<double>();
        if (ds.at("from_json").contains("div")) want /= ds.at("from_json").at("div").get<double>();
        if (ds.at("from_json").contains("mul")) want *= ds.at("from_json").at("mul").get<double>();
        EXPECT_EQ(value.get<double>(), want) << ptr;
        if (cdf) {
          const double k = std::stod(pointer.substr(pointer.rfind('/') + 1));
          EXPECT_EQ(pt.at("y").get<double>(), k / (ms::kLatencyCdfPoints - 1)) << ptr;
        }
        ++plotted;
      }
  // 6 runs x 8 intervals x 2 ends of a goodput step, and of 4 planes' utilisation
  // steps; 6 retained; 15 latency bars; 5 runs' completion-time CDFs.
  EXPECT_EQ(plotted, 96u + 384u + 6u + 15u + 5u * ms::kLatencyCdfPoints);
}

TEST(ReportHtml, NoSweepShowsGoodputBars) {
  const ms::Report r = make_fault_report();
  const std::string html = ms::report_html(r);
  for (const char* id : {"plot-goodput", "plot-goodput-bars", "plot-planes", "plot-latency", "plot-latency-cdf"})
    EXPECT_NE(html.find("id=\"" + std::string(id) + "\""), std::string::npos) << id;
  EXPECT_EQ(html.find("plot-retained"), std::string::npos);
  EXPECT_EQ(count(html, "<script"), 3u) << "the page's own three scripts, none from the description";
  EXPECT_EQ(html.find("<script>document.title"), std::string::npos);
  EXPECT_NE(html.find("data-key=\"/derived/runs/0/fault_retained\""), std::string::npos);
  EXPECT_NE(html.find("PASS: all"), std::string::npos);
  EXPECT_NE(html.find("LIVE"), std::string::npos);
}

// The completion-time CDF: one line per run that has a distribution, in the
// job's colour and dash (as on the goodput plot), x the time on a log axis
// spanning whole decades, y the share 0..1; a run without one is not drawn.
// When no run has one the plot says why instead of drawing an empty chart.
TEST(ReportHtml, LatencyCdfPlotOrWhyNot) {
  ms::Report r = make_fault_report();
  r.mode = "sim";
  r.runs.push_back(r.runs[0]);  // a second MetaRoCE job: the same blue family, dashed
  r.runs[2].job = "metaroce-2";
  for (auto& run : r.runs) run.latency.cdf_us = metaroce::scenario::testing::cdf_through(run.latency);
  r.runs[2].latency.cdf_us.clear();
  const std::string html = ms::report_html(r);
  EXPECT_NE(html.find("<h3>Message completion time (CDF)</h3>"), std::string::npos);
  EXPECT_NE(html.find("<canvas id=\"plot-latency-cdf-0\""), std::string::npos);
  EXPECT_EQ(html.find("no completion-time distribution"), std::string::npos);
  // Next to the percentiles: after their plot, before the Runs table.
  EXPECT_LT(html.find("id=\"plot-latency\""), html.find("id=\"plot-latency-cdf\""));
  EXPECT_LT(html.find("id=\"plot-latency-cdf\""), html.find("<h2>Runs</h2>"));
  const auto specs = plot_specs(html);
  const nlohmann::json* cdf = nullptr;
  const nlohmann::json* goodput = nullptr;
  for (const auto& c : specs) {
    if (c.at("canvas") == "plot-latency-cdf-0") cdf = &c;
    if (c.at("canvas") == "plot-goodput-0") goodput = &c;
  }
  ASSERT_NE(cdf, nullptr);
  ASSERT_NE(goodput, nullptr);
  EXPECT_EQ(cdf->at("kind"), "cdf");
  EXPECT_EQ(cdf->at("unit"), "us");
  EXPECT_EQ(cdf->at("x").at("type"), "logarithmic");
  EXPECT_EQ(cdf->at("x").at("title"), "message completion time (us, log scale)");
  EXPECT_EQ(cdf->at("x").at("min"), 5.0);  // the fastest message: 5.1 us
  EXPECT_EQ(cdf->at("x").at("max"), 5e5);  // the slowest: 210000 us
  EXPECT_EQ(cdf->at("y").at("type"), "linear");
  EXPECT_EQ(cdf->at("y").at("min"), 0);
  EXPECT_EQ(cdf->at("y").at("max"), 1);
  const auto& ds = cdf->at("datasets");
  ASSERT_EQ(ds.size(), 2u) << "metaroce-2 has no distribution: not drawn";
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ds[i].at("label"), goodput->at("datasets")[i].at("label"));
    EXPECT_EQ(ds[i].at("colour"), goodput->at("datasets")[i].at("colour")) << "the job's colour";
    ASSERT_EQ(ds[i].at("points").size(), ms::kLatencyCdfPoints);
    EXPECT_EQ(ds[i].at("points")[99].at("p"), "/runs/" + std::to_string(i) + "/latency/cdf_us/99");
    EXPECT_EQ(ds[i].at("points")[99].at("x"), r.runs[i].latency.p99_us);
    EXPECT_EQ(ds[i].at("points")[99].at("y"), 0.99);
    EXPECT_EQ(ds[i].at("points")[100].at("y"), 1.0);
  }
  EXPECT_NE(ds[0].at("colour"), ds[1].at("colour")) << "MetaRoCE and RoCEv2 apart";
  EXPECT_FALSE(ds[0].contains("dash"));
  EXPECT_TRUE(goodput->at("datasets")[2].contains("dash")) << "the second MetaRoCE job is dashed";

  // A zero time has no place on a log axis: a gap, its index kept.
  r.runs[0].latency.cdf_us[0] = 0;
  const auto gap = plot_specs(ms::report_html(r));
  for (const auto& c : gap)
    if (c.at("canvas") == "plot-latency-cdf-0") {
      const auto& pts = c.at("datasets")[0].at("points");
      ASSERT_EQ(pts.size(), ms::kLatencyCdfPoints);
      EXPECT_TRUE(pts[0].at("x").is_null());
      EXPECT_FALSE(pts[0].contains("p"));
      EXPECT_EQ(pts[1].at("y"), 0.01);
    }

  // Times within one decade: the axis spans whole decades, so two are labelled.
  auto x_range = [](const ms::Report& rep) {
    for (const auto& c : plot_specs(ms::report_html(rep)))
      if (c.at("canvas") == "plot-latency-cdf-0") return std::make_pair(c.at("x").at("min"), c.at("x").at("max"));
    return std::make_pair(nlohmann::json(), nlohmann::json());
  };
  ms::Report narrow = r;
  for (auto& run : narrow.runs)
    for (double& v : run.latency.cdf_us) v = 21 + 0.15 * (&v - run.latency.cdf_us.data());  // 21 to 36 us
  EXPECT_EQ(x_range(narrow), std::make_pair(nlohmann::json(10.0), nlohmann::json(100.0)));
  for (auto& run : narrow.runs)
    for (double& v : run.latency.cdf_us) v *= 100;  // 2100 to 3600 us: 1000 to 10000
  EXPECT_EQ(x_range(narrow), std::make_pair(nlohmann::json(1000.0), nlohmann::json(10000.0)));

  // No distribution anywhere: the empty state says why, and no chart is drawn.
  const auto why_not = [](ms::Report rep) {
    const std::string page = ms::report_html(rep);
    EXPECT_EQ(page.find("plot-latency-cdf-0"), std::string::npos);
    const size_t b = page.find("<figure class=\"plot\" id=\"plot-latency-cdf\"");
    EXPECT_NE(b, std::string::npos);
    const size_t e = page.find("</figure>", b);
    return b == std::string::npos ? std::string() : page.substr(b, e - b);
  };
  const std::string live = why_not(make_fault_report());
  EXPECT_NE(live.find("<div class=\"empty\">no completion-time distribution: live daemons report percentiles only"),
            std::string::npos)
      << live;
  for (auto& run : r.runs) run.latency.cdf_us.clear();
  EXPECT_NE(why_not(r).find("no run in this report has one"), std::string::npos);
  for (auto& run : r.runs) run.latency.samples = 0;
  EXPECT_NE(why_not(r).find("no run completed a message"), std::string::npos);
}

TEST(ReportHtml, EmptyReportStillRenders) {
  ms::Report r;
  r.mode = "sim";
  const std::string html = ms::report_html(r);
  EXPECT_EQ(count(html, "<figure class=\"plot\""), 5u);
  EXPECT_EQ(count(html, "<figure class=\"plot\""), count(html, "</figure>"));
  EXPECT_EQ(count(html, "<canvas"), 0u) << "nothing to draw: notes instead of empty charts";
  EXPECT_NE(html.find("id=\"report-plots\">[]</script>"), std::string::npos);
  EXPECT_NE(html.find("No assertions"), std::string::npos);
  EXPECT_FALSE(ms::summary_table(r).empty());
}

TEST(FormatNumber, Cases) {
  EXPECT_EQ(ms::format_number("goodput_bps", 12.344e9), "12.34 Gb/s");
  EXPECT_EQ(ms::format_number("plane_rate_bps", 25e9), "25.00 Gb/s");
  EXPECT_EQ(ms::format_number("fault_goodput_bps", 0), "0.00 Gb/s");
  EXPECT_EQ(ms::format_number("plane_utilisation", 0.4567), "45.7%");
  EXPECT_EQ(ms::format_number("retained", 1), "100.0%");
  EXPECT_EQ(ms::format_number("fault_retained", 0.0004), "0.0%");
  EXPECT_EQ(ms::format_number("loss_seen", 0.0123), "1.2%");
  EXPECT_EQ(ms::format_number("goodput_ratio", 0.75), "75.0%");
  EXPECT_EQ(ms::format_number("p99_us", 123.44), "123.4 us");
  EXPECT_EQ(ms::format_number("median_us", 7), "7.0 us");
  EXPECT_EQ(ms::format_number("retransmits", 1234567), "1234567");
  EXPECT_EQ(ms::format_number("rtos", 0), "0");
  EXPECT_EQ(ms::format_number("samples", 50000), "50000");
  EXPECT_EQ(ms::format_number("seed", 18014398509481984.0), "18014398509481984");
  EXPECT_EQ(ms::format_number("t_s", 1.5), "1.50 s");
  EXPECT_EQ(ms::format_number("sweep_value", 0.001), "0.001");
  EXPECT_EQ(ms::format_number("goodput_bps", std::nan("")), "n/a");
  EXPECT_EQ(ms::format_number("goodput_bps", -0.0), "0.00 Gb/s");
}

TEST(SummaryTable, ColumnsAndAssertionLines) {
  const std::string t = ms::summary_table(make_sweep_report("rocev2"));
  std::istringstream in(t);
  std::string header, rule;
  std::getline(in, header);
  std::getline(in, rule);
  for (const char* c : {"run", "transport", "loss", "goodput", "retained", "retransmits", "spurious", "RTOs",
                        "path changes", "verification", "state"})
    EXPECT_NE(header.find(c), std::string::npos) << c;
  EXPECT_EQ(rule.find_first_not_of('-'), std::string::npos);
  // Rows aligned: the goodput column ends at the same position in every row.
  const size_t end = header.find("goodput") + std::string("goodput").size();
  std::string line;
  int rows = 0;
  while (std::getline(in, line) && !line.empty()) {
    ++rows;
    EXPECT_EQ(line.substr(end - 5, 5), " Gb/s") << line;
  }
  EXPECT_EQ(rows, 6);
  EXPECT_NE(t.find("assertions: 2 of 3 passed"), std::string::npos);
  EXPECT_NE(t.find("  PASS  retained: metaroce >= 0.85"), std::string::npos);
  EXPECT_NE(t.find("  FAIL  retained: rocev2 >= 0.5 at every loss value  (retained 10.5%"), std::string::npos);
}

fs::path temp_dir(const std::string& tag) {
  std::string tmpl = (fs::temp_directory_path() / ("report_test_" + tag + "_XXXXXX")).string();
  const char* p = mkdtemp(tmpl.data());
  EXPECT_NE(p, nullptr);
  return fs::path(tmpl);
}

TEST(WriteReport, WritesThreeFilesIntoNewDirectories) {
  const fs::path root = temp_dir("write");
  const fs::path dir = root / "a" / "b";
  const ms::Report r = make_sweep_report("rocev2");
  std::string err;
  ASSERT_TRUE(ms::write_report(r, dir.string(), &err)) << err;
  EXPECT_EQ(slurp(dir / "report.json"), ms::report_json(r));
  EXPECT_EQ(slurp(dir / "timeseries.csv"), ms::timeseries_csv(r));
  EXPECT_EQ(slurp(dir / "report.html"), ms::report_html(r));
  // Again into the same directory: overwrites.
  ASSERT_TRUE(ms::write_report(make_fault_report(), dir.string(), &err)) << err;
  EXPECT_NE(slurp(dir / "report.json").find("plane-failure"), std::string::npos);
  fs::remove_all(root);
}

TEST(WriteReport, ErrorsNameThePath) {
  const fs::path root = temp_dir("err");
  std::ofstream(root / "file") << "x";
  std::string err;
  const std::string under_file = (root / "file" / "out").string();
  EXPECT_FALSE(ms::write_report(make_fault_report(), under_file, &err));
  EXPECT_NE(err.find(under_file), std::string::npos) << err;
  // A file that cannot be opened for writing (a directory in its place).
  fs::create_directories(root / "out" / "report.json");
  err.clear();
  EXPECT_FALSE(ms::write_report(make_fault_report(), (root / "out").string(), &err));
  EXPECT_NE(err.find((root / "out" / "report.json").string()), std::string::npos) << err;
  EXPECT_FALSE(ms::write_report(make_fault_report(), under_file, nullptr));  // no error sink: no crash
  fs::remove_all(root);
}

// A clos's report: the topology and the tiers in report.json (read back as
// written), timeseries.csv and the page; the full mesh's report has none.
TEST(ReportClos, TopologyAndTiersInEveryFile) {
  const ms::Report r = make_clos_report();
  const std::string text = ms::report_json(r);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j.at("topology").at("kind"), "clos");
  EXPECT_EQ(j.at("topology").at("leaves"), 2);
  EXPECT_EQ(j.at("topology").at("links"), 96);
  EXPECT_EQ(j.at("runs").at(0).at("tiers").size(), 4u);
  EXPECT_EQ(j.at("runs").at(0).at("tiers").at(3).at("plane"), 3);
  EXPECT_DOUBLE_EQ(j.at("runs").at(1).at("intervals").at(9).at("tiers").at(1).at("leaf_spine_max").get<double>(), 0.8);
  std::string err;
  const auto back = ms::parse_report_json(text, "report.json", &err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(ms::report_json(*back), text);
  const std::string csv = ms::timeseries_csv(r);
  EXPECT_NE(csv.find(",plane3_util,plane0_host_mean,plane0_host_max,plane0_leaf_spine_mean,plane0_leaf_spine_max,"),
            std::string::npos)
      << csv.substr(0, 300);
  const std::string html = ms::report_html(r);
  EXPECT_NE(html.find("Link utilisation per tier"), std::string::npos);
  std::map<std::string, std::string> shown;
  for (const auto& t : data_keys(html)) shown[t.pointer] = t.text;
  EXPECT_EQ(shown["/topology/oversubscription"], "1:1");
  EXPECT_EQ(shown["/runs/1/tiers/2/leaf_spine_mean"], "17.2%");  // 0.19 x 0.8 + 0.02
  EXPECT_EQ(shown["/runs/0/tiers/0/host_max"], "91.0%");
  // A mesh: none of it, and a page without the section.
  const ms::Report mesh = make_fault_report();
  EXPECT_EQ(ms::report_json(mesh).find("tiers"), std::string::npos);
  EXPECT_EQ(ms::report_json(mesh).find("topology"), std::string::npos);
  EXPECT_EQ(ms::report_html(mesh).find("Link utilisation per tier"), std::string::npos);
  // A topology of another kind is refused on reading.
  std::string bad = text;
  bad.replace(bad.find("\"kind\": \"clos\""), 14, "\"kind\": \"ring\"");
  EXPECT_FALSE(ms::parse_report_json(bad, "r.json", &err));
  EXPECT_EQ(err, "r.json: /topology/kind: must be clos");
}

}  // namespace
