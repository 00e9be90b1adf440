// Test fixture: throw-away network namespaces joined by veth pairs.
//
// Names carry a per-process prefix so parallel runs never collide, and the
// destructor removes every namespace it made (a namespace removal also
// removes its veth ends); a process's first lab removes those of test
// processes that crashed before their destructors ran. Tests that need it call NetnsLab::skip_reason()
// first and GTEST_SKIP() with that reason when the machine cannot do it
// (not root, no `ip`, no netns support).
#pragma once

#include <sched.h>
#include <unistd.h>
#include <fcntl.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "metaroce/datapath/netns.h"

namespace metaroce::testing {

inline int run_cmd(const std::string& cmd) {
  const int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class NetnsLab {
 public:
  // Empty when namespaces can be made here; otherwise why not.
  static std::string skip_reason() {
    if (geteuid() != 0) return "needs root (network namespaces)";
    if (run_cmd("ip -V") != 0) return "needs iproute2 (`ip`)";
    const std::string probe = "mrprobe" + std::to_string(getpid());
    if (run_cmd("ip netns add " + probe) != 0) return "cannot create network namespaces here";
    run_cmd("ip netns del " + probe);
    return {};
  }

  NetnsLab() : prefix_("mr" + std::to_string(getpid() % 100000) + "x" + std::to_string(counter()++)) {
    static const int swept = remove_stale_namespaces();  // once per process, before its first lab
    (void)swept;
  }

  // Namespaces a test process made and never removed because it crashed (no
  // destructor ran): named mr<pid % 100000>x<n>..., no process inside, and no
  // live process whose pid % 100000 is that number. Removes them; returns how
  // many. Names of live processes and namespaces with a process in them (a
  // daemon the crashed test left running) are never touched.
  static int remove_stale_namespaces() {
    const std::set<long> live = live_pid_numbers();
    std::error_code ec;
    int removed = 0;
    for (const auto& e : std::filesystem::directory_iterator("/run/netns", ec)) {
      const std::string name = e.path().filename().string();
      size_t digits = 2;
      while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
      if (name.rfind("mr", 0) != 0 || digits == 2 || digits >= name.size() - 1 || name[digits] != 'x' ||
          !std::isdigit(static_cast<unsigned char>(name[digits + 1])))
        continue;
      if (digits - 2 > 5 || live.count(std::stol(name.substr(2, digits - 2)))) continue;
      if (run_cmd("test -z \"$(ip netns pids " + name + ")\"") != 0) continue;
      if (run_cmd("ip netns del " + name) == 0) ++removed;
    }
    return removed;
  }
  ~NetnsLab() {
    for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) run_cmd("ip netns del " + *it);
  }
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  // Creates namespace <prefix><suffix> with loopback up; returns its name.
  std::string add_namespace(const std::string& suffix) {
    const std::string ns = prefix_ + suffix;
    must("ip netns add " + ns);
    namespaces_.push_back(ns);
    must("ip -n " + ns + " link set lo up");
    return ns;
  }

  // A veth pair: end a in ns_a named if_a with addr_a (CIDR, may be empty), end b likewise.
  void add_veth(const std::string& ns_a, const std::string& if_a, const std::string& addr_a, const std::string& ns_b,
                const std::string& if_b, const std::string& addr_b, const std::string& mac_a = "",
                const std::string& mac_b = "") {
    const std::string tmp_a = prefix_ + "a" + std::to_string(veths_), tmp_b = prefix_ + "b" + std::to_string(veths_);
    ++veths_;
    must("ip link add " + tmp_a + " type veth peer name " + tmp_b);
    must("ip link set " + tmp_a + " netns " + ns_a + " name " + if_a);
    must("ip link set " + tmp_b + " netns " + ns_b + " name " + if_b);
    for (auto [ns, ifn, addr, mac] : {std::tuple{ns_a, if_a, addr_a, mac_a}, std::tuple{ns_b, if_b, addr_b, mac_b}}) {
      if (!mac.empty()) must("ip -n " + ns + " link set " + ifn + " address " + mac);
      if (!addr.empty()) must("ip -n " + ns + " addr add " + addr + " dev " + ifn);
      must("ip -n " + ns + " link set " + ifn + " up");
    }
  }

  // Runs a shell command inside a namespace; returns the exit status.
  static int exec(const std::string& ns, const std::string& cmd) { return run_cmd("ip netns exec " + ns + " " + cmd); }

  const std::string& prefix() const { return prefix_; }

  // pid % 100000 of every live process: the number a lab prefix carries.
  static std::set<long> live_pid_numbers() {
    std::set<long> live;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = e.path().filename().string();
      if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) live.insert(std::stol(name) % 100000);
    }
    return live;
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  void must(const std::string& cmd) {
    if (run_cmd(cmd) != 0) throw std::runtime_error("netns fixture: command failed: " + cmd);
  }
  std::string prefix_;
  std::vector<std::string> namespaces_;
  int veths_ = 0;
};

using datapath::ScopedNetns;

}  // namespace metaroce::testing
