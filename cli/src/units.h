// Parsing and formatting of the human units metarocectl accepts and prints:
// durations ("10us", "5ms", "2s", "1m"), rates ("25G", "100Gbit", "10Mbps"),
// sizes ("64K", "1M", "4096") and probabilities ("1%", "0.01").
//
// Every parser takes the name of the flag (or YAML key) the text came from,
// so that its error says which flag, what was given and what is allowed.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace metarocectl {

// A bad flag value or a bad combination of flags: the CLI exits with 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Durations: a non-negative number with a unit ns, us, ms, s, m or h
// ("1.5ms" is fine); a bare "0" is accepted. Returns nanoseconds.
std::int64_t parse_duration_ns(std::string_view flag, std::string_view text);

// Rates in bits per second, decimal prefixes: "25G", "100Gbit", "10Mbps",
// "2.5Gb/s", "1e9". Must be > 0.
double parse_rate_bps(std::string_view flag, std::string_view text);

// Sizes in bytes, binary prefixes: "4096", "64K", "64KiB", "1M", "1G".
std::uint64_t parse_size_bytes(std::string_view flag, std::string_view text);

// Probabilities: "0.01" or "1%"; must be within [0, 1].
double parse_probability(std::string_view flag, std::string_view text);

// A correlation coefficient (netem style): "0.25" or "25%", within [0, 1).
double parse_correlation(std::string_view flag, std::string_view text);

// A plain non-negative integer within [min, max].
std::uint64_t parse_unsigned(std::string_view flag, std::string_view text,
                             std::uint64_t min = 0,
                             std::uint64_t max = UINT64_MAX);

// "true"/"false" (also yes/no, on/off, 1/0).
bool parse_bool(std::string_view flag, std::string_view text);

// A comma-separated list of sizes: "64,4K,64K". Each must fit 32 bits.
std::vector<std::uint32_t> parse_size_list(std::string_view flag,
                                           std::string_view text);

// "MIN:MAX": MIN, 2*MIN, 4*MIN, ... up to MAX (perftest's -a with bounds).
std::vector<std::uint32_t> parse_size_sweep(std::string_view flag,
                                            std::string_view text);

// Splits "a,b,c" into trimmed, non-empty items.
std::vector<std::string> split_list(std::string_view text, char separator = ',');

// ---- formatting -----------------------------------------------------------

// "850ns", "12.5us", "5ms", "2.25s" (inputs round-trip through the parser).
std::string format_duration_ns(std::int64_t ns);

// Compact link rates: "25G", "2.5G", "100M", "1200bps" style ("25G").
std::string format_rate_short(double bps);

// Goodput as Gb/s with 2 decimals: "12.34 Gb/s".
std::string format_gbps(double bps);

// "4096", "64K", "1M", "1G" when the size is an exact multiple.
std::string format_size(std::uint64_t bytes);

// Probabilities as percentages, 3 significant digits: "0", "0.52%", "1%".
std::string format_percent(double probability);

}  // namespace metarocectl
