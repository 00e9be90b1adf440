// A lab: N host network namespaces, each with P veth interfaces (one per
// plane), whose peer ends all sit in one fabric namespace, unbridged (the
// fabric node bridges them later). Everything is derived from a short YAML
// description, deterministically, so tests and daemons can compute the same
// names and addresses (or read them from `metaroce_lab up --print-env`).
//
//   namespaces  <name>-h<i> (host i), <name>-fab (fabric)
//   host i      interface p<j> per plane j: address subnets[j] + i + 1,
//               MAC 02:00:<its IPv4 address's four bytes> (the MACs the UDP
//               port synthesises too), static neighbour entries to every other
//               host on that plane (no ARP through the fabric)
//   fabric      interface h<i>p<j> per host and plane, no address,
//               MAC 02:01:<the facing host interface's IPv4 address>
//   all         MTU `mtu`, IPv6 disabled (no RS/DAD/MLD noise on the fabric)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/wire/udp_frame.h"

namespace metaroce::lab {

inline constexpr uint32_t kMaxHosts = 250;
inline constexpr uint32_t kMaxPlanes = 16;
inline constexpr uint32_t kMinMtu = 576;
inline constexpr uint32_t kMaxMtu = 9000;
inline constexpr size_t kMaxNameLength = 8;

struct Subnet {
  uint32_t network = 0;  // host order, host bits zero
  uint32_t prefix_len = 24;
};

struct LabConfig {
  std::string name;              // [a-z0-9]{1,8}: namespace prefix, unique per lab on a machine
  uint32_t hosts = 2;            // [1, 250]
  uint32_t planes = 4;           // [1, 16]
  // [576, 9000] on every veth end. The default is what the daemons' default
  // 2048-byte datapath frames carry (2048 - 14 B Ethernet header), so kernel
  // traffic never sends a frame the fabric node must drop.
  uint32_t mtu = 2034;
  std::vector<Subnet> subnets;   // one per plane; default 10.<100+p>.0.0/24
};

// Parses and validates a lab description. `source` names it in errors
// ("lab.yaml:3: hosts: must be an integer in [1, 250] (got 300)"). On failure
// returns nullopt and sets *error to one line naming the field.
std::optional<LabConfig> parse_lab_yaml(const std::string& text, const std::string& source, std::string* error);
std::optional<LabConfig> load_lab_file(const std::string& path, std::string* error);

// Every configuration-like file the tools read (lab descriptions, daemon
// configs, scenarios, token files) is read through this: a regular file of at
// most max_bytes. A directory, FIFO or device (/dev/zero, a pipe that never
// ends) is refused instead of blocking or filling memory. On failure returns
// nullopt and *error says "<path>: <why>".
inline constexpr size_t kMaxConfigFileBytes = 1 << 20;
// A parser's error message as one line: control characters (a quoted value may
// hold a newline) become '?', and it is cut at kMaxErrorChars.
inline constexpr size_t kMaxErrorChars = 512;
std::string one_line(std::string message);
std::optional<std::string> read_config_text(const std::string& path, size_t max_bytes, std::string* error);

// Empty when `name` is a valid lab name/prefix, else why not (naming `field`).
std::string check_lab_name(const std::string& name, const std::string& field = "name");

// Derived names and addresses.
std::string host_netns(const std::string& lab, uint32_t host);
std::string fabric_netns(const std::string& lab);
std::string host_ifname(uint32_t plane);                   // "p<plane>"
std::string fabric_ifname(uint32_t host, uint32_t plane);  // "h<host>p<plane>"
uint32_t host_ip(const LabConfig& lab, uint32_t host, uint32_t plane);
wire::MacAddr host_mac(const LabConfig& lab, uint32_t host, uint32_t plane);
wire::MacAddr fabric_mac(const LabConfig& lab, uint32_t host, uint32_t plane);

// Parses a namespace name as belonging to lab `prefix`: host index, or -1 for
// the fabric namespace; nullopt when it is not one of this lab's names.
std::optional<int> parse_lab_netns(const std::string& prefix, const std::string& netns);

std::string ip_to_string(uint32_t ip);
std::string mac_to_string(const wire::MacAddr& mac);
std::string subnet_to_string(const Subnet& s);

// Addresses and MACs per host and plane as JSON (the `--print-env` output):
// {"name", "mtu", "planes": [{"plane", "subnet"}],
//  "hosts": [{"host", "netns", "planes": [{"plane", "ifname", "ip", "prefix_len", "mac",
//             "fabric_ifname", "fabric_mac"}]}],
//  "fabric": {"netns", "links": [{"ifname", "host", "plane", "mac", "peer_ip", "peer_mac"}]}}
std::string lab_env_json(const LabConfig& lab, int indent = 2);

}  // namespace metaroce::lab
