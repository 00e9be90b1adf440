// `metarocectl scenario validate|run` and `metarocectl sweep`.
#pragma once

#include <string>
#include <vector>

#include "client.h"

namespace metarocectl {

struct ScenarioFlags {
  std::string file;
  std::string out = "out/scenario";
  bool sim = false;
  unsigned sim_threads = 0;                 // simulator: runs at once (0: one per core)
  std::vector<std::string> host_overrides;  // NAME=ADDRESS
  std::string hosts_from;                   // NAME:PORT: hosts found by name behind it (discover.h)
  std::string fabric_override;
  std::string point;                        // run only this sweep point (0-based); "" = every run
};

struct MergeFlags {
  std::vector<std::string> inputs;          // point directories (or their point.json files)
  std::string out = "out/scenario";
};

struct SweepFlags {
  std::string parameter = "loss";
  std::string values = "0,0.1%,1%,2%,5%,10%";
  std::string duration = "3s", interval = "250ms", size = "16K";
  uint32_t planes = 4;
  std::string from, to, fabric;              // daemon addresses (live)
  bool sim = false;
  unsigned sim_threads = 0;                  // simulator: runs at once (0: one per core)
  std::string out = "out/sweep";
  uint64_t seed = 1;
};

int cmd_scenario_validate(const ScenarioFlags& f, bool json);
int cmd_scenario_run(const ScenarioFlags& f, const ClientOptions& options, bool json);
int cmd_scenario_merge(const MergeFlags& f, bool json);
int cmd_sweep(const SweepFlags& f, const ClientOptions& options, bool json);

}  // namespace metarocectl
