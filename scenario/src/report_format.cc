// Text helpers shared by every report output (printf into a string, HTML
// escaping, number and sweep labels), format_number() (report.h) and the
// data-key spans that tie a number on the page to its place in report.json.

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <string_view>

#include "metaroce/scenario/report.h"
#include "report_internal.h"

namespace metaroce::scenario {
namespace report_internal {

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

// %g without exponent noise for labels ("0.1", "2.5", "16").
std::string trim_num(double v, int max_decimals) {
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

std::string dk(const std::string& pointer, const std::string& key, double v, const std::string& tag,
               const std::string& cls) {
  return "<" + tag + (cls.empty() ? "" : " class=\"" + cls + "\"") + " data-key=\"" + esc(pointer) + "\">" +
         esc(format_number(key, v)) + "</" + tag + ">";
}

std::string run_ptr(size_t i, const std::string& key) { return "/runs/" + std::to_string(i) + "/" + key; }
std::string derived_ptr(size_t i, const std::string& key) { return "/derived/runs/" + std::to_string(i) + "/" + key; }

}  // namespace report_internal

// ------------------------------------------------------------------ public

using namespace report_internal;

std::string format_number(const std::string& key, double value) {
  if (!std::isfinite(value)) return "n/a";
  if (value == 0) value = 0;  // no "-0"
  if (ends_with(key, "_bps")) return strf("%.2f Gb/s", value / 1e9 == 0 ? 0.0 : value / 1e9);
  if (key == "host_mean" || key == "host_max" || key == "leaf_spine_mean" || key == "leaf_spine_max")
    return strf("%.1f%%", value * 100);  // a clos tier's link utilisation
  if (key == "oversubscription") return trim_num(value, 3) + ":1";
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

}  // namespace metaroce::scenario
