// The conformance suite against a real metaroced: one endpoint daemon on the
// UDP datapath over loopback (unprivileged, runs anywhere), driven only
// through `metarocectl conformance run`. Every case must pass, the JSON and
// JUnit files must parse and agree with the table, and bad targets and bad
// --cases patterns must be clear usage errors.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "metaroce/conformance/suite.h"
#include "metaroce/lab/ops.h"
#include "test_process.h"

namespace fs = std::filesystem;
namespace ml = metaroce::lab;
using daemon_test::slurp;
using daemon_test::spawn;
using daemon_test::wait_exit;

namespace {

const char* const kToken = "conformance-token-0123456789";

// One endpoint daemon in its own directory, stopped (SIGTERM, exit 0 checked)
// however the test ends.
class UdpDaemon {
 public:
  UdpDaemon() : dir_(fs::temp_directory_path() / ("mrconf-" + std::to_string(getpid()))) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / "token") << kToken << "\n";
    // A port and an address of its own per test process (the DUT also listens
    // on its address's UDP 4791 for RoCEv2); the suite takes the partner address.
    const int port = 20000 + (getpid() + 7919) % 20000;
    std::ofstream(dir_ / "dut.yaml") << "name: dut\nrole: endpoint\ncontrol:\n  unix_socket: " << (dir_ / "dut.sock").string()
                                     << "\n  token_file: token\nendpoint:\n  datapath: udp\n  interfaces: [lo]\n"
                                     << "  address: " << ip_ << "\n  udp_port: " << port
                                     << "\n  mac: 02:00:7f:00:00:01\n  inbound_capacity_bps: 10e9\n";
    pid_ = spawn({METAROCED_PATH, "--config", (dir_ / "dut.yaml").string()}, (dir_ / "dut.log").string());
    address_ = "unix://" + (dir_ / "dut.sock").string();
  }
  ~UdpDaemon() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      EXPECT_EQ(wait_exit(pid_, std::chrono::seconds(30)), 0) << log();
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Polls (bounded: 30 s) until the daemon answers `status`.
  bool ready() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < until) {
      if (ctl({"status"}).status == 0) return true;
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  ml::CommandResult ctl(std::vector<std::string> args) const {
    std::vector<std::string> argv = {METAROCECTL_PATH, "--server", address_, "--token", kToken};
    argv.insert(argv.end(), args.begin(), args.end());
    return ml::run_command(argv);
  }

  const std::string& address() const { return address_; }
  const std::string& endpoint_ip() const { return ip_; }
  fs::path file(const std::string& name) const { return dir_ / name; }
  std::string log() const { return slurp((dir_ / "dut.log").string()); }

 private:
  fs::path dir_;
  std::string ip_ = daemon_test::loopback_ip(0);
  pid_t pid_ = -1;
  std::string address_;
};

}  // namespace

TEST(ConformanceLive, OurEndpointPassesEveryCaseAndTheReportsParse) {
  UdpDaemon dut;
  ASSERT_TRUE(dut.ready()) << dut.log();
  const std::string json_file = dut.file("conformance.json").string(), junit_file = dut.file("conformance.xml").string();
  const std::string pcaps = dut.file("pcaps").string();
  const auto r = dut.ctl({"conformance", "run", "--target", dut.address(), "--json", json_file, "--junit", junit_file,
                          "--pcap-dir", pcaps});
  std::printf("%s", r.out.c_str());
  EXPECT_EQ(r.status, 0) << r.out << r.err << dut.log();
  const size_t n = metaroce::conformance::catalogue().size();
  EXPECT_NE(r.out.find(std::to_string(n) + " of " + std::to_string(n) + " cases passed"), std::string::npos) << r.out;

  const auto j = nlohmann::json::parse(std::ifstream(json_file), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << slurp(json_file);
  EXPECT_EQ(j["passed"], n);
  EXPECT_EQ(j["failed"], 0);
  ASSERT_EQ(j["cases"].size(), n);
  for (const auto& c : j["cases"]) EXPECT_EQ(c["result"], "PASS") << c.dump(2);
  EXPECT_TRUE(fs::is_directory(pcaps) && fs::is_empty(pcaps)) << "a pcap only for a failed case";

  // JUnit through a real XML parser: one testcase per case, no failure.
  const auto x = ml::run_command(
      {"python3", "-c",
       "import sys, xml.etree.ElementTree as E\n"
       "r = E.parse(sys.argv[1]).getroot()\n"
       "cases = r.findall('./testsuite/testcase')\n"
       "print(len(cases), sum(1 for c in cases if c.find('failure') is not None), r.get('tests'), r.get('failures'))\n",
       junit_file});
  ASSERT_EQ(x.status, 0) << x.err << slurp(junit_file);
  EXPECT_EQ(x.out, std::to_string(n) + " 0 " + std::to_string(n) + " 0\n") << slurp(junit_file);
}

TEST(ConformanceLive, SelectedCasesJsonOutputAndClearUsageErrors) {
  UdpDaemon dut;
  ASSERT_TRUE(dut.ready()) << dut.log();
  auto r = dut.ctl({"-o", "json", "conformance", "run", "--target", dut.address(), "--cases", "sack.*,nak.bad-key"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_EQ(j["cases"].size(), 5u) << r.out;  // sack.gaps, window-edge, floor-slide, sequence-wrap; nak.bad-key
  for (const auto& c : j["cases"]) EXPECT_EQ(c["result"], "PASS") << c.dump(2);

  r = dut.ctl({"conformance", "run", "--target", dut.address(), "--cases", "sack.nosuch"});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--cases: pattern 'sack.nosuch' matches no case; the cases are:"), std::string::npos) << r.err;
  r = dut.ctl({"conformance", "run", "--target", dut.address(), "--cases", "Sack/*"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--cases: each comma-separated pattern is a case id or a glob of lower-case letters"),
            std::string::npos)
      << r.err;
  r = dut.ctl({"conformance", "run", "--target", "unix://" + dut.file("nobody.sock").string(), "--timeout", "2s"});
  EXPECT_EQ(r.status, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("--target unix://" + dut.file("nobody.sock").string() + ": Daemon.GetInfo: UNAVAILABLE"),
            std::string::npos)
      << r.err;
  r = dut.ctl({"conformance", "run", "--target", ""});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--target: empty address (allowed: unix:///path, unix:path or host:port)"), std::string::npos)
      << r.err;
  r = dut.ctl({"conformance", "run", "--target", dut.address(), "--local-ip", dut.endpoint_ip()});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--local-ip: must differ from the DUT's endpoint address " + dut.endpoint_ip()), std::string::npos)
      << r.err;
  r = dut.ctl({"conformance", "run", "--target", dut.address(), "--answer-timeout", "5ms"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--answer-timeout: allowed range [10ms, 60s] (got 5ms)"), std::string::npos) << r.err;
  r = dut.ctl({"conformance", "list", "--cases", "nak.*"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("nak.unknown-connection  (§8, §10)"), std::string::npos) << r.out;
}
