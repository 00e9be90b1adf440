// Metrics derived from the runs: the jobs and sweep values in order of
// appearance, retained goodput per sweep value and the goodput before and
// during the fault window. report.json writes them under "derived".

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "report_internal.h"

namespace metaroce::scenario::report_internal {
namespace {

bool has_sweep(const Report& r) {
  for (const auto& run : r.runs)
    if (!run.sweep_parameter.empty()) return true;
  return false;
}

std::string sweep_parameter(const Report& r) {
  for (const auto& run : r.runs)
    if (!run.sweep_parameter.empty()) return run.sweep_parameter;
  return {};
}

double mean_goodput(const std::vector<const Interval*>& iv) {
  double sum = 0, dur = 0;
  for (const auto* i : iv) {
    const double d = i->t1_s - i->t0_s;
    if (d > 0) {
      sum += i->goodput_bps * d;
      dur += d;
    }
  }
  if (dur > 0) return sum / dur;
  sum = 0;
  for (const auto* i : iv) sum += i->goodput_bps;
  return iv.empty() ? 0 : sum / static_cast<double>(iv.size());
}

}  // namespace

Derived derive(const Report& r) {
  Derived d;
  d.sweep = has_sweep(r);
  d.parameter = sweep_parameter(r);
  d.failed = r.failed();
  for (const auto& run : r.runs) {
    if (std::find(d.jobs.begin(), d.jobs.end(), run.job) == d.jobs.end()) {
      d.jobs.push_back(run.job);
      d.job_transport[run.job] = run.transport;
    }
    if (d.sweep && std::find(d.sweep_values.begin(), d.sweep_values.end(), run.sweep_value) == d.sweep_values.end())
      d.sweep_values.push_back(run.sweep_value);
  }
  d.runs.resize(r.runs.size());
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const RunResult& run = r.runs[i];
    RunDerived& rd = d.runs[i];
    if (d.sweep && !d.sweep_values.empty()) {
      const RunResult* base = nullptr;
      for (const auto& o : r.runs)
        if (o.job == run.job && o.sweep_value == d.sweep_values.front()) {
          base = &o;
          break;
        }
      if (base == nullptr)
        for (const auto& o : r.runs)
          if (o.job == run.job) {
            base = &o;
            break;
          }
      if (base != nullptr && base->goodput_bps > 0 && std::isfinite(run.goodput_bps))
        rd.retained = run.goodput_bps / base->goodput_bps;
    }
    if (!run.events.empty() && !run.intervals.empty()) {
      double tf = run.events.front().first, tl = tf;
      for (const auto& e : run.events) {
        tf = std::min(tf, e.first);
        tl = std::max(tl, e.first);
      }
      double end = 0;
      for (const auto& iv : run.intervals) end = std::max(end, iv.t1_s);
      if (r.duration_s > 0) end = std::min(end, std::max(tf, r.duration_s));  // not the drain after it
      if (tl <= tf) tl = end;
      constexpr double kEps = 1e-9;
      std::vector<const Interval*> before, during;
      for (const auto& iv : run.intervals) {
        if (iv.t1_s <= tf + kEps) before.push_back(&iv);
        if (iv.t0_s >= tf - kEps && iv.t1_s <= tl + kEps) during.push_back(&iv);
      }
      if (before.size() >= 2) before.erase(before.begin());  // warm-up
      rd.fault_from_s = tf;
      rd.fault_to_s = tl;
      if (!before.empty()) rd.baseline_bps = mean_goodput(before);
      if (!during.empty()) rd.fault_bps = mean_goodput(during);
      if (rd.baseline_bps && rd.fault_bps && *rd.baseline_bps > 0) rd.fault_retained = *rd.fault_bps / *rd.baseline_bps;
      if (rd.baseline_bps && *rd.baseline_bps > 0) {
        // Stopped: intervals after the first fault (until the run's traffic ends) that moved almost nothing.
        // Not the drain after the scenario's duration: a last partial interval of completions is not a stall.
        double run_end = tf;
        for (const auto& iv : run.intervals)
          if (iv.goodput_bps > 0) run_end = std::max(run_end, iv.t1_s);
        if (r.duration_s > 0) run_end = std::min(run_end, std::max(tf, r.duration_s));
        double stretch = 0, longest = 0;
        for (const auto& iv : run.intervals) {
          if (iv.t0_s < tf - kEps || iv.t1_s > run_end + kEps) continue;
          if (iv.goodput_bps < kStoppedFraction * *rd.baseline_bps) longest = std::max(longest, stretch += iv.t1_s - iv.t0_s);
          else stretch = 0;
        }
        if (longest > 0) rd.stopped_s = longest;
        rd.outcome = longest >= kStoppedSeconds - kEps                                                  ? "stopped"
                     : longest > 0 || (rd.fault_retained && *rd.fault_retained < kDegradedFraction) ? "degraded"
                                                                                                     : "unaffected";
      }
    } else if (rd.retained) {
      rd.outcome = *rd.retained < kStoppedFraction    ? "stopped"
                   : *rd.retained < kDegradedFraction ? "degraded"
                                                      : "unaffected";
    }
  }
  return d;
}

std::string outcome_text(const RunResult& run, const RunDerived& rd) {
  if (rd.outcome.empty()) return {};
  std::string s = rd.outcome;
  if (rd.fault_retained && rd.baseline_bps && rd.fault_bps)
    s += strf(": kept %.0f%% of its goodput during the faults (%s of %s)", 100 * *rd.fault_retained,
              format_number("goodput_bps", *rd.fault_bps).c_str(), format_number("goodput_bps", *rd.baseline_bps).c_str());
  else if (rd.retained)
    s += strf(": kept %.0f%% of its goodput at %s %s", 100 * *rd.retained, run.sweep_parameter.c_str(),
              sweep_label(run.sweep_parameter, run.sweep_value).c_str());
  if (rd.stopped_s)
    s += strf("; stalled (below %.0f%% of its baseline) for %s s", 100 * kStoppedFraction,
              trim_num(*rd.stopped_s, 2).c_str());
  return s;
}

}  // namespace metaroce::scenario::report_internal
