// The shared units library: the one parser behind metarocectl's flags,
// scenario files and daemon configs.
#include "metaroce/units/units.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace metaroce::units {
namespace {

TEST(UnitsDuration, EveryUnitAndSpelling) {
  EXPECT_EQ(parse_duration_ns("850ns").value, 850);
  EXPECT_EQ(parse_duration_ns("10us").value, 10'000);
  EXPECT_EQ(parse_duration_ns("10\xc2\xb5s").value, 10'000);
  EXPECT_EQ(parse_duration_ns("1.5ms").value, 1'500'000);
  EXPECT_EQ(parse_duration_ns(" 2 S ").value, 2'000'000'000);
  EXPECT_EQ(parse_duration_ns("1min").value, 60'000'000'000);
  EXPECT_EQ(parse_duration_ns("1h").value, 3'600'000'000'000);
  EXPECT_EQ(parse_duration_ns("0").value, 0);
}

TEST(UnitsDuration, BareNumbersAreNanosecondsOnlyWhereAsked) {
  const auto flag = parse_duration_ns("5000");
  EXPECT_FALSE(flag.ok());
  EXPECT_EQ(flag.problem, "a duration needs a unit");
  EXPECT_EQ(parse_duration_ns("5000", BareDuration::kNanoseconds).value, 5000);
  EXPECT_FALSE(parse_duration_ns("2.5", BareDuration::kNanoseconds).ok());
  EXPECT_NE(parse_duration_ns("5000", BareDuration::kNanoseconds).allowed.find("nanoseconds"), std::string::npos);
}

TEST(UnitsDuration, RefusalsSayWhy) {
  EXPECT_EQ(parse_duration_ns("250xs").problem, "unknown duration unit \"xs\"");
  EXPECT_EQ(parse_duration_ns("-1ms").problem, "not a duration");
  EXPECT_EQ(parse_duration_ns("infms").problem, "not a duration");
  EXPECT_EQ(parse_duration_ns("").problem, "not a duration");
  EXPECT_EQ(parse_duration_ns("1e30s").problem, "duration too long");
  EXPECT_FALSE(parse_duration_ns("10us").allowed.empty());
}

TEST(UnitsRate, DecimalPrefixesAndBitSpellings) {
  EXPECT_EQ(parse_rate_bps("25G").value, 25e9);
  EXPECT_EQ(parse_rate_bps("100Gbit").value, 100e9);
  EXPECT_EQ(parse_rate_bps("10Mbps").value, 10e6);
  EXPECT_EQ(parse_rate_bps("2.5Gb/s").value, 2.5e9);
  EXPECT_EQ(parse_rate_bps("250m").value, 250e6);
  EXPECT_EQ(parse_rate_bps("1e9").value, 1e9);
  EXPECT_EQ(parse_rate_bps("1T").value, 1e12);
  EXPECT_EQ(parse_rate_bps("10GB").problem, "unknown rate unit \"GB\"");  // bytes are ambiguous
  EXPECT_EQ(parse_rate_bps("0").problem, "a rate must be > 0");
  EXPECT_EQ(parse_rate_bps("fast").problem, "not a rate");
}

TEST(UnitsSize, BinaryPrefixes) {
  EXPECT_EQ(parse_size_bytes("4096").value, 4096u);
  EXPECT_EQ(parse_size_bytes("64K").value, 64u << 10);
  EXPECT_EQ(parse_size_bytes("64KiB").value, 64u << 10);
  EXPECT_EQ(parse_size_bytes("2mb").value, 2u << 20);
  EXPECT_EQ(parse_size_bytes("1G").value, 1ull << 30);
  EXPECT_EQ(parse_size_bytes("1.5K").value, 1536u);
  EXPECT_EQ(parse_size_bytes("1.5").problem, "not a whole number of bytes");
  EXPECT_EQ(parse_size_bytes("16X").problem, "unknown size unit \"X\"");
  EXPECT_EQ(parse_size_bytes("9000T").problem, "size too large");
}

TEST(UnitsProbability, FractionsPercentagesAndTheirRanges) {
  EXPECT_DOUBLE_EQ(parse_probability("0.01").value, 0.01);
  EXPECT_DOUBLE_EQ(parse_probability("1%").value, 0.01);
  EXPECT_DOUBLE_EQ(parse_probability("100%").value, 1.0);
  EXPECT_EQ(parse_probability("150%").problem, "probability out of range");
  EXPECT_EQ(parse_probability("2x").problem, "not a probability");
  EXPECT_DOUBLE_EQ(parse_correlation("25%").value, 0.25);
  EXPECT_EQ(parse_correlation("1").problem, "correlation out of range");  // [0, 1)
  EXPECT_DOUBLE_EQ(parse_number("0.5").value, 0.5);
  EXPECT_EQ(parse_number("2x").problem, "a plain number takes no unit");
}

TEST(UnitsFormat, EveryOutputParsesBackToItsValue) {
  for (int64_t ns : {0LL, 850LL, 12'500LL, 5'000'000LL, 2'250'000'000LL, 900'000'000'000LL})
    EXPECT_EQ(parse_duration_ns(format_duration_ns(ns)).value, ns) << format_duration_ns(ns);
  for (double bps : {1200.0, 100e6, 2.5e9, 25e9, 1e12}) EXPECT_EQ(parse_rate_bps(format_rate(bps)).value, bps);
  for (uint64_t b : {0ull, 1ull, 4096ull, 65536ull, 1ull << 20, 3ull << 30, 1500ull})
    EXPECT_EQ(parse_size_bytes(format_size(b)).value, b) << format_size(b);
  EXPECT_EQ(format_percent(0), "0");
  EXPECT_EQ(format_percent(0.0052), "0.52%");
  EXPECT_DOUBLE_EQ(parse_probability(format_percent(0.0052)).value, 0.0052);
  EXPECT_EQ(trimmed_fixed(12.50, 2), "12.5");
  EXPECT_EQ(trimmed_fixed(-0.0001, 2), "0");
}

// The forms scenario files, labels and assertion texts show (they were
// scenario.cc's own formatters): whole hours and minutes, then to the
// microsecond, the nanosecond below 1 ms; percentages to 4 decimals.
TEST(UnitsFormat, AsWrittenInScenarioFiles) {
  EXPECT_EQ(format_duration_as_written(0), "0");
  EXPECT_EQ(format_duration_as_written(850), "850ns");
  EXPECT_EQ(format_duration_as_written(12'500), "12.5us");
  EXPECT_EQ(format_duration_as_written(1'500'000), "1.5ms");
  EXPECT_EQ(format_duration_as_written(2'000'500'000), "2.0005s");
  EXPECT_EQ(format_duration_as_written(90'000'000'000), "90s");
  EXPECT_EQ(format_duration_as_written(120'000'000'000), "2min");
  EXPECT_EQ(format_duration_as_written(7'200'000'000'000), "2h");
  for (int64_t ns : {1LL, 850LL, 12'345LL, 1'500'000LL, 2'000'500'000LL, 90'000'000'000LL, 7'200'000'000'000LL})
    EXPECT_EQ(parse_duration_ns(format_duration_as_written(ns)).value, ns) << format_duration_as_written(ns);
  EXPECT_EQ(format_percent(0, 4), "0");
  EXPECT_EQ(format_percent(0.1, 4), "10%");
  EXPECT_EQ(format_percent(0.12345, 4), "12.345%");
  EXPECT_EQ(format_percent(0.000001, 4), "0.0001%");
  EXPECT_EQ(format_rate(0), "0");
  EXPECT_EQ(format_rate(1.6e12), "1.6T");
  EXPECT_EQ(format_gbps(12.3456e9, 3), "12.346 Gb/s");
}

}  // namespace
}  // namespace metaroce::units
