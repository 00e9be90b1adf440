#include "metaroce/transport/connection_params.h"

namespace metaroce::transport {

std::string ConnectionParam::range_text() const {
  std::string t = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!unit.empty()) t += " " + std::string(unit);
  if (multiple_of > 1) t += ", a multiple of " + std::to_string(multiple_of);
  return t;
}

std::string ConnectionParam::refusal(std::string_view field, int64_t got) const {
  return std::string(field) + ": must be in " + range_text() + " (got " + std::to_string(got) + ")";
}

}  // namespace metaroce::transport
