// metaroce_lab: description parsing (always), and up/down/status against real
// network namespaces (root only: skipped loudly otherwise). Every netns test
// uses its own prefix and removes what it made, also when it fails.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "metaroce/lab/config.h"
#include "metaroce/lab/ops.h"
#include "netns.h"

namespace metaroce::lab {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------
// Descriptions

std::string parse_error(const std::string& yaml) {
  std::string error;
  EXPECT_FALSE(parse_lab_yaml(yaml, "t.yaml", &error).has_value()) << yaml;
  return error;
}

// A namespace a crashed test process left behind (its pid gone, nothing
// inside) is removed; one of a live process stays. (Whoever sweeps first
// removes it: another test process's first lab may, so only the outcome is
// checked, not the count.)
TEST(NetnsFixture, StaleNamespacesOfCrashedTestsAreRemoved) {
  if (auto r = metaroce::testing::NetnsLab::skip_reason(); !r.empty()) GTEST_SKIP() << r;
  using metaroce::testing::run_cmd;
  // A number no live process's pid % 100000 is.
  const std::set<long> live = metaroce::testing::NetnsLab::live_pid_numbers();
  long dead = 99999;
  while (live.count(dead)) --dead;
  const std::string stale = "mr" + std::to_string(dead) + "x7t", mine = "mr" + std::to_string(getpid() % 100000) + "x97t";
  ASSERT_EQ(run_cmd("ip netns add " + stale), 0);
  ASSERT_EQ(run_cmd("ip netns add " + mine), 0);
  metaroce::testing::NetnsLab::remove_stale_namespaces();
  EXPECT_NE(run_cmd("ip netns pids " + stale), 0) << stale << " was left";
  EXPECT_EQ(run_cmd("ip netns pids " + mine), 0) << mine << " (a live process's) was removed";
  run_cmd("ip netns del " + stale);
  run_cmd("ip netns del " + mine);
}

TEST(LabConfig, DefaultFileParses) {
  std::string error;
  const auto lab = load_lab_file(METAROCE_LAB_DEFAULT_YAML, &error);
  ASSERT_TRUE(lab) << error;
  EXPECT_EQ(lab->name, "mrlab");
  EXPECT_EQ(lab->hosts, 2u);
  EXPECT_EQ(lab->planes, 4u);
  EXPECT_EQ(lab->mtu, 2034u);
  ASSERT_EQ(lab->subnets.size(), 4u);
  EXPECT_EQ(subnet_to_string(lab->subnets[3]), "10.103.0.0/24");
}

TEST(LabConfig, DefaultsAndDerivedNames) {
  std::string error;
  const auto lab = parse_lab_yaml("name: ab1\nplanes: 3\nhosts: 4\n", "t.yaml", &error);
  ASSERT_TRUE(lab) << error;
  EXPECT_EQ(lab->mtu, 2034u);
  ASSERT_EQ(lab->subnets.size(), 3u);
  EXPECT_EQ(subnet_to_string(lab->subnets[2]), "10.102.0.0/24");
  EXPECT_EQ(host_netns("ab1", 3), "ab1-h3");
  EXPECT_EQ(fabric_netns("ab1"), "ab1-fab");
  EXPECT_EQ(host_ifname(2), "p2");
  EXPECT_EQ(fabric_ifname(3, 2), "h3p2");
  EXPECT_EQ(ip_to_string(host_ip(*lab, 3, 2)), "10.102.0.4");
  EXPECT_EQ(mac_to_string(host_mac(*lab, 3, 2)), "02:00:0a:66:00:04");
  EXPECT_EQ(mac_to_string(fabric_mac(*lab, 3, 2)), "02:01:0a:66:00:04");
  EXPECT_EQ(parse_lab_netns("ab1", "ab1-h12"), 12);
  EXPECT_EQ(parse_lab_netns("ab1", "ab1-fab"), -1);
  EXPECT_FALSE(parse_lab_netns("ab1", "ab12-h0"));
  EXPECT_FALSE(parse_lab_netns("ab1", "ab1-h"));
  EXPECT_FALSE(parse_lab_netns("ab1", "ab1-h0x"));
  EXPECT_FALSE(parse_lab_netns("ab", "ab1-h0"));
}

TEST(LabConfig, ErrorsNameTheFieldAndRange) {
  EXPECT_EQ(parse_error("hosts: 2\n"), "t.yaml: name: required ([a-z0-9]{1,8}, the namespace prefix)");
  EXPECT_EQ(parse_error("name: Lab_1\n"), "t.yaml:1: name: must match [a-z0-9]{1,8} (got 'Lab_1')");
  EXPECT_EQ(parse_error("name: abcdefghi\n"), "t.yaml:1: name: must match [a-z0-9]{1,8} (got 'abcdefghi')");
  EXPECT_EQ(parse_error("name: a\nhosts: 0\n"), "t.yaml:2: hosts: must be an integer in [1, 250] (got '0')");
  EXPECT_EQ(parse_error("name: a\nhosts: two\n"), "t.yaml:2: hosts: must be an integer in [1, 250] (got 'two')");
  EXPECT_EQ(parse_error("name: a\nhosts: -1\n"), "t.yaml:2: hosts: must be an integer in [1, 250] (got '-1')");
  EXPECT_EQ(parse_error("name: a\nplanes: 17\n"), "t.yaml:2: planes: must be an integer in [1, 16] (got '17')");
  EXPECT_EQ(parse_error("name: a\nmtu: 9001\n"), "t.yaml:2: mtu: must be an integer in [576, 9000] (got '9001')");
  EXPECT_EQ(parse_error("name: a\nmtu: [1]\n"), "t.yaml:2: mtu: must be an integer in [576, 9000] (got 'a list')");
  EXPECT_EQ(parse_error("name: a\nhost: 2\n"),
            "t.yaml:2: host: unknown field (allowed: name, hosts, planes, mtu, subnets)");
  EXPECT_EQ(parse_error("name: a\nplanes: 2\nsubnets: [10.1.0.0/24]\n"),
            "t.yaml:3: subnets: must be a list of 2 IPv4 networks, one per plane (got 1 entries)");
  EXPECT_EQ(parse_error("name: a\nplanes: 1\nsubnets: [10.1.0.5/24]\n"),
            "t.yaml:3: subnets[0]: has host bits set (the network is 10.1.0.0/24) (got '10.1.0.5/24')");
  EXPECT_EQ(parse_error("name: a\nplanes: 1\nsubnets: [10.1.0.0/31]\n"),
            "t.yaml:3: subnets[0]: prefix length must be in [8, 30] (got /31) (got '10.1.0.0/31')");
  EXPECT_EQ(parse_error("name: a\nplanes: 1\nsubnets: [fish]\n"),
            "t.yaml:3: subnets[0]: must be an IPv4 network in CIDR form, e.g. 10.100.0.0/24 (got 'fish')");
  EXPECT_EQ(parse_error("name: a\nplanes: 2\nsubnets: [10.1.0.0/16, 10.1.2.0/24]\n"),
            "t.yaml: subnets[1]: 10.1.2.0/24 overlaps subnets[0] 10.1.0.0/16 (each plane needs its own subnet)");
  EXPECT_EQ(parse_error("name: a\nhosts: 3\nplanes: 1\nsubnets: [10.1.0.0/30]\n"),
            "t.yaml: subnets[0]: 10.1.0.0/30 has room for 2 hosts, the lab has 3 (hosts)");
  EXPECT_EQ(parse_error("- 1\n- 2\n"),
            "t.yaml: a lab description is a mapping with keys name, hosts, planes, mtu, subnets (got a list)");
  EXPECT_EQ(parse_error("name: [a\n").rfind("t.yaml:", 0), 0u);
  EXPECT_NE(parse_error("name: [a\n").find("not valid YAML"), std::string::npos);
  EXPECT_EQ(check_lab_name("", "prefix"), "prefix: must match [a-z0-9]{1,8} (got '')");
}

TEST(LabConfig, EnvJsonHasAddressesAndMacsPerHostAndPlane) {
  std::string error;
  const auto lab = parse_lab_yaml("name: e\nhosts: 2\nplanes: 2\nmtu: 1500\n", "t.yaml", &error);
  ASSERT_TRUE(lab) << error;
  const json env = json::parse(lab_env_json(*lab));
  EXPECT_EQ(env["name"], "e");
  EXPECT_EQ(env["mtu"], 1500);
  ASSERT_EQ(env["hosts"].size(), 2u);
  const json& h1p1 = env["hosts"][1]["planes"][1];
  EXPECT_EQ(env["hosts"][1]["netns"], "e-h1");
  EXPECT_EQ(h1p1["ifname"], "p1");
  EXPECT_EQ(h1p1["ip"], "10.101.0.2");
  EXPECT_EQ(h1p1["prefix_len"], 24);
  EXPECT_EQ(h1p1["mac"], "02:00:0a:65:00:02");
  EXPECT_EQ(h1p1["fabric_ifname"], "h1p1");
  EXPECT_EQ(env["fabric"]["netns"], "e-fab");
  EXPECT_EQ(env["fabric"]["links"].size(), 4u);
  EXPECT_EQ(env["planes"][1]["subnet"], "10.101.0.0/24");
}

// The command validates before it touches anything, so this needs no root.
TEST(LabCli, BadDescriptionExitsTwoNamingTheField) {
  const std::string path = "/tmp/metaroce_lab_bad_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(path) << "name: ok\nhosts: 300\n";
  const CommandResult r = run_command({METAROCE_LAB_EXE, "up", path});
  std::remove(path.c_str());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(path + ":2: hosts: must be an integer in [1, 250] (got '300')"), std::string::npos) << r.err;
  const CommandResult p = run_command({METAROCE_LAB_EXE, "down", "--prefix", "Bad!"});
  EXPECT_EQ(p.status, 2);
  EXPECT_NE(p.err.find("--prefix: must match [a-z0-9]{1,8}"), std::string::npos) << p.err;
}

// ---------------------------------------------------------------------------
// Real namespaces

std::string unique_prefix() {
  static int n = 0;
  return "t" + std::to_string(getpid() % 100000) + static_cast<char>('a' + (n++ % 26));
}

json ip_json(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"ip", "-j"};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = run_command(argv);
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.out.find_first_not_of(" \n") == std::string::npos) return json::array();
  return json::parse(r.out, nullptr, false);
}

std::vector<std::string> netns_names() {
  std::vector<std::string> names;
  for (const auto& n : ip_json({"netns", "list"})) names.push_back(n["name"]);
  return names;
}

bool has_netns(const std::string& name) {
  for (const auto& n : netns_names())
    if (n == name) return true;
  return false;
}

size_t count_with_prefix(const std::string& prefix) {
  size_t n = 0;
  for (const auto& name : netns_names()) n += parse_lab_netns(prefix, name).has_value();
  return n;
}

json link_json(const std::string& ns, const std::string& ifname) {
  const json l = ip_json({"-n", ns, "addr", "show", "dev", ifname});
  return l.is_array() && l.size() == 1 ? l[0] : json();
}

bool has_flag(const json& link, const std::string& flag) {
  for (const auto& f : link.value("flags", json::array()))
    if (f == flag) return true;
  return false;
}

std::vector<std::string> inet_of(const json& link) {
  std::vector<std::string> v;
  for (const auto& a : link.value("addr_info", json::array()))
    if (a["family"] == "inet") v.push_back(a["local"].get<std::string>() + "/" + std::to_string(a["prefixlen"].get<int>()));
  return v;
}

class LabNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = metaroce::testing::NetnsLab::skip_reason();
    if (!reason.empty()) GTEST_SKIP() << "SKIPPED: " << reason;
    prefix_ = unique_prefix();
    std::string error;
    ASSERT_TRUE(lab_down(prefix_, ip_, nullptr, &error)) << error;  // a crashed earlier run's leftovers
  }
  void TearDown() override {
    for (const auto& p : cleanup_) lab_down(p, ip_, nullptr, nullptr);
    if (!prefix_.empty()) {
      std::string error;
      EXPECT_TRUE(lab_down(prefix_, ip_, nullptr, &error)) << error;
      EXPECT_EQ(count_with_prefix(prefix_), 0u);
    }
  }
  LabConfig make_lab(uint32_t hosts, uint32_t planes, uint32_t mtu = 4000) {
    const std::string yaml = "name: " + prefix_ + "\nhosts: " + std::to_string(hosts) +
                             "\nplanes: " + std::to_string(planes) + "\nmtu: " + std::to_string(mtu) + "\n";
    std::string error;
    auto lab = parse_lab_yaml(yaml, "test", &error);
    EXPECT_TRUE(lab) << error;
    return lab.value_or(LabConfig{});
  }
  std::string write_yaml(const LabConfig& lab) {
    const std::string path = "/tmp/metaroce_lab_" + prefix_ + ".yaml";
    std::ofstream(path) << "name: " << lab.name << "\nhosts: " << lab.hosts << "\nplanes: " << lab.planes
                        << "\nmtu: " << lab.mtu << "\n";
    files_.push_back(path);
    return path;
  }
  ~LabNetns() override {
    for (const auto& f : files_) std::remove(f.c_str());
  }

  Ip ip_;
  std::string prefix_;
  std::vector<std::string> cleanup_, files_;
};

TEST_F(LabNetns, UpCreatesNamespacesLinksAddressesAndNeighbours) {
  const LabConfig lab = make_lab(3, 2);
  UpReport report;
  std::string error;
  ASSERT_TRUE(lab_up(lab, ip_, &report, &error)) << error;
  EXPECT_EQ(report.namespaces_created, 4u);
  EXPECT_EQ(report.links_created, 6u);
  for (const auto& w : report.warnings) ADD_FAILURE() << "warning: " << w;

  const std::string fab = fabric_netns(prefix_);
  EXPECT_TRUE(has_netns(fab));
  for (uint32_t h = 0; h < 3; ++h) {
    const std::string ns = host_netns(prefix_, h);
    ASSERT_TRUE(has_netns(ns)) << ns;
    EXPECT_TRUE(has_flag(link_json(ns, "lo"), "UP")) << ns;
    for (uint32_t p = 0; p < 2; ++p) {
      SCOPED_TRACE(ns + " plane " + std::to_string(p));
      const json l = link_json(ns, host_ifname(p));
      ASSERT_TRUE(l.is_object());
      EXPECT_TRUE(has_flag(l, "UP"));
      EXPECT_TRUE(has_flag(l, "LOWER_UP")) << "both veth ends are up";
      EXPECT_EQ(l["mtu"], 4000);
      EXPECT_EQ(l["address"], mac_to_string(host_mac(lab, h, p)));
      EXPECT_EQ(inet_of(l), std::vector<std::string>{ip_to_string(host_ip(lab, h, p)) + "/24"});
      const json f = link_json(fab, fabric_ifname(h, p));
      ASSERT_TRUE(f.is_object());
      EXPECT_TRUE(has_flag(f, "UP"));
      EXPECT_EQ(f["mtu"], 4000);
      EXPECT_EQ(f["address"], mac_to_string(fabric_mac(lab, h, p)));
      EXPECT_TRUE(inet_of(f).empty()) << "the fabric side has no addresses";
      // Permanent neighbours to every other host on this plane.
      const json neigh = ip_json({"-4", "-n", ns, "neigh", "show", "dev", host_ifname(p)});
      for (uint32_t k = 0; k < 3; ++k) {
        if (k == h) continue;
        bool found = false;
        for (const auto& e : neigh) {
          if (e["dst"] != ip_to_string(host_ip(lab, k, p))) continue;
          found = e.value("lladdr", "") == mac_to_string(host_mac(lab, k, p));
          bool permanent = false;
          for (const auto& s : e.value("state", json::array())) permanent = permanent || s == "PERMANENT";
          EXPECT_TRUE(permanent);
        }
        EXPECT_TRUE(found) << "neighbour host " << k;
      }
    }
    const CommandResult v6 = run_command({"ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv6.conf.all.disable_ipv6"});
    if (v6.status == 0) {
      EXPECT_EQ(v6.out, "1\n") << "IPv6 is off in " << ns;
    }
  }
  // Nothing leaks into the caller's namespace.
  const json root_links = ip_json({"link", "show"});
  for (const auto& l : root_links)
    EXPECT_EQ(l["ifname"].get<std::string>().rfind(prefix_, 0), std::string::npos) << l["ifname"];

  LabStatus st;
  ASSERT_TRUE(lab_status(prefix_, &lab, ip_, &st, &error)) << error;
  EXPECT_TRUE(st.complete) << lab_status_text(st);
  EXPECT_EQ(st.namespaces.size(), 4u);
}

TEST_F(LabNetns, UpAgainIsANoOp) {
  const LabConfig lab = make_lab(2, 2);
  std::string error;
  ASSERT_TRUE(lab_up(lab, ip_, nullptr, &error)) << error;
  std::vector<std::string> commands;
  const Ip logging(run_command, [&](const std::string& c) { commands.push_back(c); });
  UpReport again;
  ASSERT_TRUE(lab_up(lab, logging, &again, &error)) << error;
  EXPECT_EQ(again.commands, 0u);
  EXPECT_EQ(again.namespaces_created, 0u);
  EXPECT_EQ(again.links_created, 0u);
  for (const auto& c : commands) {
    EXPECT_TRUE(c.rfind("ip -j ", 0) == 0 || c.find(" sysctl -n ") != std::string::npos)
        << "a second up only reads state, but ran: " << c;
  }
}

TEST_F(LabNetns, UpRepairsDrift) {
  const LabConfig lab = make_lab(2, 2);
  std::string error;
  ASSERT_TRUE(lab_up(lab, ip_, nullptr, &error)) << error;
  const std::string h0 = host_netns(prefix_, 0), fab = fabric_netns(prefix_);
  ASSERT_EQ(run_command({"ip", "-n", h0, "addr", "flush", "dev", "p1"}).status, 0);
  ASSERT_EQ(run_command({"ip", "-n", h0, "link", "set", "dev", "p0", "down"}).status, 0);
  ASSERT_EQ(run_command({"ip", "-n", fab, "link", "del", "dev", "h1p1"}).status, 0);  // removes both ends
  LabStatus st;
  ASSERT_TRUE(lab_status(prefix_, &lab, ip_, &st, &error)) << error;
  EXPECT_FALSE(st.complete);
  UpReport report;
  ASSERT_TRUE(lab_up(lab, ip_, &report, &error)) << error;
  EXPECT_EQ(report.links_created, 1u);
  ASSERT_TRUE(lab_status(prefix_, &lab, ip_, &st, &error)) << error;
  EXPECT_TRUE(st.complete) << lab_status_text(st);
}

TEST_F(LabNetns, DownRemovesEverything) {
  const LabConfig lab = make_lab(2, 3);
  std::string error;
  ASSERT_TRUE(lab_up(lab, ip_, nullptr, &error)) << error;
  EXPECT_EQ(count_with_prefix(prefix_), 3u);
  std::vector<std::string> removed;
  ASSERT_TRUE(lab_down(prefix_, ip_, &removed, &error)) << error;
  EXPECT_EQ(removed.size(), 3u);
  EXPECT_EQ(removed.back(), fabric_netns(prefix_)) << "the fabric goes last";
  EXPECT_EQ(count_with_prefix(prefix_), 0u);
  ASSERT_TRUE(lab_down(prefix_, ip_, &removed, &error)) << error;  // nothing left is fine
  EXPECT_TRUE(removed.empty());
  LabStatus st;
  ASSERT_TRUE(lab_status(prefix_, &lab, ip_, &st, &error)) << error;
  EXPECT_FALSE(st.any);
  EXPECT_FALSE(st.complete);
}

TEST_F(LabNetns, DownAfterInterruptedUpRemovesLeftovers) {
  const LabConfig lab = make_lab(3, 2);
  // An up that dies at its third veth pair (fault injected into the runner).
  int link_adds = 0;
  const Ip failing([&](const std::vector<std::string>& argv) {
    if (argv.size() > 2 && argv[1] == "link" && argv[2] == "add" && ++link_adds == 3) {
      CommandResult r;
      r.status = 2;
      r.err = "injected failure\n";
      return r;
    }
    return run_command(argv);
  });
  std::string error;
  EXPECT_FALSE(lab_up(lab, failing, nullptr, &error));
  EXPECT_NE(error.find("injected failure"), std::string::npos) << error;
  EXPECT_NE(error.find("ip link add"), std::string::npos) << error;
  EXPECT_EQ(count_with_prefix(prefix_), 4u);
  // And leftovers no description has: a host beyond the lab, an empty fabric.
  ASSERT_EQ(run_command({"ip", "netns", "add", host_netns(prefix_, 9)}).status, 0);
  LabStatus st;
  ASSERT_TRUE(lab_status(prefix_, &lab, ip_, &st, &error)) << error;
  EXPECT_TRUE(st.any);
  EXPECT_FALSE(st.complete);
  // Another lab whose name starts with ours must survive our down.
  const std::string other = prefix_ + "z";
  cleanup_.push_back(other);
  ASSERT_EQ(run_command({"ip", "netns", "add", host_netns(other, 0)}).status, 0);

  std::vector<std::string> removed;
  ASSERT_TRUE(lab_down(prefix_, ip_, &removed, &error)) << error;
  EXPECT_EQ(removed.size(), 5u);
  EXPECT_EQ(count_with_prefix(prefix_), 0u);
  EXPECT_TRUE(has_netns(host_netns(other, 0)));
}

TEST_F(LabNetns, UpAfterInterruptedUpFinishesIt) {
  const LabConfig lab = make_lab(2, 2);
  int calls = 0;
  const Ip failing([&](const std::vector<std::string>& argv) {
    if (++calls == 12) return CommandResult{-1, "", "interrupted"};
    return run_command(argv);
  });
  std::string error;
  EXPECT_FALSE(lab_up(lab, failing, nullptr, &error));
  ASSERT_TRUE(lab_up(lab, ip_, nullptr, &error)) << error;
  LabStatus st;
  ASSERT_TRUE(lab_status(prefix_, &lab, ip_, &st, &error)) << error;
  EXPECT_TRUE(st.complete) << lab_status_text(st);
}

TEST_F(LabNetns, CommandLine) {
  const LabConfig lab = make_lab(2, 2, 1500);
  const std::string file = write_yaml(lab);
  CommandResult r = run_command({METAROCE_LAB_EXE, "status", file});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("absent"), std::string::npos) << r.out;

  r = run_command({METAROCE_LAB_EXE, "up", file, "--print-env"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json env = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(env.is_discarded()) << "stdout is only the JSON: " << r.out;
  EXPECT_EQ(env["name"], prefix_);
  EXPECT_EQ(env["hosts"][1]["planes"][0]["ip"], "10.100.0.2");
  EXPECT_NE(r.err.find("up: 3 namespaces and 4 veth pairs created"), std::string::npos) << r.err;

  r = run_command({METAROCE_LAB_EXE, "up", file});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("already up"), std::string::npos) << r.out;

  r = run_command({METAROCE_LAB_EXE, "status", file});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("complete"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("10.100.0.1/24"), std::string::npos) << r.out;

  r = run_command({METAROCE_LAB_EXE, "status", "--prefix", prefix_, "-o", "json"});
  EXPECT_EQ(r.status, 0) << r.err;
  const json st = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(st.is_discarded()) << r.out;
  EXPECT_TRUE(st["any"]);
  EXPECT_EQ(st["namespaces"].size(), 3u);

  r = run_command({METAROCE_LAB_EXE, "down", "--prefix", prefix_, "-v"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("removed " + fabric_netns(prefix_)), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("+ ip netns del"), std::string::npos) << r.err;
  EXPECT_EQ(count_with_prefix(prefix_), 0u);
  r = run_command({METAROCE_LAB_EXE, "down", file});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("nothing to remove"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace metaroce::lab
