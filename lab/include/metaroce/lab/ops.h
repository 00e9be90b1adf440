// Creating, inspecting and removing a lab (see config.h for its shape) by
// running iproute2 `ip` commands.
//
// up:     converges the machine to the description. Each step first reads the
//         current state (`ip -j ... addr show`, `ip -j ... neigh show`) and
//         only issues a command for what differs, so a second `up` issues none
//         and a `up` after an interrupted one finishes the job. veth pairs are
//         created directly inside their two namespaces, never in the caller's,
//         so an interruption leaves nothing outside the lab's namespaces.
// down:   deletes every namespace named <prefix>-h<digits> or <prefix>-fab
//         (which deletes their veth ends), whether or not a description says
//         they should exist: it cleans up after an interrupted or failed up.
// status: what exists, compared with the description when there is one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/lab/config.h"

namespace metaroce::lab {

struct CommandResult {
  int status = -1;        // exit status; -1 when it could not run or was killed
  std::string out, err;
};

// Runs an argv (argv[0] looked up in PATH), capturing stdout and stderr.
using CommandRunner = std::function<CommandResult(const std::vector<std::string>& argv)>;
CommandResult run_command(const std::vector<std::string>& argv);

// Wraps a runner for `ip`: run(args) runs `ip args...`; check(args) also turns
// a failure into an error line "ip -n lab-h0 link set dev p0 up: exit status
// 2: Cannot find device "p0"". Every command run is passed to `log` if set.
class Ip {
 public:
  explicit Ip(CommandRunner runner = run_command, std::function<void(const std::string&)> log = {})
      : runner_(std::move(runner)), log_(std::move(log)) {}
  CommandResult run(const std::vector<std::string>& args) const;
  bool check(const std::vector<std::string>& args, std::string* error, std::string* out = nullptr) const;
  static std::string describe(const std::vector<std::string>& args);

 private:
  CommandRunner runner_;
  std::function<void(const std::string&)> log_;
};

struct UpReport {
  uint32_t namespaces_created = 0;
  uint32_t links_created = 0;
  uint32_t commands = 0;               // state-changing commands issued (0 = it was already up)
  std::vector<std::string> warnings;   // e.g. namespaces of this prefix the description does not have
};

bool lab_up(const LabConfig& lab, const Ip& ip, UpReport* report, std::string* error);

// Removed namespace names go to *removed. Fails only when listing or deleting
// fails; nothing to remove is success.
bool lab_down(const std::string& prefix, const Ip& ip, std::vector<std::string>* removed, std::string* error);

struct InterfaceStatus {
  std::string netns, ifname;
  bool present = false;
  bool up = false;                     // administratively up
  bool lower_up = false;               // carrier (both veth ends up)
  uint32_t mtu = 0;
  std::string mac;
  std::vector<std::string> addresses;  // CIDR
  uint32_t neighbours = 0;             // permanent neighbour entries on it
  bool matches = true;                 // as the description says (true when there is none)
};

struct NetnsStatus {
  std::string name;
  bool present = false;
  bool expected = true;                // false: exists but is not in the description
  std::vector<InterfaceStatus> interfaces;
};

struct LabStatus {
  std::string prefix;
  bool has_description = false;
  bool complete = false;               // everything described exists and matches
  bool any = false;                    // something of this prefix exists
  std::vector<NetnsStatus> namespaces;
};

// `lab` may be null: then it lists what exists under `prefix`.
bool lab_status(const std::string& prefix, const LabConfig* lab, const Ip& ip, LabStatus* status,
                std::string* error);
std::string lab_status_json(const LabStatus& status, int indent = 2);
std::string lab_status_text(const LabStatus& status);

// Names of existing network namespaces (`ip -j netns list`).
bool list_netns(const Ip& ip, std::vector<std::string>* names, std::string* error);

}  // namespace metaroce::lab
