// libFuzzer target for the three YAML parsers an operator feeds: daemon
// configs (parse_daemon_yaml), scenarios (parse_scenario_yaml) and lab
// descriptions (parse_lab_yaml). Every input goes to all three.
//
// Oracles beyond "no crash, no hang, no sanitizer report":
//   - a refusal has an error that names the source and is one line;
//   - an accepted daemon config's effective YAML parses again to the same
//     configuration (daemon_config_yaml round-trips, compared as JSON);
//   - an accepted scenario can be checked for both modes (check_runnable).
// Seeds: the shipped files under configs/ (the committed corpus).
//
// Build: tests/fuzz/CMakeLists.txt (clang only). Run:
//   ./fuzz_config_parsers -max_total_time=30 corpus_dir ../../configs/daemon ../../configs/scenarios
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "metaroce/daemon/config.h"
#include "metaroce/lab/config.h"
#include "metaroce/scenario/scenario.h"

namespace {

[[noreturn]] void fail(const char* why, const std::string& detail) {
  std::fprintf(stderr, "oracle failed: %s: [%s]\n", why, detail.c_str());
  __builtin_trap();
}

void check_refusal(const char* parser, const std::string& error) {
  if (error.empty() || error.rfind("f.yaml", 0) != 0) fail(parser, "error must name the source: " + error);
  for (const char c : error)
    if (c == '\n' || c == '\r') fail(parser, "error must be one line: " + error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // the parsers read files of up to 1 MiB; small inputs find the same paths
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;

  if (auto c = metaroce::daemon::parse_daemon_yaml(text, "f.yaml", &error)) {
    std::string again_error;
    const std::string yaml = metaroce::daemon::daemon_config_yaml(*c);
    auto again = metaroce::daemon::parse_daemon_yaml(yaml, "f.yaml", &again_error);
    if (!again) fail("daemon config", "its effective YAML does not parse: " + again_error + "\n" + yaml);
    if (metaroce::daemon::daemon_config_json(*again) != metaroce::daemon::daemon_config_json(*c))
      fail("daemon config", "its effective YAML parses to another configuration:\n" + yaml);
    (void)metaroce::daemon::validate_daemon_config(*c, false);
  } else {
    check_refusal("daemon config", error);
  }

  error.clear();
  if (auto s = metaroce::scenario::parse_scenario_yaml(text, "f.yaml", &error)) {
    (void)metaroce::scenario::check_runnable(*s, true);
    (void)metaroce::scenario::check_runnable(*s, false);
  } else {
    check_refusal("scenario", error);
  }

  error.clear();
  if (!metaroce::lab::parse_lab_yaml(text, "f.yaml", &error)) check_refusal("lab", error);
  return 0;
}
