// Shared by report_test.cc and report_html_test.cc: the reports both render
// (defined in report_test.cc) and the helpers that read the written files back.
#pragma once

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "metaroce/scenario/report.h"

namespace metaroce::scenario::testing {

Report make_sweep_report(const std::string& rocev2_name);
Report make_fault_report();
Report make_clos_report();

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The text a browser shows for HTML-escaped text (the entities the report writes).
inline std::string html_unescape(std::string s) {
  const std::pair<const char*, const char*> ents[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", " "}, {"&amp;", "&"}};
  for (const auto& [from, to] : ents)
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + 1)) s.replace(p, std::strlen(from), to);
  return s;
}

// How often needle occurs in s (occurrences do not overlap).
inline size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + needle.size())) ++n;
  return n;
}

}  // namespace metaroce::scenario::testing
