// metaroced's configuration file (YAML), parsed and validated in one place.
// Every error names the key (with its line) and the allowed values, e.g.
//   "h0.yaml:7: endpoint.datapath: must be one of afxdp, dpdk, udp (got 'xdp')".
// Unknown keys are errors too, so a typo never silently falls back to a default.
// The documented example is configs/daemon/example.yaml; docs/control-plane.md
// describes every key.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/datapath/scheduling.h"
#include "metaroce/emulator/link.h"
#include "metaroce/security/server_security.h"
#include "metaroce/transport/types.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::daemon {

enum class DaemonRole : uint8_t { kEndpoint, kFabric, kBoth };
const char* role_name(DaemonRole r);

struct TlsFiles {
  std::string cert, key;     // PEM files
  std::string client_ca;     // server: when set, clients must present a certificate it signed
  std::string ca;            // client (peer dialing): CA of the peer's server certificate
  std::string server_name;   // client: expected name in the peer's certificate ("" = from the address)
};

struct ControlConfig {
  std::string unix_socket = "/run/metaroce/metaroced.sock";  // "" = no Unix socket
  uint32_t unix_mode = 0660;   // [0600, 0777] permission bits of the socket
  std::string tcp;             // "host:port" ("" = no TCP listener)
  TlsFiles tls;                // for the TCP listener
  std::string token_file;      // when set, every call needs "authorization: Bearer <token>"
  bool insecure = false;       // allow plain TCP, loopback only (or --insecure)
  std::string peer_address;    // how other daemons reach this one ("" = unix://<unix_socket>)
  // Dialing peer daemons (connection setup, verification).
  std::string peer_token_file;
  TlsFiles peer_tls;           // ca (+ cert/key for client certs) when peers are TCP+TLS
};

// A config key's allowed range and default, declared once: the parser, the
// effective config's defaults, the errors and docs/control-plane.md read it.
struct ConfigRange {
  int64_t min = 0, max = 0, default_value = 0;
};

// metrics.connection_series: connections with their own series on /metrics and
// in Daemon.GetCounters (connection_*{conn=...}, path_*{conn=...}), the lowest
// ids first; the totals (connections, endpoint_connection_state_bytes, ...)
// count every connection. 16,000 connections x 14 series each would be 224,000
// lines per scrape and a GetCounters answer far above gRPC's 4 MB.
inline constexpr ConfigRange kConnectionSeriesRange{.min = 0, .max = 4096, .default_value = 64};

struct MetricsConfig {
  std::string listen;          // "host:port" for GET /metrics ("" = off)
  uint32_t connection_series = static_cast<uint32_t>(kConnectionSeriesRange.default_value);
};

// endpoint.max_connections: connections (requester and responder halves) one
// daemon holds at once. Issue 12 asks for 16,000; an idle connection holds
// under 1 kB of engine state (docs/architecture.md, "Memory per connection").
inline constexpr ConfigRange kMaxConnectionsRange{.min = 1, .max = 32768, .default_value = 4096};

struct EndpointSection {
  std::string datapath = "afxdp";          // afxdp | dpdk | udp
  std::vector<std::string> interfaces;     // one per plane, [1, 16]
  // Network namespace (/run/netns/NAME) the ports are opened in; "" = the
  // daemon's own. A lab daemon with role both sets it for each role.
  std::string netns;
  uint32_t ip = 0;                         // the endpoint's transport IPv4
  wire::MacAddr mac{};                     // the MAC it sends from and receives on, on every plane
  uint16_t udp_port = 4794;                // MetaRoCE UDP port [1, 65535]
  std::string xdp_mode = "skb";            // afxdp: auto | native | skb
  uint32_t frame_size = 2048;              // [1024, 3840] for afxdp, [1024, 9216] otherwise
  std::vector<std::string> eal_args;       // dpdk: EAL arguments (default: --no-huge ... per daemon)
  // dpdk: the device of each interface, in the same order: a PCI address
  // ("0000:3b:02.0", e.g. an SR-IOV VF bound to vfio-pci), a virtual device
  // ("net_af_xdp0,iface=p0") or "env:NAME", the PCI address in environment
  // variable NAME when the daemon starts (resolve_dpdk_devices): what the
  // SR-IOV device plugin gives a pod (PCIDEVICE_<RESOURCE>), chosen only when
  // the pod is scheduled. Empty: net_af_packet on each interface (labs).
  std::vector<std::string> dpdk_devices;
  // Connections' defaults; ranges in transport/connection_params.h (mtu_payload
  // also at most frame_size - 128).
  uint32_t mtu_payload = transport::kParamMtuPayload.default_value;
  transport::Nanos min_rto_ns = transport::kParamMinRto.default_value;
  transport::Nanos min_pto_ns = transport::kParamMinPto.default_value;
  double inbound_capacity_bps = 0;         // for the receiver's fair-share hint (0 = none)
  // The line rate the endpoint sends at on each plane, as a NIC does
  // (datapath::EndpointWorker): the rate of the emulated host link its ports
  // feed. 0 = as fast as the ports take frames; else [1e3, 1.6e12].
  double port_rate_bps = 0;
  bool busy_poll = false;                  // spin instead of blocking when idle
  // Share of every 10 ms the worker runs SCHED_FIFO, [0, 0.9]; 0 (the
  // default): never (datapath/scheduling.h says why and when; needs
  // CAP_SYS_NICE, else the worker stays ordinary).
  double realtime_share = datapath::kRealtimeShareDefault;
  // The CPU the worker thread is pinned to; -1: any (datapath/scheduling.h
  // says why real-time workers should be pinned).
  int worker_cpu = -1;
  uint32_t max_connections = static_cast<uint32_t>(kMaxConnectionsRange.default_value);  // kMaxConnectionsRange
  uint64_t max_region_bytes = 256ull << 20;  // per connection/job region, [64 KiB, 4 GiB]
  // All memory registered on callers' behalf (operator regions, responder
  // halves, job buffers) together, [1 MiB, 1 TiB] (daemon/src/memory_budget.h).
  uint64_t memory_budget_bytes = 1ull << 30;
  // Every this often each accepted connection (a responder half, Peer.Accept)
  // asks its requester daemon whether the other half still exists; it is
  // released when the answer is no, or when the requester has not answered for
  // this long (it never existed, crashed or went away). [1 s, 1 h]
  transport::Nanos half_open_timeout_ns = 60'000'000'000;
};

struct FabricSection {
  std::string datapath = "afxdp";          // afxdp | dpdk
  uint32_t hosts = 2;                      // [2, 64]
  uint32_t planes = 4;                     // [1, 16]
  uint32_t ecmp_links = 1;                 // [1, 64]
  std::vector<std::vector<std::string>> interfaces;  // [plane][host]: the interface facing host on plane
  std::string netns;                       // as EndpointSection::netns
  std::vector<wire::MacAddr> host_macs;    // the endpoint MAC of each host (routing by destination MAC)
  // Lab mode only, [plane][host]: each host's interface MAC on that plane, so
  // kernel traffic (ping, iperf3) crosses every plane, not only plane 0.
  std::vector<std::vector<wire::MacAddr>> interface_macs;
  uint32_t frame_size = 2048;
  std::vector<std::string> eal_args;
  emulator::LinkConfig port;               // host uplinks and downlinks
  emulator::LinkConfig ecmp;               // every ECMP link's base settings (Fabric.Reset returns here)
  uint64_t seed = 1;
  bool busy_poll = false;
  double realtime_share = datapath::kRealtimeShareDefault;  // as EndpointSection::realtime_share
  int worker_cpu = -1;                                       // as EndpointSection::worker_cpu
};

struct DaemonConfig {
  std::string source;              // file name, for messages
  std::string name = "metaroced";  // [A-Za-z0-9_.-]{1,32}
  DaemonRole role = DaemonRole::kEndpoint;
  std::string log_level = "info";  // trace | debug | info | warn | error | off
  ControlConfig control;
  MetricsConfig metrics;
  std::optional<EndpointSection> endpoint;  // required for role endpoint/both
  std::optional<FabricSection> fabric;      // required for role fabric/both
  // `lab: {file, host | fabric}` derives interfaces and addresses from a lab file.
  std::string lab_file;
  int lab_host = -1;               // >= 0: endpoint of lab host N; -1: not used
  bool lab_fabric = false;
};

// Parses and validates. On failure returns nullopt and sets *error (one line).
std::optional<DaemonConfig> parse_daemon_yaml(const std::string& text, const std::string& source, std::string* error);
std::optional<DaemonConfig> load_daemon_file(const std::string& path, std::string* error);
// Checks a parsed config beyond single keys (role vs sections, TLS rules); also
// run on command-line overrides. --insecure is passed in separately.
std::string validate_daemon_config(const DaemonConfig& c, bool insecure_flag);

// Token and PEM files (control.token_file, control.tls.*, ...) follow the
// rules of the metaroce.v1 servers' one security module (the conformance
// suite's --peer-tls-* and --peer-token-file too); errors name the config key.
// Every configured file is read once by validate_daemon_config, so a daemon
// refuses to start on one it cannot read instead of failing each TLS
// handshake later.
using security::kMaxTokenChars;
using security::kMinTokenChars;
using security::read_pem_file;
using security::read_token_file;

// endpoint.dpdk_devices with each "env:NAME" replaced by the PCI address in
// that environment variable, read through `getenv` (the process environment
// in the daemon; a map in tests). Returns "" and sets *devices, or an error
// naming the entry ("endpoint.dpdk_devices[1]: env:PCIDEVICE_X is not set
// ...") when the variable is unset, holds several devices or no PCI address.
std::string resolve_dpdk_devices(const EndpointSection& e, const std::function<const char*(const char*)>& getenv,
                                 std::vector<std::string>* devices);

// The effective configuration (defaults filled in) as YAML and as JSON.
std::string daemon_config_yaml(const DaemonConfig& c);
std::string daemon_config_json(const DaemonConfig& c);

// control.peer_address for `metaroced --peer-host HOST`: HOST (a name, an IPv4
// or an IPv6 address, which gets brackets) with control.tcp's port, the port
// peers call. Returns "" and sets *address, or an error when the config has no
// control.tcp or HOST is empty, holds a port, brackets or control characters.
std::string peer_address_for_host(const DaemonConfig& c, const std::string& host, std::string* address);

using security::is_loopback_listen;
}  // namespace metaroce::daemon
