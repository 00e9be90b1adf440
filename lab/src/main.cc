// metaroce_lab: network-namespace labs for the datapath (see
// include/metaroce/lab/config.h for what a lab is).
//
//   metaroce_lab up FILE [--print-env] [-v]    create or complete the lab (idempotent)
//   metaroce_lab down FILE | --prefix P [-v]   remove everything of that prefix
//   metaroce_lab status FILE | --prefix P [-o table|json]
//   metaroce_lab env FILE                      the addresses/MACs JSON, touching nothing
//
// Exit status: 0 done, 1 a command failed, 2 bad arguments or description,
// 3 `status` of a description that is not (completely) up.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "metaroce/lab/config.h"
#include "metaroce/lab/ops.h"

namespace {

using namespace metaroce::lab;

constexpr int kFailed = 1, kUsage = 2, kIncomplete = 3;

std::string hint_root() {
  return geteuid() == 0 ? "" : " (not running as root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)";
}

// Resolves FILE or --prefix into a prefix (and the description, if a file).
int resolve(const std::string& cmd, const std::string& file, const std::string& prefix,
            std::optional<LabConfig>* lab, std::string* out_prefix) {
  if (file.empty() == prefix.empty()) {
    std::cerr << "metaroce_lab " << cmd << ": give exactly one of FILE or --prefix P\n";
    return kUsage;
  }
  if (!file.empty()) {
    std::string error;
    *lab = load_lab_file(file, &error);
    if (!*lab) {
      std::cerr << "metaroce_lab " << cmd << ": " << error << "\n";
      return kUsage;
    }
    *out_prefix = (*lab)->name;
    return 0;
  }
  if (auto why = check_lab_name(prefix, "--prefix"); !why.empty()) {
    std::cerr << "metaroce_lab " << cmd << ": " << why << "\n";
    return kUsage;
  }
  *out_prefix = prefix;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"metaroce_lab: network-namespace labs (hosts x planes of veth pairs into one fabric namespace)"};
  app.require_subcommand(1);
  app.fallthrough();  // -v works after the subcommand too
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "print every ip command run (to stderr)");

  std::string up_file;
  bool print_env = false;
  auto* up = app.add_subcommand("up", "create the lab, or finish it; a no-op when it is already up");
  up->add_option("FILE", up_file, "lab description (YAML)")->required();
  up->add_flag("--print-env", print_env, "print the addresses/MACs JSON to stdout (progress goes to stderr)");

  std::string down_file, down_prefix;
  auto* down = app.add_subcommand("down", "remove every namespace of the lab (also after an interrupted up)");
  down->add_option("FILE", down_file, "lab description (YAML)");
  down->add_option("--prefix", down_prefix, "lab name: removes <prefix>-h<N> and <prefix>-fab");

  std::string st_file, st_prefix, st_output = "table";
  auto* status = app.add_subcommand("status", "what exists (exit 3 when a described lab is not completely up)");
  status->add_option("FILE", st_file, "lab description (YAML)");
  status->add_option("--prefix", st_prefix, "lab name");
  status->add_option("-o,--output", st_output, "table or json")->check(CLI::IsMember({"table", "json"}));

  std::string env_file;
  auto* env = app.add_subcommand("env", "print the addresses/MACs JSON of a description; touches nothing");
  env->add_option("FILE", env_file, "lab description (YAML)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kUsage;
  }

  auto log = [verbose](const std::string& cmd) {
    if (verbose) std::cerr << "+ " << cmd << "\n";
  };
  const Ip ip(run_command, log);

  if (*env) {
    std::string error;
    auto lab = load_lab_file(env_file, &error);
    if (!lab) {
      std::cerr << "metaroce_lab env: " << error << "\n";
      return kUsage;
    }
    std::cout << lab_env_json(*lab) << "\n";
    return 0;
  }

  if (*up) {
    std::string error;
    auto lab = load_lab_file(up_file, &error);
    if (!lab) {
      std::cerr << "metaroce_lab up: " << error << "\n";
      return kUsage;
    }
    std::ostream& human = print_env ? std::cerr : std::cout;
    UpReport report;
    const bool ok = lab_up(*lab, ip, &report, &error);
    for (const auto& w : report.warnings) std::cerr << "metaroce_lab up: warning: " << w << "\n";
    if (!ok) {
      std::cerr << "metaroce_lab up: " << error << hint_root() << "\n"
                << "metaroce_lab up: the lab may be partly up; run `up` again to finish it or `down` to remove what exists\n";
      return kFailed;
    }
    if (report.commands == 0)
      human << "lab '" << lab->name << "' already up: nothing to do\n";
    else
      human << "lab '" << lab->name << "' up: " << report.namespaces_created << " namespaces and "
            << report.links_created << " veth pairs created, " << report.commands << " changes\n";
    if (print_env) std::cout << lab_env_json(*lab) << "\n";
    return 0;
  }

  if (*down) {
    std::optional<LabConfig> lab;
    std::string prefix;
    if (int rc = resolve("down", down_file, down_prefix, &lab, &prefix)) return rc;
    std::vector<std::string> removed;
    std::string error;
    const bool ok = lab_down(prefix, ip, &removed, &error);
    for (const auto& n : removed) std::cout << "removed " << n << "\n";
    if (!ok) {
      std::cerr << "metaroce_lab down: " << error << hint_root() << "\n";
      return kFailed;
    }
    if (removed.empty()) std::cout << "lab '" << prefix << "': nothing to remove\n";
    return 0;
  }

  if (*status) {
    std::optional<LabConfig> lab;
    std::string prefix;
    if (int rc = resolve("status", st_file, st_prefix, &lab, &prefix)) return rc;
    LabStatus st;
    std::string error;
    if (!lab_status(prefix, lab ? &*lab : nullptr, ip, &st, &error)) {
      std::cerr << "metaroce_lab status: " << error << hint_root() << "\n";
      return kFailed;
    }
    std::cout << (st_output == "json" ? lab_status_json(st) + "\n" : lab_status_text(st));
    return lab && !st.complete ? kIncomplete : 0;
  }
  return kUsage;
}
