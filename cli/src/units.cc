#include "units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

namespace metarocectl {
namespace {

constexpr std::string_view kDurationAllowed =
    "a number with a unit ns, us, ms, s, m or h, e.g. 10us, 5ms, 2s, 1m";
constexpr std::string_view kRateAllowed =
    "a number > 0 in bits/s with an optional K, M, G or T and an optional "
    "bit, bps or b/s, e.g. 25G, 100Gbit, 10Mbps";
constexpr std::string_view kSizeAllowed =
    "a whole number of bytes with an optional K, M or G (x1024), e.g. 4096, "
    "64K, 1M";
constexpr std::string_view kProbabilityAllowed =
    "a probability in [0, 1] such as 0.01, or a percentage such as 1%";

// The daemon's error convention is "<field>: <problem> (allowed: ..., got
// ...)"; the CLI's own errors follow it so both read the same.
[[noreturn]] void fail(std::string_view flag, std::string_view problem,
                       std::string_view allowed, std::string_view text) {
  throw UsageError(fmt::format("{}: {} (allowed: {}; got \"{}\")", flag,
                               problem, allowed, text));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// A finite, non-negative number followed by a (possibly empty) unit.
struct NumberWithUnit {
  double value = 0;
  std::string_view unit;
};

std::optional<NumberWithUnit> split_number(std::string_view text) {
  if (text.empty() || text.front() == '-' || text.front() == '+') return {};
  NumberWithUnit out;
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), out.value);
  if (ec != std::errc() || !std::isfinite(out.value) || out.value < 0) return {};
  out.unit = trim(text.substr(static_cast<std::size_t>(ptr - text.data())));
  return out;
}

std::string_view strip_percent(std::string_view text, bool& percent) {
  percent = !text.empty() && text.back() == '%';
  if (percent) text.remove_suffix(1);
  return trim(text);
}

// Whole numbers of up to 2^53 survive the trip through double exactly.
constexpr double kMaxExactInteger = 9007199254740992.0;

}  // namespace

std::int64_t parse_duration_ns(std::string_view flag, std::string_view raw) {
  const std::string_view text = trim(raw);
  auto number = split_number(text);
  if (!number) fail(flag, "not a duration", kDurationAllowed, raw);
  const std::string unit = lower(number->unit);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us" || unit == "\xc2\xb5s") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m" || unit == "min") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else if (unit.empty() && number->value == 0) return 0;
  else if (unit.empty()) fail(flag, "a duration needs a unit", kDurationAllowed, raw);
  else fail(flag, fmt::format("unknown duration unit \"{}\"", number->unit),
            kDurationAllowed, raw);
  const double ns = number->value * scale;
  if (ns > 1e18) fail(flag, "duration too long", kDurationAllowed, raw);
  return static_cast<std::int64_t>(std::llround(ns));
}

double parse_rate_bps(std::string_view flag, std::string_view raw) {
  const std::string_view text = trim(raw);
  auto number = split_number(text);
  if (!number) fail(flag, "not a rate", kRateAllowed, raw);
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
  // Bits only: "B"/"Bps" would be ambiguous between tc's bytes and the
  // common bits reading, so only lower-case b spellings are accepted.
  static constexpr std::string_view kBitSuffixes[] = {"", "bit", "bits", "bps",
                                                      "b/s", "bit/s", "b"};
  if (std::find(std::begin(kBitSuffixes), std::end(kBitSuffixes), unit) ==
      std::end(kBitSuffixes)) {
    fail(flag, fmt::format("unknown rate unit \"{}\"", number->unit),
         kRateAllowed, raw);
  }
  const double bps = number->value * scale;
  if (bps <= 0) fail(flag, "a rate must be > 0", kRateAllowed, raw);
  return bps;
}

std::uint64_t parse_size_bytes(std::string_view flag, std::string_view raw) {
  const std::string_view text = trim(raw);
  auto number = split_number(text);
  if (!number) fail(flag, "not a size", kSizeAllowed, raw);
  const std::string unit = lower(number->unit);
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else fail(flag, fmt::format("unknown size unit \"{}\"", number->unit),
            kSizeAllowed, raw);
  const double bytes = number->value * scale;
  if (bytes > kMaxExactInteger) fail(flag, "size too large", kSizeAllowed, raw);
  if (bytes != std::floor(bytes))
    fail(flag, "not a whole number of bytes", kSizeAllowed, raw);
  return static_cast<std::uint64_t>(bytes);
}

double parse_probability(std::string_view flag, std::string_view raw) {
  bool percent = false;
  const std::string_view text = strip_percent(trim(raw), percent);
  auto number = split_number(text);
  if (!number || !number->unit.empty())
    fail(flag, "not a probability", kProbabilityAllowed, raw);
  const double p = percent ? number->value / 100.0 : number->value;
  if (p > 1.0) fail(flag, "probability out of range", kProbabilityAllowed, raw);
  return p;
}

double parse_correlation(std::string_view flag, std::string_view raw) {
  static constexpr std::string_view kAllowed =
      "a correlation in [0, 1) such as 0.25, or a percentage such as 25%";
  bool percent = false;
  const std::string_view text = strip_percent(trim(raw), percent);
  auto number = split_number(text);
  if (!number || !number->unit.empty()) fail(flag, "not a correlation", kAllowed, raw);
  const double c = percent ? number->value / 100.0 : number->value;
  if (c >= 1.0) fail(flag, "correlation out of range", kAllowed, raw);
  return c;
}

std::uint64_t parse_unsigned(std::string_view flag, std::string_view raw,
                             std::uint64_t min, std::uint64_t max) {
  const std::string_view text = trim(raw);
  const std::string allowed =
      max == UINT64_MAX ? fmt::format("a whole number >= {}", min)
                        : fmt::format("a whole number in [{}, {}]", min, max);
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    fail(flag, "not a whole number", allowed, raw);
  if (value < min || value > max) fail(flag, "out of range", allowed, raw);
  return value;
}

bool parse_bool(std::string_view flag, std::string_view raw) {
  const std::string text = lower(trim(raw));
  if (text == "true" || text == "yes" || text == "on" || text == "1") return true;
  if (text == "false" || text == "no" || text == "off" || text == "0") return false;
  fail(flag, "not a boolean", "true or false", raw);
}

std::vector<std::string> split_list(std::string_view text, char separator) {
  std::vector<std::string> items;
  while (true) {
    const std::size_t cut = text.find(separator);
    const std::string_view item = trim(text.substr(0, cut));
    if (!item.empty()) items.emplace_back(item);
    if (cut == std::string_view::npos) break;
    text.remove_prefix(cut + 1);
  }
  return items;
}

std::vector<std::uint32_t> parse_size_list(std::string_view flag,
                                           std::string_view text) {
  std::vector<std::uint32_t> sizes;
  for (const std::string& item : split_list(text)) {
    const std::uint64_t bytes = parse_size_bytes(flag, item);
    if (bytes == 0 || bytes > UINT32_MAX)
      fail(flag, fmt::format("message size {} out of range", item),
           "sizes in [1, 4G) separated by commas, e.g. 64,4K,64K", text);
    sizes.push_back(static_cast<std::uint32_t>(bytes));
  }
  if (sizes.empty())
    fail(flag, "no sizes given", "sizes separated by commas, e.g. 64,4K,64K", text);
  return sizes;
}

std::vector<std::uint32_t> parse_size_sweep(std::string_view flag,
                                            std::string_view text) {
  static constexpr std::string_view kAllowed =
      "MIN:MAX with 1 <= MIN <= MAX < 4G, e.g. 2:8M (powers of two from MIN)";
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) fail(flag, "not a sweep", kAllowed, text);
  const std::uint64_t min = parse_size_bytes(flag, text.substr(0, colon));
  const std::uint64_t max = parse_size_bytes(flag, text.substr(colon + 1));
  if (min == 0 || min > max || max > UINT32_MAX)
    fail(flag, "bad sweep bounds", kAllowed, text);
  std::vector<std::uint32_t> sizes;
  for (std::uint64_t size = min; size <= max; size *= 2)
    sizes.push_back(static_cast<std::uint32_t>(size));
  return sizes;
}

// ---- formatting -----------------------------------------------------------

namespace {
// "12.50" -> "12.5", "5.00" -> "5": keeps output short and re-parseable.
std::string trimmed_fixed(double value, int decimals) {
  std::string s = fmt::format("{:.{}f}", value, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}
}  // namespace

std::string format_duration_ns(std::int64_t ns) {
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  if (a < 1e3) return fmt::format("{}ns", ns);
  if (a < 1e6) return trimmed_fixed(v / 1e3, 2) + "us";
  if (a < 1e9) return trimmed_fixed(v / 1e6, 2) + "ms";
  if (a < 600e9) return trimmed_fixed(v / 1e9, 2) + "s";
  return trimmed_fixed(v / 60e9, 2) + "m";
}

std::string format_rate_short(double bps) {
  if (bps >= 1e12) return trimmed_fixed(bps / 1e12, 3) + "T";
  if (bps >= 1e9) return trimmed_fixed(bps / 1e9, 3) + "G";
  if (bps >= 1e6) return trimmed_fixed(bps / 1e6, 3) + "M";
  if (bps >= 1e3) return trimmed_fixed(bps / 1e3, 3) + "K";
  return trimmed_fixed(bps, 3) + "bps";
}

std::string format_gbps(double bps) { return fmt::format("{:.2f} Gb/s", bps / 1e9); }

std::string format_size(std::uint64_t bytes) {
  constexpr std::uint64_t kK = 1024, kM = kK * 1024, kG = kM * 1024;
  if (bytes == 0) return "0";
  if (bytes % kG == 0) return fmt::format("{}G", bytes / kG);
  if (bytes % kM == 0) return fmt::format("{}M", bytes / kM);
  if (bytes % kK == 0) return fmt::format("{}K", bytes / kK);
  return fmt::format("{}", bytes);
}

std::string format_percent(double probability) {
  if (probability == 0) return "0";
  return fmt::format("{:.3g}%", probability * 100.0);
}

}  // namespace metarocectl
