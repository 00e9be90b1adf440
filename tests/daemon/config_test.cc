// metaroced configuration: defaults, the lab shortcut, and one clear error
// (key, line, allowed values) for every kind of bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "metaroce/daemon/config.h"
#include "metaroce/lab/config.h"
#include "metaroce/transport/endpoint.h"

namespace md = metaroce::daemon;

namespace {

std::string parse_error(const std::string& yaml) {
  std::string err;
  auto c = md::parse_daemon_yaml(yaml, "t.yaml", &err);
  EXPECT_FALSE(c.has_value()) << yaml;
  return err;
}

const char* kEndpoint = R"(
role: endpoint
endpoint:
  interfaces: [p0, p1]
  address: 10.1.0.1
  mac: 02:00:0a:01:00:01
)";

}  // namespace

TEST(DaemonConfig, EndpointDefaults) {
  std::string err;
  auto c = md::parse_daemon_yaml(kEndpoint, "t.yaml", &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->role, md::DaemonRole::kEndpoint);
  ASSERT_TRUE(c->endpoint);
  EXPECT_FALSE(c->fabric);
  EXPECT_EQ(c->endpoint->datapath, "afxdp");
  EXPECT_EQ(c->endpoint->interfaces.size(), 2u);
  EXPECT_EQ(c->endpoint->udp_port, 4794);
  EXPECT_EQ(c->control.unix_socket, "/run/metaroce/metaroced.sock");
  EXPECT_EQ(c->control.unix_mode, 0660u);
  EXPECT_EQ(md::validate_daemon_config(*c, false), "");
  // The effective config round-trips through YAML.
  auto again = md::parse_daemon_yaml(md::daemon_config_yaml(*c), "again.yaml", &err);
  ASSERT_TRUE(again) << err << "\n" << md::daemon_config_yaml(*c);
  EXPECT_EQ(md::daemon_config_json(*again), md::daemon_config_json(*c));
}

TEST(DaemonConfig, ErrorsNameTheKeyLineAndAllowedValues) {
  EXPECT_EQ(parse_error("role: router\n"), "t.yaml:1: role: must be one of endpoint, fabric, both (got 'router')");
  EXPECT_NE(parse_error("name: x\n").find("role: is required"), std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  datapath: xdp\n")
                .find("t.yaml:7: endpoint.datapath: must be one of afxdp, dpdk, udp (got 'xdp')"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  udp_port: 70000\n")
                .find("endpoint.udp_port: must be an integer in [1, 65535] (got '70000')"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  frame_size: 9000\n").find("endpoint.frame_size: must be an integer in [1024, 3840]"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  min_rto_ns: 5s\n").find("endpoint.min_rto_ns: must be a duration"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  port_rate_bps: 500\n")
                .find("endpoint.port_rate_bps: must be 0 (not paced) or in [1000, 1.6e12] bits/s"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  port_rate_bps: -1\n").find("endpoint.port_rate_bps: must be"),
            std::string::npos);
  {
    std::string err;
    auto c = md::parse_daemon_yaml(std::string(kEndpoint) + "  port_rate_bps: 200000000.0\n", "t.yaml", &err);
    ASSERT_TRUE(c) << err;
    EXPECT_EQ(c->endpoint->port_rate_bps, 200e6);
  }
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  realtime_share: 0.95\n")
                .find("t.yaml:7: endpoint.realtime_share: must be a number in [0, 0.9] (got '0.95')"),
            std::string::npos);
  {
    std::string err;
    auto c = md::parse_daemon_yaml(std::string(kEndpoint) + "  realtime_share: 0\n", "t.yaml", &err);
    ASSERT_TRUE(c) << err;
    EXPECT_EQ(c->endpoint->realtime_share, 0.0);
    auto d = md::parse_daemon_yaml(kEndpoint, "t.yaml", &err);
    ASSERT_TRUE(d) << err;
    EXPECT_EQ(d->endpoint->realtime_share, 0.0) << "ordinary threads unless asked: real-time workers belong pinned";
  }
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  worker_cpu: -2\n")
                .find("endpoint.worker_cpu: must be -1 (any CPU) or a CPU number in [0, 1023] (got '-2')"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  worker_cpu: 1023\n")
                .find("endpoint.worker_cpu: must be -1 (any CPU) or CPU 1023 is not one this process may use ("),
            std::string::npos);
  {
    std::string err;
    auto c = md::parse_daemon_yaml(std::string(kEndpoint) + "  worker_cpu: -1\n", "t.yaml", &err);
    ASSERT_TRUE(c) << err;
    EXPECT_EQ(c->endpoint->worker_cpu, -1);
  }
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  adress: 1.2.3.4\n").find("endpoint.adress: unknown key"), std::string::npos);
  EXPECT_NE(parse_error("role: endpoint\nendpoint:\n  address: 300.1.1.1\n").find("endpoint.address: must be an IPv4"),
            std::string::npos);
  EXPECT_NE(parse_error("role: endpoint\n").find("endpoint.interfaces: is required"), std::string::npos);
  EXPECT_NE(parse_error("role: fabric\nendpoint: {}\n").find("endpoint: is only allowed with role endpoint or both"),
            std::string::npos);
  EXPECT_NE(parse_error("role: [\n").find("YAML"), std::string::npos);
  EXPECT_NE(parse_error("").find("empty configuration"), std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "control:\n  unix_mode: 0999\n").find("control.unix_mode"), std::string::npos);
  EXPECT_NE(parse_error("role: fabric\nfabric:\n  planes: 2\n  hosts: 2\n  interfaces: [[a, b]]\n  host_macs: [02:00:00:00:00:01, 02:00:00:00:00:02]\n")
                .find("fabric.interfaces: must list 2 planes (got 1)"),
            std::string::npos);
  // The fabric node emulates the full mesh only; a clos topology is the simulator's.
  EXPECT_EQ(parse_error("role: fabric\nfabric:\n  topology: clos\n"),
            "t.yaml:3: fabric.topology: the fabric node emulates the full mesh only (mesh; got clos): a clos topology "
            "runs in the simulator (metarocectl scenario run FILE --sim)");
  EXPECT_NE(parse_error("role: fabric\nfabric:\n  planes: 1\n  interfaces: [[a, b]]\n  host_macs: [02:00:00:00:00:01, 02:00:00:00:00:02]\n  ecmp:\n    loss_probability: 1.5\n")
                .find("t.yaml:7: fabric.ecmp.loss_probability: must be in [0, 1] (got 1.5)"),
            std::string::npos);
}

// Issue 11 finding 6: duplicate keys, a directory given as the file, and
// relative paths that must not depend on the daemon's working directory.
// endpoint.dpdk_devices: one DPDK device per interface (a PCI address, e.g.
// an SR-IOV VF, or a virtual device), checked for shape, count and datapath.
// Issue 12: 16,000 connections per daemon. The range and default are
// declared once (config.h) and the parser, the defaults and the message
// all read them.
TEST(DaemonConfig, MaxConnectionsAndConnectionSeriesRanges) {
  std::string err;
  auto c = md::parse_daemon_yaml(kEndpoint, "t.yaml", &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->endpoint->max_connections, 4096u);
  EXPECT_EQ(c->endpoint->max_connections, md::kMaxConnectionsRange.default_value);
  EXPECT_EQ(c->metrics.connection_series, 64u);
  c = md::parse_daemon_yaml(std::string(kEndpoint) + "  max_connections: 32768\nmetrics: {connection_series: 0}\n",
                            "t.yaml", &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->endpoint->max_connections, 32768u);
  EXPECT_EQ(c->metrics.connection_series, 0u);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  max_connections: 32769\n")
                .find("endpoint.max_connections: must be an integer in [1, 32768] (got '32769')"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  max_connections: 0\n")
                .find("endpoint.max_connections: must be an integer in [1, 32768] (got '0')"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "metrics: {connection_series: 4097}\n")
                .find("metrics.connection_series: must be an integer in [0, 4096] (got '4097')"),
            std::string::npos);
}

TEST(DaemonConfig, DpdkDevicesNameOnePciAddressOrVirtualDevicePerInterface) {
  const std::string dpdk = std::string(kEndpoint) + "  datapath: dpdk\n";
  {
    std::string err;
    auto c = md::parse_daemon_yaml(dpdk + "  dpdk_devices: [0000:3b:02.0, 'net_af_xdp1,iface=p1']\n", "t.yaml", &err);
    ASSERT_TRUE(c) << err;
    EXPECT_EQ(c->endpoint->dpdk_devices, (std::vector<std::string>{"0000:3b:02.0", "net_af_xdp1,iface=p1"}));
    auto again = md::parse_daemon_yaml(md::daemon_config_yaml(*c), "again.yaml", &err);
    ASSERT_TRUE(again) << err;
    EXPECT_EQ(again->endpoint->dpdk_devices, c->endpoint->dpdk_devices);
  }
  {
    std::string err;
    auto c = md::parse_daemon_yaml(dpdk + "  dpdk_devices: ['3b:02.7', net_ring0]\n", "t.yaml", &err);
    ASSERT_TRUE(c) << err;
  }
  for (const char* bad : {"0000:3b:02.8", "3b:2.0", "0000:3b:02", "eth0", "net_", "net_AF_XDP0", "0000-3b:02.0", "env:",
                          "env:1PCI", "env:PCI-DEVICE", "ENV:PCIDEVICE_X"})
    EXPECT_NE(parse_error(dpdk + "  dpdk_devices: ['" + bad + "', net_ring0]\n")
                  .find("endpoint.dpdk_devices[0]: must be a PCI address like 0000:3b:02.0, a virtual device like "
                        "net_af_xdp0,iface=p0 or env:NAME (NAME: [A-Za-z_][A-Za-z0-9_]*, at most 128 characters, "
                        "holding a PCI address) (got '" + std::string(bad) + "')"),
              std::string::npos)
        << bad;
  EXPECT_NE(parse_error(dpdk + "  dpdk_devices: [0000:3b:02.0]\n")
                .find("endpoint.dpdk_devices: must name one device per interface: 2 (got 1)"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  dpdk_devices: [0000:3b:02.0, 0000:3b:02.1]\n")
                .find("endpoint.dpdk_devices: needs endpoint.datapath: dpdk (got afxdp)"),
            std::string::npos);
}

// env:NAME: the PCI address a device plugin puts in the pod's environment,
// read when the daemon starts (not by --check-config, which runs anywhere).
TEST(DaemonConfig, DpdkDevicesFromTheEnvironmentAreResolvedAtStart) {
  std::string err;
  auto c = md::parse_daemon_yaml(std::string(kEndpoint) + "  datapath: dpdk\n"
                                     "  dpdk_devices: [env:PCIDEVICE_INTEL_COM_PLANE0, 'net_af_xdp1,iface=p1']\n",
                                 "t.yaml", &err);
  ASSERT_TRUE(c) << err;
  std::map<std::string, std::string> env;
  const auto lookup = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> devices;
  EXPECT_EQ(md::resolve_dpdk_devices(*c->endpoint, lookup, &devices),
            "endpoint.dpdk_devices[0]: env:PCIDEVICE_INTEL_COM_PLANE0 is not set (on Kubernetes the SR-IOV device "
            "plugin sets PCIDEVICE_<RESOURCE> in a pod that requests the resource)");
  env["PCIDEVICE_INTEL_COM_PLANE0"] = "0000:3b:02.1,0000:3b:02.2";
  EXPECT_EQ(md::resolve_dpdk_devices(*c->endpoint, lookup, &devices),
            "endpoint.dpdk_devices[0]: env:PCIDEVICE_INTEL_COM_PLANE0 holds several devices (0000:3b:02.1,0000:3b:02.2); "
            "request one device of that resource per plane");
  env["PCIDEVICE_INTEL_COM_PLANE0"] = "eth0";
  EXPECT_EQ(md::resolve_dpdk_devices(*c->endpoint, lookup, &devices),
            "endpoint.dpdk_devices[0]: env:PCIDEVICE_INTEL_COM_PLANE0 must hold a PCI address like 0000:3b:02.0 (got 'eth0')");
  env["PCIDEVICE_INTEL_COM_PLANE0"] = "0000:3b:02.1";
  EXPECT_EQ(md::resolve_dpdk_devices(*c->endpoint, lookup, &devices), "");
  EXPECT_EQ(devices, (std::vector<std::string>{"0000:3b:02.1", "net_af_xdp1,iface=p1"}));
  // The config keeps what was written: the effective config shows env:NAME.
  EXPECT_NE(md::daemon_config_yaml(*c).find("env:PCIDEVICE_INTEL_COM_PLANE0"), std::string::npos);
}

TEST(DaemonConfig, DuplicateKeysDirectoriesAndRelativeSockets) {
  EXPECT_EQ(parse_error("role: endpoint\nrole: fabric\n"),
            "t.yaml:2: role: duplicate key (first at line 1); give each key once");
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  udp_port: 1000\n  udp_port: 2000\n")
                .find("t.yaml:8: endpoint.udp_port: duplicate key (first at line 7)"),
            std::string::npos);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("mrcfg-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string err;
  EXPECT_FALSE(md::load_daemon_file(dir.string(), &err));
  EXPECT_EQ(err, dir.string() + ": is a directory; --config takes a YAML file (e.g. configs/daemon/example.yaml)");
  // A relative socket is relative to the file, and absolute even when the file was named relatively.
  const std::filesystem::path old = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  std::ofstream("h.yaml") << kEndpoint << "control: {unix_socket: run/h.sock}\n";
  auto c = md::load_daemon_file("h.yaml", &err);
  std::filesystem::current_path(old);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->control.unix_socket, (dir / "run/h.sock").string());
  std::filesystem::remove_all(dir);
}

TEST(DaemonConfig, TcpNeedsTlsOrExplicitInsecureOnLoopback) {
  std::string err;
  auto c = md::parse_daemon_yaml(std::string(kEndpoint) + "control:\n  tcp: 0.0.0.0:50051\n", "t.yaml", &err);
  ASSERT_TRUE(c) << err;
  EXPECT_NE(md::validate_daemon_config(*c, false).find("refusing plain TCP on the non-loopback address"), std::string::npos);
  EXPECT_NE(md::validate_daemon_config(*c, true).find("refusing plain TCP"), std::string::npos);  // even with --insecure
  c = md::parse_daemon_yaml(std::string(kEndpoint) + "control:\n  tcp: 127.0.0.1:50051\n", "t.yaml", &err);
  ASSERT_TRUE(c) << err;
  EXPECT_NE(md::validate_daemon_config(*c, false).find("needs TLS"), std::string::npos);
  EXPECT_EQ(md::validate_daemon_config(*c, true), "");
  c = md::parse_daemon_yaml(std::string(kEndpoint) + "control:\n  tcp: 0.0.0.0:50051\n  tls: {cert: /nonexistent.pem, key: /nonexistent.key}\n",
                            "t.yaml", &err);
  ASSERT_TRUE(c) << err;
  std::string e = md::validate_daemon_config(*c, false);
  EXPECT_NE(e.find("control.tls.cert"), std::string::npos) << e;
  EXPECT_NE(e.find("/nonexistent.pem"), std::string::npos) << e;
  // A peer CA the daemon cannot read is refused at start too, not at the first handshake.
  c = md::parse_daemon_yaml(std::string(kEndpoint) + "control:\n  peer_tls: {ca: /nonexistent-ca.pem}\n", "t.yaml", &err);
  ASSERT_TRUE(c) << err;
  e = md::validate_daemon_config(*c, false);
  EXPECT_NE(e.find("control.peer_tls.ca"), std::string::npos) << e;
  EXPECT_NE(e.find("/nonexistent-ca.pem"), std::string::npos) << e;
  EXPECT_TRUE(md::is_loopback_listen("127.0.0.1:1"));
  EXPECT_TRUE(md::is_loopback_listen("localhost:1"));
  EXPECT_TRUE(md::is_loopback_listen("[::1]:1"));
  EXPECT_FALSE(md::is_loopback_listen("10.0.0.1:1"));
  EXPECT_FALSE(md::is_loopback_listen("0.0.0.0:1"));
}

// A configured token file can never turn authentication off: an empty file,
// a blank first line, a short token or one with spaces is refused, naming the key.
TEST(DaemonConfig, TokenFileMustHoldAUsableToken) {
  const auto dir = std::filesystem::temp_directory_path() / ("mrtoken-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct Case {
    const char* name;
    std::string text;
    const char* want;  // "" = valid
  } cases[] = {
      {"empty", "", "must be a token of 16 to 4096 characters (got 0)"},
      {"blank-first-line", "\nsecret-on-line-two-0123\n", "(got 0)"},
      {"spaces-only", "   \t\n", "(got 0)"},
      {"short", "short-token\n", "(got 11)"},
      {"space-inside", "0123456789 abcdefgh\n", "printable ASCII without spaces"},
      {"good", "0123456789abcdef-token\r\n", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto file = dir / c.name;
    std::ofstream(file) << c.text;
    for (const char* key : {"token_file", "peer_token_file"}) {
      std::string err;
      const auto cfg = md::parse_daemon_yaml(std::string(kEndpoint) + "control:\n  unix_socket: /tmp/x.sock\n  " + key +
                                                 ": " + file.string() + "\n",
                                             "t.yaml", &err);
      ASSERT_TRUE(cfg) << err;
      const std::string e = md::validate_daemon_config(*cfg, false);
      if (*c.want == '\0') {
        EXPECT_EQ(e, "");
      } else {
        EXPECT_NE(e.find(std::string("control.") + key), std::string::npos) << e;
        EXPECT_NE(e.find(c.want), std::string::npos) << e;
      }
    }
  }
  std::string token;
  EXPECT_EQ(md::read_token_file((dir / "good").string(), "control.token_file", &token), "");
  EXPECT_EQ(token, "0123456789abcdef-token");
  EXPECT_NE(md::read_token_file((dir / "missing").string(), "control.token_file", &token).find("cannot read"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(DaemonConfig, LabShortcutDerivesInterfacesAndAddresses) {
  const auto dir = std::filesystem::temp_directory_path() / ("mrcfg" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "lab.yaml") << "name: cfgt\nhosts: 3\nplanes: 2\n";
  std::ofstream(dir / "h1.yaml") << "role: endpoint\nlab: {file: lab.yaml, host: 1}\n";
  std::ofstream(dir / "fab.yaml") << "role: fabric\nlab: {file: lab.yaml, fabric: true}\n";
  std::ofstream(dir / "bad.yaml") << "role: endpoint\nlab: {file: lab.yaml, host: 3}\n";
  std::string err;
  auto h1 = md::load_daemon_file((dir / "h1.yaml").string(), &err);
  ASSERT_TRUE(h1) << err;
  EXPECT_EQ(h1->endpoint->interfaces, (std::vector<std::string>{"p0", "p1"}));
  std::string lab_err;
  auto lab = metaroce::lab::load_lab_file((dir / "lab.yaml").string(), &lab_err);
  ASSERT_TRUE(lab) << lab_err;
  EXPECT_EQ(h1->endpoint->ip, metaroce::lab::host_ip(*lab, 1, 0));
  EXPECT_EQ(h1->endpoint->mac, metaroce::lab::host_mac(*lab, 1, 0));
  auto fab = md::load_daemon_file((dir / "fab.yaml").string(), &err);
  ASSERT_TRUE(fab) << err;
  EXPECT_EQ(fab->fabric->hosts, 3u);
  EXPECT_EQ(fab->fabric->interfaces[1][2], "h2p1");
  EXPECT_EQ(fab->fabric->host_macs[2], metaroce::lab::host_mac(*lab, 2, 0));
  EXPECT_FALSE(md::load_daemon_file((dir / "bad.yaml").string(), &err));
  EXPECT_NE(err.find("lab.host: must be an integer in [0, 2] (got '3')"), std::string::npos) << err;
  EXPECT_FALSE(md::load_daemon_file((dir / "missing.yaml").string(), &err));
  EXPECT_NE(err.find("cannot read"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// The fabric node routes kernel traffic on every plane (each host interface's
// MAC there), and refuses a lab whose MTU its frames cannot carry.
TEST(DaemonConfig, LabFabricKnowsEveryPlanesMacsAndTheLabsMtu) {
  const auto dir = std::filesystem::temp_directory_path() / ("mrcfgm" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "lab.yaml") << "name: cfgm\nhosts: 2\nplanes: 3\nmtu: 2034\n";
  std::ofstream(dir / "jumbo.yaml") << "name: cfgj\nhosts: 2\nplanes: 3\nmtu: 9000\n";
  std::ofstream(dir / "fab.yaml") << "role: fabric\nlab: {file: lab.yaml, fabric: true}\n";
  std::ofstream(dir / "fab-jumbo.yaml") << "role: fabric\nlab: {file: jumbo.yaml, fabric: true}\n";
  std::ofstream(dir / "fab-jumbo-big.yaml") << "role: fabric\nlab: {file: jumbo.yaml, fabric: true}\n"
                                            << "fabric: {frame_size: 3840}\n";
  std::ofstream(dir / "small.yaml") << "name: cfgs\nhosts: 2\nplanes: 1\nmtu: 576\n";
  std::ofstream(dir / "h0-small.yaml") << "role: endpoint\nlab: {file: small.yaml, host: 0}\n"
                                       << "endpoint: {mtu_payload: 1024}\n";
  std::string err, lab_err;
  auto lab = metaroce::lab::load_lab_file((dir / "lab.yaml").string(), &lab_err);
  ASSERT_TRUE(lab) << lab_err;
  auto fab = md::load_daemon_file((dir / "fab.yaml").string(), &err);
  ASSERT_TRUE(fab) << err;
  ASSERT_EQ(fab->fabric->interface_macs.size(), 3u);
  for (uint32_t p = 0; p < 3; ++p)
    for (uint32_t h = 0; h < 2; ++h) EXPECT_EQ(fab->fabric->interface_macs[p][h], metaroce::lab::host_mac(*lab, h, p));
  EXPECT_NE(fab->fabric->interface_macs[1][0], fab->fabric->host_macs[0]);
  EXPECT_FALSE(md::load_daemon_file((dir / "fab-jumbo.yaml").string(), &err));
  EXPECT_NE(err.find("fabric.frame_size: is 2048 B, but the lab's mtu 9000 needs frames of 9014 B: set the lab's mtu "
                     "to at most frame_size - 14 = 2034"),
            std::string::npos)
      << err;
  EXPECT_FALSE(md::load_daemon_file((dir / "fab-jumbo-big.yaml").string(), &err));
  EXPECT_NE(err.find("fabric.frame_size: is 3840 B"), std::string::npos) << err;
  EXPECT_FALSE(md::load_daemon_file((dir / "h0-small.yaml").string(), &err));
  EXPECT_NE(err.find("endpoint.mtu_payload: must be at most the lab's mtu + 14 - 128 = 462 (got 1024)"), std::string::npos)
      << err;
  std::filesystem::remove_all(dir);
}

// min_rto_ns and min_pto_ns: the daemon accepts exactly what the engine
// accepts (it used to take up to 1 s, which the engine then refused above
// max_rto_ns, 50 ms), at both edges and just outside them.
TEST(DaemonConfig, MinRtoRangeIsTheEnginesAtBothEdges) {
  namespace mt = metaroce::transport;
  for (const char* key : {"min_rto_ns", "min_pto_ns"}) {
    for (const mt::Nanos v : {mt::kParamMinRto.min, mt::kParamMinRto.max}) {
      std::string err;
      auto c = md::parse_daemon_yaml(std::string(kEndpoint) + "  " + key + ": " + std::to_string(v) + "ns\n", "t.yaml", &err);
      ASSERT_TRUE(c) << key << " " << v << ": " << err;
      mt::ConnectionConfig cc;
      cc.local_id = cc.remote_id = 1, cc.peer_ip = 0x0a000001;
      cc.paths.push_back({});
      cc.tuning.min_rto_ns = c->endpoint->min_rto_ns;
      cc.tuning.min_pto_ns = c->endpoint->min_pto_ns;
      EXPECT_EQ(mt::validate(cc), "") << key << " = " << v << " passed the daemon, so the engine must take it";
    }
    for (const mt::Nanos v : {mt::kParamMinRto.min - 1, mt::kParamMinRto.max + 1}) {
      const std::string err = parse_error(std::string(kEndpoint) + "  " + key + ": " + std::to_string(v) + "ns\n");
      EXPECT_NE(err.find(std::string("endpoint.") + key + ": must be a duration in [10000, 50000000]"), std::string::npos)
          << err;
    }
  }
}

// Durations go through the shared units library: the spellings of
// metarocectl's flags and scenario files, and bare integers as nanoseconds.
TEST(DaemonConfig, DurationsTakeTheSharedUnitSpellings) {
  for (const auto& [text, ns] : std::vector<std::pair<std::string, int64_t>>{
           {"2000000", 2'000'000}, {"2ms", 2'000'000}, {"1.5ms", 1'500'000}, {"2000us", 2'000'000}, {"20MS", 20'000'000}}) {
    std::string err;
    auto c = md::parse_daemon_yaml(std::string(kEndpoint) + "  min_rto_ns: " + text + "\n", "t.yaml", &err);
    ASSERT_TRUE(c) << text << ": " << err;
    EXPECT_EQ(c->endpoint->min_rto_ns, ns) << text;
  }
  EXPECT_NE(parse_error(std::string(kEndpoint) + "  min_rto_ns: 2.5\n").find("endpoint.min_rto_ns: must be a duration"),
            std::string::npos);
}

// Role both in a lab: each role opens its ports in its own namespace (the
// host's and the fabric's); a namespace named by hand must be a valid name.
TEST(DaemonConfig, BothRolesInALabOpenEachRolesPortsInItsNamespace) {
  const auto dir = std::filesystem::temp_directory_path() / ("mrcfgns" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "lab.yaml") << "name: cfgn\nhosts: 2\nplanes: 2\n";
  std::ofstream(dir / "both.yaml") << "role: both\nlab: {file: lab.yaml, host: 0, fabric: true}\n";
  std::ofstream(dir / "h1.yaml") << "role: endpoint\nlab: {file: lab.yaml, host: 1}\n";
  std::string err;
  auto both = md::load_daemon_file((dir / "both.yaml").string(), &err);
  ASSERT_TRUE(both) << err;
  EXPECT_EQ(both->endpoint->netns, metaroce::lab::host_netns("cfgn", 0));
  EXPECT_EQ(both->fabric->netns, metaroce::lab::fabric_netns("cfgn"));
  auto h1 = md::load_daemon_file((dir / "h1.yaml").string(), &err);
  ASSERT_TRUE(h1) << err;
  EXPECT_EQ(h1->endpoint->netns, "") << "one role: the namespace the daemon was started in";
  std::filesystem::remove_all(dir);
  std::string ok;
  auto c = md::parse_daemon_yaml(std::string(kEndpoint) + "  netns: lab-h0_x.1\n", "t.yaml", &ok);
  ASSERT_TRUE(c) << ok;
  EXPECT_EQ(c->endpoint->netns, "lab-h0_x.1");
  for (const std::string& bad : std::vector<std::string>{"\"\"", "a/b", "..", std::string(65, 'n')})
    EXPECT_NE(parse_error(std::string(kEndpoint) + "  netns: " + bad + "\n")
                  .find("endpoint.netns: must be a network namespace name: 1 to 64 of"),
              std::string::npos)
        << bad;
}

// Found by fuzz_config_parsers: a socket path with a control character and
// invalid UTF-8 was accepted, and its effective YAML parsed to another config.
TEST(DaemonConfig, StringsMustBePrintableUtf8) {
  EXPECT_NE(parse_error(std::string(kEndpoint) + "control:\n  unix_socket: /run/a\x02" "b.sock\n")
                .find("control.unix_socket: must be printable UTF-8 text (byte 6 is 0x02)"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kEndpoint) + "control:\n  unix_socket: /run/\xff.sock\n")
                .find("control.unix_socket: must be printable UTF-8 text (byte 5 is 0xff)"),
            std::string::npos);
  std::string err;
  EXPECT_TRUE(md::parse_daemon_yaml(std::string(kEndpoint) + "control:\n  unix_socket: /run/h\xc3\xa9te.sock\n", "t.yaml", &err)) << err;
}

TEST(DaemonConfig, ShippedConfigsAreValid) {
  for (const char* f : {"lab-h0.yaml", "lab-h1.yaml", "lab-fabric.yaml", "example.yaml"}) {
    std::string err;
    auto c = md::load_daemon_file(std::string(METAROCE_SOURCE_DIR) + "/configs/daemon/" + f, &err);
    ASSERT_TRUE(c) << f << ": " << err;
    EXPECT_EQ(md::validate_daemon_config(*c, false), "") << f;
  }
}
