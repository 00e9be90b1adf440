// Parsing a scenario's text in a test: the scenario it gives (a failure if it
// does not parse), or the error it gives (a failure if it parses). Every
// file is named "f.yaml", so errors read "f.yaml:LINE: key: ...".
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "metaroce/scenario/scenario.h"

namespace metaroce::scenario::test {

inline Scenario parse_ok(const std::string& yaml) {
  std::string err;
  auto s = parse_scenario_yaml(yaml, "f.yaml", &err);
  EXPECT_TRUE(s.has_value()) << err;
  return s ? *s : Scenario{};
}

inline std::string error_of(const std::string& yaml) {
  std::string err;
  auto s = parse_scenario_yaml(yaml, "f.yaml", &err);
  EXPECT_FALSE(s.has_value()) << "parsed, expected an error";
  return err;
}

}  // namespace metaroce::scenario::test
