// Finding daemons behind one DNS name (cli/src/discover.h): the address forms,
// the resolver's answer, the TLS names of found daemons and the mapping of
// scenario hosts onto the daemons that answered.
#include "discover.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mc = metarocectl;

namespace {

mc::FoundDaemon answered(const std::string& address, const std::string& name) {
  mc::FoundDaemon d{address, {}, {}};
  d.info.set_name(name);
  return d;
}

mc::FoundDaemon silent(const std::string& address) { return {address, {}, "UNAVAILABLE: connection refused"}; }

}  // namespace

TEST(Discover, ParsesServiceAddresses) {
  auto a = mc::parse_service_address("--hosts-from", "metaroce-endpoint:7443");
  EXPECT_EQ(a.host, "metaroce-endpoint");
  EXPECT_EQ(a.port, "7443");
  a = mc::parse_service_address("--hosts-from", "[fd00::1]:7443");
  EXPECT_EQ(a.host, "fd00::1");
  for (const char* bad : {"metaroce-endpoint", ":7443", "metaroce-endpoint:", "fd00::1:7443", "x:0", "x:65536",
                          "x:74a3", "[]:7443", "[fd00::1:7443"}) {
    try {
      mc::parse_service_address("--hosts-from", bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const mc::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--hosts-from: must be NAME:PORT"), std::string::npos) << e.what();
    }
  }
}

TEST(Discover, JoinsHostAndPortWithBracketsForIpv6) {
  EXPECT_EQ(mc::join_host_port("10.0.0.7", "7443"), "10.0.0.7:7443");
  EXPECT_EQ(mc::join_host_port("fd00::7", "7443"), "[fd00::7]:7443");
}

TEST(Discover, ResolvesANameToItsAddressesOfOneFamily) {
  // An address resolves to itself; localhost to loopback in one family only.
  EXPECT_EQ(mc::resolve_service({"127.0.0.1", "7443"}), std::vector<std::string>{"127.0.0.1:7443"});
  const auto local = mc::resolve_service({"localhost", "7443"});
  ASSERT_EQ(local.size(), 1u) << "127.0.0.1 and ::1 are one host in two families";
  EXPECT_TRUE(local[0] == "127.0.0.1:7443" || local[0] == "[::1]:7443") << local[0];
}

TEST(Discover, FoundDaemonsExpectTheServiceNameInTheirCertificate) {
  mc::ClientOptions options;
  options.tls = true;
  const auto found = mc::options_for_found(options, {"metaroce-endpoint", "7443"}, {"10.0.0.7:7443"});
  EXPECT_EQ(found.tls_server_names.at("10.0.0.7:7443"), "metaroce-endpoint");
  options.tls_server_name = "other";  // --tls-server-name wins
  EXPECT_TRUE(mc::options_for_found(options, {"metaroce-endpoint", "7443"}, {"10.0.0.7:7443"}).tls_server_names.empty());
  options = {};  // no TLS: no names
  EXPECT_TRUE(mc::options_for_found(options, {"metaroce-endpoint", "7443"}, {"10.0.0.7:7443"}).tls_server_names.empty());
}

TEST(Discover, MapsScenarioHostsOntoTheDaemonsOfTheirNames) {
  const std::vector<mc::FoundDaemon> found = {answered("10.0.0.8:7443", "h1"), answered("10.0.0.7:7443", "h0"),
                                              answered("10.0.0.9:7443", "h2")};
  const auto hosts = mc::match_hosts({"h0", "h1"}, found, "metaroce-endpoint:7443");
  EXPECT_EQ(hosts, (std::map<std::string, std::string>{{"h0", "10.0.0.7:7443"}, {"h1", "10.0.0.8:7443"}}))
      << "a daemon the scenario does not use is left alone";
}

TEST(Discover, AMissingHostIsUnreachableAndNamesWhatWasFound) {
  try {
    mc::match_hosts({"h0", "h1"}, {answered("10.0.0.7:7443", "h0"), silent("10.0.0.8:7443")}, "metaroce-endpoint:7443");
    FAIL() << "h1 is not there";
  } catch (const mc::RpcError& e) {
    EXPECT_EQ(e.exit_code(), mc::kExitUnreachable) << "a pod still starting: the Job tries again";
    const std::string m = e.status().error_message();
    EXPECT_NE(m.find("no daemon behind metaroce-endpoint:7443 is named h1"), std::string::npos) << m;
    EXPECT_NE(m.find("found: h0 at 10.0.0.7:7443"), std::string::npos) << m;
    EXPECT_NE(m.find("not answering: 10.0.0.8:7443 (UNAVAILABLE: connection refused)"), std::string::npos) << m;
  }
}

TEST(Discover, TwoDaemonsOfOneNameAreAConfigurationError) {
  try {
    mc::match_hosts({"h0"}, {answered("10.0.0.7:7443", "h0"), answered("10.0.0.8:7443", "h0")},
                    "metaroce-endpoint:7443");
    FAIL() << "two daemons named h0";
  } catch (const mc::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("two daemons answer with the name 'h0' (10.0.0.7:7443 and 10.0.0.8:7443)"),
              std::string::npos)
        << e.what();
  }
}
