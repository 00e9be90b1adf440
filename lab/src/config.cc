#include "metaroce/lab/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace metaroce::lab {
namespace {

// "lab.yaml:3: " for a node with a position, "lab.yaml: " otherwise.
std::string where(const std::string& source, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return source + ": ";
  return source + ":" + std::to_string(m.line + 1) + ": ";
}

std::string scalar_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

// A non-negative decimal integer scalar in [lo, hi], else an error line.
bool read_uint(const std::string& source, const YAML::Node& node, const std::string& field, uint32_t lo,
               uint32_t hi, uint32_t* out, std::string* error) {
  const std::string range = "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  const std::string text = scalar_text(node);
  bool ok = node.IsScalar() && !text.empty() && text.size() <= 9;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  if (ok) {
    const unsigned long v = std::stoul(text);
    ok = v >= lo && v <= hi;
    if (ok) *out = static_cast<uint32_t>(v);
  }
  if (!ok) *error = where(source, node) + field + ": " + range + " (got '" + text + "')";
  return ok;
}

std::optional<Subnet> parse_subnet(const std::string& text, std::string* why) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) {
    *why = "must be an IPv4 network in CIDR form, e.g. 10.100.0.0/24";
    return std::nullopt;
  }
  const auto ip = wire::parse_ipv4(text.substr(0, slash).c_str());
  const std::string len_text = text.substr(slash + 1);
  bool len_ok = !len_text.empty() && len_text.size() <= 2;
  for (char c : len_text) len_ok = len_ok && c >= '0' && c <= '9';
  if (!ip || !len_ok) {
    *why = "must be an IPv4 network in CIDR form, e.g. 10.100.0.0/24";
    return std::nullopt;
  }
  const uint32_t len = static_cast<uint32_t>(std::stoul(len_text));
  if (len < 8 || len > 30) {
    *why = "prefix length must be in [8, 30] (got /" + len_text + ")";
    return std::nullopt;
  }
  const uint32_t mask = ~uint32_t{0} << (32 - len);
  if ((*ip & ~mask) != 0) {
    *why = "has host bits set (the network is " + subnet_to_string({*ip & mask, len}) + ")";
    return std::nullopt;
  }
  return Subnet{*ip, len};
}

}  // namespace

std::string check_lab_name(const std::string& name, const std::string& field) {
  bool ok = !name.empty() && name.size() <= kMaxNameLength;
  for (char c : name) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
  if (ok) return {};
  return field + ": must match [a-z0-9]{1," + std::to_string(kMaxNameLength) + "} (got '" + name + "')";
}

namespace {
std::optional<LabConfig> parse_lab(const std::string& text, const std::string& source, std::string* error);
}  // namespace

std::optional<LabConfig> parse_lab_yaml(const std::string& text, const std::string& source, std::string* error) {
  std::string scratch;
  if (!error) error = &scratch;
  auto lab = parse_lab(text, source, error);
  if (!lab) *error = one_line(*error);
  return lab;
}

namespace {
std::optional<LabConfig> parse_lab(const std::string& text, const std::string& source, std::string* error) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    *error = source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
             ": not valid YAML: " + e.msg;
    return std::nullopt;
  }
  if (!root.IsMap()) {
    *error = source + ": a lab description is a mapping with keys name, hosts, planes, mtu, subnets (got " +
             scalar_text(root) + ")";
    return std::nullopt;
  }
  static const char* kKeys[] = {"name", "hosts", "planes", "mtu", "subnets"};
  for (const auto& kv : root) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) {
      *error = where(source, kv.first) + key + ": unknown field (allowed: name, hosts, planes, mtu, subnets)";
      return std::nullopt;
    }
  }
  LabConfig lab;
  const YAML::Node name = root["name"];
  if (!name) {
    *error = source + ": name: required ([a-z0-9]{1,8}, the namespace prefix)";
    return std::nullopt;
  }
  lab.name = name.IsScalar() ? name.Scalar() : scalar_text(name);
  if (auto why = check_lab_name(lab.name); !name.IsScalar() || !why.empty()) {
    *error = where(source, name) + (why.empty() ? check_lab_name("", "name") : why);
    return std::nullopt;
  }
  if (const YAML::Node n = root["hosts"]; n && !read_uint(source, n, "hosts", 1, kMaxHosts, &lab.hosts, error))
    return std::nullopt;
  if (const YAML::Node n = root["planes"]; n && !read_uint(source, n, "planes", 1, kMaxPlanes, &lab.planes, error))
    return std::nullopt;
  if (const YAML::Node n = root["mtu"]; n && !read_uint(source, n, "mtu", kMinMtu, kMaxMtu, &lab.mtu, error))
    return std::nullopt;

  if (const YAML::Node subnets = root["subnets"]) {
    if (!subnets.IsSequence() || subnets.size() != lab.planes) {
      *error = where(source, subnets) + "subnets: must be a list of " + std::to_string(lab.planes) +
               " IPv4 networks, one per plane (got " +
               (subnets.IsSequence() ? std::to_string(subnets.size()) + " entries" : scalar_text(subnets)) + ")";
      return std::nullopt;
    }
    for (size_t i = 0; i < subnets.size(); ++i) {
      const std::string field = "subnets[" + std::to_string(i) + "]";
      std::string why;
      const auto s = subnets[i].IsScalar() ? parse_subnet(subnets[i].Scalar(), &why) : std::nullopt;
      if (!s) {
        if (why.empty()) why = "must be an IPv4 network in CIDR form, e.g. 10.100.0.0/24";
        *error = where(source, subnets[i]) + field + ": " + why + " (got '" + scalar_text(subnets[i]) + "')";
        return std::nullopt;
      }
      lab.subnets.push_back(*s);
    }
  } else {
    for (uint32_t p = 0; p < lab.planes; ++p) lab.subnets.push_back({(10u << 24) | ((100u + p) << 16), 24});
  }
  for (uint32_t p = 0; p < lab.planes; ++p) {
    const Subnet& s = lab.subnets[p];
    const uint64_t usable = (uint64_t{1} << (32 - s.prefix_len)) - 2;  // without network and broadcast
    if (lab.hosts > usable) {
      *error = source + ": subnets[" + std::to_string(p) + "]: " + subnet_to_string(s) + " has room for " +
               std::to_string(usable) + " hosts, the lab has " + std::to_string(lab.hosts) + " (hosts)";
      return std::nullopt;
    }
    for (uint32_t q = 0; q < p; ++q) {
      const Subnet& o = lab.subnets[q];
      const uint32_t len = std::min(s.prefix_len, o.prefix_len);
      const uint32_t mask = ~uint32_t{0} << (32 - len);
      if ((s.network & mask) == (o.network & mask)) {
        *error = source + ": subnets[" + std::to_string(p) + "]: " + subnet_to_string(s) + " overlaps subnets[" +
                 std::to_string(q) + "] " + subnet_to_string(o) + " (each plane needs its own subnet)";
        return std::nullopt;
      }
    }
  }
  return lab;
}
}  // namespace

std::optional<std::string> read_config_text(const std::string& path, size_t max_bytes, std::string* error) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    *error = path + ": cannot read the file (" + (ec ? ec.message() : "no such file") + ")";
    return std::nullopt;
  }
  if (std::filesystem::is_directory(st)) {
    *error = path + ": is a directory, not a file";
    return std::nullopt;
  }
  if (!std::filesystem::is_regular_file(st)) {
    *error = path + ": is not a regular file (a device, FIFO or socket could block or never end)";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot read the file";
    return std::nullopt;
  }
  std::string text(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > max_bytes) {
    *error = path + ": larger than " + std::to_string(max_bytes) + " bytes; not a configuration file";
    return std::nullopt;
  }
  return text;
}

std::string one_line(std::string m) {
  for (char& c : m)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (m.size() > kMaxErrorChars) m = m.substr(0, kMaxErrorChars) + "...";
  return m;
}

std::optional<LabConfig> load_lab_file(const std::string& path, std::string* error) {
  std::string scratch;
  if (!error) error = &scratch;
  auto text = read_config_text(path, kMaxConfigFileBytes, error);
  if (!text) return std::nullopt;
  return parse_lab_yaml(*text, path, error);
}

std::string host_netns(const std::string& lab, uint32_t host) { return lab + "-h" + std::to_string(host); }
std::string fabric_netns(const std::string& lab) { return lab + "-fab"; }
std::string host_ifname(uint32_t plane) { return "p" + std::to_string(plane); }
std::string fabric_ifname(uint32_t host, uint32_t plane) {
  return "h" + std::to_string(host) + "p" + std::to_string(plane);
}

uint32_t host_ip(const LabConfig& lab, uint32_t host, uint32_t plane) {
  return lab.subnets.at(plane).network + host + 1;
}

static wire::MacAddr mac_from(uint8_t second, uint32_t ip) {
  return {0x02, second, static_cast<uint8_t>(ip >> 24), static_cast<uint8_t>(ip >> 16), static_cast<uint8_t>(ip >> 8),
          static_cast<uint8_t>(ip)};
}
wire::MacAddr host_mac(const LabConfig& lab, uint32_t host, uint32_t plane) {
  return mac_from(0x00, host_ip(lab, host, plane));
}
wire::MacAddr fabric_mac(const LabConfig& lab, uint32_t host, uint32_t plane) {
  return mac_from(0x01, host_ip(lab, host, plane));
}

std::optional<int> parse_lab_netns(const std::string& prefix, const std::string& netns) {
  if (netns == fabric_netns(prefix)) return -1;
  const std::string head = prefix + "-h";
  if (netns.size() <= head.size() || netns.compare(0, head.size(), head) != 0) return std::nullopt;
  const std::string digits = netns.substr(head.size());
  if (digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  for (char c : digits)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stoi(digits);
}

std::string ip_to_string(uint32_t ip) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
  return buf;
}

std::string mac_to_string(const wire::MacAddr& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

std::string subnet_to_string(const Subnet& s) { return ip_to_string(s.network) + "/" + std::to_string(s.prefix_len); }

std::string lab_env_json(const LabConfig& lab, int indent) {
  using nlohmann::json;
  json planes = json::array();
  for (uint32_t p = 0; p < lab.planes; ++p) planes.push_back({{"plane", p}, {"subnet", subnet_to_string(lab.subnets[p])}});
  json hosts = json::array();
  json links = json::array();
  for (uint32_t h = 0; h < lab.hosts; ++h) {
    json hp = json::array();
    for (uint32_t p = 0; p < lab.planes; ++p) {
      hp.push_back({{"plane", p},
                    {"ifname", host_ifname(p)},
                    {"ip", ip_to_string(host_ip(lab, h, p))},
                    {"prefix_len", lab.subnets[p].prefix_len},
                    {"mac", mac_to_string(host_mac(lab, h, p))},
                    {"fabric_ifname", fabric_ifname(h, p)},
                    {"fabric_mac", mac_to_string(fabric_mac(lab, h, p))}});
      links.push_back({{"ifname", fabric_ifname(h, p)},
                       {"host", h},
                       {"plane", p},
                       {"mac", mac_to_string(fabric_mac(lab, h, p))},
                       {"peer_ip", ip_to_string(host_ip(lab, h, p))},
                       {"peer_mac", mac_to_string(host_mac(lab, h, p))}});
    }
    hosts.push_back({{"host", h}, {"netns", host_netns(lab.name, h)}, {"planes", std::move(hp)}});
  }
  json env = {{"name", lab.name},
              {"mtu", lab.mtu},
              {"planes", std::move(planes)},
              {"hosts", std::move(hosts)},
              {"fabric", {{"netns", fabric_netns(lab.name)}, {"links", std::move(links)}}}};
  return env.dump(indent);
}

}  // namespace metaroce::lab
