#include "metaroce/daemon/config.h"

#include <arpa/inet.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <sstream>

#include "metaroce/datapath/dpdk_device_name.h"
#include "metaroce/emulator/fabric.h"
#include "metaroce/lab/config.h"
#include "metaroce/units/units.h"

namespace metaroce::daemon {

namespace {

// "env:NAME" in endpoint.dpdk_devices: NAME, or nullopt when the entry is not of that form.
std::optional<std::string_view> dpdk_device_env_name(std::string_view entry) {
  constexpr std::string_view kPrefix = "env:";
  if (!entry.starts_with(kPrefix)) return std::nullopt;
  const std::string_view name = entry.substr(kPrefix.size());
  if (name.empty() || name.size() > 128 || std::isdigit(static_cast<unsigned char>(name[0]))) return std::nullopt;
  for (const char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return std::nullopt;
  return name;
}

}  // namespace

std::string resolve_dpdk_devices(const EndpointSection& e, const std::function<const char*(const char*)>& getenv,
                                 std::vector<std::string>* devices) {
  devices->clear();
  for (size_t i = 0; i < e.dpdk_devices.size(); ++i) {
    const std::string field = "endpoint.dpdk_devices[" + std::to_string(i) + "]";
    const auto name = dpdk_device_env_name(e.dpdk_devices[i]);
    if (!name) {
      devices->push_back(e.dpdk_devices[i]);
      continue;
    }
    const std::string var(*name);
    const char* value = getenv(var.c_str());
    if (!value || !*value)
      return field + ": env:" + var + " is not set (on Kubernetes the SR-IOV device plugin sets PCIDEVICE_<RESOURCE> "
             "in a pod that requests the resource)";
    const std::string v(value);
    if (v.find(',') != std::string::npos)
      return field + ": env:" + var + " holds several devices (" + v.substr(0, 160) +
             "); request one device of that resource per plane";
    if (!datapath::is_dpdk_pci_address(v))
      return field + ": env:" + var + " must hold a PCI address like 0000:3b:02.0 (got '" + v.substr(0, 160) + "')";
    devices->push_back(v);
  }
  return {};
}
namespace {

// Raised inside the parser; turned into the one-line error at the top.
struct ConfigError {
  std::string text;
};

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  std::string where(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    return m.line < 0 ? source_ + ": " : source_ + ":" + std::to_string(m.line + 1) + ": ";
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& key, const std::string& what) const {
    throw ConfigError{where(n) + key + ": " + what};
  }
  static std::string text(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a mapping";
    return "nothing";
  }
  // A mapping whose keys must all be in `allowed`.
  void expect_map(const YAML::Node& n, const std::string& key, const std::set<std::string>& allowed) const {
    if (!n.IsMap()) fail(n, key, "must be a mapping (got " + text(n) + ")");
    std::map<std::string, int> seen;  // key -> line: YAML lookups take the first of duplicate keys silently
    for (const auto& kv : n) {
      const std::string k = kv.first.as<std::string>();
      if (auto [it, fresh] = seen.emplace(k, kv.first.Mark().line + 1); !fresh)
        fail(kv.first, key.empty() ? k : key + "." + k,
             "duplicate key (first at line " + std::to_string(it->second) + "); give each key once");
      if (!allowed.count(k)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(kv.first, key.empty() ? k : key + "." + k, "unknown key (allowed: " + list + ")");
      }
    }
  }
  // Text only: a control character or invalid UTF-8 in a name, path or
  // address would forge log lines and does not survive the effective YAML.
  std::string str(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, "must be a string (got " + text(n) + ")");
    const std::string& v = n.Scalar();
    for (size_t i = 0; i < v.size();) {
      const auto c = static_cast<unsigned char>(v[i]);
      size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
      bool ok = len != 0 && i + len <= v.size() && !(c < 0x20 || c == 0x7f) && !(len == 2 && c < 0xC2);
      for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(v[i + k]) & 0xC0) == 0x80;
      if (!ok)
        fail(n, key, "must be printable UTF-8 text (byte " + std::to_string(i) + " is 0x" +
                         "0123456789abcdef"[c >> 4] + "0123456789abcdef"[c & 15] + ")");
      i += len;
    }
    return v;
  }
  std::string one_of(const YAML::Node& n, const std::string& key, const std::vector<std::string>& allowed) const {
    const std::string v = str(n, key);
    for (const auto& a : allowed)
      if (v == a) return v;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(n, key, "must be one of " + list + " (got '" + v + "')");
  }
  uint64_t uint(const YAML::Node& n, const std::string& key, uint64_t lo, uint64_t hi) const {
    const std::string v = n.IsScalar() ? n.Scalar() : text(n);
    bool ok = n.IsScalar() && !v.empty() && v.size() <= 19;
    for (char c : v) ok = ok && c >= '0' && c <= '9';
    uint64_t x = 0;
    if (ok) x = std::stoull(v);
    if (!ok || x < lo || x > hi)
      fail(n, key, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got '" + v + "')");
    return x;
  }
  // A CPU number, or -1 for any; and one this process may run on.
  int cpu(const YAML::Node& n, const std::string& key) const {
    const std::string v = n.IsScalar() ? n.Scalar() : text(n);
    bool ok = n.IsScalar() && !v.empty() && v.size() <= 4;
    for (char c : v) ok = ok && c >= '0' && c <= '9';
    if (v == "-1") return -1;
    if (!ok || std::stoi(v) > 1023) fail(n, key, "must be -1 (any CPU) or a CPU number in [0, 1023] (got '" + v + "')");
    const int c = std::stoi(v);
    if (std::string why = datapath::check_cpu_available(c); !why.empty()) fail(n, key, "must be -1 (any CPU) or " + why);
    return c;
  }
  // An integer connection parameter, refused as every layer refuses it
  // (transport/connection_params.h), with the file and line in front.
  int64_t param(const YAML::Node& n, const std::string& key, const transport::ConnectionParam& p) const {
    const std::string v = n.IsScalar() ? n.Scalar() : text(n);
    bool ok = n.IsScalar() && !v.empty() && v.size() <= 18;
    for (char c : v) ok = ok && c >= '0' && c <= '9';
    if (!ok) fail(n, key, "must be an integer in " + p.range_text() + " (got '" + v + "')");
    const int64_t x = std::stoll(v);
    if (!p.accepts(x)) throw ConfigError{where(n) + p.refusal(key, x)};
    return x;
  }
  double real(const YAML::Node& n, const std::string& key, double lo, double hi) const {
    const std::string v = n.IsScalar() ? n.Scalar() : text(n);
    double x = NAN;
    try {
      size_t used = 0;
      x = std::stod(v, &used);
      if (used != v.size()) x = NAN;
    } catch (...) {
    }
    if (!n.IsScalar() || !std::isfinite(x) || x < lo || x > hi) {
      std::ostringstream r;
      r << "must be a number in [" << lo << ", " << hi << "] (got '" << v << "')";
      fail(n, key, r.str());
    }
    return x;
  }
  bool boolean(const YAML::Node& n, const std::string& key) const {
    const std::string v = n.IsScalar() ? n.Scalar() : text(n);
    if (v == "true") return true;
    if (v == "false") return false;
    fail(n, key, "must be true or false (got '" + v + "')");
  }
  // Durations: integers are nanoseconds; "10us", "2ms", "1.5s" are accepted too
  // (the shared units library's syntax).
  int64_t duration_ns(const YAML::Node& n, const std::string& key, int64_t lo, int64_t hi) const {
    const std::string v = n.IsScalar() ? n.Scalar() : text(n);
    const units::Parsed<int64_t> d = units::parse_duration_ns(n.IsScalar() ? v : "", units::BareDuration::kNanoseconds);
    if (!n.IsScalar() || !d.ok() || d.value < lo || d.value > hi)
      fail(n, key,
           "must be a duration in [" + std::to_string(lo) + ", " + std::to_string(hi) +
               "] ns, e.g. 2ms, 10us, 5000 (got '" + v + "')");
    return d.value;
  }
  // A network namespace name as `ip netns` makes them (a file in /run/netns).
  std::string netns(const YAML::Node& n, const std::string& key) const {
    const std::string v = str(n, key);
    bool ok = !v.empty() && v.size() <= 64 && v != "." && v != "..";
    for (char ch : v) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.');
    if (!ok) fail(n, key, "must be a network namespace name: 1 to 64 of A-Z a-z 0-9 - _ . (got '" + v + "')");
    return v;
  }
  uint32_t ipv4(const YAML::Node& n, const std::string& key) const {
    const auto ip = wire::parse_ipv4(str(n, key).c_str());
    if (!ip) fail(n, key, "must be an IPv4 address like 10.0.0.1 (got '" + n.Scalar() + "')");
    return *ip;
  }
  wire::MacAddr mac(const YAML::Node& n, const std::string& key) const {
    const auto m = wire::parse_mac(str(n, key).c_str());
    if (!m) fail(n, key, "must be a MAC address like 02:00:00:00:00:01 (got '" + n.Scalar() + "')");
    return *m;
  }
  std::vector<std::string> strings(const YAML::Node& n, const std::string& key, size_t lo, size_t hi) const {
    if (!n.IsSequence()) fail(n, key, "must be a list of strings (got " + text(n) + ")");
    if (n.size() < lo || n.size() > hi)
      fail(n, key, "must have " + std::to_string(lo) + " to " + std::to_string(hi) + " entries (got " +
                       std::to_string(n.size()) + ")");
    std::vector<std::string> out;
    for (size_t i = 0; i < n.size(); ++i) out.push_back(str(n[i], key + "[" + std::to_string(i) + "]"));
    return out;
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

std::string rel(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

void parse_tls(const Reader& r, const YAML::Node& n, const std::string& key, TlsFiles* t, const std::string& dir) {
  r.expect_map(n, key, {"cert", "key", "client_ca", "ca", "server_name"});
  if (n["cert"]) t->cert = rel(dir, r.str(n["cert"], key + ".cert"));
  if (n["key"]) t->key = rel(dir, r.str(n["key"], key + ".key"));
  if (n["client_ca"]) t->client_ca = rel(dir, r.str(n["client_ca"], key + ".client_ca"));
  if (n["ca"]) t->ca = rel(dir, r.str(n["ca"], key + ".ca"));
  if (n["server_name"]) t->server_name = r.str(n["server_name"], key + ".server_name");
}

void parse_link(const Reader& r, const YAML::Node& n, const std::string& key, emulator::LinkConfig* c) {
  r.expect_map(n, key,
               {"rate_bps", "prop_delay_ns", "queue_limit_bytes", "queue_limit_packets", "ecn_threshold_bytes",
                "loss_probability", "delay_ns", "jitter_ns", "duplicate_probability", "corrupt_probability",
                "reorder_probability", "reorder_delay_ns"});
  // Values are only parsed here; their ranges are the emulator's validate(LinkConfig), the one authority,
  // whose message names the field.
  auto number = [&](const char* f) {
    const YAML::Node v = n[f];
    const std::string t = v.IsScalar() ? v.Scalar() : Reader::text(v);
    double x = NAN;
    size_t used = 0;
    try {
      x = std::stod(t, &used);
    } catch (...) {
    }
    if (!v.IsScalar() || used != t.size() || !std::isfinite(x)) r.fail(v, key + "." + f, "must be a number (got '" + t + "')");
    return x;
  };
  auto duration = [&](const char* f) {
    const YAML::Node v = n[f];
    const std::string t = v.IsScalar() ? v.Scalar() : Reader::text(v);
    const units::Parsed<int64_t> d = units::parse_duration_ns(v.IsScalar() ? t : "", units::BareDuration::kNanoseconds);
    if (!v.IsScalar() || !d.ok()) r.fail(v, key + "." + f, "must be a duration, e.g. 2ms, 10us, 5000 (got '" + t + "')");
    return d.value;
  };
  auto u32 = [&](const char* f) { return static_cast<uint32_t>(r.uint(n[f], key + "." + f, 0, UINT32_MAX)); };
  if (n["rate_bps"]) c->rate_bps = number("rate_bps");
  if (n["prop_delay_ns"]) c->prop_delay_ns = duration("prop_delay_ns");
  if (n["queue_limit_bytes"]) c->queue_limit_bytes = u32("queue_limit_bytes");
  if (n["queue_limit_packets"]) c->queue_limit_packets = u32("queue_limit_packets");
  if (n["ecn_threshold_bytes"]) c->ecn_threshold_bytes = u32("ecn_threshold_bytes");
  if (n["loss_probability"]) c->loss_probability = number("loss_probability");
  if (n["delay_ns"]) c->delay.delay_ns = duration("delay_ns");
  if (n["jitter_ns"]) c->delay.jitter_ns = duration("jitter_ns");
  if (n["duplicate_probability"]) c->duplicate_probability = number("duplicate_probability");
  if (n["corrupt_probability"]) c->corrupt_probability = number("corrupt_probability");
  if (n["reorder_probability"]) c->reorder_probability = number("reorder_probability");
  if (n["reorder_delay_ns"]) c->reorder_delay_ns = duration("reorder_delay_ns");
  if (auto e = emulator::validate(*c)) {
    // "delay.jitter_ns: must be ..." -> at the key as written here (jitter_ns).
    const size_t colon = e->find(": ");
    std::string field = e->substr(0, colon == std::string::npos ? 0 : colon);
    if (field.rfind("delay.", 0) == 0) field.erase(0, 6);
    const YAML::Node at = !field.empty() && n[field] ? n[field] : n;
    r.fail(at, field.empty() ? key : key + "." + field, colon == std::string::npos ? *e : e->substr(colon + 2));
  }
}

DaemonConfig parse(const YAML::Node& root, const Reader& r, const std::string& dir) {
  DaemonConfig c;
  c.source = r.source();
  r.expect_map(root, "", {"name", "role", "log_level", "control", "metrics", "endpoint", "fabric", "lab"});
  if (root["name"]) {
    c.name = r.str(root["name"], "name");
    bool ok = !c.name.empty() && c.name.size() <= 32;
    for (char ch : c.name) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.');
    if (!ok) r.fail(root["name"], "name", "must match [A-Za-z0-9_.-]{1,32} (got '" + c.name + "')");
  }
  if (!root["role"]) r.fail(root, "role", "is required (allowed: endpoint, fabric, both)");
  const std::string role = r.one_of(root["role"], "role", {"endpoint", "fabric", "both"});
  c.role = role == "endpoint" ? DaemonRole::kEndpoint : role == "fabric" ? DaemonRole::kFabric : DaemonRole::kBoth;
  if (root["log_level"])
    c.log_level = r.one_of(root["log_level"], "log_level", {"trace", "debug", "info", "warn", "error", "off"});

  if (const auto n = root["control"]) {
    r.expect_map(n, "control",
                 {"unix_socket", "unix_mode", "tcp", "tls", "token_file", "insecure", "peer_address",
                  "peer_token_file", "peer_tls"});
    if (n["unix_socket"]) c.control.unix_socket = rel(dir, r.str(n["unix_socket"], "control.unix_socket"));
    if (n["unix_mode"]) {
      const std::string v = r.str(n["unix_mode"], "control.unix_mode");
      bool ok = v.size() >= 3 && v.size() <= 4 && v.find_first_not_of("01234567") == std::string::npos;
      const unsigned long mode = ok ? std::stoul(v, nullptr, 8) : 0;
      if (!ok || mode < 0600 || mode > 0777)
        r.fail(n["unix_mode"], "control.unix_mode", "must be an octal mode in [0600, 0777] (got '" + v + "')");
      c.control.unix_mode = static_cast<uint32_t>(mode);
    }
    if (n["tcp"]) c.control.tcp = r.str(n["tcp"], "control.tcp");
    if (n["tls"]) parse_tls(r, n["tls"], "control.tls", &c.control.tls, dir);
    if (n["token_file"]) c.control.token_file = rel(dir, r.str(n["token_file"], "control.token_file"));
    if (n["insecure"]) c.control.insecure = r.boolean(n["insecure"], "control.insecure");
    if (n["peer_address"]) c.control.peer_address = r.str(n["peer_address"], "control.peer_address");
    if (n["peer_token_file"]) c.control.peer_token_file = rel(dir, r.str(n["peer_token_file"], "control.peer_token_file"));
    if (n["peer_tls"]) parse_tls(r, n["peer_tls"], "control.peer_tls", &c.control.peer_tls, dir);
    if (!c.control.tcp.empty()) {
      const auto colon = c.control.tcp.rfind(':');
      bool ok = colon != std::string::npos && colon > 0 && colon + 1 < c.control.tcp.size();
      if (ok) {
        const std::string port = c.control.tcp.substr(colon + 1);
        ok = port.find_first_not_of("0123456789") == std::string::npos && port.size() <= 5 && std::stoul(port) <= 65535;
      }
      if (!ok) r.fail(n["tcp"], "control.tcp", "must be host:port, e.g. 127.0.0.1:50051 (got '" + c.control.tcp + "')");
    }
  }
  if (const auto n = root["metrics"]) {
    r.expect_map(n, "metrics", {"listen", "connection_series"});
    if (n["listen"]) c.metrics.listen = r.str(n["listen"], "metrics.listen");
    if (n["connection_series"])
      c.metrics.connection_series = static_cast<uint32_t>(r.uint(
          n["connection_series"], "metrics.connection_series", kConnectionSeriesRange.min, kConnectionSeriesRange.max));
  }

  // Lab shortcut: derive interfaces and addresses from a lab description.
  std::optional<lab::LabConfig> labcfg;
  if (const auto n = root["lab"]) {
    r.expect_map(n, "lab", {"file", "host", "fabric"});
    if (!n["file"]) r.fail(n, "lab.file", "is required (a lab YAML, e.g. configs/labs/default.yaml)");
    c.lab_file = rel(dir, r.str(n["file"], "lab.file"));
    std::string err;
    labcfg = lab::load_lab_file(c.lab_file, &err);
    if (!labcfg) r.fail(n["file"], "lab.file", err);
    if (n["host"]) c.lab_host = static_cast<int>(r.uint(n["host"], "lab.host", 0, labcfg->hosts - 1));
    if (n["fabric"]) c.lab_fabric = r.boolean(n["fabric"], "lab.fabric");
    if (c.lab_host < 0 && !c.lab_fabric) r.fail(n, "lab", "needs host: N (an endpoint host) or fabric: true");
  }

  const bool want_endpoint = c.role != DaemonRole::kFabric;
  const bool want_fabric = c.role != DaemonRole::kEndpoint;
  if (root["endpoint"] && !want_endpoint) r.fail(root["endpoint"], "endpoint", "is only allowed with role endpoint or both");
  if (root["fabric"] && !want_fabric) r.fail(root["fabric"], "fabric", "is only allowed with role fabric or both");

  if (want_endpoint) {
    EndpointSection e;
    if (labcfg && c.lab_host >= 0) {
      for (uint32_t p = 0; p < labcfg->planes; ++p) e.interfaces.push_back(lab::host_ifname(p));
      e.ip = lab::host_ip(*labcfg, c.lab_host, 0);
      e.mac = lab::host_mac(*labcfg, c.lab_host, 0);
      // Both roles in one daemon: each opens its ports in its own namespace.
      if (c.role == DaemonRole::kBoth) e.netns = lab::host_netns(labcfg->name, static_cast<uint32_t>(c.lab_host));
    }
    const YAML::Node n = root["endpoint"];
    if (n) {
      r.expect_map(n, "endpoint",
                   {"datapath", "interfaces", "netns", "address", "mac", "udp_port", "xdp_mode", "frame_size", "eal_args",
                    "dpdk_devices", "mtu_payload", "min_rto_ns", "min_pto_ns", "inbound_capacity_bps", "port_rate_bps", "busy_poll", "realtime_share", "worker_cpu",
                    "max_connections", "max_region_bytes", "memory_budget_bytes", "half_open_timeout_ns"});
      if (n["datapath"]) e.datapath = r.one_of(n["datapath"], "endpoint.datapath", {"afxdp", "dpdk", "udp"});
      if (n["interfaces"]) e.interfaces = r.strings(n["interfaces"], "endpoint.interfaces", 1, 16);
      if (n["netns"]) e.netns = r.netns(n["netns"], "endpoint.netns");
      if (n["address"]) e.ip = r.ipv4(n["address"], "endpoint.address");
      if (n["mac"]) e.mac = r.mac(n["mac"], "endpoint.mac");
      if (n["udp_port"]) e.udp_port = static_cast<uint16_t>(r.uint(n["udp_port"], "endpoint.udp_port", 1, 65535));
      if (n["xdp_mode"]) e.xdp_mode = r.one_of(n["xdp_mode"], "endpoint.xdp_mode", {"auto", "native", "skb"});
      const uint32_t max_frame = e.datapath == "afxdp" ? 3840 : 9216;
      if (n["frame_size"])
        e.frame_size = static_cast<uint32_t>(r.uint(n["frame_size"], "endpoint.frame_size", 1024, max_frame));
      if (n["eal_args"]) e.eal_args = r.strings(n["eal_args"], "endpoint.eal_args", 0, 64);
      if (n["dpdk_devices"]) {
        e.dpdk_devices = r.strings(n["dpdk_devices"], "endpoint.dpdk_devices", 0, 16);  // [] = the default
        for (size_t i = 0; i < e.dpdk_devices.size(); ++i)
          if (!datapath::is_dpdk_pci_address(e.dpdk_devices[i]) && !datapath::is_dpdk_vdev(e.dpdk_devices[i]) &&
              !dpdk_device_env_name(e.dpdk_devices[i]))
            r.fail(n["dpdk_devices"][i], "endpoint.dpdk_devices[" + std::to_string(i) + "]",
                   "must be a PCI address like 0000:3b:02.0, a virtual device like net_af_xdp0,iface=p0 or "
                   "env:NAME (NAME: [A-Za-z_][A-Za-z0-9_]*, at most 128 characters, holding a PCI address) (got '" +
                       e.dpdk_devices[i].substr(0, 160) + "')");
      }
      if (n["mtu_payload"]) e.mtu_payload = static_cast<uint32_t>(r.param(n["mtu_payload"], "endpoint.mtu_payload", transport::kParamMtuPayload));
      if (n["min_rto_ns"]) e.min_rto_ns = r.duration_ns(n["min_rto_ns"], "endpoint.min_rto_ns", transport::kParamMinRto.min, transport::kParamMinRto.max);
      if (n["min_pto_ns"]) e.min_pto_ns = r.duration_ns(n["min_pto_ns"], "endpoint.min_pto_ns", transport::kParamMinPto.min, transport::kParamMinPto.max);
      if (n["inbound_capacity_bps"])
        e.inbound_capacity_bps = r.real(n["inbound_capacity_bps"], "endpoint.inbound_capacity_bps", 0, 1.6e12);
      if (n["port_rate_bps"]) {
        e.port_rate_bps = r.real(n["port_rate_bps"], "endpoint.port_rate_bps", 0, emulator::kMaxLinkRateBps);
        if (e.port_rate_bps > 0 && e.port_rate_bps < 1e3)
          r.fail(n["port_rate_bps"], "endpoint.port_rate_bps", "must be 0 (not paced) or in [1000, 1.6e12] bits/s");
      }
      if (n["busy_poll"]) e.busy_poll = r.boolean(n["busy_poll"], "endpoint.busy_poll");
      if (n["realtime_share"])
        e.realtime_share = r.real(n["realtime_share"], "endpoint.realtime_share", 0, datapath::kRealtimeShareMax);
      if (n["worker_cpu"]) e.worker_cpu = r.cpu(n["worker_cpu"], "endpoint.worker_cpu");
      if (n["max_connections"])
        e.max_connections = static_cast<uint32_t>(r.uint(n["max_connections"], "endpoint.max_connections",
                                                            kMaxConnectionsRange.min, kMaxConnectionsRange.max));
      if (n["max_region_bytes"])
        e.max_region_bytes = r.uint(n["max_region_bytes"], "endpoint.max_region_bytes", 64 << 10, 4ull << 30);
      if (n["memory_budget_bytes"])
        e.memory_budget_bytes = r.uint(n["memory_budget_bytes"], "endpoint.memory_budget_bytes", 1ull << 20, 1ull << 40);
      if (n["half_open_timeout_ns"])
        e.half_open_timeout_ns =
            r.duration_ns(n["half_open_timeout_ns"], "endpoint.half_open_timeout_ns", 1'000'000'000, 3'600'000'000'000);
    }
    const YAML::Node at = n ? n : root;
    if (e.interfaces.empty()) r.fail(at, "endpoint.interfaces", "is required (one interface per plane, 1 to 16), or lab.host");
    if (e.ip == 0) r.fail(at, "endpoint.address", "is required (the endpoint's IPv4), or lab.host");
    if (e.mac == wire::MacAddr{}) r.fail(at, "endpoint.mac", "is required (02:xx:... unicast), or lab.host");
    if (!e.dpdk_devices.empty() && e.datapath != "dpdk")
      r.fail(n["dpdk_devices"], "endpoint.dpdk_devices", "needs endpoint.datapath: dpdk (got " + e.datapath + ")");
    if (!e.dpdk_devices.empty() && e.dpdk_devices.size() != e.interfaces.size())
      r.fail(n["dpdk_devices"], "endpoint.dpdk_devices",
             "must name one device per interface: " + std::to_string(e.interfaces.size()) + " (got " +
                 std::to_string(e.dpdk_devices.size()) + ")");
    if (e.datapath == "udp" && e.interfaces.size() != 1)
      r.fail(at, "endpoint.interfaces", "the udp datapath has exactly one plane (got " + std::to_string(e.interfaces.size()) + ")");
    if (e.mtu_payload > e.frame_size - 128)
      r.fail(at, "endpoint.mtu_payload",
             "must be at most frame_size - 128 = " + std::to_string(e.frame_size - 128) + " (got " +
                 std::to_string(e.mtu_payload) + ")");
    // In a lab the endpoint's largest frame must also cross the lab's veths.
    if (labcfg && c.lab_host >= 0 && e.mtu_payload + 128 > labcfg->mtu + wire::kEthHeaderBytes)
      r.fail(at, "endpoint.mtu_payload",
             "must be at most the lab's mtu + " + std::to_string(wire::kEthHeaderBytes) + " - 128 = " +
                 std::to_string(labcfg->mtu + wire::kEthHeaderBytes - 128) + " (got " + std::to_string(e.mtu_payload) + ")");
    c.endpoint = e;
  }
  if (want_fabric) {
    FabricSection f;
    if (labcfg && c.lab_fabric) {
      f.hosts = labcfg->hosts;
      f.planes = labcfg->planes;
      f.interfaces.assign(f.planes, {});
      for (uint32_t p = 0; p < f.planes; ++p)
        for (uint32_t h = 0; h < f.hosts; ++h) f.interfaces[p].push_back(lab::fabric_ifname(h, p));
      for (uint32_t h = 0; h < f.hosts; ++h) f.host_macs.push_back(lab::host_mac(*labcfg, h, 0));
      f.interface_macs.assign(f.planes, {});
      for (uint32_t p = 0; p < f.planes; ++p)
        for (uint32_t h = 0; h < f.hosts; ++h) f.interface_macs[p].push_back(lab::host_mac(*labcfg, h, p));
      if (c.role == DaemonRole::kBoth) f.netns = lab::fabric_netns(labcfg->name);
    }
    f.port.prop_delay_ns = 0;
    f.port.rate_bps = 10e9;
    f.ecmp.rate_bps = 10e9;
    f.ecmp.prop_delay_ns = 2000;
    const YAML::Node n = root["fabric"];
    if (n) {
      r.expect_map(n, "fabric",
                   {"datapath", "topology", "hosts", "planes", "ecmp_links", "interfaces", "netns", "host_macs", "frame_size",
                    "eal_args", "port", "ecmp", "seed", "busy_poll", "realtime_share", "worker_cpu"});
      // The fabric node emulates the full mesh only: its link snapshots, the
      // API's link selectors and the lab wiring know host pairs and ECMP
      // links, not leaves and spines. A clos topology runs in the simulator.
      if (n["topology"] && r.str(n["topology"], "fabric.topology") != emulator::topology_name(emulator::Topology::kMesh))
        r.fail(n["topology"], "fabric.topology",
               "the fabric node emulates the full mesh only (mesh; got " + n["topology"].Scalar() +
                   "): a clos topology runs in the simulator (metarocectl scenario run FILE --sim)");
      if (n["datapath"]) f.datapath = r.one_of(n["datapath"], "fabric.datapath", {"afxdp", "dpdk"});
      if (n["hosts"]) f.hosts = static_cast<uint32_t>(r.uint(n["hosts"], "fabric.hosts", 2, 64));
      if (n["planes"]) f.planes = static_cast<uint32_t>(r.uint(n["planes"], "fabric.planes", 1, 16));
      if (n["ecmp_links"]) f.ecmp_links = static_cast<uint32_t>(r.uint(n["ecmp_links"], "fabric.ecmp_links", 1, 64));
      if (n["interfaces"]) {
        const auto& l = n["interfaces"];
        if (!l.IsSequence()) r.fail(l, "fabric.interfaces", "must be a list (per plane) of lists (per host)");
        f.interfaces.clear();
        for (size_t p = 0; p < l.size(); ++p)
          f.interfaces.push_back(r.strings(l[p], "fabric.interfaces[" + std::to_string(p) + "]", 2, 64));
      }
      if (n["netns"]) f.netns = r.netns(n["netns"], "fabric.netns");
      if (n["host_macs"]) {
        const auto& l = n["host_macs"];
        if (!l.IsSequence()) r.fail(l, "fabric.host_macs", "must be a list of MAC addresses, one per host");
        f.host_macs.clear();
        for (size_t h = 0; h < l.size(); ++h) f.host_macs.push_back(r.mac(l[h], "fabric.host_macs[" + std::to_string(h) + "]"));
      }
      if (n["frame_size"]) f.frame_size = static_cast<uint32_t>(r.uint(n["frame_size"], "fabric.frame_size", 1024, 3840));
      if (n["eal_args"]) f.eal_args = r.strings(n["eal_args"], "fabric.eal_args", 0, 64);
      if (n["port"]) parse_link(r, n["port"], "fabric.port", &f.port);
      if (n["ecmp"]) parse_link(r, n["ecmp"], "fabric.ecmp", &f.ecmp);
      if (n["seed"]) f.seed = r.uint(n["seed"], "fabric.seed", 0, UINT64_MAX);
      if (n["busy_poll"]) f.busy_poll = r.boolean(n["busy_poll"], "fabric.busy_poll");
      if (n["realtime_share"])
        f.realtime_share = r.real(n["realtime_share"], "fabric.realtime_share", 0, datapath::kRealtimeShareMax);
      if (n["worker_cpu"]) f.worker_cpu = r.cpu(n["worker_cpu"], "fabric.worker_cpu");
    }
    const YAML::Node at = n ? n : root;
    if (f.interfaces.size() != f.planes)
      r.fail(at, "fabric.interfaces",
             "must list " + std::to_string(f.planes) + " planes (got " + std::to_string(f.interfaces.size()) + "), or lab.fabric");
    for (size_t p = 0; p < f.interfaces.size(); ++p)
      if (f.interfaces[p].size() != f.hosts)
        r.fail(at, "fabric.interfaces[" + std::to_string(p) + "]",
               "must list " + std::to_string(f.hosts) + " interfaces, one per host (got " +
                   std::to_string(f.interfaces[p].size()) + ")");
    // In a lab every frame the kernel may send (the lab's MTU plus the
    // Ethernet header) must fit one datapath frame, or the fabric node could
    // only drop it.
    if (labcfg && c.lab_fabric && labcfg->mtu + wire::kEthHeaderBytes > f.frame_size)
      r.fail(at, "fabric.frame_size",
             "is " + std::to_string(f.frame_size) + " B, but the lab's mtu " + std::to_string(labcfg->mtu) +
                 " needs frames of " + std::to_string(labcfg->mtu + wire::kEthHeaderBytes) +
                 " B: set the lab's mtu to at most frame_size - " + std::to_string(wire::kEthHeaderBytes) + " = " +
                 std::to_string(f.frame_size - wire::kEthHeaderBytes) + " or raise fabric.frame_size (at most 3840)");
    if (f.host_macs.size() != f.hosts)
      r.fail(at, "fabric.host_macs",
             "must list " + std::to_string(f.hosts) + " MACs, one per host (got " + std::to_string(f.host_macs.size()) + ")");
    // The lab's interface MACs describe the lab's hosts and planes only.
    if (f.interface_macs.size() != f.planes ||
        std::any_of(f.interface_macs.begin(), f.interface_macs.end(), [&](const auto& row) { return row.size() != f.hosts; }))
      f.interface_macs.clear();
    c.fabric = f;
  }
  return c;
}

std::string mac_text(const wire::MacAddr& m) { return lab::mac_to_string(m); }

nlohmann::json link_json(const emulator::LinkConfig& l) {
  return {{"rate_bps", l.rate_bps},
          {"prop_delay_ns", l.prop_delay_ns},
          {"queue_limit_bytes", l.queue_limit_bytes},
          {"queue_limit_packets", l.queue_limit_packets},
          {"ecn_threshold_bytes", l.ecn_threshold_bytes},
          {"loss_probability", l.loss_probability},
          {"delay_ns", l.delay.delay_ns},
          {"jitter_ns", l.delay.jitter_ns},
          {"duplicate_probability", l.duplicate_probability},
          {"corrupt_probability", l.corrupt_probability},
          {"reorder_probability", l.reorder_probability},
          {"reorder_delay_ns", l.reorder_delay_ns}};
}

nlohmann::json tls_json(const TlsFiles& t) {
  return {{"cert", t.cert}, {"key", t.key}, {"client_ca", t.client_ca}, {"ca", t.ca}, {"server_name", t.server_name}};
}

nlohmann::json config_json(const DaemonConfig& c) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "0%o", c.control.unix_mode);
  nlohmann::json j = {{"name", c.name},
                      {"role", role_name(c.role)},
                      {"log_level", c.log_level},
                      {"control",
                       {{"unix_socket", c.control.unix_socket},
                        {"unix_mode", mode},
                        {"tcp", c.control.tcp},
                        {"tls", tls_json(c.control.tls)},
                        {"token_file", c.control.token_file},
                        {"insecure", c.control.insecure},
                        {"peer_address", c.control.peer_address},
                        {"peer_token_file", c.control.peer_token_file},
                        {"peer_tls", tls_json(c.control.peer_tls)}}},
                      {"metrics", {{"listen", c.metrics.listen}, {"connection_series", c.metrics.connection_series}}}};
  if (c.endpoint) {
    const auto& e = *c.endpoint;
    j["endpoint"] = {{"datapath", e.datapath},
                     {"interfaces", e.interfaces},
                     {"netns", e.netns},
                     {"address", lab::ip_to_string(e.ip)},
                     {"mac", mac_text(e.mac)},
                     {"udp_port", e.udp_port},
                     {"xdp_mode", e.xdp_mode},
                     {"frame_size", e.frame_size},
                     {"eal_args", e.eal_args},
                     {"dpdk_devices", e.dpdk_devices},
                     {"mtu_payload", e.mtu_payload},
                     {"min_rto_ns", e.min_rto_ns},
                     {"min_pto_ns", e.min_pto_ns},
                     {"inbound_capacity_bps", e.inbound_capacity_bps},
                     {"port_rate_bps", e.port_rate_bps},
                     {"busy_poll", e.busy_poll},
                     {"realtime_share", e.realtime_share},
                     {"worker_cpu", e.worker_cpu},
                     {"max_connections", e.max_connections},
                     {"max_region_bytes", e.max_region_bytes},
                     {"memory_budget_bytes", e.memory_budget_bytes},
                     {"half_open_timeout_ns", e.half_open_timeout_ns}};
    if (e.netns.empty()) j["endpoint"].erase("netns");
  }
  if (c.fabric) {
    const auto& f = *c.fabric;
    std::vector<std::string> macs;
    for (const auto& m : f.host_macs) macs.push_back(mac_text(m));
    j["fabric"] = {{"datapath", f.datapath},     {"hosts", f.hosts},       {"planes", f.planes},
                   {"ecmp_links", f.ecmp_links}, {"interfaces", f.interfaces}, {"netns", f.netns}, {"host_macs", macs},
                   {"frame_size", f.frame_size}, {"eal_args", f.eal_args}, {"port", link_json(f.port)},
                   {"ecmp", link_json(f.ecmp)},  {"seed", f.seed},         {"busy_poll", f.busy_poll},
                   {"realtime_share", f.realtime_share},
                   {"worker_cpu", f.worker_cpu}};
    if (f.netns.empty()) j["fabric"].erase("netns");
  }
  return j;
}

YAML::Node to_yaml(const nlohmann::json& j) {
  YAML::Node n;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) n[it.key()] = to_yaml(it.value());
  } else if (j.is_array()) {
    n = YAML::Node(YAML::NodeType::Sequence);
    for (const auto& v : j) n.push_back(to_yaml(v));
  } else if (j.is_string()) {
    n = j.get<std::string>();
  } else {
    n = j.dump();
  }
  return n;
}

}  // namespace

const char* role_name(DaemonRole r) {
  switch (r) {
    case DaemonRole::kEndpoint: return "endpoint";
    case DaemonRole::kFabric: return "fabric";
    case DaemonRole::kBoth: return "both";
  }
  return "?";
}

std::string peer_address_for_host(const DaemonConfig& c, const std::string& host, std::string* address) {
  if (c.control.tcp.empty())
    return "--peer-host: needs control.tcp (peers call this daemon on its port); the config has no TCP listener";
  const bool ipv6 = host.find(':') != std::string::npos;
  bool ok = !host.empty() && host.find_first_of("[]/@ ") == std::string::npos;
  for (const char ch : host) ok = ok && ch > ' ' && ch <= '~';
  // A colon is an IPv6 address (a name or an IPv4 address with a port is not).
  in6_addr v6{};
  if (ipv6) ok = ok && inet_pton(AF_INET6, host.c_str(), &v6) == 1;
  if (!ok)
    return "--peer-host: must be a host name, an IPv4 or an IPv6 address without a port (got '" + host + "')";
  const std::string port = c.control.tcp.substr(c.control.tcp.rfind(':') + 1);
  *address = (ipv6 ? "[" + host + "]" : host) + ":" + port;
  return {};
}

std::string validate_daemon_config(const DaemonConfig& c, bool insecure_flag) {
  const auto& ctl = c.control;
  if (ctl.unix_socket.empty() && ctl.tcp.empty())
    return c.source + ": control: needs unix_socket or tcp (nothing to listen on)";
  if (!ctl.tcp.empty()) {
    const bool tls = !ctl.tls.cert.empty() || !ctl.tls.key.empty();
    if (tls && (ctl.tls.cert.empty() || ctl.tls.key.empty()))
      return c.source + ": control.tls: needs both cert and key";
    if (!tls) {
      if (!is_loopback_listen(ctl.tcp))
        return c.source + ": control.tcp: refusing plain TCP on the non-loopback address '" + ctl.tcp +
               "' (set control.tls.cert and control.tls.key)";
      if (!ctl.insecure && !insecure_flag)
        return c.source + ": control.tcp: TCP needs TLS (control.tls.cert/key) or an explicit --insecure (loopback only)";
    }
  }
  for (const auto& [file, key] : {std::pair{&ctl.tls.cert, "control.tls.cert"}, std::pair{&ctl.tls.key, "control.tls.key"},
                                   std::pair{&ctl.tls.client_ca, "control.tls.client_ca"},
                                   std::pair{&ctl.peer_tls.ca, "control.peer_tls.ca"},
                                   std::pair{&ctl.peer_tls.cert, "control.peer_tls.cert"},
                                   std::pair{&ctl.peer_tls.key, "control.peer_tls.key"}}) {
    std::string pem;
    if (!file->empty())
      if (std::string e = read_pem_file(*file, key, &pem); !e.empty()) return c.source + ": " + e;
  }
  for (const auto& [file, key] : {std::pair{&ctl.token_file, "control.token_file"},
                                   std::pair{&ctl.peer_token_file, "control.peer_token_file"}}) {
    std::string token;
    if (!file->empty())
      if (std::string e = read_token_file(*file, key, &token); !e.empty()) return c.source + ": " + e;
  }
  if (!c.metrics.listen.empty() && c.metrics.listen.rfind(':') == std::string::npos)
    return c.source + ": metrics.listen: must be host:port, e.g. 127.0.0.1:9464 (got '" + c.metrics.listen + "')";
  return {};
}

std::optional<DaemonConfig> parse_daemon_yaml(const std::string& text, const std::string& source, std::string* error) {
  Reader r(source);
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root || root.IsNull()) {
      *error = source + ": empty configuration (needs at least role: endpoint|fabric|both)";
      return std::nullopt;
    }
    // Relative paths in the file (socket, token, certificates) are relative to
    // the file, made absolute: a relative socket path would be created in the
    // daemon's working directory and advertised as an address clients reject.
    std::error_code ec;
    std::string dir = std::filesystem::absolute(std::filesystem::path(source), ec).parent_path().string();
    if (ec) dir = std::filesystem::path(source).parent_path().string();
    return parse(root, r, dir);
  } catch (const ConfigError& e) {
    *error = lab::one_line(e.text);
  } catch (const YAML::Exception& e) {
    *error = lab::one_line(source + ":" + std::to_string(e.mark.line + 1) + ": YAML: " + e.msg);
  }
  return std::nullopt;
}

std::optional<DaemonConfig> load_daemon_file(const std::string& path, std::string* error) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    *error = path + ": is a directory; --config takes a YAML file (e.g. configs/daemon/example.yaml)";
    return std::nullopt;
  }
  auto text = lab::read_config_text(path, lab::kMaxConfigFileBytes, error);
  if (!text) return std::nullopt;
  return parse_daemon_yaml(*text, path, error);
}

// Invalid UTF-8 in a string the file gave (a name, an interface) is replaced,
// not thrown: GetConfig must answer whatever bytes the file held.
std::string daemon_config_json(const DaemonConfig& c) {
  return config_json(c).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string daemon_config_yaml(const DaemonConfig& c) {
  YAML::Emitter out;
  out << to_yaml(config_json(c));
  return std::string(out.c_str()) + "\n";
}

}  // namespace metaroce::daemon
