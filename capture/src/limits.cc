#include "metaroce/capture/limits.h"

#include <algorithm>

namespace metaroce::capture {

bool file_name_ok(const std::string& f) {
  static const std::string kSuffix = ".pcapng";
  if (f.size() <= kSuffix.size() || f.size() > kMaxFileNameChars || f[0] == '.' ||
      f.compare(f.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
    return false;
  return std::all_of(f.begin(), f.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

}  // namespace metaroce::capture
