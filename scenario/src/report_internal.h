// Private to the report sources (scenario/src/report_*.cc): what the pieces of
// the report share, in namespace report_internal.
//
// Reports of a scenario run: report.json, timeseries.csv, report.html and the
// terminal summary (report.h).
//
//   report_format.cc   text helpers shared by every output, format_number(),
//                      the page's data-key spans
//   report_derive.cc   metrics derived from the runs (Derived)
//   report_data.cc     report.json, timeseries.csv, write_report()
//   report_plots.cc    the six plots (Chart.js specs) and the colour of each job
//   report_charts.js   the page's script: draws the specs with Chart.js, adds
//                      fault-event markers and the time-axis zoom
//   report_page.cc     CSS and report.html, with Chart.js and report_charts.js
//                      embedded at build time (chartjs_embed.h, generated)
//   report_summary.cc  the terminal summary table
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "metaroce/scenario/report.h"

namespace metaroce::scenario::report_internal {

using ojson = nlohmann::ordered_json;

// ------------------------------------------------------------------ text (report_format.cc)

std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
bool ends_with(std::string_view s, std::string_view suffix);
bool contains(std::string_view s, std::string_view part);
std::string esc(std::string_view s);  // HTML/XML escape
// %g without exponent noise for labels ("0.1", "2.5", "16").
std::string trim_num(double v, int max_decimals = 3);
std::string transport_name(const std::string& t);  // "MetaRoCE", "RoCEv2", else as is
// "1%" for loss, "2 us" for *_ns, "16K" for message_bytes ...
std::string sweep_label(const std::string& param, double v);
std::string sweep_axis_title(const std::string& param);
std::string run_label(const RunResult& run);  // job, plus the sweep value in a sweep

// A number from report.json on the page: <tag data-key="pointer">format_number(key, v)</tag>.
std::string dk(const std::string& pointer, const std::string& key, double v, const std::string& tag = "span",
               const std::string& cls = "");
std::string run_ptr(size_t i, const std::string& key);      // "/runs/<i>/<key>"
std::string derived_ptr(size_t i, const std::string& key);  // "/derived/runs/<i>/<key>"

// ------------------------------------------------------------------ derived (report_derive.cc)

struct RunDerived {
  std::optional<double> retained;
  std::optional<double> fault_from_s, fault_to_s, baseline_bps, fault_bps, fault_retained;
  // The answer to "did it degrade or stop?": "unaffected", "degraded" or
  // "stopped" (after the first fault it moved less than kStoppedFraction of
  // its baseline for at least kStoppedSeconds); "" when the run has no fault
  // and no sweep. Shorter stalls are reported with "degraded".
  std::string outcome;
  std::optional<double> stopped_s;  // longest stretch of stopped intervals after the first fault
};
inline constexpr double kStoppedFraction = 0.05;   // below this share of the baseline, traffic has stopped ...
inline constexpr double kStoppedSeconds = 1.0;     // ... if it stays there this long (scenario seconds)
inline constexpr double kDegradedFraction = 0.95;  // below this share, it has degraded

// One line per run for the first screen: "degraded: kept 81% of its goodput
// during the faults (0.60 of 0.75 Gb/s)".
std::string outcome_text(const RunResult& run, const RunDerived& rd);

struct Derived {
  bool sweep = false;
  std::string parameter;
  std::vector<double> sweep_values;          // first-appearance order
  std::vector<std::string> jobs;             // first-appearance order
  std::map<std::string, std::string> job_transport;
  std::vector<RunDerived> runs;
  size_t failed = 0;
};

Derived derive(const Report& r);

// ------------------------------------------------------------------ plots (report_plots.cc)

struct Style {
  std::string colour;
  std::string dash;  // "" = solid
};

// Colour per job by transport: MetaRoCE blues, RoCEv2 oranges, others green/purple.
std::map<std::string, Style> job_styles(const Derived& d);

// One plot on the page: a <figure id="plot-..."> holding a <canvas> per chart
// (or a note when there is nothing to plot), and the specs report_charts.js
// draws those canvases from. A spec names its canvas, its kind (line, bar,
// hbar, or cdf: a line whose report.json numbers are its x values, its y the
// share of samples), axes (title, type, range), datasets of points {x, y, p:
// JSON pointer into report.json} with "from_json" saying how the value (y;
// x in a cdf) follows from that number, and fault events.
struct Plot {
  std::string html;
  ojson charts = ojson::array();
};

Plot plot_goodput(const Report& r, const Derived& d, const std::map<std::string, Style>& styles);
Plot plot_retained(const Report& r, const Derived& d, const std::map<std::string, Style>& styles);
Plot plot_goodput_bars(const Report& r, const Derived& d, const std::map<std::string, Style>& styles);
Plot plot_planes(const Report& r, const Derived& d, const std::map<std::string, Style>& styles);
// *shown: the indices of the runs plotted (those with latency samples).
Plot plot_latency(const Report& r, const Derived& d, const std::map<std::string, Style>& styles,
                  std::vector<size_t>* shown);
// One line per run with a completion-time distribution (LatencySummary::
// cdf_us), a panel per sweep value; a note saying why when none has one.
Plot plot_latency_cdf(const Report& r, const Derived& d, const std::map<std::string, Style>& styles);

}  // namespace metaroce::scenario::report_internal
