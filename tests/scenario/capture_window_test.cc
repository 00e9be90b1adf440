// Capture windows in scenario files (a timeline event's `capture:`): every
// key, its defaults and each refusal naming the key, line and allowed range;
// the plan's windows and file names; the engine starting and stopping a
// backend's capture at the window's instants (a recording backend); and the
// simulator writing the window's frames as pcapng on its own clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "metaroce/capture/pcapng.h"
#include "metaroce/scenario/engine.h"
#include "metaroce/scenario/scenario.h"
#include "parse_helpers.h"

namespace metaroce::scenario {
namespace {

using test::error_of;
using test::parse_ok;



// Lines 1-7; the first event is on line 8.
const std::string kHead = R"(name: t
description: test scenario
duration: 6s
jobs:
  - {name: a, from: h0, to: h1}
  - {name: b, from: h1, to: h0, transport: rocev2}
timeline:
)";

TEST(CaptureWindowParse, EveryKeyAndTheDefaults) {
  const Scenario s = parse_ok(kHead +
                              "  - {at: 2s, action: down, plane: 1, label: plane 1 down, capture: {before: 20ms, after: "
                              "100ms, where: both, planes: [1, 0], snaplen: 128}}\n"
                              "  - {at: 4s, action: up, plane: 1, capture: {}}\n"
                              "  - {at: 10ms, action: set, set: {loss: 1%}, capture: {where: endpoints}}\n"
                              "  - {at: 5s, action: set, set: {loss: 0}}\n");
  ASSERT_EQ(s.timeline.size(), 4u);
  ASSERT_TRUE(s.timeline[0].capture);
  const CaptureWindow& w = *s.timeline[0].capture;
  EXPECT_EQ(w.before_ns, 20'000'000);
  EXPECT_EQ(w.after_ns, 100'000'000);
  EXPECT_EQ(w.where, CaptureWindow::Where::kBoth);
  EXPECT_EQ(w.planes, (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(w.snap_length, 128u);
  ASSERT_TRUE(s.timeline[1].capture);
  EXPECT_EQ(s.timeline[1].capture->before_ns, kDefaultCaptureBeforeNs);
  EXPECT_EQ(s.timeline[1].capture->after_ns, kDefaultCaptureAfterNs);
  EXPECT_EQ(s.timeline[1].capture->where, CaptureWindow::Where::kFabric);
  EXPECT_TRUE(s.timeline[1].capture->planes.empty());
  EXPECT_EQ(s.timeline[1].capture->snap_length, 0u);
  // The default "before" never reaches back past the run's start.
  ASSERT_TRUE(s.timeline[2].capture);
  EXPECT_EQ(s.timeline[2].capture->before_ns, 10'000'000);
  EXPECT_EQ(s.timeline[2].capture->where, CaptureWindow::Where::kEndpoints);
  EXPECT_FALSE(s.timeline[3].capture);
  // Nor the default "after" past its end.
  const Scenario end = parse_ok(kHead + "  - {at: 6s, action: down, plane: 0, capture: {}}\n");
  EXPECT_EQ(end.timeline[0].capture->after_ns, 0);
  EXPECT_EQ(end.timeline[0].capture->before_ns, kDefaultCaptureBeforeNs);
  // Windows that touch do not overlap.
  parse_ok(kHead + "  - {at: 2s, action: down, plane: 1, capture: {}}\n  - {at: 2.1s, action: up, plane: 1, capture: {}}\n");
}

TEST(CaptureWindowParse, RefusalsNameTheKeyAndTheAllowedRange) {
  const auto ev = [](const std::string& capture, const std::string& at = "2s") {
    return kHead + "  - {at: " + at + ", action: down, plane: 1, capture: " + capture + "}\n";
  };
  EXPECT_EQ(error_of(ev("5")), "f.yaml:8: timeline[0].capture: must be a mapping, e.g. {before: 50ms, after: 50ms, "
                               "where: fabric} ({} takes the defaults; got 5)");
  EXPECT_EQ(error_of(ev("{window: 1s}")),
            "f.yaml:8: timeline[0].capture.window: unknown key (allowed: before, after, where, planes, snaplen)");
  EXPECT_EQ(error_of(ev("{before: 3s}")),
            "f.yaml:8: timeline[0].capture.before: must be in [0, at] = [0, 2s]: the window cannot start before the "
            "run (got 3s)");
  EXPECT_EQ(error_of(ev("{before: 11s}")), "f.yaml:8: timeline[0].capture.before: must be in [0, 10s] (got 11s)");
  EXPECT_EQ(error_of(ev("{before: 1x}")).rfind("f.yaml:8: timeline[0].capture.before: ", 0), 0u);
  EXPECT_EQ(error_of(ev("{after: 5s}")),
            "f.yaml:8: timeline[0].capture.after: must be in [0, duration - at] = [0, 4s]: the window must end by the "
            "run's duration (got 5s)");
  EXPECT_EQ(error_of(ev("{before: 0, after: 0}")),
            "f.yaml:8: timeline[0].capture: before + after must be in [1ms, 10s] (got 0 + 0)");
  std::string longer = kHead;
  longer.replace(longer.find("duration: 6s"), 12, "duration: 20s");
  EXPECT_EQ(error_of(longer + "  - {at: 10s, action: down, plane: 1, capture: {before: 6s, after: 6s}}\n"),
            "f.yaml:8: timeline[0].capture: before + after must be in [1ms, 10s] (got 6s + 6s)");
  EXPECT_EQ(error_of(ev("{where: wire}")),
            "f.yaml:8: timeline[0].capture.where: must be one of fabric | endpoints | both (got 'wire')");
  EXPECT_EQ(error_of(ev("{planes: [4]}")), "f.yaml:8: timeline[0].capture.planes[0]: must be in [0, 3] (got 4)");
  EXPECT_EQ(error_of(ev("{planes: [1, 1]}")), "f.yaml:8: timeline[0].capture.planes[1]: plane 1 is listed twice");
  EXPECT_EQ(error_of(ev("{planes: []}")), "f.yaml:8: timeline[0].capture.planes: must have 1 to 4 entries (got 0)");
  EXPECT_EQ(error_of(ev("{planes: 1}")), "f.yaml:8: timeline[0].capture.planes: must be a list (got 1)");
  EXPECT_EQ(error_of(ev("{snaplen: 32}")), "f.yaml:8: timeline[0].capture.snaplen: must be in [64, 9K] (got 32)");
  EXPECT_EQ(error_of(ev("{snaplen: 10K}")), "f.yaml:8: timeline[0].capture.snaplen: must be in [64, 9K] (got 10K)");
  // Windows run one at a time.
  EXPECT_EQ(error_of(kHead + "  - {at: 2s, action: down, plane: 1, capture: {}}\n"
                             "  - {at: 2050ms, action: up, plane: 1, capture: {}}\n"),
            "f.yaml:9: timeline[1].capture: its window [2s, 2.1s] overlaps timeline[0].capture's [1.95s, 2.05s]; "
            "captures run one at a time, so windows must not overlap");
  // A planes sweep must keep the window's planes.
  EXPECT_EQ(error_of(kHead + "  - {at: 2s, action: set, set: {loss: 1%}, capture: {planes: [3]}}\n"
                             "sweep: {parameter: planes, values: [2, 4]}\n"),
            "f.yaml:9: sweep.values[0]: timeline[0] names plane 3, so at least 4 planes are needed (got 2)");
}

TEST(CaptureWindowPlan, WindowsInTimeOrderWithFileNamesFromTheLabels) {
  const Scenario s = parse_ok(kHead + "  - {at: 4s, action: up, plane: 1, label: plane 1 up, capture: {before: 0, after: 1s}}\n"
                                      "  - {at: 2s, action: down, plane: 1, label: plane 1 down, capture: {}}\n"
                                      "  - {at: 3s, action: set, set: {loss: 1%}, label: plane 1 down, capture: {}}\n");
  const std::vector<RunPlan> plans = plan_scenario(s);
  ASSERT_EQ(plans.size(), 2u);
  const RunPlan& p = plans[1];
  ASSERT_EQ(p.captures.size(), 3u);
  EXPECT_EQ(p.captures[0].label, "plane 1 down");
  EXPECT_EQ(p.captures[0].event, 1u);
  EXPECT_EQ(p.captures[0].from_ns, 1'950'000'000);
  EXPECT_EQ(p.captures[0].to_ns, 2'050'000'000);
  EXPECT_EQ(p.captures[0].file, "captures/02-b-plane-1-down.pcapng");
  EXPECT_EQ(p.captures[1].file, "captures/02-b-plane-1-down-2.pcapng") << "a second window of one label";
  EXPECT_EQ(p.captures[2].from_ns, 4'000'000'000);
  EXPECT_EQ(p.captures[2].to_ns, 5'000'000'000);
  EXPECT_EQ(p.captures[2].file, "captures/02-b-plane-1-up.pcapng");
  EXPECT_EQ(capture_file_name(3, "metaroce loss=1%", "ramp loss 0% -> 10% over 4s on every link"),
            "03-metaroce-loss-1-ramp-loss-0-10-over-4s-on-every-link.pcapng");
  const std::string long_name = capture_file_name(12, std::string(200, 'x'), "y");
  EXPECT_EQ(long_name.size(), 128u);
  EXPECT_EQ(long_name.substr(long_name.size() - 7), ".pcapng");
}

// Records what the engine asks of a backend, with the run's clock.
class RecordingBackend final : public Backend {
 public:
  // ends_at: when every job has ended; captures: whether it claims to capture
  // (else the default capture_results, which says it does not).
  explicit RecordingBackend(Nanos ends_at, bool captures = false) : ends_at_(ends_at), captures_(captures) {}
  std::string mode() const override { return "recording"; }
  uint32_t planes() const override { return 4; }
  bool real_time() const override { return false; }
  void prepare(const RunPlan&) override { now_ = 0; }
  void start_jobs(const RunPlan&) override {}
  void start_timeline(const RunPlan&) override { log.push_back("timeline"); }
  bool run_until(Nanos t) override {
    EXPECT_GE(t, now_) << "time went back";
    now_ = t;
    log.push_back("until " + std::to_string(t / 1'000'000));
    return t >= ends_at_;
  }
  FabricSample sample_fabric() override {
    FabricSample f;
    f.t_s = f.clock_s = static_cast<double>(now_) / 1e9;
    f.plane_bytes.assign(4, 0);
    return f;
  }
  void stop_jobs() override {}
  std::vector<RunResult> results(const RunPlan& plan) override {
    std::vector<RunResult> out(plan.jobs.size());
    for (size_t i = 0; i < out.size(); ++i) out[i].job = plan.jobs[i].job->name;
    return out;
  }
  void start_capture(const RunPlan&, const PlannedCapture& c) override {
    log.push_back("start " + c.label + " at " + std::to_string(now_ / 1'000'000));
    started_.push_back(c.label);
  }
  std::vector<CaptureResult> capture_results(const RunPlan& plan) override {
    if (!captures_) return Backend::capture_results(plan);
    std::vector<CaptureResult> out;
    for (const PlannedCapture& c : plan.captures) {
      out.push_back(capture_result_for(plan, c));
      if (std::find(started_.begin(), started_.end(), c.label) != started_.end()) out.back().captured_from_s = out.back().from_s;
    }
    return out;
  }
  void stop_capture(const RunPlan&, const PlannedCapture& c) override {
    log.push_back("stop " + c.label + " at " + std::to_string(now_ / 1'000'000));
  }
  std::vector<std::string> log;

 private:
  Nanos now_ = 0, ends_at_;
  bool captures_;
  std::vector<std::string> started_;
};

std::vector<std::string> captures_in(const std::vector<std::string>& log) {
  std::vector<std::string> out;
  for (const std::string& l : log)
    if (l.rfind("start", 0) == 0 || l.rfind("stop", 0) == 0) out.push_back(l);
  return out;
}

TEST(CaptureWindowEngine, ArmsEachWindowAheadAndStopsItAtItsEnd) {
  const Scenario s = parse_ok(R"(name: t
description: test scenario
duration: 1s
interval: 250ms
jobs:
  - {name: a, from: h0, to: h1}
timeline:
  - {at: 0, action: set, set: {loss: 1%}, label: start, capture: {before: 0, after: 10ms}}
  - {at: 300ms, action: down, plane: 1, label: down, capture: {before: 40ms, after: 60ms}}
  - {at: 600ms, action: up, plane: 1, label: up, capture: {before: 240ms, after: 0}}
)");
  RecordingBackend b(1'000'000'000);
  const Report r = run_scenario(s, b);
  // Each window armed as early as it can be (the first when the timeline
  // starts, the next when the one before it stops), each stopped right after
  // the run reached its end; among the interval samples (250, 500, 750, 1000 ms).
  const std::vector<std::string> want = {"timeline",         "start start at 0", "until 10",  "stop start at 10",
                                         "start down at 10", "until 250",        "until 360", "stop down at 360",
                                         "start up at 360",  "until 500",        "until 600", "stop up at 600",
                                         "until 750",        "until 1000"};
  EXPECT_EQ(b.log, want);
  // A backend that does not capture says so for every window.
  ASSERT_EQ(r.captures.size(), 3u);
  EXPECT_EQ(r.captures[1].event, "down");
  EXPECT_DOUBLE_EQ(r.captures[1].at_s, 0.3);
  EXPECT_DOUBLE_EQ(r.captures[1].from_s, 0.26);
  EXPECT_DOUBLE_EQ(r.captures[1].to_s, 0.36);
  EXPECT_EQ(r.captures[1].where, "fabric");
  EXPECT_EQ(r.captures[1].file, "");
  EXPECT_EQ(r.captures[1].note, "no packets captured: the recording backend does not capture");
}

TEST(CaptureWindowEngine, ARunThatEndsEarlyStopsItsWindowAndSaysSo) {
  const Scenario s = parse_ok(R"(name: t
description: test scenario
duration: 1s
interval: 250ms
jobs:
  - {name: a, from: h0, to: h1}
timeline:
  - {at: 200ms, action: down, plane: 1, label: down, capture: {before: 0, after: 400ms}}
  - {at: 800ms, action: up, plane: 1, label: up, capture: {}}
)");
  RecordingBackend b(500'000'000, true);  // every job has ended by 500 ms
  const Report r = run_scenario(s, b);
  EXPECT_EQ(captures_in(b.log), (std::vector<std::string>{"start down at 0", "stop down at 500"}));
  ASSERT_EQ(r.captures.size(), 2u);
  EXPECT_EQ(r.captures[0].note, "the run ended at 0.500 s, before the window's end");
  EXPECT_EQ(r.captures[1].note, "not captured: the run ended at 0.500 s, before the window began");
  EXPECT_FALSE(r.captures[1].captured_from_s);
}

// The simulator writes a window's frames itself: the bytes its endpoints sent,
// the emulator's verdicts in each frame's comment, on the simulated clock.
TEST(CaptureWindowSim, PcapngOfTheWindowAroundAPlaneFailure) {
  const Scenario s = parse_ok(R"(name: capture-sim
description: a window around a plane failing
duration: 1s
interval: 100ms
base: {rate: 200M}
jobs:
  - {name: metaroce, from: h0, to: h1, size: 16K, paths: 8}
timeline:
  - {at: 500ms, action: down, plane: 1, label: plane 1 down, capture: {before: 100ms, after: 100ms, where: both, snaplen: 96}}
  - {at: 800ms, action: up, plane: 1}
sim: {time_scale: 0.02}
)");
  const std::string out = ::testing::TempDir() + "/capture-window-sim";
  std::filesystem::remove_all(out);
  const Report r = run_scenario_sim(s, {}, 1, std::nullopt, out);
  ASSERT_EQ(r.captures.size(), 1u);
  const CaptureResult& c = r.captures[0];
  EXPECT_EQ(c.file, "captures/01-metaroce-plane-1-down.pcapng");
  EXPECT_EQ(c.sources, (std::vector<std::string>{"simulator"}));
  ASSERT_TRUE(c.captured_from_s && c.captured_to_s);
  EXPECT_DOUBLE_EQ(*c.captured_from_s, 0.4);
  EXPECT_DOUBLE_EQ(*c.captured_to_s, 0.6);
  EXPECT_EQ(c.frames_not_written, 0u);
  EXPECT_NE(c.note.find("simulated"), std::string::npos) << c.note;

  std::string err;
  const auto f = capture::read_pcapng(out + "/" + c.file, &err);
  ASSERT_TRUE(f) << err;
  EXPECT_NE(f->section_comment.find("simulated time"), std::string::npos);
  ASSERT_EQ(f->interfaces.size(), 4u + 2 * 4u);  // fabric planes, then h0's and h1's
  EXPECT_EQ(f->interfaces[0].name, "fabric plane0");
  EXPECT_EQ(f->interfaces[5].name, "h0 plane1");
  EXPECT_EQ(f->interfaces[0].snap_length, 96u);
  EXPECT_EQ(f->frames.size(), c.frames);
  ASSERT_GT(f->frames.size(), 100u);
  const uint64_t from = 8'000'000, at = 10'000'000, to = 12'000'000;  // simulated ns: scenario x 0.02
  size_t before = 0, link_down_before = 0, link_down_after = 0, fabric_in = 0, endpoint_tx = 0, out_frames = 0;
  for (const auto& fr : f->frames) {
    EXPECT_GE(fr.time_ns, from);
    EXPECT_LE(fr.time_ns, to);
    EXPECT_LE(fr.bytes.size(), 96u);
    EXPECT_GE(fr.original_length, fr.bytes.size());
    before += fr.time_ns < at;
    const bool link_down = fr.comment.find("dropped by the emulator: link_down") == 0;
    (fr.time_ns < at ? link_down_before : link_down_after) += link_down;
    if (link_down) {
      EXPECT_EQ(f->interfaces[fr.interface].name, "fabric plane1");
    }
    fabric_in += fr.comment.rfind("fabric in (before the emulator), from host ", 0) == 0;
    endpoint_tx += fr.comment == "endpoint tx";
    out_frames += fr.comment.rfind("fabric out (after the emulator), to host ", 0) == 0;
  }
  EXPECT_GT(before, 50u) << "frames before the event";
  EXPECT_EQ(link_down_before, 0u);
  EXPECT_GT(link_down_after, 0u) << "plane 1's frames dropped once it is down";
  EXPECT_EQ(fabric_in, endpoint_tx) << "the simulator's host port is the fabric's input";
  EXPECT_GT(out_frames, 0u);

  // Without an output folder the report says no file was written.
  const Report none = run_scenario_sim(s, {}, 1);
  ASSERT_EQ(none.captures.size(), 1u);
  EXPECT_EQ(none.captures[0].file, "");
  EXPECT_EQ(none.captures[0].note, "no file: the run was given no output folder (scenario run --out)");
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace metaroce::scenario
