#include "metaroce/units/units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

namespace metaroce::units {
namespace {

constexpr std::string_view kDurationAllowed = "a number with a unit ns, us, ms, s, m or h, e.g. 10us, 5ms, 2s, 1m";
constexpr std::string_view kDurationOrNsAllowed =
    "nanoseconds, or a number with a unit ns, us, ms, s, m or h, e.g. 5000, 10us, 2ms";
constexpr std::string_view kRateAllowed =
    "a number > 0 in bits/s with an optional K, M, G or T and an optional bit, bps or b/s, e.g. 25G, 100Gbit, 10Mbps";
constexpr std::string_view kSizeAllowed = "a whole number of bytes with an optional K, M or G (x1024), e.g. 4096, 64K, 1M";
constexpr std::string_view kProbabilityAllowed = "a probability in [0, 1] such as 0.01, or a percentage such as 1%";
constexpr std::string_view kNumberAllowed = "a plain non-negative number such as 2, 0.5 or 1e-3";
constexpr std::string_view kCorrelationAllowed = "a correlation in [0, 1) such as 0.25, or a percentage such as 25%";

// Whole numbers of up to 2^53 survive the trip through double exactly.
constexpr double kMaxExactInteger = 9007199254740992.0;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// A finite, non-negative decimal number followed by a (possibly empty) unit.
struct NumberWithUnit {
  double value = 0;
  std::string_view unit;
};

std::optional<NumberWithUnit> split_number(std::string_view text) {
  text = trim(text);
  if (text.empty() || text.front() == '-' || text.front() == '+') return {};
  NumberWithUnit out;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out.value);
  if (ec != std::errc() || !std::isfinite(out.value) || out.value < 0) return {};
  // from_chars reads "inf" and "nan" as numbers; the checks above refuse them.
  out.unit = trim(text.substr(static_cast<std::size_t>(ptr - text.data())));
  return out;
}

template <class T>
Parsed<T> fail(std::string problem, std::string_view allowed) {
  Parsed<T> p;
  p.problem = std::move(problem);
  p.allowed = allowed;
  return p;
}

template <class T>
Parsed<T> value(T v, std::string_view allowed) {
  Parsed<T> p;
  p.value = v;
  p.allowed = allowed;
  return p;
}

Parsed<double> fraction(std::string_view raw, std::string_view what, std::string_view allowed, bool open_top) {
  std::string_view text = trim(raw);
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.remove_suffix(1);
  auto number = split_number(text);
  if (!number || !number->unit.empty()) return fail<double>("not a " + std::string(what), allowed);
  const double p = percent ? number->value / 100.0 : number->value;
  if (p > 1.0 || (open_top && p >= 1.0)) return fail<double>(std::string(what) + " out of range", allowed);
  return value(p, allowed);
}

}  // namespace

Parsed<double> parse_number(std::string_view raw) {
  auto number = split_number(raw);
  if (!number) return fail<double>("not a number", kNumberAllowed);
  if (!number->unit.empty()) return fail<double>("a plain number takes no unit", kNumberAllowed);
  return value(number->value, kNumberAllowed);
}

Parsed<std::int64_t> parse_duration_ns(std::string_view raw, BareDuration bare) {
  const std::string_view allowed = bare == BareDuration::kNanoseconds ? kDurationOrNsAllowed : kDurationAllowed;
  auto number = split_number(raw);
  if (!number) return fail<std::int64_t>("not a duration", allowed);
  const std::string unit = lower(number->unit);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us" || unit == "\xc2\xb5s") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m" || unit == "min") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else if (unit.empty() && (number->value == 0 || bare == BareDuration::kNanoseconds)) scale = 1;
  else if (unit.empty()) return fail<std::int64_t>("a duration needs a unit", allowed);
  else return fail<std::int64_t>("unknown duration unit \"" + std::string(number->unit) + "\"", allowed);
  const double ns = number->value * scale;
  if (ns > 1e18) return fail<std::int64_t>("duration too long", allowed);
  if (unit.empty() && ns != std::floor(ns)) return fail<std::int64_t>("not a whole number of nanoseconds", allowed);
  return value(static_cast<std::int64_t>(std::llround(ns)), allowed);
}

Parsed<double> parse_rate_bps(std::string_view raw) {
  auto number = split_number(raw);
  if (!number) return fail<double>("not a rate", kRateAllowed);
  std::string_view unit = number->unit;
  double scale = 1;
  if (!unit.empty()) {
    switch (unit.front()) {
      case 'k': case 'K': scale = 1e3; unit.remove_prefix(1); break;
      case 'm': case 'M': scale = 1e6; unit.remove_prefix(1); break;
      case 'g': case 'G': scale = 1e9; unit.remove_prefix(1); break;
      case 't': case 'T': scale = 1e12; unit.remove_prefix(1); break;
      default: break;
    }
  }
  static constexpr std::string_view kBitSuffixes[] = {"", "bit", "bits", "bps", "b/s", "bit/s", "b"};
  if (std::find(std::begin(kBitSuffixes), std::end(kBitSuffixes), unit) == std::end(kBitSuffixes))
    return fail<double>("unknown rate unit \"" + std::string(number->unit) + "\"", kRateAllowed);
  const double bps = number->value * scale;
  if (bps <= 0) return fail<double>("a rate must be > 0", kRateAllowed);
  return value(bps, kRateAllowed);
}

Parsed<std::uint64_t> parse_size_bytes(std::string_view raw) {
  auto number = split_number(raw);
  if (!number) return fail<std::uint64_t>("not a size", kSizeAllowed);
  const std::string unit = lower(number->unit);
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else return fail<std::uint64_t>("unknown size unit \"" + std::string(number->unit) + "\"", kSizeAllowed);
  const double bytes = number->value * scale;
  if (bytes > kMaxExactInteger) return fail<std::uint64_t>("size too large", kSizeAllowed);
  if (bytes != std::floor(bytes)) return fail<std::uint64_t>("not a whole number of bytes", kSizeAllowed);
  return value(static_cast<std::uint64_t>(bytes), kSizeAllowed);
}

Parsed<double> parse_probability(std::string_view text) {
  return fraction(text, "probability", kProbabilityAllowed, false);
}

Parsed<double> parse_correlation(std::string_view text) {
  return fraction(text, "correlation", kCorrelationAllowed, true);
}

std::string trimmed_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::clamp(decimals, 0, 12), v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string format_duration_ns(std::int64_t ns, int decimals) {
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  if (a < 1e3) return std::to_string(ns) + "ns";
  if (a < 1e6) return trimmed_fixed(v / 1e3, decimals) + "us";
  if (a < 1e9) return trimmed_fixed(v / 1e6, decimals) + "ms";
  if (a < 600e9) return trimmed_fixed(v / 1e9, decimals) + "s";
  return trimmed_fixed(v / 60e9, decimals) + "m";
}

std::string format_duration_as_written(std::int64_t ns) {
  if (ns == 0) return "0";
  constexpr std::int64_t kMinuteNs = 60'000'000'000, kHourNs = 60 * kMinuteNs;
  if (ns % kHourNs == 0) return std::to_string(ns / kHourNs) + "h";
  if (ns % kMinuteNs == 0) return std::to_string(ns / kMinuteNs) + "min";
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  if (a >= 1e9) return trimmed_fixed(v / 1e9, 6) + "s";
  if (a >= 1e6) return trimmed_fixed(v / 1e6, 3) + "ms";
  if (a >= 1e3) return trimmed_fixed(v / 1e3, 3) + "us";
  return trimmed_fixed(v, 0) + "ns";
}

std::string format_rate(double bps, int decimals) {
  if (bps == 0) return "0";
  if (bps >= 1e12) return trimmed_fixed(bps / 1e12, decimals) + "T";
  if (bps >= 1e9) return trimmed_fixed(bps / 1e9, decimals) + "G";
  if (bps >= 1e6) return trimmed_fixed(bps / 1e6, decimals) + "M";
  if (bps >= 1e3) return trimmed_fixed(bps / 1e3, decimals) + "K";
  return trimmed_fixed(bps, decimals) + "bps";
}

std::string format_gbps(double bps, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f Gb/s", std::clamp(decimals, 0, 12), bps / 1e9);
  return buf;
}

std::string format_size(std::uint64_t bytes) {
  constexpr std::uint64_t kK = 1024, kM = kK * 1024, kG = kM * 1024;
  if (bytes == 0) return "0";
  if (bytes % kG == 0) return std::to_string(bytes / kG) + "G";
  if (bytes % kM == 0) return std::to_string(bytes / kM) + "M";
  if (bytes % kK == 0) return std::to_string(bytes / kK) + "K";
  return std::to_string(bytes);
}

std::string format_percent(double probability) {
  if (probability == 0) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g%%", probability * 100.0);
  return buf;
}

std::string format_percent(double probability, int decimals) {
  if (probability == 0) return "0";
  return trimmed_fixed(probability * 100.0, decimals) + "%";
}

}  // namespace metaroce::units
