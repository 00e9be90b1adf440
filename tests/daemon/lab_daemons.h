// A netns lab with three metaroced daemons (two AF_XDP endpoint hosts and an
// AF_XDP fabric node between them), uniquely named per test process and removed
// at the end, driven through metarocectl. Shared by the e2e tests that need one.
// Needs root, netns and AF_XDP: NEED_LAB() skips with the reason otherwise.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "metaroce/datapath/port.h"
#include "metaroce/lab/config.h"
#include "metaroce/lab/ops.h"
#include "test_process.h"

namespace daemon_test {

namespace fs = std::filesystem;
namespace ml = metaroce::lab;
using nlohmann::json;

struct Ctl {
  int status = -1;
  std::string out, err;
  json j() const {
    try {
      return json::parse(out);
    } catch (...) {
      return json();
    }
  }
};

// metarocectl against one daemon: metarocectl --server SERVER args...
inline Ctl ctl_at(const std::string& metarocectl, const std::string& server, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {metarocectl, "--server", server};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto res = ml::run_command(argv);
  return Ctl{res.status, res.out, res.err};
}

inline std::string skip_reason() {
  if (geteuid() != 0) return "needs root (network namespaces, AF_XDP)";
  if (ml::run_command({"ip", "-V"}).status != 0) return "needs iproute2";
  const auto kinds = metaroce::datapath::supported_port_kinds();
  if (std::find(kinds.begin(), kinds.end(), "afxdp") == kinds.end()) return "AF_XDP support was not built";
  const std::string probe = "mrdprobe" + std::to_string(getpid());
  if (ml::run_command({"ip", "netns", "add", probe}).status != 0) return "cannot create network namespaces here";
  ml::run_command({"ip", "netns", "del", probe});
  return {};
}

// A daemon process: `ip netns exec NS metaroced --config FILE`, output to a log file.
struct Daemon {
  pid_t pid = -1;
  std::string log;
  std::string socket;
};

class Lab {
 public:
  static constexpr uint32_t kPlanes = 2;
  // kSeparate: a daemon per host and one for the fabric (three busy threads).
  // kFabricWithH0: h0's daemon has role both and runs the fabric node on its
  // endpoint's worker thread, as run-scenario.sh does on a host with fewer
  // cores than busy threads; "fab" then names h0's daemon.
  enum class Layout { kSeparate, kFabricWithH0 };

  // endpoint_extra: more lines of the hosts' endpoint section (two-space indented).
  explicit Lab(Layout layout = Layout::kSeparate, const std::string& endpoint_extra = "")
      : name_("e" + std::to_string(getpid() % 1000000)), dir_(fs::temp_directory_path() / ("mrd-" + name_)) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / "lab.yaml") << "name: " << name_ << "\nhosts: 2\nplanes: " << kPlanes << "\nmtu: 2034\n";
    std::ofstream(dir_ / "token") << "s3cret-e2e-token-" << getpid() << "\n";
    token_ = "s3cret-e2e-token-" + std::to_string(getpid());
    std::string err;
    auto lab = ml::load_lab_file((dir_ / "lab.yaml").string(), &err);
    if (!lab) throw std::runtime_error(err);
    lab_ = *lab;
    ml::UpReport report;
    if (!ml::lab_up(lab_, ml::Ip(), &report, &err)) throw std::runtime_error("lab up: " + err);
    const bool shared = layout == Layout::kFabricWithH0;
    const std::string fabric_section = "fabric:\n  datapath: afxdp\n  ecmp_links: 2\n  seed: 7\n"
                                       "  port: {rate_bps: 10e9, prop_delay_ns: 0}\n"
                                       "  ecmp: {rate_bps: 10e9, prop_delay_ns: 5us, loss_probability: 0.01}\n";
    for (uint32_t h = 0; h < 2; ++h) {
      const bool both = shared && h == 0;
      const std::string cfg = (dir_ / ("h" + std::to_string(h) + ".yaml")).string();
      std::ofstream(cfg) << "name: h" << h << "\nrole: " << (both ? "both" : "endpoint")
                         << "\nlab: {file: lab.yaml, host: " << h << (both ? ", fabric: true" : "")
                         << "}\ncontrol:\n  unix_socket: h" << h << ".sock\n  token_file: token\n"
                         << "endpoint:\n  datapath: afxdp\n  xdp_mode: skb\n  frame_size: 2048\n  mtu_payload: 1024\n"
                         << "  min_rto_ns: 2ms\n" << endpoint_extra
                         << (both ? fabric_section : "");
    }
    std::ofstream(dir_ / "fab.yaml") << "name: fab\nrole: fabric\nlab: {file: lab.yaml, fabric: true}\n"
                                     << "control:\n  unix_socket: fab.sock\n  token_file: token\n"
                                     << "metrics: {listen: 127.0.0.1:9464}\n"
                                     << fabric_section;
    // A constructor that throws runs no destructor: take the lab down here too.
    try {
      if (!shared) start("fab", ml::fabric_netns(name_));
      start("h0", ml::host_netns(name_, 0));
      start("h1", ml::host_netns(name_, 1));
      if (shared) daemons_["fab"] = Daemon{-1, daemons_["h0"].log, daemons_["h0"].socket};
    } catch (...) {
      teardown();
      throw;
    }
  }

  ~Lab() { teardown(); }

  void teardown() {
    shutdown();
    std::string err;
    std::vector<std::string> removed;
    ml::lab_down(name_, ml::Ip(), &removed, &err);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void start(const std::string& who, const std::string& netns) {
    Daemon d;
    d.log = (dir_ / (who + ".log")).string();
    d.socket = "unix://" + (dir_ / (who + ".sock")).string();
    d.pid = spawn({"ip", "netns", "exec", netns, METAROCED_PATH, "--config", (dir_ / (who + ".yaml")).string()}, d.log);
    daemons_[who] = d;
    // Ready when it answers (bounded; a daemon that exits early fails at once).
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      if (ctl(who, {"status"}).status == 0) return;
      int st = 0;
      if (waitpid(d.pid, &st, WNOHANG) == d.pid) {
        daemons_[who].pid = -1;
        throw std::runtime_error(who + " exited at start:\n" + slurp(d.log));
      }
      if (std::chrono::steady_clock::now() > until) throw std::runtime_error(who + " not ready in 30 s:\n" + slurp(d.log));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // SIGTERM every daemon; their exit statuses by name.
  std::map<std::string, int> shutdown() {
    std::map<std::string, int> rcs;
    for (auto& [who, d] : daemons_)
      if (d.pid > 0) kill(d.pid, SIGTERM);
    for (auto& [who, d] : daemons_)
      if (d.pid > 0) {
        rcs[who] = wait_exit(d.pid, std::chrono::seconds(30));
        if (rcs[who] < 0) kill(d.pid, SIGKILL), waitpid(d.pid, nullptr, 0);
        d.pid = -1;
      }
    return rcs;
  }

  Ctl ctl(const std::string& who, std::vector<std::string> args, bool with_token = true) const {
    std::vector<std::string> argv = {METAROCECTL_PATH, "--server", server(who)};
    if (with_token) argv.insert(argv.end(), {"--token", token_});
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = ml::run_command(argv);
    return {r.status, r.out, r.err};
  }
  std::string server(const std::string& who) const { return daemons_.at(who).socket; }
  pid_t pid(const std::string& who) const { return daemons_.at(who).pid; }
  const std::string& token() const { return token_; }
  std::string log(const std::string& who) const { return slurp(daemons_.at(who).log); }
  const std::string& name() const { return name_; }
  const ml::LabConfig& config() const { return lab_; }
  fs::path dir() const { return dir_; }

  // Starts a job on h0 towards h1 and waits for its result (JobInfo JSON).
  json run_job(std::vector<std::string> args) const {
    std::vector<std::string> a = {"-o", "json", "traffic", "start", "--peer", server("h1")};
    a.insert(a.end(), args.begin(), args.end());
    const Ctl start = ctl("h0", a);
    EXPECT_EQ(start.status, 0) << start.err << start.out;
    const json info = start.j();
    if (!info.contains("id")) return json();
    const std::string id = info["id"].is_string() ? info["id"].get<std::string>() : std::to_string(info["id"].get<uint64_t>());
    const Ctl watch = ctl("h0", {"traffic", "watch", id});
    const Ctl result = ctl("h0", {"-o", "json", "traffic", "result", id});
    EXPECT_EQ(result.status, 0) << result.err;
    return result.j();
  }

 private:
  std::string name_;
  fs::path dir_;
  std::string token_;
  ml::LabConfig lab_;
  std::map<std::string, Daemon> daemons_;
};

inline uint64_t num(const json& j) {
  if (j.is_string()) return std::stoull(j.get<std::string>());
  if (j.is_number()) return j.get<uint64_t>();
  return 0;
}

#define NEED_LAB()                                   \
  if (auto r = ::daemon_test::skip_reason(); !r.empty()) GTEST_SKIP() << r

}  // namespace daemon_test
