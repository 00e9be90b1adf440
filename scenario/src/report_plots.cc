// The five plots of report.html, each one <svg> drawn with the chart kit
// (report_svg.h): goodput over time, retained goodput vs the sweep value,
// goodput per run, load per plane and latency percentiles; and the job colours.

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "report_internal.h"
#include "report_svg.h"

namespace metaroce::scenario::report_internal {
namespace {

std::vector<std::pair<double, std::string>> merged_events(const Report& r, const std::vector<size_t>& runs) {
  std::vector<std::pair<double, std::string>> out;
  for (size_t i : runs)
    for (const auto& e : r.runs[i].events)
      if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

double max_time(const Report& r) {
  double t = 0;
  for (const auto& run : r.runs) {
    for (const auto& iv : run.intervals) t = std::max(t, iv.t1_s);
    for (const auto& e : run.events) t = std::max(t, e.first);
  }
  return t > 0 ? t : 1;
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

std::string plot_goodput(const Report& r, const Derived& d, const std::map<std::string, Style>& styles) {
  Svg s;
  std::vector<LegendItem> items;
  for (const auto& job : d.jobs)
    items.push_back({job + " (" + transport_name(d.job_transport.at(job)) + ")", styles.at(job).colour,
                     styles.at(job).dash});
  items.push_back({"fault event", "#495057", "5 4"});
  double y = legend(s, 60, 4, kW - 60, items) + 6;

  // Panels: one for all runs, or one per sweep value (small multiples).
  std::vector<std::pair<std::string, std::vector<size_t>>> panels;
  if (d.sweep) {
    // At most 9 panels: first and last value always, evenly spaced between.
    std::vector<double> vals = d.sweep_values;
    constexpr size_t kMaxPanels = 9;
    if (vals.size() > kMaxPanels) {
      std::vector<double> pick;
      for (size_t k = 0; k < kMaxPanels; ++k)
        pick.push_back(vals[k * (vals.size() - 1) / (kMaxPanels - 1)]);
      vals = pick;
    }
    for (double v : vals) {
      std::vector<size_t> idx;
      for (size_t i = 0; i < r.runs.size(); ++i)
        if (r.runs[i].sweep_value == v) idx.push_back(i);
      panels.push_back({sweep_axis_title(d.parameter) + " = " + sweep_label(d.parameter, v), idx});
    }
  } else {
    std::vector<size_t> idx;
    for (size_t i = 0; i < r.runs.size(); ++i) idx.push_back(i);
    panels.push_back({"", idx});
  }
  const size_t cols = d.sweep ? std::min<size_t>(panels.size(), 3) : 1;
  std::vector<size_t> every(r.runs.size());
  for (size_t i = 0; i < every.size(); ++i) every[i] = i;
  const Events all = merged_events(r, every);
  const size_t rows = (panels.size() + cols - 1) / std::max<size_t>(cols, 1);
  const double gap = 16, pw = (kW - gap * static_cast<double>(cols - 1)) / static_cast<double>(cols);
  const double ph = d.sweep ? 250 : 340;
  double gmax = 0;
  for (const auto& run : r.runs)
    for (const auto& iv : run.intervals)
      if (std::isfinite(iv.goodput_bps)) gmax = std::max(gmax, iv.goodput_bps);
  const Ticks yt = nice_ticks(0, gmax > 0 ? gmax * 1.18 / 1e9 : 1, d.sweep ? 4 : 6);
  const Ticks xt = nice_ticks(0, max_time(r), cols >= 3 ? 5 : 8);
  // Full event labels when they fit in two rows of one big panel, else numbers and a key.
  bool numbered = d.sweep && !all.empty();
  if (!d.sweep && !all.empty()) {
    const Area a{62, 6, pw - 62 - 12, ph - 6 - 44};
    std::vector<LabelPlace> tmp;
    numbered = !place_event_labels(a, Linear{xt.lo, xt.hi, a.x, a.right()}, all, 2, &tmp);
  }
  if (numbered) y += event_key(s, 60, y, kW - 60, all) + 4;
  y += 4;
  for (size_t p = 0; p < panels.size(); ++p) {
    const double ox = static_cast<double>(p % cols) * (pw + gap);
    const double oy = y + static_cast<double>(p / cols) * (ph + gap);
    const double top = (panels[p].first.empty() ? 6 : 24) + (numbered ? 16 : 0);
    const Area a{ox + 62, oy + top, pw - 62 - 12, ph - top - 44};
    if (!panels[p].first.empty())
      s.text(a.x + a.w / 2, oy + 14, esc(panels[p].first), "middle", 13, "#212529", "font-weight=\"bold\"");
    const Linear xs{xt.lo, xt.hi, a.x, a.right()}, ys{yt.lo, yt.hi, a.bottom(), a.y};
    axes(s, a, xs, xt, "", ys, yt, "", "time (s)", "goodput (Gb/s)");
    const Events evs = merged_events(r, panels[p].second);
    event_lines(s, a, xs, evs);
    if (numbered) {
      event_markers(s, a, xs, evs, all);
    } else {
      std::vector<LabelPlace> places;
      place_event_labels(a, xs, evs, 2, &places);
      event_labels(s, places);
    }
    bool any = false;
    for (size_t i : panels[p].second) {
      const auto& run = r.runs[i];
      std::vector<std::pair<double, double>> pts;
      for (const auto& iv : run.intervals) {
        const double g = std::isfinite(iv.goodput_bps) ? iv.goodput_bps / 1e9 : 0;
        pts.push_back({xs(iv.t0_s), ys(g)});
        pts.push_back({xs(iv.t1_s), ys(g)});
      }
      if (pts.empty()) continue;
      any = true;
      const Style& st = styles.at(run.job);
      s.polyline(pts, st.colour, 2.2, st.dash);
    }
    if (!any) s.text(a.x + a.w / 2, a.y + a.h / 2, "no interval data", "middle", 13, "#868e96");
  }
  const double h = y + static_cast<double>(rows) * (ph + gap);
  return s.wrap("plot-goodput", h,
                "Goodput over time per run" + std::string(d.sweep ? ", one panel per sweep value" : "") +
                    ", fault events dashed");
}

std::string plot_retained(const Report& r, const Derived& d, const std::map<std::string, Style>& styles) {
  Svg s;
  std::vector<LegendItem> items;
  for (const auto& job : d.jobs)
    items.push_back({job + " (" + transport_name(d.job_transport.at(job)) + ")", styles.at(job).colour,
                     styles.at(job).dash});
  items.push_back({"100% = goodput at the first value", "#868e96", "3 3"});
  const double y = legend(s, 70, 4, kW - 70, items) + 12;
  const Area a{74, y + 6, kW - 74 - 24, 300};
  double rmax = 1;
  for (const auto& rd : d.runs)
    if (rd.retained) rmax = std::max(rmax, *rd.retained);
  const Ticks yt = nice_ticks(0, rmax * 100 * 1.05, 6);
  const Linear ys{yt.lo, yt.hi, a.bottom(), a.y};
  const size_t n = d.sweep_values.size();
  auto xpos = [&](size_t i) { return a.x + (static_cast<double>(i) + 0.5) * a.w / static_cast<double>(std::max<size_t>(n, 1)); };
  for (double v : yt.v) {
    s.line(a.x, ys(v), a.right(), ys(v), "#e9ecef");
    s.line(a.x - 4, ys(v), a.x, ys(v), "#495057");
    s.text(a.x - 7, ys(v) + 4, esc(strf("%.*f%%", yt.decimals, v)), "end", 11, "#495057");
  }
  for (size_t i = 0; i < n; ++i) {
    s.line(xpos(i), a.y, xpos(i), a.bottom(), "#f1f3f5");
    s.line(xpos(i), a.bottom(), xpos(i), a.bottom() + 4, "#495057");
    s.text(xpos(i), a.bottom() + 16, esc(sweep_label(d.parameter, d.sweep_values[i])), "middle", 11, "#495057");
  }
  s.line(a.x, a.y, a.x, a.bottom(), "#495057");
  s.line(a.x, a.bottom(), a.right(), a.bottom(), "#495057");
  s.line(a.x, ys(100), a.right(), ys(100), "#868e96", 1.2, "3 3");
  s.text(a.x + a.w / 2, a.bottom() + 34,
         esc(sweep_axis_title(d.parameter) + " (sweep values, evenly spaced)"), "middle", 12);
  const double cx = a.x - 48, cy = a.y + a.h / 2;
  s.text(cx, cy, "retained goodput (%)", "middle", 12, "#343a40",
         "transform=\"rotate(-90 " + px(cx) + " " + px(cy) + ")\"");
  for (const auto& job : d.jobs) {
    std::vector<std::pair<double, double>> pts;
    for (size_t k = 0; k < n; ++k)
      for (size_t i = 0; i < r.runs.size(); ++i)
        if (r.runs[i].job == job && r.runs[i].sweep_value == d.sweep_values[k] && d.runs[i].retained) {
          pts.push_back({xpos(k), ys(*d.runs[i].retained * 100)});
          break;
        }
    const Style& st = styles.at(job);
    if (pts.size() >= 2) s.polyline(pts, st.colour, 2.6, st.dash);
    for (const auto& p : pts) s.circle(p.first, p.second, 4.5, st.colour);
  }
  return s.wrap("plot-retained", a.bottom() + 46,
                "Retained goodput vs " + sweep_axis_title(d.parameter) + " per job (goodput / goodput at the first value)");
}

std::string plot_goodput_bars(const Report& r, const Derived& d, const std::map<std::string, Style>& styles) {
  Svg s;
  bool any_fault = false;
  for (const auto& rd : d.runs) any_fault |= rd.fault_bps.has_value();
  std::vector<LegendItem> items;
  for (const auto& job : d.jobs)
    items.push_back({job + " (" + transport_name(d.job_transport.at(job)) + "): whole run", styles.at(job).colour, "",
                     LegendItem::kBox});
  if (any_fault) items.push_back({"lighter: during the fault window", "#495057", "", LegendItem::kBox, 0.35});
  const double y = legend(s, 20, 4, kW - 20, items) + 10;
  double label_w = 80;
  for (const auto& run : r.runs) label_w = std::max(label_w, text_w(run_label(run), 12) + 16);
  label_w = std::min(label_w, 300.0);
  const double bar_h = 20, row_h = any_fault ? 2 * bar_h + 18 : bar_h + 14;
  const Area a{label_w, y + 4, kW - label_w - 330, row_h * static_cast<double>(r.runs.size())};
  double gmax = 0;
  for (size_t i = 0; i < r.runs.size(); ++i) {
    gmax = std::max(gmax, r.runs[i].goodput_bps);
    if (d.runs[i].fault_bps) gmax = std::max(gmax, *d.runs[i].fault_bps);
    if (d.runs[i].baseline_bps) gmax = std::max(gmax, *d.runs[i].baseline_bps);
  }
  const Ticks xt = nice_ticks(0, gmax > 0 ? gmax / 1e9 : 1, 8);
  const Linear xs{xt.lo, xt.hi, a.x, a.right()};
  for (double v : xt.v) {
    s.line(xs(v), a.y, xs(v), a.bottom(), "#e9ecef");
    s.line(xs(v), a.bottom(), xs(v), a.bottom() + 4, "#495057");
    s.text(xs(v), a.bottom() + 16, esc(strf("%.*f", xt.decimals, v)), "middle", 11, "#495057");
  }
  s.text(a.x + a.w / 2, a.bottom() + 34, "goodput (Gb/s)", "middle", 12);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    const double ry = a.y + static_cast<double>(i) * row_h + 6;
    const std::string& col = styles.at(run.job).colour;
    s.text(a.x - 8, ry + bar_h / 2 + 4 + (any_fault ? bar_h / 2 + 1 : 0), esc(run_label(run)), "end", 12, "#212529");
    const double g = std::isfinite(run.goodput_bps) ? run.goodput_bps / 1e9 : 0;
    s.rect(a.x, ry, xs(g) - a.x, bar_h, col);
    s.text(xs(g) + 6, ry + bar_h / 2 + 4, dk(run_ptr(i, "goodput_bps"), "goodput_bps", run.goodput_bps, "tspan") +
                                              " whole run",
           "start", 12, "#212529");
    if (!any_fault) continue;
    const auto& rd = d.runs[i];
    const double fy = ry + bar_h + 2;
    if (rd.fault_bps) {
      s.rect(a.x, fy, xs(*rd.fault_bps / 1e9) - a.x, bar_h, col, "fill-opacity=\"0.38\"");
      std::string t = dk(derived_ptr(i, "fault_goodput_bps"), "fault_goodput_bps", *rd.fault_bps, "tspan") +
                      " during the fault";
      if (rd.fault_retained)
        t += ", retained " + dk(derived_ptr(i, "fault_retained"), "fault_retained", *rd.fault_retained, "tspan");
      s.text(xs(*rd.fault_bps / 1e9) + 6, fy + bar_h / 2 + 4, t, "start", 12, "#495057");
    } else {
      s.text(a.x + 6, fy + bar_h / 2 + 4, "no fault window for this run", "start", 11, "#868e96");
    }
  }
  s.line(a.x, a.y, a.x, a.bottom(), "#495057");
  s.line(a.x, a.bottom(), a.right(), a.bottom(), "#495057");
  return s.wrap("plot-goodput-bars", a.bottom() + 44,
                "Goodput per run" + std::string(any_fault ? ", whole run and during the fault window" : ""));
}

std::string plot_planes(const Report& r, const Derived& d, const std::map<std::string, Style>& styles) {
  Svg s;
  // Colour scale legend.
  s.text(20, 18, "plane utilisation:", "start", 12, "#343a40");
  const double lx = 20 + text_w("plane utilisation:", 12) + 10;
  for (int k = 0; k < 20; ++k) s.rect(lx + k * 10, 8, 10, 12, util_colour((k + 0.5) / 20.0));
  s.rect(lx, 8, 200, 12, "none", "stroke=\"#adb5bd\"");
  s.text(lx, 34, "0%", "middle", 11, "#495057");
  s.text(lx + 100, 34, "50%", "middle", 11, "#495057");
  s.text(lx + 200, 34, "100%", "middle", 11, "#495057");
  s.line(lx + 230, 14, lx + 252, 14, "#212529", 1.2, "5 4");
  s.text(lx + 258, 18, "fault event", "start", 12, "#343a40");
  const double y0 = 46;
  const size_t n = r.runs.size();
  const size_t cols = n > 4 ? 2 : 1;
  const double gap = 24, pw = (kW - gap * static_cast<double>(cols - 1)) / static_cast<double>(cols);
  size_t planes = r.planes;
  for (const auto& run : r.runs)
    for (const auto& iv : run.intervals) planes = std::max(planes, iv.plane_utilisation.size());
  planes = std::max<size_t>(planes, 1);
  const double cell_h = planes > 8 ? 9 : 16;
  const double ph = 22 + cell_h * static_cast<double>(planes) + 24;
  const Ticks xt = nice_ticks(0, max_time(r), cols == 2 ? 6 : 10);
  for (size_t i = 0; i < n; ++i) {
    const auto& run = r.runs[i];
    const double ox = static_cast<double>(i % cols) * (pw + gap);
    const double oy = y0 + static_cast<double>(i / cols) * (ph + 10);
    const Area a{ox + 70, oy + 22, pw - 70 - 14, cell_h * static_cast<double>(planes)};
    const Style& st = styles.at(run.job);
    s.rect(ox + 70, oy + 4, 12, 12, st.colour);
    s.text(ox + 88, oy + 15, esc(run_label(run) + " (" + transport_name(run.transport) + ")"), "start", 12, "#212529",
           "font-weight=\"bold\"");
    const Linear xs{xt.lo, xt.hi, a.x, a.right()};
    bool any = false;
    for (size_t p = 0; p < planes; ++p) {
      const double cy = a.y + static_cast<double>(p) * cell_h;
      if (planes <= 8 || p % 2 == 0)
        s.text(a.x - 6, cy + cell_h / 2 + 4, esc("plane " + std::to_string(p)), "end", planes > 8 ? 9 : 11, "#495057");
      for (const auto& iv : run.intervals) {
        if (p >= iv.plane_utilisation.size()) continue;
        any = true;
        s.rect(xs(iv.t0_s), cy, xs(iv.t1_s) - xs(iv.t0_s) + 0.3, cell_h - 1, util_colour(iv.plane_utilisation[p]));
      }
    }
    if (!any) s.text(a.x + a.w / 2, a.y + a.h / 2 + 4, "no per-plane data for this run", "middle", 12, "#868e96");
    s.rect(a.x, a.y, a.w, a.h, "none", "stroke=\"#ced4da\"");
    for (const auto& e : run.events) {
      const double x = xs(e.first);
      if (x >= a.x && x <= a.right()) s.line(x, a.y - 2, x, a.bottom() + 2, "#212529", 1.2, "5 4");
    }
    for (double v : xt.v) {
      s.line(xs(v), a.bottom(), xs(v), a.bottom() + 3, "#495057");
      s.text(xs(v), a.bottom() + 14, esc(strf("%.*f", xt.decimals, v) + (v == xt.v.back() ? " s" : "")), "middle",
             10, "#495057");
    }
  }
  const size_t rows = (n + cols - 1) / cols;
  const double h = y0 + static_cast<double>(rows) * (ph + 10) + 4;
  (void)d;
  return s.wrap("plot-planes", h, "Utilisation per plane over time, one heat map per run");
}

std::string plot_latency(const Report& r, const Derived& d, const std::map<std::string, Style>& styles,
                         std::vector<size_t>* shown) {
  Svg s;
  for (size_t i = 0; i < r.runs.size(); ++i)
    if (r.runs[i].latency.samples > 0) shown->push_back(i);
  std::vector<LegendItem> items;
  for (const auto& job : d.jobs)
    items.push_back({job + " (" + transport_name(d.job_transport.at(job)) + ")", styles.at(job).colour, "",
                     LegendItem::kBox});
  items.push_back({"median", "#495057", "", LegendItem::kBox, 0.3});
  items.push_back({"p99", "#495057", "", LegendItem::kBox, 0.62});
  items.push_back({"p99.9", "#495057", "", LegendItem::kBox, 1.0});
  const double y = legend(s, 74, 4, kW - 74, items) + 10;
  if (shown->empty()) {
    s.text(kW / 2, y + 40, "no latency samples in any run", "middle", 14, "#868e96");
    return s.wrap("plot-latency", y + 70, "Latency percentiles per run: no samples");
  }
  const size_t n = shown->size();
  const bool rotate = static_cast<double>(kW - 100) / static_cast<double>(n) < 110;
  double longest = 0;  // rotated run labels: the first one must not leave the plot on the left
  for (size_t i : *shown) longest = std::max(longest, text_w(run_label(r.runs[i]), 11));
  longest = std::min(longest, text_w(std::string(34, 'x'), 11));
  const double left = rotate ? std::max(84.0, longest * 0.82 - 30) : 84.0;
  const Area a{left, y + 6, kW - left - 20, 280};
  double lo = 1e300, hi = 0;
  for (size_t i : *shown) {
    const auto& l = r.runs[i].latency;
    for (double v : {l.median_us, l.p99_us, l.p999_us})
      if (std::isfinite(v) && v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  }
  if (hi <= 0) {
    lo = 1;
    hi = 10;
  }
  double dlo = std::pow(10.0, std::floor(std::log10(lo)));
  double dhi = std::pow(10.0, std::ceil(std::log10(hi) + 1e-9));
  if (dhi <= dlo * 1.0001) dhi = dlo * 10;
  if (lo < dlo * 3) dlo /= 10;  // the shortest bar stays visible
  auto ys = [&](double v) {
    v = std::max(v, dlo);
    return a.bottom() - (std::log10(v) - std::log10(dlo)) / (std::log10(dhi) - std::log10(dlo)) * a.h;
  };
  for (double dec = dlo; dec <= dhi * 1.0001; dec *= 10) {
    s.line(a.x, ys(dec), a.right(), ys(dec), "#dee2e6");
    s.line(a.x - 4, ys(dec), a.x, ys(dec), "#495057");
    s.text(a.x - 7, ys(dec) + 4, esc(trim_num(dec, 3)), "end", 11, "#495057");
    if (dec * 10 <= dhi * 1.0001)
      for (int m : {2, 5}) s.line(a.x, ys(dec * m), a.right(), ys(dec * m), "#f1f3f5");
  }
  const double gw = a.w / static_cast<double>(n);
  const double bw = std::min(36.0, gw * 0.75 / 3);
  for (size_t k = 0; k < n; ++k) {
    const auto& run = r.runs[(*shown)[k]];
    const double gx = a.x + static_cast<double>(k) * gw + gw / 2 - 1.5 * bw;
    const std::string& col = styles.at(run.job).colour;
    const double vals[3] = {run.latency.median_us, run.latency.p99_us, run.latency.p999_us};
    const double op[3] = {0.3, 0.62, 1.0};
    for (int b = 0; b < 3; ++b) {
      const double v = std::isfinite(vals[b]) ? vals[b] : 0;
      const double top = ys(v);
      s.rect(gx + b * bw, top, bw - 2, a.bottom() - top, col, "fill-opacity=\"" + px(op[b]) + "\"");
    }
    const double cx = a.x + static_cast<double>(k) * gw + gw / 2;
    if (rotate) {
      std::string label = run_label(run);
      if (label.size() > 34) label = label.substr(0, 15) + "..." + label.substr(label.size() - 16);
      s.text(cx, a.bottom() + 14, esc(label), "end", 11, "#212529",
             "transform=\"rotate(-35 " + px(cx) + " " + px(a.bottom() + 14) + ")\"");
    } else {
      s.text(cx, a.bottom() + 16, esc(run.job), "middle", 11, "#212529");
      if (!run.sweep_parameter.empty())
        s.text(cx, a.bottom() + 30, esc(run.sweep_parameter + " " + sweep_label(run.sweep_parameter, run.sweep_value)),
               "middle", 11, "#495057");
    }
  }
  s.line(a.x, a.y, a.x, a.bottom(), "#495057");
  s.line(a.x, a.bottom(), a.right(), a.bottom(), "#495057");
  const double cx = a.x - 52, cy = a.y + a.h / 2;
  s.text(cx, cy, "latency (us, log scale)", "middle", 12, "#343a40",
         "transform=\"rotate(-90 " + px(cx) + " " + px(cy) + ")\"");
  double label_h = 40;
  if (rotate) label_h = std::min(200.0, longest * 0.58 + 24);
  return s.wrap("plot-latency", a.bottom() + label_h,
                "Latency percentiles per run (median, p99, p99.9 in microseconds, log scale)");
}

}  // namespace metaroce::scenario::report_internal
