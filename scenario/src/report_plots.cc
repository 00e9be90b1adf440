// The six plots of report.html as Chart.js specs (drawn in the browser by
// report_charts.js): goodput over time, retained goodput vs the sweep value,
// goodput per run, load per plane, latency percentiles and the message
// completion time's distribution (CDF); and the job colours.
//
// Every plotted value carries the JSON pointer of its number in report.json
// ("p") and its dataset says how the plotted figure follows from that number
// ("from_json": divide or multiply), so a test can check each one.

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "report_internal.h"

namespace metaroce::scenario::report_internal {
namespace {

using Events = std::vector<std::pair<double, std::string>>;

Events merged_events(const Report& r, const std::vector<size_t>& runs) {
  Events out;
  for (size_t i : runs)
    for (const auto& e : r.runs[i].events)
      if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

double max_time(const Report& r) {
  double t = 0;
  for (const auto& run : r.runs) {
    for (const auto& iv : run.intervals)
      if (std::isfinite(iv.t1_s)) t = std::max(t, iv.t1_s);
    for (const auto& e : run.events)
      if (std::isfinite(e.first)) t = std::max(t, e.first);
  }
  return t > 0 ? t : 1;
}

ojson num(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

ojson axis(const std::string& title, const std::string& type) { return ojson{{"title", title}, {"type", type}}; }

// An interval's value as a flat step from its start to its end: two points
// (the end one marked "end", which tooltips skip) joined by a straight line.
// Explicit points rather than Chart.js's "stepped" lines, whose drawing and
// hover interpolation disagree on where the step is in Chart.js 3.9.
void step(ojson* ds, const Interval& iv, const ojson& y, const std::string& ptr) {
  if (!std::isfinite(iv.t0_s) || !std::isfinite(iv.t1_s)) return;
  ojson pt{{"x", iv.t0_s}, {"y", y}, {"t1", iv.t1_s}};
  if (!ptr.empty()) pt["p"] = ptr;
  (*ds)["points"].push_back(pt);
  pt["x"] = iv.t1_s;
  pt["end"] = true;
  (*ds)["points"].push_back(std::move(pt));
}

ojson dataset(const std::string& label, const Style& st, ojson from_json) {
  ojson ds{{"label", label}, {"colour", st.colour}, {"from_json", std::move(from_json)}, {"points", ojson::array()}};
  if (!st.dash.empty()) ds["dash"] = ojson::array({7, 3});
  return ds;
}

// Fault events numbered by their position in `all`, so one key explains every panel.
ojson events_json(const Events& evs, const Events& all) {
  ojson out = ojson::array();
  for (const auto& e : evs) {
    if (!std::isfinite(e.first)) continue;
    const size_t n = static_cast<size_t>(std::find(all.begin(), all.end(), e) - all.begin()) + 1;
    out.push_back(ojson{{"t", e.first}, {"n", n}, {"label", e.second.empty() ? std::string("event") : e.second}});
  }
  return out;
}

// The key to the numbered event markers, under the plot.
std::string event_key_html(const Events& all) {
  if (all.empty()) return "";
  std::string s = "<ol class=\"events\">";
  for (const auto& e : all)
    s += "<li>" + esc(e.second.empty() ? std::string("event") : e.second) + " <span class=\"t\">(" +
         esc(trim_num(e.first, 3)) + " s)</span></li>";
  return s + "</ol>";
}

// The time-axis zoom of the page (report_charts.js): one range for every time plot.
std::string zoom_html() {
  return "<div class=\"zoom\">time from <input type=\"number\" step=\"any\" class=\"zoom-from\" aria-label=\"zoom "
         "from (s)\"> to <input type=\"number\" step=\"any\" class=\"zoom-to\" aria-label=\"zoom to (s)\"> s "
         "<button type=\"button\" class=\"zoom-reset\">reset zoom</button> <span class=\"hint\">or drag across a "
         "time plot; the range applies to every time plot</span></div>";
}

std::string canvas_html(const std::string& id, const std::string& label, const std::string& cls = "chart") {
  return "<div class=\"" + cls + "\"><canvas id=\"" + id + "\" role=\"img\" aria-label=\"" + esc(label) +
         "\"></canvas></div>";
}

std::string figure(const std::string& id, const std::string& label, const std::string& body) {
  return "<figure class=\"plot\" id=\"" + id + "\" role=\"group\" aria-label=\"" + esc(label) + "\">" + body +
         "</figure>\n";
}

std::string job_label(const Derived& d, const std::string& job) {
  return job + " (" + transport_name(d.job_transport.at(job)) + ")";
}

// The runs a plot draws together: all of them, or in a sweep one panel per
// sweep value (small multiples), at most 9: the first and last value always,
// evenly spaced between.
struct Panel {
  std::string title;  // "" for all runs; "loss = 1%"
  std::vector<size_t> runs;
};
std::vector<Panel> run_panels(const Report& r, const Derived& d) {
  std::vector<Panel> panels;
  if (!d.sweep) {
    Panel all;
    for (size_t i = 0; i < r.runs.size(); ++i) all.runs.push_back(i);
    panels.push_back(std::move(all));
    return panels;
  }
  std::vector<double> vals = d.sweep_values;
  constexpr size_t kMaxPanels = 9;
  if (vals.size() > kMaxPanels) {
    std::vector<double> pick;
    for (size_t k = 0; k < kMaxPanels; ++k) pick.push_back(vals[k * (vals.size() - 1) / (kMaxPanels - 1)]);
    vals = pick;
  }
  for (double v : vals) {
    Panel panel{sweep_axis_title(d.parameter) + " = " + sweep_label(d.parameter, v), {}};
    for (size_t i = 0; i < r.runs.size(); ++i)
      if (r.runs[i].sweep_value == v) panel.runs.push_back(i);
    panels.push_back(std::move(panel));
  }
  return panels;
}

// A log axis from lo to hi (both > 0), rounded out to 1, 2 or 5 x a power of
// ten; in whole decades when that would label fewer than two (report_charts.js
// labels a log axis at its powers of ten only).
std::pair<double, double> log_axis_range(double lo, double hi) {
  const auto decade = [](double v) { return std::pow(10.0, std::floor(std::log10(v))); };
  double from = decade(lo), to = decade(hi) * 10;
  for (double m : {2.0, 5.0})
    if (decade(lo) * m <= lo) from = decade(lo) * m;
  for (double m : {5.0, 2.0, 1.0})
    if (decade(hi) * m >= hi) to = decade(hi) * m;
  const double labelled = std::floor(std::log10(to) + 1e-9) - std::ceil(std::log10(from) - 1e-9) + 1;
  if (labelled >= 2) return {from, to};
  return {decade(lo), std::max(std::pow(10.0, std::ceil(std::log10(hi))), decade(lo) * 10)};
}

// A series' name: the job and its transport; outside a sweep the run's label.
std::string series_label(const Report& r, const Derived& d, size_t i) {
  const RunResult& run = r.runs[i];
  return d.sweep ? job_label(d, run.job) : run_label(run) + " (" + transport_name(run.transport) + ")";
}

}  // namespace

// Colour per job by transport: MetaRoCE blues, RoCEv2 oranges, others green/purple.
std::map<std::string, Style> job_styles(const Derived& d) {
  static const std::vector<std::string> meta = {"#1f5fbf", "#4dabf7", "#0b3a80", "#74c0fc"};
  static const std::vector<std::string> roce = {"#e8590c", "#f59f00", "#a61e4d", "#ffa94d"};
  static const std::vector<std::string> other = {"#2f9e44", "#7048e8", "#868e96", "#0c8599"};
  std::map<std::string, int> count;
  std::map<std::string, Style> out;
  for (const auto& job : d.jobs) {
    const std::string t = d.job_transport.at(job);
    const auto& pal = t == "metaroce" ? meta : t == "rocev2" ? roce : other;
    const std::string fam = t == "metaroce" || t == "rocev2" ? t : "other";
    const int n = count[fam]++;
    Style s;
    s.colour = pal[static_cast<size_t>(n) % pal.size()];
    if (n % 2 == 1) s.dash = "7 3";
    out[job] = s;
  }
  return out;
}

// ------------------------------------------------------------------ plots

Plot plot_goodput(const Report& r, const Derived& d, const std::map<std::string, Style>& styles) {
  Plot plot;
  const std::vector<Panel> panels = run_panels(r, d);
  std::vector<size_t> every(r.runs.size());
  for (size_t i = 0; i < every.size(); ++i) every[i] = i;
  const Events all = merged_events(r, every);
  // One y scale for every panel, so panels compare at a glance.
  double gmax = 0;
  for (const auto& run : r.runs)
    for (const auto& iv : run.intervals)
      if (std::isfinite(iv.goodput_bps)) gmax = std::max(gmax, iv.goodput_bps);
  const std::string label = "Goodput over time per run" +
                            std::string(d.sweep ? ", one panel per sweep value" : "") + ", fault events marked";
  std::string body = "<div class=\"" + std::string(d.sweep ? "panels" : "single") + "\">";
  for (size_t p = 0; p < panels.size(); ++p) {
    const std::string canvas = "plot-goodput-" + std::to_string(p);
    ojson c{{"canvas", canvas}, {"kind", "line"}, {"title", panels[p].title}, {"unit", "Gb/s"}, {"time", true}};
    c["x"] = axis("time (s)", "linear");
    c["x"]["min"] = 0;
    c["x"]["max"] = max_time(r);
    c["y"] = axis("goodput (Gb/s)", "linear");
    c["y"]["min"] = 0;
    c["y"]["suggestedMax"] = gmax > 0 ? gmax * 1.1 / 1e9 : 1;
    c["events"] = events_json(merged_events(r, panels[p].runs), all);
    c["datasets"] = ojson::array();
    size_t points = 0;
    for (size_t i : panels[p].runs) {
      const auto& run = r.runs[i];
      ojson ds = dataset(series_label(r, d, i), styles.at(run.job), ojson{{"div", 1e9}});
      for (size_t k = 0; k < run.intervals.size(); ++k) {
        const auto& iv = run.intervals[k];
        const bool ok = std::isfinite(iv.goodput_bps);
        step(&ds, iv, ok ? ojson(iv.goodput_bps / 1e9) : ojson(nullptr),
             ok ? run_ptr(i, "intervals/" + std::to_string(k) + "/goodput_bps") : "");
      }
      points += ds["points"].size();
      c["datasets"].push_back(std::move(ds));
    }
    const std::string aria = label + (panels[p].title.empty() ? "" : ": " + panels[p].title);
    if (points == 0) {
      body += "<div class=\"empty\">" + (panels[p].title.empty() ? "" : esc(panels[p].title) + ": ") +
              "no interval data</div>";
      continue;
    }
    body += canvas_html(canvas, aria, d.sweep ? "chart small" : "chart");
    plot.charts.push_back(std::move(c));
  }
  body += "</div>" + event_key_html(all);
  plot.html = figure("plot-goodput", label, (plot.charts.empty() ? "" : zoom_html()) + body);
  return plot;
}

Plot plot_retained(const Report& r, const Derived& d, const std::map<std::string, Style>& styles) {
  Plot plot;
  const std::string label =
      "Retained goodput vs " + sweep_axis_title(d.parameter) + " per job (goodput / goodput at the first value)";
  ojson c{{"canvas", "plot-retained-0"}, {"kind", "line"}, {"title", ""}, {"unit", "%"}};
  c["x"] = axis(sweep_axis_title(d.parameter) + " (sweep values, evenly spaced)", "category");
  c["y"] = axis("retained goodput (%)", "linear");
  c["y"]["min"] = 0;
  c["y"]["suggestedMax"] = 105;
  c["labels"] = ojson::array();
  for (double v : d.sweep_values) c["labels"].push_back(sweep_label(d.parameter, v));
  c["hline"] = ojson{{"y", 100}, {"label", "100% = goodput at the first value"}};
  c["datasets"] = ojson::array();
  size_t points = 0;
  for (const auto& job : d.jobs) {
    ojson ds = dataset(job_label(d, job), styles.at(job), ojson{{"mul", 100}});
    // One point per sweep value, null where the job has none: Chart.js places
    // a numeric x on a category axis by the point's index, not its value.
    for (size_t k = 0; k < d.sweep_values.size(); ++k) {
      ojson pt{{"x", k}, {"y", nullptr}};
      for (size_t i = 0; i < r.runs.size(); ++i)
        if (r.runs[i].job == job && r.runs[i].sweep_value == d.sweep_values[k] && d.runs[i].retained &&
            std::isfinite(*d.runs[i].retained)) {
          pt["y"] = *d.runs[i].retained * 100;
          pt["p"] = derived_ptr(i, "retained");
          ++points;
          break;
        }
      ds["points"].push_back(std::move(pt));
    }
    c["datasets"].push_back(std::move(ds));
  }
  if (points == 0) {
    plot.html = figure("plot-retained", label, "<div class=\"empty\">no retained goodput to plot</div>");
    return plot;
  }
  plot.html = figure("plot-retained", label, canvas_html("plot-retained-0", label));
  plot.charts.push_back(std::move(c));
  return plot;
}

Plot plot_goodput_bars(const Report& r, const Derived& d, const std::map<std::string, Style>& styles) {
  Plot plot;
  bool any_fault = false;
  for (const auto& rd : d.runs) any_fault |= rd.fault_bps.has_value();
  const std::string label = "Goodput per run" + std::string(any_fault ? ", whole run and during the fault window" : "");
  if (r.runs.empty()) {
    plot.html = figure("plot-goodput-bars", label, "<div class=\"empty\">no runs</div>");
    return plot;
  }
  ojson c{{"canvas", "plot-goodput-bars-0"}, {"kind", "hbar"}, {"title", ""}, {"unit", "Gb/s"}};
  c["x"] = axis("goodput (Gb/s)", "linear");
  c["x"]["min"] = 0;
  c["y"] = axis("", "category");
  c["labels"] = ojson::array();
  ojson whole = dataset("whole run", Style{"#495057", ""}, ojson{{"div", 1e9}});
  ojson fault = dataset("during the fault window", Style{"#495057", ""}, ojson{{"div", 1e9}});
  fault["alpha"] = 0.38;
  whole["bar_colours"] = fault["bar_colours"] = ojson::array();
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    c["labels"].push_back(run_label(run) + " (" + transport_name(run.transport) + ")");
    whole["bar_colours"].push_back(styles.at(run.job).colour);
    fault["bar_colours"].push_back(styles.at(run.job).colour);
    ojson w{{"x", i}, {"y", num(run.goodput_bps / 1e9)}};
    if (std::isfinite(run.goodput_bps)) w["p"] = run_ptr(i, "goodput_bps");
    whole["points"].push_back(w);
    const auto& rd = d.runs[i];
    ojson f{{"x", i}, {"y", nullptr}};
    if (rd.fault_bps && std::isfinite(*rd.fault_bps)) {
      f["y"] = *rd.fault_bps / 1e9;
      f["p"] = derived_ptr(i, "fault_goodput_bps");
      if (rd.fault_retained && std::isfinite(*rd.fault_retained)) f["retained"] = *rd.fault_retained;
    }
    fault["points"].push_back(f);
  }
  c["datasets"] = ojson::array({whole});
  if (any_fault) c["datasets"].push_back(fault);
  c["height"] = 60 + static_cast<double>(r.runs.size()) * (any_fault ? 52 : 34);
  plot.html = figure("plot-goodput-bars", label,
                     "<div class=\"chart\" style=\"height:" + trim_num(c["height"].get<double>(), 0) +
                         "px\"><canvas id=\"plot-goodput-bars-0\" role=\"img\" aria-label=\"" + esc(label) +
                         "\"></canvas></div>");
  plot.charts.push_back(std::move(c));
  return plot;
}

Plot plot_planes(const Report& r, const Derived& d, const std::map<std::string, Style>& styles) {
  Plot plot;
  (void)d;
  // Distinct colours per plane; the legend toggles each.
  static const std::vector<std::string> plane_colours = {"#1c7ed6", "#e8590c", "#2f9e44", "#ae3ec9", "#f08c00",
                                                         "#0c8599", "#c2255c", "#5c940d", "#4263eb", "#868e96",
                                                         "#e03131", "#1098ad", "#6741d9", "#d9480f", "#37b24d",
                                                         "#495057"};
  const std::string label = "Utilisation per plane over time, one plot per run";
  std::string body = "<div class=\"" + std::string(r.runs.size() > 1 ? "panels two" : "single") + "\">";
  size_t charts = 0;
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    const std::string title = run_label(run) + " (" + transport_name(run.transport) + ")";
    size_t planes = 0;
    for (const auto& iv : run.intervals) planes = std::max(planes, iv.plane_utilisation.size());
    if (planes == 0) {
      body += "<div class=\"empty\">" + esc(title) + ": no per-plane data for this run</div>";
      continue;
    }
    const std::string canvas = "plot-planes-" + std::to_string(i);
    ojson c{{"canvas", canvas}, {"kind", "line"}, {"title", title}, {"title_colour", styles.at(run.job).colour},
            {"unit", "%"}, {"time", true}};
    c["x"] = axis("time (s)", "linear");
    c["x"]["min"] = 0;
    c["x"]["max"] = max_time(r);
    c["y"] = axis("plane utilisation (%)", "linear");
    c["y"]["min"] = 0;
    c["y"]["suggestedMax"] = 100;
    c["events"] = events_json(merged_events(r, {i}), merged_events(r, {i}));
    c["datasets"] = ojson::array();
    for (size_t p = 0; p < planes; ++p) {
      ojson ds = dataset("plane " + std::to_string(p), Style{plane_colours[p % plane_colours.size()], ""},
                         ojson{{"mul", 100}});
      for (size_t k = 0; k < run.intervals.size(); ++k) {
        const auto& iv = run.intervals[k];
        if (p >= iv.plane_utilisation.size()) continue;
        const double u = iv.plane_utilisation[p];
        step(&ds, iv, num(u * 100),
             std::isfinite(u)
                 ? run_ptr(i, "intervals/" + std::to_string(k) + "/plane_utilisation/" + std::to_string(p))
                 : "");
      }
      c["datasets"].push_back(std::move(ds));
    }
    body += canvas_html(canvas, label + ": " + title, "chart small");
    plot.charts.push_back(std::move(c));
    ++charts;
  }
  if (r.runs.empty()) body += "<div class=\"empty\">no runs</div>";
  body += "</div>";
  plot.html = figure("plot-planes", label, (charts > 0 ? zoom_html() : "") + body);
  return plot;
}

Plot plot_latency(const Report& r, const Derived& d, const std::map<std::string, Style>& styles,
                  std::vector<size_t>* shown) {
  Plot plot;
  (void)d;
  for (size_t i = 0; i < r.runs.size(); ++i)
    if (r.runs[i].latency.samples > 0) shown->push_back(i);
  const std::string label = "Latency percentiles per run (median, p99, p99.9 in microseconds, log scale)";
  if (shown->empty()) {
    plot.html = figure("plot-latency", "Latency percentiles per run: no samples",
                       "<div class=\"empty\">no latency samples in any run</div>");
    return plot;
  }
  ojson c{{"canvas", "plot-latency-0"}, {"kind", "bar"}, {"title", ""}, {"unit", "us"}};
  c["x"] = axis("", "category");
  c["y"] = axis("latency (us, log scale)", "logarithmic");
  // The axis starts a decade below the shortest bar's decade when that bar
  // would otherwise barely show; bars grow from there.
  double lo = 0;
  for (size_t i : *shown)
    for (double v : {r.runs[i].latency.median_us, r.runs[i].latency.p99_us, r.runs[i].latency.p999_us})
      if (std::isfinite(v) && v > 0 && (lo == 0 || v < lo)) lo = v;
  if (lo > 0) {
    double decade = std::pow(10.0, std::floor(std::log10(lo)));
    if (lo < decade * 3) decade /= 10;
    c["y"]["min"] = decade;
  }
  c["labels"] = ojson::array();
  const std::pair<const char*, const char*> pcts[] = {{"median", "median_us"}, {"p99", "p99_us"}, {"p99.9", "p999_us"}};
  const double alpha[] = {0.3, 0.62, 1.0};
  c["datasets"] = ojson::array();
  for (size_t b = 0; b < 3; ++b) {
    ojson ds = dataset(pcts[b].first, Style{"#495057", ""}, ojson::object());
    ds["alpha"] = alpha[b];
    ds["bar_colours"] = ojson::array();
    c["datasets"].push_back(std::move(ds));
  }
  for (size_t k = 0; k < shown->size(); ++k) {
    const size_t i = (*shown)[k];
    const auto& run = r.runs[i];
    c["labels"].push_back(run_label(run));
    const double vals[3] = {run.latency.median_us, run.latency.p99_us, run.latency.p999_us};
    for (size_t b = 0; b < 3; ++b) {
      auto& ds = c["datasets"][b];
      ds["bar_colours"].push_back(styles.at(run.job).colour);
      // A log scale has no place for 0: such a bar is left out.
      const bool ok = std::isfinite(vals[b]) && vals[b] > 0;
      ojson pt{{"x", k}, {"y", ok ? ojson(vals[b]) : ojson(nullptr)}};
      if (ok) pt["p"] = "/runs/" + std::to_string(i) + "/latency/" + pcts[b].second;
      ds["points"].push_back(pt);
    }
  }
  plot.html = figure("plot-latency", label, canvas_html("plot-latency-0", label));
  plot.charts.push_back(std::move(c));
  return plot;
}

Plot plot_latency_cdf(const Report& r, const Derived& d, const std::map<std::string, Style>& styles) {
  Plot plot;
  const std::string label = "Message completion time (CDF) per run" +
                            std::string(d.sweep ? ", one panel per sweep value" : "") +
                            ": the fraction of messages completed within each time, microseconds on a log scale";
  // One x range for every panel, so panels compare at a glance.
  double lo = 0, hi = 0;
  for (const auto& run : r.runs)
    for (double v : run.latency.cdf_us)
      if (std::isfinite(v) && v > 0) {
        lo = lo == 0 ? v : std::min(lo, v);
        hi = std::max(hi, v);
      }
  if (hi == 0) {
    bool samples = false;
    for (const auto& run : r.runs) samples |= run.latency.samples > 0;
    const std::string why = r.mode == "live" ? "live daemons report percentiles only (the plot above, the table below)"
                            : r.runs.empty() ? "no runs"
                            : !samples       ? "no run completed a message"
                                             : "no run in this report has one";
    plot.html = figure("plot-latency-cdf", "Message completion time (CDF): no distribution",
                       "<div class=\"empty\">no completion-time distribution: " + why + "</div>");
    return plot;
  }
  const auto [x_min, x_max] = log_axis_range(lo, hi);
  const std::vector<Panel> panels = run_panels(r, d);
  std::string body = "<div class=\"" + std::string(d.sweep ? "panels" : "single") + "\">";
  for (size_t p = 0; p < panels.size(); ++p) {
    const std::string canvas = "plot-latency-cdf-" + std::to_string(p);
    // kind "cdf": a line whose report.json number is its x (the time), its y
    // the share of messages that index stands for (report_charts.js).
    ojson c{{"canvas", canvas}, {"kind", "cdf"}, {"title", panels[p].title}, {"unit", "us"}};
    c["x"] = axis("message completion time (us, log scale)", "logarithmic");
    c["x"]["min"] = x_min;
    c["x"]["max"] = x_max;
    c["y"] = axis("fraction of messages completed", "linear");
    c["y"]["min"] = 0;
    c["y"]["max"] = 1;
    c["datasets"] = ojson::array();
    for (size_t i : panels[p].runs) {
      const std::vector<double>& cdf = r.runs[i].latency.cdf_us;
      if (cdf.empty()) continue;
      ojson ds = dataset(series_label(r, d, i), styles.at(r.runs[i].job), ojson::object());
      for (size_t k = 0; k < cdf.size(); ++k) {
        // A log scale has no place for 0: such a point is a gap, kept so that
        // index k is the same share in every series (the tooltip compares them).
        const bool ok = std::isfinite(cdf[k]) && cdf[k] > 0;
        ojson pt{{"x", ok ? ojson(cdf[k]) : ojson(nullptr)},
                 {"y", ok ? ojson(static_cast<double>(k) / static_cast<double>(kLatencyCdfPoints - 1)) : ojson(nullptr)}};
        if (ok) pt["p"] = run_ptr(i, "latency/cdf_us/" + std::to_string(k));
        ds["points"].push_back(std::move(pt));
      }
      c["datasets"].push_back(std::move(ds));
    }
    if (c["datasets"].empty()) {
      body += "<div class=\"empty\">" + (panels[p].title.empty() ? "" : esc(panels[p].title) + ": ") +
              "no completion-time distribution</div>";
      continue;
    }
    body += canvas_html(canvas, label + (panels[p].title.empty() ? "" : ": " + panels[p].title),
                        d.sweep ? "chart small" : "chart");
    plot.charts.push_back(std::move(c));
  }
  plot.html = figure("plot-latency-cdf", label, body + "</div>");
  return plot;
}

}  // namespace metaroce::scenario::report_internal
