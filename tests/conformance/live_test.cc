// The conformance suite against a real metaroced: one endpoint daemon on the
// UDP datapath over loopback (unprivileged, runs anywhere), driven only
// through `metarocectl conformance run`. Every case must pass, the JSON and
// JUnit files must parse and agree with the table, and bad targets and bad
// --cases patterns must be clear usage errors. The cases where the DUT sends
// also run with the suite's Peer service on TCP with mutual TLS, and a DUT
// with a wrong client certificate must be refused with a clear message.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
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
  // `control_extra`: more keys of its control section, e.g. "  peer_tls: {...}\n".
  explicit UdpDaemon(const std::string& control_extra = "")
      : dir_(fs::temp_directory_path() / ("mrconf-" + std::to_string(getpid()))) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / "token") << kToken << "\n";
    // A port and an address of its own per test process (the DUT also listens
    // on its address's UDP 4791 for RoCEv2); the suite takes the partner address.
    const int port = 20000 + (getpid() + 7919) % 20000;
    std::ofstream(dir_ / "dut.yaml") << "name: dut\nrole: endpoint\ncontrol:\n  unix_socket: " << (dir_ / "dut.sock").string()
                                     << "\n  token_file: token\n" << control_extra
                                     << "endpoint:\n  datapath: udp\n  interfaces: [lo]\n"
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

namespace {

// The cases where the DUT sends and the suite's Peer service answers it.
const char* const kDutSenderCases = "retransmit.exact-hole,completion.requester-order";

// Certificates made with openssl as tests/scenario/check_mtls_multihost.sh
// makes them: a CA; the suite's Peer service certificate (server use, IP
// SANs 127.0.0.1 and 127.0.0.2, the addresses the DUT dials); a DUT daemon's
// client certificate; and a client certificate of another CA, which the suite
// must refuse. With --peer-listen 0.0.0.0 the DUT dials the suite's packet
// address, the partner of the DUT's own (daemon_test::loopback_ip(1)), which
// the certificate names too.
class TestPki {
 public:
  TestPki() : dir_(fs::temp_directory_path() / ("mrconf-pki-" + std::to_string(getpid()))) {
    if (ml::run_command({"openssl", "version"}).status != 0) return;
    fs::create_directories(dir_);
    ok_ = new_ca("ca") && new_ca("rogue-ca") &&
          issue("ca", "suite",
                "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,IP:" + daemon_test::loopback_ip(1) +
                    "\nextendedKeyUsage=serverAuth\n") &&
          issue("ca", "dut", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n") &&
          issue("rogue-ca", "rogue-dut", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n");
  }
  ~TestPki() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  bool has_openssl() const { return fs::exists(dir_); }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  // A DUT daemon's control.peer_tls: it trusts the CA of the suite's
  // certificate and presents `client`'s certificate.
  std::string peer_tls_yaml(const std::string& client) const {
    return "  peer_tls: {ca: " + file("ca.crt") + ", cert: " + file(client + ".crt") + ", key: " + file(client + ".key") +
           "}\n";
  }
  // metarocectl's flags for the suite's Peer service on TCP with mutual TLS.
  std::vector<std::string> suite_flags() const {
    return {"--peer-listen", "127.0.0.1:0", "--peer-tls-cert", file("suite.crt"), "--peer-tls-key", file("suite.key"),
            "--peer-tls-client-ca", file("ca.crt")};
  }

 private:
  bool openssl(std::vector<std::string> args) {
    args.insert(args.begin(), "openssl");
    const auto r = ml::run_command(args);
    if (r.status != 0) error_ += r.err;
    return r.status == 0;
  }
  bool new_ca(const std::string& name) {
    return openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                    "-subj", "/CN=" + name, "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign", "-keyout", file(name + ".key"), "-out", file(name + ".crt")});
  }
  bool issue(const std::string& ca, const std::string& name, const std::string& extensions) {
    std::ofstream(dir_ / (name + ".ext")) << extensions;
    return openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=" + name,
                    "-keyout", file(name + ".key"), "-out", file(name + ".csr")}) &&
           openssl({"x509", "-req", "-in", file(name + ".csr"), "-CA", file(ca + ".crt"), "-CAkey", file(ca + ".key"),
                    "-CAcreateserial", "-days", "1", "-extfile", file(name + ".ext"), "-out", file(name + ".crt")});
  }

  fs::path dir_;
  bool ok_ = false;
  std::string error_;
};

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

// The cases where the DUT sends, with the suite's Peer service on TCP
// 127.0.0.1 with mutual TLS and a bearer token, as a DUT on another host
// reaches it: the DUT's daemon dials it with its own control.peer_tls, as it
// dials any peer daemon. Then on 0.0.0.0 (the DUT told the suite's packet
// address), the same service refusing a wrong token, and a port already taken
// refused as a usage error.
TEST(ConformanceLive, DutSenderCasesReachTheSuitesPeerServiceOverTcpWithMutualTls) {
  TestPki pki;
  if (!pki.has_openssl()) GTEST_SKIP() << "needs openssl to make the certificates";
  ASSERT_TRUE(pki.ok()) << pki.error();
  UdpDaemon dut(pki.peer_tls_yaml("dut"));
  ASSERT_TRUE(dut.ready()) << dut.log();
  // The daemon sends its peers its control.token_file token (no peer_token_file).
  const std::string token_file = dut.file("token").string();
  const std::string json_file = dut.file("peer-tcp.json").string();
  auto r = dut.ctl(joined({"conformance", "run", "--target", dut.address(), "--cases", kDutSenderCases, "--json",
                           json_file, "--peer-token-file", token_file},
                          pki.suite_flags()));
  std::printf("%s", r.out.c_str());
  EXPECT_EQ(r.status, 0) << r.out << r.err << dut.log();
  EXPECT_NE(r.out.find("2 of 2 cases passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("its Peer service at 127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(mutual TLS)"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json_file), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << slurp(json_file);
  ASSERT_EQ(j["cases"].size(), 2u) << j.dump(2);
  for (const auto& c : j["cases"]) EXPECT_EQ(c["result"], "PASS") << c.dump(2);

  // Listening on every address: the DUT is told the suite's packet address
  // (on loopback the partner of the DUT's, loopback_ip(1)).
  auto wildcard = pki.suite_flags();
  wildcard[1] = "0.0.0.0:0";
  r = dut.ctl(joined({"conformance", "run", "--target", dut.address(), "--cases", kDutSenderCases, "--peer-token-file",
                      token_file},
                     wildcard));
  EXPECT_EQ(r.status, 0) << r.out << r.err << dut.log();
  EXPECT_NE(r.out.find("its Peer service at " + daemon_test::loopback_ip(1) + ":"), std::string::npos) << r.out;

  // The right certificate but another token: the DUT's Peer.Accept is refused, and said so.
  std::ofstream(dut.file("other-token")) << "another-token-0123456789\n";
  r = dut.ctl(joined({"-o", "json", "conformance", "run", "--target", dut.address(), "--cases", kDutSenderCases,
                      "--peer-token-file", dut.file("other-token").string()},
                     pki.suite_flags()));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const auto t = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(t.is_discarded()) << r.out << r.err;
  for (const auto& c : t["cases"]) {
    EXPECT_EQ(c["result"], "FAIL") << c.dump(2);
    const std::string failure = c["failure"];
    EXPECT_NE(failure.find("ended before its Peer.Accept reached the suite's Peer service at 127.0.0.1:"),
              std::string::npos)
        << failure;
    EXPECT_NE(failure.find("missing or wrong bearer token"), std::string::npos) << failure;
  }

  // A port something else listens on (without SO_REUSEPORT): a usage error naming the flag.
  const int taken = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(taken, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(taken, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(taken, 1), 0);
  ASSERT_EQ(getsockname(taken, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string listen_at = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  auto flags = pki.suite_flags();
  flags[1] = listen_at;
  r = dut.ctl(joined({"conformance", "run", "--target", dut.address(), "--cases", kDutSenderCases}, flags));
  close(taken);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--peer-listen: the suite's Peer service cannot listen on " + listen_at), std::string::npos)
      << r.err;
}

// A DUT whose client certificate another CA signed: the suite's mutual TLS
// refuses the handshake, the DUT's job fails, and each case says so as soon as
// the job has ended, well inside the wait for Peer.Accept (--answer-timeout).
TEST(ConformanceLive, AWrongClientCertificateIsRefusedWithAClearMessageNotAHang) {
  TestPki pki;
  if (!pki.has_openssl()) GTEST_SKIP() << "needs openssl to make the certificates";
  ASSERT_TRUE(pki.ok()) << pki.error();
  UdpDaemon dut(pki.peer_tls_yaml("rogue-dut"));
  ASSERT_TRUE(dut.ready()) << dut.log();
  constexpr double kAnswerTimeoutSeconds = 20;
  const auto r = dut.ctl(joined({"-o", "json", "conformance", "run", "--target", dut.address(), "--cases",
                                 kDutSenderCases, "--answer-timeout", "20s"},
                                pki.suite_flags()));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  ASSERT_EQ(j["cases"].size(), 2u) << r.out;
  for (const auto& c : j["cases"]) {
    EXPECT_EQ(c["result"], "FAIL") << c.dump(2);
    const std::string failure = c["failure"];
    std::printf("%s: %s\n", c["id"].get<std::string>().c_str(), failure.c_str());
    EXPECT_NE(failure.find("ended before its Peer.Accept reached the suite's Peer service at 127.0.0.1:"),
              std::string::npos)
        << failure;
    EXPECT_NE(failure.find("(mutual TLS): FAILED: connection to 127.0.0.1:"), std::string::npos) << failure;
    EXPECT_NE(failure.find("whose cert and key --peer-tls-client-ca must have signed"), std::string::npos) << failure;
    // Ended by the refusal, not by running out the wait for Peer.Accept.
    EXPECT_LT(c["seconds"].get<double>(), kAnswerTimeoutSeconds / 2) << failure;
  }
}

// Every --peer-* flag checked before anything is asked of the DUT (so no
// daemon here), each error naming its flag and what is allowed: exit 2.
TEST(ConformanceLive, PeerServiceFlagsAreCheckedWithClearErrors) {
  const fs::path dir = fs::temp_directory_path() / ("mrconf-flags-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "short-token") << "short\n";
  const std::string nobody = "unix://" + (dir / "nobody.sock").string(), missing = (dir / "missing.pem").string();
  auto run = [&](std::vector<std::string> flags) {
    return ml::run_command(joined({METAROCECTL_PATH, "conformance", "run", "--target", nobody}, flags));
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--peer-listen", "7444"},
       "--peer-listen: must be HOST:PORT with PORT in [0, 65535] (0: a free port), HOST an address of this host, "
       "[IPv6] or a name, e.g. 0.0.0.0:7444 or 127.0.0.1:0 (got '7444')"},
      {{"--peer-listen", "127.0.0.1:65536"}, "--peer-listen: must be HOST:PORT with PORT in [0, 65535]"},
      {{"--peer-listen", "::1:7444"}, "--peer-listen: must be HOST:PORT"},
      {{"--peer-listen", "0.0.0.0:7444"},
       "--peer-listen: refusing plain TCP on the non-loopback address '0.0.0.0:7444' (give --peer-tls-cert and "
       "--peer-tls-key)"},
      {{"--peer-address", "192.0.2.7:7444"}, "--peer-address: needs --peer-listen"},
      {{"--peer-listen", "127.0.0.1:0", "--peer-address", "192.0.2.7:0"},
       "--peer-address: must be HOST:PORT with PORT in [1, 65535]"},
      {{"--peer-tls-cert", missing}, "--peer-tls-cert and --peer-tls-key: give both or neither"},
      {{"--peer-tls-client-ca", missing}, "--peer-tls-client-ca: needs --peer-tls-cert and --peer-tls-key"},
      {{"--peer-listen", "127.0.0.1:0", "--peer-tls-cert", missing, "--peer-tls-key", missing},
       "--peer-tls-cert: "},
      {{"--peer-listen", "127.0.0.1:0", "--peer-token-file", (dir / "short-token").string()},
       "--peer-token-file: the first line of '" + (dir / "short-token").string() + "' must be a token of 16 to 4096"},
      {{"--peer-token-file", (dir / "short-token").string()}, "--peer-token-file: the first line"},
  };
  for (const auto& [flags, message] : cases) {
    const auto r = run(flags);
    std::string shown;
    for (const auto& f : flags) shown += f + " ";
    EXPECT_EQ(r.status, 2) << shown << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << shown << "\n" << r.err;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}
