// The human units every input of the testbed accepts, parsed in one place:
// durations ("10us", "5ms", "2s", "1m"), rates in bits/s ("25G", "100Mbit",
// "10Mbps"), sizes in bytes ("64K", "1MiB", "4096") and probabilities ("1%",
// "0.01"). metarocectl flags, scenario files and daemon configs all read their
// values through these functions; each caller adds the name of its flag or key
// and its own range (the range's authority is the layer that uses the value).
//
// A parser returns the value, or a problem ("unknown duration unit \"x\"") and
// what the unit allows; it never throws, so each caller reports in its own
// convention.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace metaroce::units {

template <class T>
struct Parsed {
  T value{};
  std::string problem;       // empty when the text was a value
  std::string_view allowed;  // what the unit accepts, for the error message
  bool ok() const { return problem.empty(); }
};

// What a number without a unit means as a duration: only "0" is accepted
// (flags and scenario files), or it counts nanoseconds (daemon configs, whose
// keys end in _ns).
enum class BareDuration { kZeroOnly, kNanoseconds };

// A finite, non-negative decimal number without a unit ("0.5", "1e-3").
Parsed<double> parse_number(std::string_view text);

// A non-negative number and a unit ns, us (or µs), ms, s, m (or min) or h, in
// any case; at most 10^18 ns. Rounds to the nearest nanosecond.
Parsed<std::int64_t> parse_duration_ns(std::string_view text, BareDuration bare = BareDuration::kZeroOnly);

// A number > 0 with an optional decimal prefix K, M, G or T (either case) and
// an optional bit, bits, bps, b/s, bit/s or b. Bytes ("B", "Bps") are refused:
// tc reads them as bytes, most people as bits.
Parsed<double> parse_rate_bps(std::string_view text);

// A whole number of bytes with an optional binary prefix K, M, G or T
// (x1024; also KB/KiB, either case); at most 2^53.
Parsed<std::uint64_t> parse_size_bytes(std::string_view text);

// "0.01" or "1%", within [0, 1].
Parsed<double> parse_probability(std::string_view text);

// A correlation coefficient (netem style): "0.25" or "25%", within [0, 1).
Parsed<double> parse_correlation(std::string_view text);

// ---- formatting: every output re-parses to the value it shows (to its precision)

// For tables: "850ns", "12.5us", "5ms", "2.25s", "15m": at most `decimals` decimals.
std::string format_duration_ns(std::int64_t ns, int decimals = 2);
// As a scenario file writes it (labels, ranges, assertion texts): "0", "1h",
// "2min", "1.5s", "250ms", "12.5us", "850ns": whole hours and minutes as
// such, otherwise to the microsecond (to the nanosecond below 1 ms).
std::string format_duration_as_written(std::int64_t ns);
// "0", "25G", "2.5G", "100M", "1200bps": at most `decimals` decimals.
std::string format_rate(double bps, int decimals = 3);
// For columns of goodput: "12.345 Gb/s", always `decimals` decimals.
std::string format_gbps(double bps, int decimals);
// "4096", "64K", "1M", "1G" when the size is an exact multiple.
std::string format_size(std::uint64_t bytes);
// For tables: "0", "0.52%", "1%": 3 significant digits.
std::string format_percent(double probability);
// "0", "0.1234%", "12.5%": at most `decimals` decimals of the percentage.
std::string format_percent(double probability, int decimals);
// 12.50 -> "12.5", 5.00 -> "5".
std::string trimmed_fixed(double value, int decimals);

}  // namespace metaroce::units
