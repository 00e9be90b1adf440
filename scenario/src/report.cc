// Reports of a scenario run: report.json, timeseries.csv, report.html and the
// terminal summary (report.h).
//
// report.json layout (pretty, 2 spaces, keys in this order; keys are the field
// names of model.h's Report / RunResult / Interval / LatencySummary /
// AssertionResult, plus a "derived" object computed from them):
//
//   {
//     "scenario_name": str, "description": str, "source": str,
//     "mode": "sim" | "live", "version": str, "started_at": str (ISO 8601 UTC),
//     "seed": uint, "scenario_yaml": str, "planes": uint, "plane_rate_bps": num,
//     "runs": [ {
//       "job": str, "transport": str, "op": str,
//       "sweep_parameter": str ("" unless a sweep), "sweep_value": num,
//       "state": "done" | "failed" | "stopped", "error": str,
//       "goodput_bps": num, "bytes": uint, "messages": uint,
//       "retransmits": uint, "spurious_retransmits": uint, "rtos": uint,
//       "data_packets": uint, "path_state_changes": uint,
//       "verified": bool, "verification": str, "verify_failures": uint,
//       "latency": { "samples": uint, "min_us", "median_us", "avg_us",
//                    "p99_us", "p999_us", "max_us": num },
//       "intervals": [ { "t0_s", "t1_s", "goodput_bps": num, "retransmits": uint,
//                        "loss_seen": num, "plane_bytes": [num], "plane_utilisation": [num],
//                        "queue_bytes": num, "ecn_marks": uint } ],
//       "events": [ { "t_s": num, "label": str } ],   // RunResult::events (pairs)
//       "seed": uint
//     } ],
//     "assertions": [ { "text": str, "passed": bool, "detail": str } ],
//     "derived": {                        // computed here, shown on the page
//       "passed": bool,                   // Report::passed()
//       "assertions_total": uint, "assertions_failed": uint,
//       "runs": [ {                       // same index as "runs"; keys only when defined
//         "retained": num,                // sweep: goodput / goodput of the same job at the first sweep value
//         "fault_from_s", "fault_to_s": num,   // first event .. last event (or end of run)
//         "baseline_goodput_bps": num,    // mean interval goodput before the first event (first interval skipped)
//         "fault_goodput_bps": num,       // mean interval goodput within the fault window
//         "fault_retained": num           // fault_goodput_bps / baseline_goodput_bps
//       } ]
//     }
//   }
//
// Non-finite numbers are written as null. The page (report_html) marks every
// number it shows from this file with data-key="<JSON pointer>", text =
// format_number(last key of the pointer, value).

#include "metaroce/scenario/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace metaroce::scenario {
namespace {

using ojson = nlohmann::ordered_json;

std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string strf(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return {};
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(out.data(), out.size(), fmt, ap);
  va_end(ap);
  out.resize(static_cast<size_t>(n));
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Coordinates in SVG: one decimal, no "-0.0".
std::string px(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = strf("%.1f", v);
  if (s == "-0.0") s = "0.0";
  if (ends_with(s, ".0")) s.resize(s.size() - 2);
  return s;
}

// %g without exponent noise for labels ("0.1", "2.5", "16").
std::string trim_num(double v, int max_decimals = 3) {
  std::string s = strf("%.*f", max_decimals, v);
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string transport_name(const std::string& t) {
  if (t == "metaroce") return "MetaRoCE";
  if (t == "rocev2") return "RoCEv2";
  return t;
}

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

// "1%" for loss, "2 us" for *_ns, "16K" for message_bytes ...
std::string sweep_label(const std::string& param, double v) {
  if (param == "loss" || param == "duplicate" || param == "corrupt" || param == "reorder")
    return trim_num(v * 100, 3) + "%";
  if (ends_with(param, "_ns")) {
    if (std::fabs(v) >= 1e6) return trim_num(v / 1e6, 3) + " ms";
    if (std::fabs(v) >= 1e3) return trim_num(v / 1e3, 3) + " us";
    return trim_num(v, 1) + " ns";
  }
  if (ends_with(param, "_bytes")) {
    if (v >= 1048576 && std::fmod(v, 1048576) == 0) return trim_num(v / 1048576, 0) + "M";
    if (v >= 1024 && std::fmod(v, 1024) == 0) return trim_num(v / 1024, 0) + "K";
    return trim_num(v, 0) + " B";
  }
  return trim_num(v, 3);
}

std::string sweep_axis_title(const std::string& param) {
  if (param == "loss") return "loss rate";
  if (param == "skew_ns") return "skew between planes";
  if (param == "message_bytes") return "message size";
  return param;
}

std::string run_label(const RunResult& run) {
  if (run.sweep_parameter.empty()) return run.job;
  return run.job + " @ " + run.sweep_parameter + " " + sweep_label(run.sweep_parameter, run.sweep_value);
}

// ------------------------------------------------------------------ derived

struct RunDerived {
  std::optional<double> retained;
  std::optional<double> fault_from_s, fault_to_s, baseline_bps, fault_bps, fault_retained;
};

struct Derived {
  bool sweep = false;
  std::string parameter;
  std::vector<double> sweep_values;          // first-appearance order
  std::vector<std::string> jobs;             // first-appearance order
  std::map<std::string, std::string> job_transport;
  std::vector<RunDerived> runs;
  size_t failed = 0;
};

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

Derived derive(const Report& r) {
  Derived d;
  d.sweep = has_sweep(r);
  d.parameter = sweep_parameter(r);
  for (const auto& a : r.assertions) d.failed += a.passed ? 0 : 1;
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
    }
  }
  return d;
}

// ------------------------------------------------------------------ JSON

ojson num_or_null(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

ojson to_json(const Report& r, const Derived& d) {
  ojson j;
  j["scenario_name"] = r.scenario_name;
  j["description"] = r.description;
  j["source"] = r.source;
  j["mode"] = r.mode;
  j["version"] = r.version;
  j["started_at"] = r.started_at;
  j["seed"] = r.seed;
  j["scenario_yaml"] = r.scenario_yaml;
  j["planes"] = r.planes;
  j["plane_rate_bps"] = num_or_null(r.plane_rate_bps);
  ojson runs = ojson::array();
  for (const auto& run : r.runs) {
    ojson o;
    o["job"] = run.job;
    o["transport"] = run.transport;
    o["op"] = run.op;
    o["sweep_parameter"] = run.sweep_parameter;
    o["sweep_value"] = num_or_null(run.sweep_value);
    o["state"] = run.state;
    o["error"] = run.error;
    o["goodput_bps"] = num_or_null(run.goodput_bps);
    o["bytes"] = run.bytes;
    o["messages"] = run.messages;
    o["retransmits"] = run.retransmits;
    o["spurious_retransmits"] = run.spurious_retransmits;
    o["rtos"] = run.rtos;
    o["data_packets"] = run.data_packets;
    o["path_state_changes"] = run.path_state_changes;
    o["verified"] = run.verified;
    o["verification"] = run.verification;
    o["verify_failures"] = run.verify_failures;
    const auto& l = run.latency;
    o["latency"] = ojson{{"samples", l.samples},
                         {"min_us", num_or_null(l.min_us)},
                         {"median_us", num_or_null(l.median_us)},
                         {"avg_us", num_or_null(l.avg_us)},
                         {"p99_us", num_or_null(l.p99_us)},
                         {"p999_us", num_or_null(l.p999_us)},
                         {"max_us", num_or_null(l.max_us)}};
    ojson ivs = ojson::array();
    for (const auto& iv : run.intervals) {
      ojson x;
      x["t0_s"] = num_or_null(iv.t0_s);
      x["t1_s"] = num_or_null(iv.t1_s);
      x["goodput_bps"] = num_or_null(iv.goodput_bps);
      x["retransmits"] = iv.retransmits;
      x["loss_seen"] = num_or_null(iv.loss_seen);
      ojson pb = ojson::array(), pu = ojson::array();
      for (double b : iv.plane_bytes) pb.push_back(num_or_null(b));
      for (double u : iv.plane_utilisation) pu.push_back(num_or_null(u));
      x["plane_bytes"] = std::move(pb);
      x["plane_utilisation"] = std::move(pu);
      x["queue_bytes"] = num_or_null(iv.queue_bytes);
      x["ecn_marks"] = iv.ecn_marks;
      ivs.push_back(std::move(x));
    }
    o["intervals"] = std::move(ivs);
    ojson evs = ojson::array();
    for (const auto& e : run.events) evs.push_back(ojson{{"t_s", num_or_null(e.first)}, {"label", e.second}});
    o["events"] = std::move(evs);
    o["seed"] = run.seed;
    runs.push_back(std::move(o));
  }
  j["runs"] = std::move(runs);
  ojson as = ojson::array();
  for (const auto& a : r.assertions) as.push_back(ojson{{"text", a.text}, {"passed", a.passed}, {"detail", a.detail}});
  j["assertions"] = std::move(as);
  ojson dj;
  dj["passed"] = r.passed();
  dj["assertions_total"] = r.assertions.size();
  dj["assertions_failed"] = d.failed;
  ojson druns = ojson::array();
  for (const auto& rd : d.runs) {
    ojson o = ojson::object();
    auto put = [&o](const char* k, const std::optional<double>& v) {
      if (v && std::isfinite(*v)) o[k] = *v;
    };
    put("retained", rd.retained);
    put("fault_from_s", rd.fault_from_s);
    put("fault_to_s", rd.fault_to_s);
    put("baseline_goodput_bps", rd.baseline_bps);
    put("fault_goodput_bps", rd.fault_bps);
    put("fault_retained", rd.fault_retained);
    druns.push_back(std::move(o));
  }
  dj["runs"] = std::move(druns);
  j["derived"] = std::move(dj);
  return j;
}

// ------------------------------------------------------------------ CSV

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_num(double v) { return std::isfinite(v) ? strf("%.10g", v) : std::string(); }

// ------------------------------------------------------------------ SVG helpers

constexpr double kW = 1120;         // plot width (px)
constexpr double kCharW = 0.6;      // DejaVu Sans average glyph width per font px
const char* kFont = "DejaVu Sans, Helvetica, Arial, sans-serif";

double text_w(std::string_view s, double size) { return static_cast<double>(s.size()) * size * kCharW; }

struct Rgb {
  double r, g, b;
};
Rgb parse_hex(const std::string& h) {
  auto v = [&](size_t i) { return static_cast<double>(std::stoi(h.substr(i, 2), nullptr, 16)); };
  return {v(1), v(3), v(5)};
}
std::string hex(const Rgb& c) {
  auto cl = [](double x) { return static_cast<int>(std::lround(std::clamp(x, 0.0, 255.0))); };
  return strf("#%02x%02x%02x", cl(c.r), cl(c.g), cl(c.b));
}
std::string mix(const std::string& a, const std::string& b, double t) {
  const Rgb x = parse_hex(a), y = parse_hex(b);
  return hex({x.r + (y.r - x.r) * t, x.g + (y.g - x.g) * t, x.b + (y.b - x.b) * t});
}

// Sequential scale for utilisation 0..1 (light grey -> yellow-green -> deep blue).
std::string util_colour(double u) {
  static const char* stops[] = {"#f1f3f5", "#d9f0a3", "#7fcdbb", "#2c7fb8", "#253494"};
  if (!std::isfinite(u)) u = 0;
  u = std::clamp(u, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(u));
  return mix(stops[i], stops[i + 1], u - i);
}

struct Style {
  std::string colour;
  std::string dash;  // "" = solid
};

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

struct Ticks {
  double lo = 0, hi = 1, step = 1;
  std::vector<double> v;
  int decimals = 0;
};

Ticks nice_ticks(double lo, double hi, int target = 5) {
  Ticks t;
  if (!std::isfinite(lo)) lo = 0;
  if (!std::isfinite(hi) || hi <= lo) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  t.step = step;
  t.lo = std::floor(lo / step + 1e-9) * step;
  t.hi = std::ceil(hi / step - 1e-9) * step;
  for (double x = t.lo; x <= t.hi + step * 1e-6; x += step) t.v.push_back(std::fabs(x) < step * 1e-9 ? 0 : x);
  t.decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return t;
}

struct Area {
  double x, y, w, h;
  double right() const { return x + w; }
  double bottom() const { return y + h; }
};

struct Linear {
  double d0, d1, r0, r1;
  double operator()(double v) const { return d1 == d0 ? r0 : r0 + (v - d0) / (d1 - d0) * (r1 - r0); }
};

class Svg {
 public:
  std::ostringstream o;
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double sw = 1,
            const std::string& dash = "") {
    o << "<line x1=\"" << px(x1) << "\" y1=\"" << px(y1) << "\" x2=\"" << px(x2) << "\" y2=\"" << px(y2)
      << "\" stroke=\"" << stroke << "\" stroke-width=\"" << sw << "\"";
    if (!dash.empty()) o << " stroke-dasharray=\"" << dash << "\"";
    o << "/>\n";
  }
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "") {
    o << "<rect x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\"" << px(std::max(0.0, w)) << "\" height=\""
      << px(std::max(0.0, h)) << "\" fill=\"" << fill << "\"" << (extra.empty() ? "" : " ") << extra << "/>\n";
  }
  // html = already escaped content (may hold <tspan>s).
  void text(double x, double y, const std::string& html, const std::string& anchor = "start", double size = 12,
            const std::string& fill = "#343a40", const std::string& extra = "") {
    o << "<text x=\"" << px(x) << "\" y=\"" << px(y) << "\" font-size=\"" << size << "\" fill=\"" << fill << "\"";
    if (anchor != "start") o << " text-anchor=\"" << anchor << "\"";
    if (!extra.empty()) o << " " << extra;
    o << ">" << html << "</text>\n";
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double sw,
                const std::string& dash = "") {
    o << "<polyline fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\"" << sw
      << "\" stroke-linejoin=\"round\" stroke-linecap=\"round\"";
    if (!dash.empty()) o << " stroke-dasharray=\"" << dash << "\"";
    o << " points=\"";
    for (size_t i = 0; i < pts.size(); ++i) o << (i ? " " : "") << px(pts[i].first) << "," << px(pts[i].second);
    o << "\"/>\n";
  }
  void circle(double cx, double cy, double r, const std::string& fill, const std::string& stroke = "#ffffff") {
    o << "<circle cx=\"" << px(cx) << "\" cy=\"" << px(cy) << "\" r=\"" << px(r) << "\" fill=\"" << fill
      << "\" stroke=\"" << stroke << "\" stroke-width=\"1.5\"/>\n";
  }
  std::string wrap(const std::string& id, double h, const std::string& label) const {
    std::ostringstream s;
    s << "<svg id=\"" << id << "\" role=\"img\" aria-label=\"" << esc(label) << "\" xmlns=\"http://www.w3.org/2000/svg\""
      << " viewBox=\"0 0 " << px(kW) << " " << px(h) << "\" width=\"" << px(kW) << "\" height=\"" << px(h)
      << "\" font-family=\"" << kFont << "\">\n"
      << "<title>" << esc(label) << "</title>\n"
      << o.str() << "</svg>\n";
    return s.str();
  }
};

// Grid, axes, ticks and axis titles for a plot area.
void axes(Svg& s, const Area& a, const Linear& xs, const Ticks& xt, const std::string& xunit, const Linear& ys,
          const Ticks& yt, const std::string& yunit, const std::string& xtitle, const std::string& ytitle) {
  for (double v : yt.v) {
    const double y = ys(v);
    s.line(a.x, y, a.right(), y, "#e9ecef");
    s.line(a.x - 4, y, a.x, y, "#495057");
    s.text(a.x - 7, y + 4, esc(strf("%.*f", yt.decimals, v) + yunit), "end", 11, "#495057");
  }
  for (double v : xt.v) {
    const double x = xs(v);
    s.line(x, a.bottom(), x, a.bottom() + 4, "#495057");
    s.text(x, a.bottom() + 16, esc(strf("%.*f", xt.decimals, v) + xunit), "middle", 11, "#495057");
  }
  s.line(a.x, a.y, a.x, a.bottom(), "#495057");
  s.line(a.x, a.bottom(), a.right(), a.bottom(), "#495057");
  if (!xtitle.empty()) s.text(a.x + a.w / 2, a.bottom() + 32, esc(xtitle), "middle", 12, "#343a40");
  if (!ytitle.empty()) {
    const double cx = a.x - 44, cy = a.y + a.h / 2;
    s.text(cx, cy, esc(ytitle), "middle", 12, "#343a40",
           "transform=\"rotate(-90 " + px(cx) + " " + px(cy) + ")\"");
  }
}

struct LegendItem {
  std::string label;
  std::string colour;
  std::string dash;
  enum { kLine, kBox } kind = kLine;
  double opacity = 1;
};

// Horizontal legend, wrapping; returns the height used.
double legend(Svg& s, double x0, double y0, double width, const std::vector<LegendItem>& items) {
  double x = x0, y = y0 + 10;
  for (const auto& it : items) {
    const double w = 28 + text_w(it.label, 12) + 18;
    if (x + w > x0 + width && x > x0) {
      x = x0;
      y += 20;
    }
    if (it.kind == LegendItem::kLine) {
      s.line(x, y, x + 22, y, it.colour, 3, it.dash);
    } else {
      s.rect(x + 4, y - 6, 14, 12, it.colour, it.opacity < 1 ? "fill-opacity=\"" + px(it.opacity) + "\"" : "");
    }
    s.text(x + 28, y + 4, esc(it.label), "start", 12, "#343a40");
    x += w;
  }
  return y - y0 + 12;
}

// Fault events: dashed vertical lines, labelled either in full at the top of
// the plot area (staggered into rows so they do not overlap) or, when that
// does not fit, with numbers above the plot that an event key explains.
using Events = std::vector<std::pair<double, std::string>>;

std::string event_text(const std::pair<double, std::string>& e) {
  return (e.second.empty() ? std::string("event") : e.second) + " (" + trim_num(e.first, 2) + " s)";
}

struct LabelPlace {
  double x, y, w;
  std::string text;
};

// Full labels for evs in a; false if they need more than max_rows rows.
bool place_event_labels(const Area& a, const Linear& xs, const Events& evs, size_t max_rows,
                        std::vector<LabelPlace>* out) {
  std::vector<double> row_end;  // right edge of the last label in each row
  for (const auto& e : evs) {
    const double x = xs(e.first);
    if (x < a.x - 0.5 || x > a.right() + 0.5) continue;
    const std::string text = event_text(e);
    const double w = text_w(text, 11) + 6;
    const double lx = x + 3 + w <= a.right() ? x + 3 : x - 3 - w;
    if (lx < a.x) return false;
    size_t row = 0;
    for (; row < row_end.size(); ++row)
      if (lx > row_end[row] + 4) break;
    if (row >= max_rows) return false;
    if (row == row_end.size()) row_end.push_back(0);
    row_end[row] = lx + w;
    out->push_back({lx, a.y + 4 + static_cast<double>(row) * 16, w, text});
  }
  return true;
}

void event_lines(Svg& s, const Area& a, const Linear& xs, const Events& evs) {
  for (const auto& e : evs) {
    const double x = xs(e.first);
    if (x >= a.x - 0.5 && x <= a.right() + 0.5) s.line(x, a.y, x, a.bottom(), "#495057", 1.2, "5 4");
  }
}

void event_labels(Svg& s, const std::vector<LabelPlace>& places) {
  for (const auto& p : places) {
    s.rect(p.x, p.y, p.w, 14, "#ffffff", "fill-opacity=\"0.85\"");
    s.text(p.x + 3, p.y + 11, esc(p.text), "start", 11, "#343a40");
  }
}

void marker(Svg& s, double cx, double bottom, const std::string& text) {
  const double w = std::max(14.0, text_w(text, 10) + 6);
  s.rect(cx - w / 2, bottom - 14, w, 14, "#495057", "rx=\"3\"");
  s.text(cx, bottom - 3.5, esc(text), "middle", 10, "#ffffff", "font-weight=\"bold\"");
}

// Numbers (1-based positions in all) above the plot area; markers that would
// overlap are merged ("2,3").
void event_markers(Svg& s, const Area& a, const Linear& xs, const Events& evs, const Events& all) {
  std::vector<std::pair<double, std::string>> marks;  // x, text
  for (const auto& e : evs) {
    const double x = xs(e.first);
    if (x < a.x - 0.5 || x > a.right() + 0.5) continue;
    const auto it = std::find(all.begin(), all.end(), e);
    const std::string n = std::to_string(it - all.begin() + 1);
    if (!marks.empty()) {
      auto& last = marks.back();
      const double lw = std::max(14.0, text_w(last.second, 10) + 6);
      if (x - last.first < lw / 2 + 9) {
        last.second += "," + n;
        continue;
      }
    }
    marks.push_back({x, n});
  }
  for (const auto& [x, text] : marks) marker(s, x, a.y - 2, text);
}

// The key to the numbered markers, wrapping; returns the height used.
double event_key(Svg& s, double x0, double y0, double width, const Events& all) {
  double x = x0, y = y0;
  s.text(x, y + 11, "events:", "start", 12, "#343a40");
  x += text_w("events:", 12) + 10;
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string n = std::to_string(i + 1), text = event_text(all[i]);
    const double w = 20 + text_w(text, 12) + 16;
    if (x + w > x0 + width && x > x0 + 70) {
      x = x0 + text_w("events:", 12) + 10;
      y += 20;
    }
    marker(s, x + 7, y + 14, n);
    s.text(x + 20, y + 11, esc(text), "start", 12, "#343a40");
    x += w;
  }
  return y - y0 + 20;
}

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

std::string dk(const std::string& pointer, const std::string& key, double v, const std::string& tag = "span",
               const std::string& cls = "") {
  return "<" + tag + (cls.empty() ? "" : " class=\"" + cls + "\"") + " data-key=\"" + esc(pointer) + "\">" +
         esc(format_number(key, v)) + "</" + tag + ">";
}

std::string run_ptr(size_t i, const std::string& key) { return "/runs/" + std::to_string(i) + "/" + key; }
std::string derived_ptr(size_t i, const std::string& key) { return "/derived/runs/" + std::to_string(i) + "/" + key; }

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

const char* kCss = R"CSS(
*{box-sizing:border-box}
body{margin:0;background:#f1f3f5;color:#212529;font:14px/1.45 "DejaVu Sans",Helvetica,Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px 20px 40px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:18px;margin:0 0 6px}
.desc{font-size:15px;color:#495057;margin:0 0 10px}
.meta{display:flex;flex-wrap:wrap;gap:6px 18px;font-size:13px;color:#495057}
.meta b{color:#212529;font-weight:600}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:bold;letter-spacing:.03em}
.mode-sim{background:#e7f5ff;color:#1864ab;border:1px solid #a5d8ff}
.mode-live{background:#fff4e6;color:#d9480f;border:1px solid #ffd8a8}
.verdict{margin:18px 0;padding:14px 18px;border-radius:8px;font-size:18px;font-weight:bold}
.verdict ul{margin:6px 0 0;padding-left:22px;font-size:14px;font-weight:normal}
.verdict.pass{background:#d3f9d8;border:1px solid #8ce99a;color:#2b8a3e}
.verdict.fail{background:#ffe3e3;border:1px solid #ffa8a8;color:#c92a2a}
.verdict.none{background:#e9ecef;border:1px solid #ced4da;color:#495057}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:18px}
.kf{background:#fff;border:1px solid #dee2e6;border-left:6px solid #868e96;border-radius:6px;padding:10px 14px;min-width:230px}
.kf .name{font-weight:bold}
.kf .big{font-size:22px;font-weight:bold;font-variant-numeric:tabular-nums}
.kf .small{font-size:12px;color:#495057}
section.card{background:#fff;border:1px solid #dee2e6;border-radius:8px;padding:16px 18px;margin:0 0 18px}
.note{font-size:13px;color:#495057;margin:0 0 10px}
svg{display:block;max-width:100%;height:auto}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:5px 9px;border-bottom:1px solid #e9ecef;text-align:left;vertical-align:top}
th{background:#f8f9fa;font-weight:600;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fcfcfd}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:middle}
.ok{color:#2b8a3e;font-weight:bold}
.bad{color:#c92a2a;font-weight:bold}
.warn{color:#e67700;font-weight:bold}
.err{display:block;color:#c92a2a;font-size:12px}
details{background:#fff;border:1px solid #dee2e6;border-radius:8px;padding:10px 18px}
summary{cursor:pointer;font-weight:bold}
pre{background:#f8f9fa;border:1px solid #e9ecef;border-radius:4px;padding:10px;overflow:auto;font:12px/1.4 "DejaVu Sans Mono",monospace;white-space:pre-wrap}
footer{font-size:12px;color:#868e96;margin-top:14px}
)CSS";

std::string state_html(const RunResult& run) {
  const std::string cls = run.state == "done" ? "ok" : run.state == "failed" ? "bad" : "warn";
  std::string s = "<span class=\"" + cls + "\">" + esc(run.state) + "</span>";
  if (!run.error.empty()) s += "<span class=\"err\">" + esc(run.error) + "</span>";
  return s;
}

}  // namespace

// ------------------------------------------------------------------ public

std::string format_number(const std::string& key, double value) {
  if (!std::isfinite(value)) return "n/a";
  if (value == 0) value = 0;  // no "-0"
  if (ends_with(key, "_bps")) return strf("%.2f Gb/s", value / 1e9 == 0 ? 0.0 : value / 1e9);
  if (contains(key, "utilisation") || contains(key, "utilization") || contains(key, "retained") ||
      contains(key, "loss_seen") || contains(key, "ratio") || key == "loss")
    return strf("%.1f%%", value * 100);
  if (ends_with(key, "_us")) return strf("%.1f us", value);
  if (ends_with(key, "_s")) return strf("%.2f s", value);
  if (key == "sweep_value") return trim_num(value, 6);
  // Counts: integer, no separators.
  if (std::fabs(value) < 9.0e18) return strf("%lld", static_cast<long long>(std::llround(value)));
  return strf("%.0f", value);
}

std::string report_json(const Report& r) {
  return to_json(r, derive(r)).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string timeseries_csv(const Report& r) {
  size_t planes = 0;
  for (const auto& run : r.runs)
    for (const auto& iv : run.intervals) planes = std::max(planes, iv.plane_utilisation.size());
  std::string out =
      "run,job,transport,sweep_parameter,sweep_value,t0_s,t1_s,goodput_gbps,retransmits,loss_seen,queue_bytes,"
      "ecn_marks";
  for (size_t p = 0; p < planes; ++p) out += ",plane" + std::to_string(p) + "_util";
  out += "\n";
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    for (const auto& iv : run.intervals) {
      out += std::to_string(i) + "," + csv_field(run.job) + "," + csv_field(run.transport) + "," +
             csv_field(run.sweep_parameter) + "," + (run.sweep_parameter.empty() ? "" : csv_num(run.sweep_value)) +
             "," + csv_num(iv.t0_s) + "," + csv_num(iv.t1_s) + "," + csv_num(iv.goodput_bps / 1e9) + "," +
             std::to_string(iv.retransmits) + "," + csv_num(iv.loss_seen) + "," + csv_num(iv.queue_bytes) + "," +
             std::to_string(iv.ecn_marks);
      for (size_t p = 0; p < planes; ++p)
        out += "," + (p < iv.plane_utilisation.size() ? csv_num(iv.plane_utilisation[p]) : std::string());
      out += "\n";
    }
  }
  return out;
}

std::string report_html(const Report& r) {
  const Derived d = derive(r);
  const auto styles = job_styles(d);
  std::ostringstream h;
  const std::string title = r.scenario_name.empty() ? std::string("scenario") : r.scenario_name;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    << "<title>" << esc(title) << " - metaroce-testbed scenario report</title>\n<style>" << kCss
    << "</style>\n</head>\n<body>\n<main>\n";

  // Header.
  const bool sim = r.mode == "sim";
  h << "<header>\n<h1>" << esc(title) << "</h1>\n";
  if (!r.description.empty()) h << "<p class=\"desc\">" << esc(r.description) << "</p>\n";
  h << "<div class=\"meta\"><span class=\"badge " << (sim ? "mode-sim" : "mode-live") << "\">"
    << (sim ? "SIM" : r.mode == "live" ? "LIVE" : esc(r.mode)) << "</span><span>"
    << (sim ? "simulator, virtual time" : r.mode == "live" ? "live daemons" : "mode " + esc(r.mode)) << "</span>";
  h << "<span>fabric: <b>" << dk("/planes", "planes", r.planes) << "</b> planes x <b>"
    << dk("/plane_rate_bps", "plane_rate_bps", r.plane_rate_bps) << "</b></span>";
  h << "<span>runs: <b>" << r.runs.size() << "</b></span>";
  if (r.seed <= (uint64_t{1} << 53))
    h << "<span>seed: <b>" << dk("/seed", "seed", static_cast<double>(r.seed)) << "</b></span>";
  else
    h << "<span>seed: <b>" << r.seed << "</b></span>";
  if (!r.source.empty()) h << "<span>file: <b>" << esc(r.source) << "</b></span>";
  if (!r.started_at.empty()) h << "<span>started: <b>" << esc(r.started_at) << "</b></span>";
  if (!r.version.empty()) h << "<span>metaroce-testbed <b>" << esc(r.version) << "</b></span>";
  h << "</div>\n</header>\n";

  // Verdict.
  if (r.assertions.empty()) {
    h << "<div class=\"verdict none\">No assertions were checked</div>\n";
  } else if (d.failed == 0) {
    h << "<div class=\"verdict pass\">PASS: all " << dk("/derived/assertions_total", "assertions_total",
                                                       static_cast<double>(r.assertions.size()))
      << " assertions passed</div>\n";
  } else {
    h << "<div class=\"verdict fail\">FAIL: "
      << dk("/derived/assertions_failed", "assertions_failed", static_cast<double>(d.failed)) << " of "
      << dk("/derived/assertions_total", "assertions_total", static_cast<double>(r.assertions.size()))
      << " assertions failed<ul>";
    for (const auto& a : r.assertions)
      if (!a.passed) h << "<li>" << esc(a.text) << (a.detail.empty() ? "" : ": " + esc(a.detail)) << "</li>";
    h << "</ul></div>\n";
  }

  // Key figures per job.
  h << "<div class=\"cards\">\n";
  for (const auto& job : d.jobs) {
    const Style& st = styles.at(job);
    h << "<div class=\"kf\" style=\"border-left-color:" << st.colour << "\"><div class=\"name\">" << esc(job) << " <span class=\"small\">("
      << esc(transport_name(d.job_transport.at(job))) << ")</span></div>";
    if (d.sweep) {
      size_t first = r.runs.size(), last = r.runs.size();
      for (size_t i = 0; i < r.runs.size(); ++i)
        if (r.runs[i].job == job) {
          if (first == r.runs.size()) first = i;
          last = i;
        }
      if (last < r.runs.size() && d.runs[last].retained) {
        h << "<div class=\"big\">" << dk(derived_ptr(last, "retained"), "retained", *d.runs[last].retained)
          << "</div><div class=\"small\">retained at " << esc(r.runs[last].sweep_parameter) << " "
          << esc(sweep_label(r.runs[last].sweep_parameter, r.runs[last].sweep_value)) << "</div>";
      }
      if (first < r.runs.size())
        h << "<div class=\"small\">" << dk(run_ptr(first, "goodput_bps"), "goodput_bps", r.runs[first].goodput_bps)
          << " at " << esc(r.runs[first].sweep_parameter) << " "
          << esc(sweep_label(r.runs[first].sweep_parameter, r.runs[first].sweep_value)) << "</div>";
    } else {
      for (size_t i = 0; i < r.runs.size(); ++i) {
        if (r.runs[i].job != job) continue;
        h << "<div class=\"big\">" << dk(run_ptr(i, "goodput_bps"), "goodput_bps", r.runs[i].goodput_bps) << "</div>";
        if (d.runs[i].fault_retained)
          h << "<div class=\"small\">retained during the fault: "
            << dk(derived_ptr(i, "fault_retained"), "fault_retained", *d.runs[i].fault_retained) << "</div>";
        h << "<div class=\"small\">" << dk(run_ptr(i, "retransmits"), "retransmits", static_cast<double>(r.runs[i].retransmits))
          << " retransmits, " << dk(run_ptr(i, "rtos"), "rtos", static_cast<double>(r.runs[i].rtos)) << " RTOs</div>";
        break;
      }
    }
    h << "</div>\n";
  }
  h << "</div>\n";

  // 1. Goodput over time.
  h << "<section class=\"card\"><h2>Goodput over time</h2><p class=\"note\">Goodput per measurement interval"
    << (d.sweep ? ", one panel per sweep value" : "")
    << (d.sweep_values.size() > 9 ? " (9 of " + std::to_string(d.sweep_values.size()) + " values, first and last included)" : "")
    << ". Dashed vertical lines mark the fault events.</p>\n"
    << plot_goodput(r, d, styles) << "</section>\n";

  // 2. Retained vs sweep value, or goodput per run.
  if (d.sweep) {
    h << "<section class=\"card\"><h2>Retained throughput vs " << esc(sweep_axis_title(d.parameter))
      << "</h2><p class=\"note\">Retained = goodput of a run / goodput of the same job at the first sweep value ("
      << esc(sweep_label(d.parameter, d.sweep_values.empty() ? 0 : d.sweep_values.front())) << ").</p>\n"
      << plot_retained(r, d, styles);
    h << "<table><thead><tr><th>job</th><th>transport</th>";
    for (double v : d.sweep_values) h << "<th class=\"n\">" << esc(d.parameter) << " " << esc(sweep_label(d.parameter, v)) << "</th>";
    h << "</tr></thead><tbody>\n";
    for (const auto& job : d.jobs) {
      h << "<tr><td><span class=\"swatch\" style=\"background:" << styles.at(job).colour << "\"></span>" << esc(job)
        << "</td><td>" << esc(transport_name(d.job_transport.at(job))) << "</td>";
      for (double v : d.sweep_values) {
        h << "<td class=\"n\">";
        for (size_t i = 0; i < r.runs.size(); ++i)
          if (r.runs[i].job == job && r.runs[i].sweep_value == v) {
            if (d.runs[i].retained) h << "<b>" << dk(derived_ptr(i, "retained"), "retained", *d.runs[i].retained) << "</b><br>";
            h << dk(run_ptr(i, "goodput_bps"), "goodput_bps", r.runs[i].goodput_bps);
            break;
          }
        h << "</td>";
      }
      h << "</tr>\n";
    }
    h << "</tbody></table></section>\n";
  } else {
    h << "<section class=\"card\"><h2>Goodput per run</h2><p class=\"note\">Mean goodput over the whole run"
      << "; where the run had fault events, also the mean during the fault window (first to last event) and the "
         "share of the pre-fault goodput it retained.</p>\n"
      << plot_goodput_bars(r, d, styles) << "</section>\n";
  }

  // 3. Per-plane load.
  h << "<section class=\"card\"><h2>Load per plane</h2><p class=\"note\">Utilisation of each plane per interval "
       "(bytes forwarded x 8 / (interval x plane rate)); one row per plane, one map per run.</p>\n"
    << plot_planes(r, d, styles) << "</section>\n";

  // 4. Latency.
  std::vector<size_t> shown;
  const std::string lat = plot_latency(r, d, styles, &shown);
  h << "<section class=\"card\"><h2>Latency percentiles</h2><p class=\"note\">Median, p99 and p99.9 operation "
       "latency per run in microseconds (log scale).";
  std::vector<std::string> skipped;
  for (const auto& run : r.runs)
    if (run.latency.samples == 0) skipped.push_back(run_label(run));
  if (!skipped.empty()) {
    h << " Skipped (0 samples): ";
    for (size_t k = 0; k < skipped.size(); ++k) h << (k ? ", " : "") << esc(skipped[k]);
    h << ".";
  }
  h << "</p>\n" << lat;
  if (!shown.empty()) {
    h << "<table><thead><tr><th>run</th><th class=\"n\">samples</th><th class=\"n\">min</th><th class=\"n\">median</th>"
         "<th class=\"n\">avg</th><th class=\"n\">p99</th><th class=\"n\">p99.9</th><th class=\"n\">max</th></tr></thead><tbody>\n";
    for (size_t i : shown) {
      const auto& l = r.runs[i].latency;
      const std::string p = "/runs/" + std::to_string(i) + "/latency/";
      h << "<tr><td><span class=\"swatch\" style=\"background:" << styles.at(r.runs[i].job).colour << "\"></span>"
        << esc(run_label(r.runs[i])) << "</td><td class=\"n\">" << dk(p + "samples", "samples", static_cast<double>(l.samples))
        << "</td><td class=\"n\">" << dk(p + "min_us", "min_us", l.min_us) << "</td><td class=\"n\">"
        << dk(p + "median_us", "median_us", l.median_us) << "</td><td class=\"n\">" << dk(p + "avg_us", "avg_us", l.avg_us)
        << "</td><td class=\"n\">" << dk(p + "p99_us", "p99_us", l.p99_us) << "</td><td class=\"n\">"
        << dk(p + "p999_us", "p999_us", l.p999_us) << "</td><td class=\"n\">" << dk(p + "max_us", "max_us", l.max_us)
        << "</td></tr>\n";
    }
    h << "</tbody></table>";
  }
  h << "</section>\n";

  // Summary table.
  h << "<section class=\"card\"><h2>Runs</h2><table><thead><tr><th>run</th><th>transport</th>";
  if (d.sweep) h << "<th class=\"n\">" << esc(d.parameter) << "</th>";
  h << "<th class=\"n\">goodput</th>";
  if (d.sweep) h << "<th class=\"n\">retained</th>";
  h << "<th class=\"n\">retransmits</th><th class=\"n\">spurious</th><th class=\"n\">RTOs</th>"
       "<th class=\"n\">path state changes</th><th>verification</th><th>state</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    h << "<tr><td><span class=\"swatch\" style=\"background:" << styles.at(run.job).colour << "\"></span>"
      << esc(run.job) << "</td><td>" << esc(transport_name(run.transport)) << "</td>";
    if (d.sweep) h << "<td class=\"n\">" << dk(run_ptr(i, "sweep_value"), "sweep_value", run.sweep_value) << "</td>";
    h << "<td class=\"n\">" << dk(run_ptr(i, "goodput_bps"), "goodput_bps", run.goodput_bps) << "</td>";
    if (d.sweep)
      h << "<td class=\"n\">"
        << (d.runs[i].retained ? dk(derived_ptr(i, "retained"), "retained", *d.runs[i].retained) : std::string("-"))
        << "</td>";
    h << "<td class=\"n\">" << dk(run_ptr(i, "retransmits"), "retransmits", static_cast<double>(run.retransmits))
      << "</td><td class=\"n\">"
      << dk(run_ptr(i, "spurious_retransmits"), "spurious_retransmits", static_cast<double>(run.spurious_retransmits))
      << "</td><td class=\"n\">" << dk(run_ptr(i, "rtos"), "rtos", static_cast<double>(run.rtos))
      << "</td><td class=\"n\">"
      << dk(run_ptr(i, "path_state_changes"), "path_state_changes", static_cast<double>(run.path_state_changes))
      << "</td><td>";
    if (run.verification.empty()) {
      h << "<span class=\"warn\">not verified</span>";
    } else {
      const bool ok = run.verification == "passed" && run.verify_failures == 0;
      h << "<span class=\"" << (ok ? "ok" : "bad") << "\">" << esc(run.verification) << "</span>";
      if (run.verify_failures > 0)
        h << " (" << dk(run_ptr(i, "verify_failures"), "verify_failures", static_cast<double>(run.verify_failures))
          << " failures)";
    }
    h << "</td><td>" << state_html(run) << "</td></tr>\n";
  }
  h << "</tbody></table></section>\n";

  // Assertions.
  h << "<section class=\"card\"><h2>Assertions</h2>";
  if (r.assertions.empty()) {
    h << "<p class=\"note\">The scenario has no assertions.</p>";
  } else {
    h << "<table><thead><tr><th>assertion</th><th>result</th><th>detail</th></tr></thead><tbody>\n";
    for (const auto& a : r.assertions)
      h << "<tr><td>" << esc(a.text) << "</td><td><span class=\"" << (a.passed ? "ok\">PASS" : "bad\">FAIL")
        << "</span></td><td>" << esc(a.detail) << "</td></tr>\n";
    h << "</tbody></table>";
  }
  h << "</section>\n";

  h << "<details><summary>Scenario YAML (to replay this run)</summary>\n<pre>" << esc(r.scenario_yaml)
    << "</pre></details>\n";
  h << "<footer>Generated by metaroce-testbed" << (r.version.empty() ? "" : " " + esc(r.version))
    << ". Full data: report.json and timeseries.csv next to this file.</footer>\n";
  h << "</main>\n</body>\n</html>\n";
  return h.str();
}

std::string summary_table(const Report& r) {
  const Derived d = derive(r);
  std::vector<std::string> head = {"run", "transport"};
  if (d.sweep) head.push_back(d.parameter);
  head.push_back("goodput");
  if (d.sweep) head.push_back("retained");
  for (const char* c : {"retransmits", "spurious", "RTOs", "path changes", "verification", "state"}) head.push_back(c);
  // Numbers right-aligned; run, transport, verification and state left-aligned.
  std::vector<bool> right(head.size(), true);
  right[0] = right[1] = right[head.size() - 2] = right[head.size() - 1] = false;
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const auto& run = r.runs[i];
    std::vector<std::string> row = {run.job, transport_name(run.transport)};
    if (d.sweep) row.push_back(sweep_label(run.sweep_parameter, run.sweep_value));
    row.push_back(format_number("goodput_bps", run.goodput_bps));
    if (d.sweep) row.push_back(d.runs[i].retained ? format_number("retained", *d.runs[i].retained) : "-");
    row.push_back(format_number("retransmits", static_cast<double>(run.retransmits)));
    row.push_back(format_number("spurious_retransmits", static_cast<double>(run.spurious_retransmits)));
    row.push_back(format_number("rtos", static_cast<double>(run.rtos)));
    row.push_back(format_number("path_state_changes", static_cast<double>(run.path_state_changes)));
    std::string v = run.verification.empty() ? "not verified" : run.verification;
    if (v.size() > 40) v = v.substr(0, 37) + "...";
    row.push_back(v);
    row.push_back(run.state + (run.error.empty() ? "" : ": " + run.error));
    rows.push_back(std::move(row));
  }
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    w[c] = head[c].size();
    for (const auto& row : rows) w[c] = std::max(w[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string s;
    for (size_t c = 0; c < row.size(); ++c) {
      const bool last = c + 1 == row.size();
      const std::string pad(w[c] - std::min(w[c], row[c].size()), ' ');
      s += right[c] ? pad + row[c] : row[c] + (last ? "" : pad);
      if (!last) s += "  ";
    }
    return s + "\n";
  };
  std::string out = line(head);
  size_t total = 0;
  for (size_t c = 0; c < w.size(); ++c) total += w[c] + (c + 1 < w.size() ? 2 : 0);
  out += std::string(total, '-') + "\n";
  for (const auto& row : rows) out += line(row);
  if (r.assertions.empty()) {
    out += "\nno assertions\n";
  } else {
    out += "\nassertions: " + std::to_string(r.assertions.size() - d.failed) + " of " +
           std::to_string(r.assertions.size()) + " passed\n";
    for (const auto& a : r.assertions)
      out += std::string(a.passed ? "  PASS  " : "  FAIL  ") + a.text + (a.detail.empty() ? "" : "  (" + a.detail + ")") +
             "\n";
  }
  return out;
}

bool write_report(const Report& r, const std::string& dir, std::string* error) {
  auto fail = [error](const std::string& msg) {
    if (error != nullptr) *error = msg;
    return false;
  };
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("cannot create report directory " + dir + ": " + ec.message());
  if (!std::filesystem::is_directory(dir, ec)) return fail("cannot create report directory " + dir + ": not a directory");
  const std::pair<const char*, std::string> files[] = {
      {"report.json", report_json(r)}, {"timeseries.csv", timeseries_csv(r)}, {"report.html", report_html(r)}};
  for (const auto& [name, text] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    errno = 0;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) return fail("cannot write " + path + ": " + std::strerror(errno ? errno : EIO));
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    f.close();
    if (!f) return fail("cannot write " + path + ": " + std::strerror(errno ? errno : EIO));
  }
  return true;
}

}  // namespace metaroce::scenario
