#include "units.h"

#include "metaroce/units/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

namespace metarocectl {
namespace {

// The daemon's error convention is "<field>: <problem> (allowed: ..., got
// ...)"; the CLI's own errors follow it so both read the same.
[[noreturn]] void fail(std::string_view flag, std::string_view problem,
                       std::string_view allowed, std::string_view text) {
  throw UsageError(fmt::format("{}: {} (allowed: {}; got \"{}\")", flag,
                               problem, allowed, text));
}

// The value of a parse by the shared units library, or a UsageError naming the flag.
template <class T>
T take(std::string_view flag, std::string_view raw, metaroce::units::Parsed<T> parsed) {
  if (!parsed.ok()) fail(flag, parsed.problem, parsed.allowed, raw);
  return parsed.value;
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

}  // namespace

std::int64_t parse_duration_ns(std::string_view flag, std::string_view raw) {
  return take(flag, raw, metaroce::units::parse_duration_ns(raw));
}

double parse_rate_bps(std::string_view flag, std::string_view raw) {
  return take(flag, raw, metaroce::units::parse_rate_bps(raw));
}

std::uint64_t parse_size_bytes(std::string_view flag, std::string_view raw) {
  return take(flag, raw, metaroce::units::parse_size_bytes(raw));
}

double parse_probability(std::string_view flag, std::string_view raw) {
  return take(flag, raw, metaroce::units::parse_probability(raw));
}

double parse_correlation(std::string_view flag, std::string_view raw) {
  return take(flag, raw, metaroce::units::parse_correlation(raw));
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

// ---- formatting: the shared units library's, with the CLI's precision --------

std::string format_duration_ns(std::int64_t ns) { return metaroce::units::format_duration_ns(ns, 2); }

std::string format_rate_short(double bps) { return metaroce::units::format_rate(bps, 3); }

std::string format_gbps(double bps) { return metaroce::units::format_gbps(bps, 2); }

std::string format_size(std::uint64_t bytes) { return metaroce::units::format_size(bytes); }

std::string format_percent(double probability) { return metaroce::units::format_percent(probability); }

}  // namespace metarocectl
