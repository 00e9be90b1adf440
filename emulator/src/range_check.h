// One wording for the emulator's range errors (the validate() functions of
// links, loss and delay models): the field's name, the allowed range, the
// value given. Every check is written so that NaN fails it.
#pragma once

#include <cstdio>
#include <limits>
#include <optional>
#include <string>

namespace metaroce::emulator::detail {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// v in [0, 1]
inline std::optional<std::string> in_unit(const char* name, double v) {
  if (v >= 0.0 && v <= 1.0) return std::nullopt;
  return std::string(name) + ": must be in [0, 1] (got " + format_number(v) + ")";
}

// v in [0, 1)
inline std::optional<std::string> in_unit_open(const char* name, double v) {
  if (v >= 0.0 && v < 1.0) return std::nullopt;
  return std::string(name) + ": must be in [0, 1) (got " + format_number(v) + ")";
}

}  // namespace metaroce::emulator::detail
