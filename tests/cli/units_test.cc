// Parsing and formatting of metarocectl's human units.
#include "units.h"

#include <gtest/gtest.h>

#include <string>

namespace metarocectl {
namespace {

// Runs `parse` expecting a UsageError; returns its message.
template <typename Parse>
std::string usage_error_of(Parse&& parse) {
  try {
    parse();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

TEST(Durations, ParsesEveryUnit) {
  EXPECT_EQ(parse_duration_ns("--d", "250ns"), 250);
  EXPECT_EQ(parse_duration_ns("--d", "10us"), 10'000);
  EXPECT_EQ(parse_duration_ns("--d", "5ms"), 5'000'000);
  EXPECT_EQ(parse_duration_ns("--d", "2s"), 2'000'000'000);
  EXPECT_EQ(parse_duration_ns("--d", "1m"), 60'000'000'000);
  EXPECT_EQ(parse_duration_ns("--d", "1h"), 3'600'000'000'000);
  EXPECT_EQ(parse_duration_ns("--d", "1.5ms"), 1'500'000);
  EXPECT_EQ(parse_duration_ns("--d", "0"), 0);
  EXPECT_EQ(parse_duration_ns("--d", " 3 s "), 3'000'000'000);
}

TEST(Durations, RejectsBadInputNamingTheFlag) {
  const std::string no_unit = usage_error_of([] { parse_duration_ns("--duration", "5"); });
  EXPECT_NE(no_unit.find("--duration"), std::string::npos) << no_unit;
  EXPECT_NE(no_unit.find("\"5\""), std::string::npos) << no_unit;
  EXPECT_NE(no_unit.find("ns, us, ms, s, m or h"), std::string::npos) << no_unit;
  for (const char* bad : {"-1s", "5xs", "", "abc", "1e400s", "nan", "s"}) {
    const std::string message = usage_error_of([&] { parse_duration_ns("--interval", bad); });
    EXPECT_EQ(message.rfind("--interval: ", 0), 0u) << bad << ": " << message;
  }
}

TEST(Rates, ParsesBitsPerSecond) {
  EXPECT_DOUBLE_EQ(parse_rate_bps("--rate", "25G"), 25e9);
  EXPECT_DOUBLE_EQ(parse_rate_bps("--rate", "100Gbit"), 100e9);
  EXPECT_DOUBLE_EQ(parse_rate_bps("--rate", "10Mbps"), 10e6);
  EXPECT_DOUBLE_EQ(parse_rate_bps("--rate", "2.5Gb/s"), 2.5e9);
  EXPECT_DOUBLE_EQ(parse_rate_bps("--rate", "1e9"), 1e9);
  EXPECT_DOUBLE_EQ(parse_rate_bps("--rate", "400k"), 400e3);
  EXPECT_DOUBLE_EQ(parse_rate_bps("--rate", "1.6T"), 1.6e12);
}

TEST(Rates, RejectsBytesZeroAndJunk) {
  for (const char* bad : {"25GB", "0", "fast", "-1G", "10Mbytes"}) {
    const std::string message = usage_error_of([&] { parse_rate_bps("--rate", bad); });
    EXPECT_EQ(message.rfind("--rate: ", 0), 0u) << message;
    EXPECT_NE(message.find(std::string("\"") + bad + "\""), std::string::npos) << message;
    EXPECT_NE(message.find("allowed:"), std::string::npos) << message;
  }
}

TEST(Sizes, ParsesBinaryPrefixes) {
  EXPECT_EQ(parse_size_bytes("--size", "4096"), 4096u);
  EXPECT_EQ(parse_size_bytes("--size", "64K"), 65536u);
  EXPECT_EQ(parse_size_bytes("--size", "64KiB"), 65536u);
  EXPECT_EQ(parse_size_bytes("--size", "1M"), 1048576u);
  EXPECT_EQ(parse_size_bytes("--size", "1G"), 1073741824u);
  EXPECT_EQ(parse_size_bytes("--size", "1.5K"), 1536u);
  EXPECT_EQ(parse_size_bytes("--size", "8B"), 8u);
}

TEST(Sizes, RejectsFractionsAndUnknownUnits) {
  for (const char* bad : {"1.5", "4Q", "-1", "", "K"}) {
    const std::string message = usage_error_of([&] { parse_size_bytes("--queue-bytes", bad); });
    EXPECT_EQ(message.rfind("--queue-bytes: ", 0), 0u) << message;
  }
}

TEST(Sizes, ListsAndSweeps) {
  EXPECT_EQ(parse_size_list("--sizes", "64,4K,64K"), (std::vector<std::uint32_t>{64, 4096, 65536}));
  EXPECT_EQ(parse_size_sweep("--size-sweep", "2:16"), (std::vector<std::uint32_t>{2, 4, 8, 16}));
  EXPECT_EQ(parse_size_sweep("--size-sweep", "4K:20K"), (std::vector<std::uint32_t>{4096, 8192, 16384}));
  EXPECT_EQ(parse_size_sweep("--size-sweep", "2:8M").size(), 23u);
  for (const char* bad : {"16:2", "0:4", "2-16", "2:8G"}) {
    const std::string message = usage_error_of([&] { parse_size_sweep("--size-sweep", bad); });
    EXPECT_EQ(message.rfind("--size-sweep: ", 0), 0u) << message;
  }
  EXPECT_NE(usage_error_of([] { parse_size_list("--sizes", "64,x"); }).find("--sizes"), std::string::npos);
  EXPECT_NE(usage_error_of([] { parse_size_list("--sizes", ","); }).find("no sizes"), std::string::npos);
}

TEST(Probabilities, AcceptsFractionsAndPercentages) {
  EXPECT_DOUBLE_EQ(parse_probability("--loss", "1%"), 0.01);
  EXPECT_DOUBLE_EQ(parse_probability("--loss", "0.01"), 0.01);
  EXPECT_DOUBLE_EQ(parse_probability("--loss", "0"), 0.0);
  EXPECT_DOUBLE_EQ(parse_probability("--loss", "100%"), 1.0);
  EXPECT_DOUBLE_EQ(parse_probability("--loss", "1"), 1.0);
  EXPECT_DOUBLE_EQ(parse_probability("--loss", "0.5 %"), 0.005);
}

TEST(Probabilities, RejectsOutOfRange) {
  for (const char* bad : {"1.5", "150%", "x", "-0.1", "1%%", "5ms"}) {
    const std::string message = usage_error_of([&] { parse_probability("--duplicate", bad); });
    EXPECT_EQ(message.rfind("--duplicate: ", 0), 0u) << message;
    EXPECT_NE(message.find("[0, 1]"), std::string::npos) << message;
  }
  EXPECT_DOUBLE_EQ(parse_correlation("--c", "25%"), 0.25);
  EXPECT_NE(usage_error_of([] { parse_correlation("--delay-correlation", "1"); }).find("[0, 1)"), std::string::npos);
}

TEST(Integers, RangeAndSyntax) {
  EXPECT_EQ(parse_unsigned("--plane", "3"), 3u);
  EXPECT_NE(usage_error_of([] { parse_unsigned("--plane", "3x"); }).find("--plane"), std::string::npos);
  EXPECT_NE(usage_error_of([] { parse_unsigned("--plane", "-1"); }).find("whole number"), std::string::npos);
  EXPECT_NE(usage_error_of([] { parse_unsigned("--q", "0", 1, 10); }).find("[1, 10]"), std::string::npos);
  EXPECT_TRUE(parse_bool("--x", "yes"));
  EXPECT_FALSE(parse_bool("--x", "false"));
  EXPECT_THROW(parse_bool("--x", "maybe"), UsageError);
}

TEST(Formatting, HumanUnits) {
  EXPECT_EQ(format_duration_ns(850), "850ns");
  EXPECT_EQ(format_duration_ns(12'500), "12.5us");
  EXPECT_EQ(format_duration_ns(5'000'000), "5ms");
  EXPECT_EQ(format_duration_ns(2'250'000'000), "2.25s");
  EXPECT_EQ(format_duration_ns(120'000'000'000'0), "20m");
  EXPECT_EQ(format_rate_short(25e9), "25G");
  EXPECT_EQ(format_rate_short(2.5e9), "2.5G");
  EXPECT_EQ(format_rate_short(100e6), "100M");
  EXPECT_EQ(format_gbps(12.34e9), "12.34 Gb/s");
  EXPECT_EQ(format_gbps(0), "0.00 Gb/s");
  EXPECT_EQ(format_size(65536), "64K");
  EXPECT_EQ(format_size(1 << 20), "1M");
  EXPECT_EQ(format_size(1000), "1000");
  EXPECT_EQ(format_percent(0), "0");
  EXPECT_EQ(format_percent(0.0052), "0.52%");
  EXPECT_EQ(format_percent(0.01), "1%");
}

TEST(Formatting, RoundTripsThroughTheParsers) {
  for (std::int64_t ns : {0LL, 999LL, 12'340LL, 7'000'000LL, 3'500'000'000LL})
    EXPECT_EQ(parse_duration_ns("--d", format_duration_ns(ns)), ns) << ns;
  for (double bps : {25e9, 2.5e9, 100e6, 40e3})
    EXPECT_DOUBLE_EQ(parse_rate_bps("--r", format_rate_short(bps)), bps);
  for (std::uint64_t bytes : {1u, 4096u, 65536u, 1u << 30})
    EXPECT_EQ(parse_size_bytes("--s", format_size(bytes)), bytes);
}

}  // namespace
}  // namespace metarocectl
