// Assertions over finished runs (simulator or live): goodput ratios, recovery
// times, data errors, job success, comparisons and sweep retention.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "metaroce/scenario/scenario.h"
#include "metaroce/units/units.h"

namespace metaroce::scenario {

namespace {

constexpr double kEps = 1e-9;  // seconds: interval edges that match a window edge

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

std::string threshold(double v) { return units::trimmed_fixed(v, 6); }

std::string seconds(double s) { return units::format_duration_as_written(static_cast<Nanos>(std::llround(s * 1e9))); }

std::string run_label(const RunResult& r) {
  if (r.sweep_parameter.empty()) return r.job;
  const std::string p = r.sweep_parameter == "skew_ns" ? "skew" : r.sweep_parameter;
  return r.job + " @ " + p + " " + format_sweep_value(r.sweep_parameter, r.sweep_value);
}

// A goodput figure and the messages it was counted from. Goodput counts whole
// messages, so a window that completed n messages could have carried anything
// from n - 1 to n + 1 messages' worth: the figure is known to +-1/n of itself.
struct Goodput {
  double bps = 0;
  double messages = 0;
  double resolution() const { return messages >= 1 ? 1 / messages : std::numeric_limits<double>::infinity(); }
};

// Time-weighted mean goodput of the intervals inside [from, to] (scenario
// seconds); nullopt if no interval lies inside. from == to == 0: every interval.
std::optional<Goodput> mean_goodput(const RunResult& r, double from, double to) {
  const bool whole = from == 0 && to == 0;
  double sum = 0, dur = 0, messages = 0;
  size_t n = 0;
  for (const Interval& iv : r.intervals) {
    if (!whole && (iv.t0_s < from - kEps || iv.t1_s > to + kEps)) continue;
    const double d = iv.t1_s - iv.t0_s;
    if (d <= 0) continue;
    sum += iv.goodput_bps * d;
    dur += d;
    messages += iv.messages;
    ++n;
  }
  if (n == 0) {
    if (whole && r.goodput_bps > 0) return Goodput{r.goodput_bps, static_cast<double>(r.messages)};
    return std::nullopt;
  }
  return Goodput{sum / dur, messages};
}

// ratio >= min, judged at the resolution of the two figures it divides: PASS
// only if it holds at the low end of the ratio's range, FAIL only if it fails
// at the high end, otherwise inconclusive: the window held too few messages to
// tell (lengthen the window, or slow sim.time_scale in the simulator).
void judge_ratio(AssertionResult& out, double ratio, double min, double resolution, const std::string& figures) {
  out.value = ratio;
  const double lo = ratio * (1 - resolution), hi = ratio * (1 + resolution);
  out.passed = lo >= min;
  out.inconclusive = !out.passed && hi >= min;
  char pm[48];
  std::snprintf(pm, sizeof pm, " +- %.3f", ratio * resolution);
  out.detail = num(ratio) + (out.passed ? " >= " : out.inconclusive ? " ~ " : " < ") + threshold(min) + " (" +
               figures + (out.inconclusive ? "; known to" + std::string(pm) + ", too close to the threshold to call" : "") +
               ")";
}

std::string messages_text(const Goodput& a, const Goodput& b) {
  char t[96];
  std::snprintf(t, sizeof t, "%.0f and %.0f messages", a.messages, b.messages);
  return t;
}

std::string window_text(double from, double to) { return "[" + seconds(from) + ", " + seconds(to) + "]"; }

AssertionResult one(const Assertion& a, const RunResult& run, const std::vector<RunResult>& runs) {
  AssertionResult out;
  const double min = a.min;
  const Nanos max_ns = a.max_ns;
  switch (a.metric) {
    case Assertion::Metric::kGoodputRatio: {
      const double w0 = a.window_from_ns / 1e9, w1 = a.window_to_ns / 1e9;
      const double b0 = a.baseline_from_ns / 1e9, b1 = a.baseline_to_ns / 1e9;
      const auto w = mean_goodput(run, w0, w1), b = mean_goodput(run, b0, b1);
      if (!w || !b) {
        out.detail = std::string("no interval lies inside the ") + (!w ? "window " + window_text(w0, w1)
                                                                          : "baseline " + window_text(b0, b1));
        break;
      }
      if (b->bps <= 0) {
        out.detail = "baseline goodput is 0";
        break;
      }
      judge_ratio(out, w->bps / b->bps, min, w->resolution() + b->resolution(),
                  num(w->bps / 1e9) + " / " + num(b->bps / 1e9) + " Gb/s, " + messages_text(*w, *b));
      break;
    }
    case Assertion::Metric::kRecoveryTime: {
      const double b0 = a.baseline_from_ns / 1e9, b1 = a.baseline_to_ns / 1e9, at = a.at_ns / 1e9;
      const auto b = mean_goodput(run, b0, b1);
      if (!b || b->bps <= 0) {
        out.detail = !b ? "no interval lies inside the baseline " + window_text(b0, b1) : "baseline goodput is 0";
        break;
      }
      const double level = a.fraction * b->bps;
      std::optional<double> recovered;
      for (const Interval& iv : run.intervals)
        if (iv.t0_s >= at - kEps && iv.goodput_bps >= level) {
          recovered = iv.t1_s - at;
          break;
        }
      if (!recovered) {
        out.detail = "never back to " + threshold(a.fraction) + " x baseline (" + num(level / 1e9) + " Gb/s) after " +
                     seconds(at);
        break;
      }
      out.value = *recovered;
      const Nanos rec_ns = static_cast<Nanos>(std::llround(*recovered * 1e9));
      out.passed = rec_ns <= max_ns;
      out.detail = seconds(*recovered) + (out.passed ? " <= " : " > ") + units::format_duration_as_written(max_ns);
      break;
    }
    case Assertion::Metric::kDataErrors: {
      const uint64_t errors = run.verified ? run.verify_failures : std::max<uint64_t>(run.verify_failures, 1);
      out.value = static_cast<double>(errors);
      out.passed = static_cast<double>(errors) <= a.max_value;
      out.detail = std::to_string(errors) + (out.passed ? " <= " : " > ") + threshold(a.max_value);
      if (!run.verified && !run.verification.empty()) out.detail += " (verification: " + run.verification + ")";
      break;
    }
    case Assertion::Metric::kJobSucceeded:
      out.passed = run.state == "done";
      out.detail = run.state + (run.error.empty() ? "" : ": " + run.error);
      break;
    case Assertion::Metric::kCompare: {
      const RunResult* other = nullptr;
      for (const RunResult& o : runs)
        if (o.job == a.other && o.sweep_parameter == run.sweep_parameter && o.sweep_value == run.sweep_value) {
          other = &o;
          break;
        }
      if (!other) {
        out.detail = "no run of job " + a.other + (run.sweep_parameter.empty() ? "" : " at this sweep value");
        break;
      }
      const double w0 = a.window_from_ns / 1e9, w1 = a.window_to_ns / 1e9;
      const auto g = mean_goodput(run, w0, w1), go = mean_goodput(*other, w0, w1);
      if (!g || !go) {
        out.detail = "no interval lies inside the window " + window_text(w0, w1);
        break;
      }
      const double ratio =
          go->bps > 0 ? g->bps / go->bps : (g->bps > 0 ? std::numeric_limits<double>::infinity() : 0.0);
      judge_ratio(out, ratio, min, go->bps > 0 ? g->resolution() + go->resolution() : 0,
                  num(g->bps / 1e9) + " / " + num(go->bps / 1e9) + " Gb/s, " + messages_text(*g, *go));
      break;
    }
    case Assertion::Metric::kRetained: break;  // across runs, below
  }
  return out;
}

}  // namespace

std::vector<AssertionResult> evaluate_assertions(const Scenario& s, const std::vector<RunResult>& runs) {
  std::vector<AssertionResult> out;
  for (const Assertion& a : s.assertions) {
    const std::string& text = a.text;
    // Every result this assertion yields carries its known_issue, whichever branch returns.
    struct TagKnownIssue {
      std::vector<AssertionResult>& results;
      size_t first;
      const std::string& known_issue;
      ~TagKnownIssue() {
        for (size_t i = first; i < results.size(); ++i) results[i].known_issue = known_issue;
      }
    } tag{out, out.size(), a.known_issue};
    if (a.metric == Assertion::Metric::kRetained) {
      // Per job: goodput at every sweep value / goodput at the first value.
      std::vector<std::string> jobs;
      for (const RunResult& r : runs)
        if ((a.job == "all" || r.job == a.job) && std::find(jobs.begin(), jobs.end(), r.job) == jobs.end())
          jobs.push_back(r.job);
      if (jobs.empty()) out.push_back({text, false, "no run of job " + a.job});
      const double min = a.min;
      for (const std::string& job : jobs) {
        std::vector<const RunResult*> series;
        for (const RunResult& r : runs)
          if (r.job == job) series.push_back(&r);
        AssertionResult res;
        res.text = text + (a.job == "all" ? " [" + job + "]" : "");
        const RunResult& first = *series.front();
        if (first.goodput_bps <= 0) {
          res.detail = "goodput at the first value (" + run_label(first) + ") is 0";
          out.push_back(res);
          continue;
        }
        double worst = std::numeric_limits<double>::infinity();
        const RunResult* worst_run = nullptr;
        std::string all;
        for (size_t i = 1; i < series.size(); ++i) {
          const double r = series[i]->goodput_bps / first.goodput_bps;
          all += (all.empty() ? "" : ", ") + num(r);
          if (r < worst) worst = r, worst_run = series[i];
        }
        if (!worst_run) {
          res.passed = true;
          res.detail = "one sweep value only: nothing to compare";
        } else {
          // Every value must hold at its own resolution; the detail names the worst.
          const Goodput f{first.goodput_bps, static_cast<double>(first.messages)};
          bool failed = false, unresolved = false;
          for (size_t i = 1; i < series.size(); ++i) {
            AssertionResult each;
            const Goodput g{series[i]->goodput_bps, static_cast<double>(series[i]->messages)};
            judge_ratio(each, g.bps / f.bps, min, g.resolution() + f.resolution(), "");
            failed |= !each.passed && !each.inconclusive;
            unresolved |= each.inconclusive;
          }
          const Goodput w{worst_run->goodput_bps, static_cast<double>(worst_run->messages)};
          const std::string p = worst_run->sweep_parameter == "skew_ns" ? "skew" : worst_run->sweep_parameter;
          judge_ratio(res, worst, min, w.resolution() + f.resolution(),
                      "worst, at " + p + " " +
                          format_sweep_value(worst_run->sweep_parameter, worst_run->sweep_value) +
                          ", " + messages_text(w, f) + "; all: " + all);
          res.passed = !failed && !unresolved;
          res.inconclusive = !failed && unresolved;
        }
        out.push_back(res);
      }
      continue;
    }
    std::vector<const RunResult*> matching;
    for (const RunResult& r : runs)
      if ((a.job == "all" && !(a.metric == Assertion::Metric::kCompare && r.job == a.other)) || r.job == a.job)
        matching.push_back(&r);
    if (matching.empty()) {
      out.push_back({text, false, a.job == "all" ? "no runs" : "no run of job " + a.job});
      continue;
    }
    for (const RunResult* r : matching) {
      AssertionResult res = one(a, *r, runs);
      res.text = text + (matching.size() > 1 || a.job == "all" ? " [" + run_label(*r) + "]" : "");
      out.push_back(std::move(res));
    }
  }
  return out;
}

}  // namespace metaroce::scenario
