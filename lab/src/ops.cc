#include "metaroce/lab/ops.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

extern char** environ;

namespace metaroce::lab {

using nlohmann::json;

// ---------------------------------------------------------------------------
// Running commands

CommandResult run_command(const std::vector<std::string>& argv) {
  CommandResult r;
  if (argv.empty()) return r;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    r.err = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.err = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    r.err = "cannot run '" + argv[0] + "': " + std::strerror(rc);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return r;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (WIFSIGNALED(status)) r.err += "killed by signal " + std::to_string(WTERMSIG(status));
  return r;
}

std::string Ip::describe(const std::vector<std::string>& args) {
  std::string s = "ip";
  for (const auto& a : args) s += " " + a;
  return s;
}

CommandResult Ip::run(const std::vector<std::string>& args) const {
  if (log_) log_(describe(args));
  std::vector<std::string> argv{"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runner_(argv);
}

bool Ip::check(const std::vector<std::string>& args, std::string* error, std::string* out) const {
  CommandResult r = run(args);
  if (r.status == 0) {
    if (out) *out = std::move(r.out);
    return true;
  }
  std::string why = r.err.empty() ? r.out : r.err;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  std::replace(why.begin(), why.end(), '\n', ' ');
  if (r.status < 0)
    *error = describe(args) + ": " + (why.empty() ? "could not run (is iproute2 installed?)" : why);
  else
    *error = describe(args) + ": exit status " + std::to_string(r.status) + (why.empty() ? "" : ": " + why);
  return false;
}

namespace {

// Parses `ip -j` output; empty output is an empty list.
bool parse_json_list(const std::string& what, const std::string& text, json* out, std::string* error) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    *out = json::array();
    return true;
  }
  *out = json::parse(text, nullptr, false);
  if (out->is_discarded() || !out->is_array()) {
    *error = what + ": unexpected output (not a JSON list): " + text.substr(0, 200);
    return false;
  }
  return true;
}

struct LinkState {
  bool up = false, lower_up = false;
  uint32_t mtu = 0;
  std::string mac;
  std::vector<std::string> inet;  // "a.b.c.d/len"
};
using LinkMap = std::map<std::string, LinkState>;

bool read_links(const Ip& ip, const std::string& ns, LinkMap* links, std::string* error) {
  std::string out;
  const std::vector<std::string> args{"-j", "-n", ns, "addr", "show"};
  if (!ip.check(args, error, &out)) return false;
  json list;
  if (!parse_json_list(Ip::describe(args), out, &list, error)) return false;
  links->clear();
  for (const auto& l : list) {
    if (!l.is_object() || !l.contains("ifname")) continue;
    LinkState s;
    for (const auto& f : l.value("flags", json::array())) {
      if (f == "UP") s.up = true;
      if (f == "LOWER_UP") s.lower_up = true;
    }
    s.mtu = l.value("mtu", 0u);
    s.mac = l.value("address", "");
    for (const auto& a : l.value("addr_info", json::array())) {
      if (a.value("family", "") == "inet")
        s.inet.push_back(a.value("local", "") + "/" + std::to_string(a.value("prefixlen", 0)));
    }
    (*links)[l["ifname"].get<std::string>()] = std::move(s);
  }
  return true;
}

struct Neighbour {
  std::string dev, lladdr;
  bool permanent = false;
};
using NeighMap = std::map<std::string, std::vector<Neighbour>>;  // by destination IP

bool read_neighbours(const Ip& ip, const std::string& ns, NeighMap* neigh, std::string* error) {
  std::string out;
  const std::vector<std::string> args{"-j", "-4", "-n", ns, "neigh", "show"};
  if (!ip.check(args, error, &out)) return false;
  json list;
  if (!parse_json_list(Ip::describe(args), out, &list, error)) return false;
  neigh->clear();
  for (const auto& n : list) {
    if (!n.is_object() || !n.contains("dst")) continue;
    Neighbour e;
    e.dev = n.value("dev", "");
    e.lladdr = n.value("lladdr", "");
    for (const auto& s : n.value("state", json::array())) e.permanent = e.permanent || s == "PERMANENT";
    (*neigh)[n["dst"].get<std::string>()].push_back(std::move(e));
  }
  return true;
}

bool has_neighbour(const NeighMap& neigh, const std::string& dst, const std::string& dev, const std::string& mac) {
  auto it = neigh.find(dst);
  if (it == neigh.end()) return false;
  for (const auto& e : it->second)
    if (e.dev == dev && e.lladdr == mac && e.permanent) return true;
  return false;
}

// Namespace basics: loopback up, IPv6 off (no router solicitations, DAD or
// MLD reports leaking into the fabric). Only writes what differs.
bool ensure_netns_basics(const Ip& ip, const std::string& ns, UpReport* report, std::string* error) {
  LinkMap links;
  if (!read_links(ip, ns, &links, error)) return false;
  if (!links["lo"].up) {
    if (!ip.check({"-n", ns, "link", "set", "dev", "lo", "up"}, error)) return false;
    ++report->commands;
  }
  const CommandResult cur = ip.run({"netns", "exec", ns, "sysctl", "-n", "net.ipv6.conf.all.disable_ipv6",
                                    "net.ipv6.conf.default.disable_ipv6"});
  if (cur.status != 0) {
    report->warnings.push_back(ns + ": IPv6 left as is (cannot read net.ipv6.conf.*.disable_ipv6)");
    return true;
  }
  if (cur.out != "1\n1\n") {
    if (!ip.check({"netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                   "net.ipv6.conf.default.disable_ipv6=1"},
                  error))
      return false;
    ++report->commands;
  }
  return true;
}

// One veth end: MTU, MAC, up; exactly `want_inet` as IPv4 addresses.
bool ensure_end(const Ip& ip, const std::string& ns, const std::string& ifname, const LinkState& have, uint32_t mtu,
                const std::string& mac, const std::string& want_inet, UpReport* report, std::string* error) {
  if (have.mtu != mtu || have.mac != mac || !have.up) {
    if (!ip.check({"-n", ns, "link", "set", "dev", ifname, "mtu", std::to_string(mtu), "address", mac, "up"}, error))
      return false;
    ++report->commands;
    // veth defers TCP/UDP checksums to "hardware"; frames an AF_XDP fabric node
    // forwards would arrive unfinished, so checksum in software (best effort: needs ethtool).
    ip.run({"netns", "exec", ns, "ethtool", "-K", ifname, "tx", "off"});
  }
  const bool right = want_inet.empty() ? have.inet.empty() : (have.inet.size() == 1 && have.inet[0] == want_inet);
  if (!right) {
    if (!have.inet.empty()) {
      if (!ip.check({"-n", ns, "-4", "addr", "flush", "dev", ifname}, error)) return false;
      ++report->commands;
    }
    if (!want_inet.empty()) {
      if (!ip.check({"-n", ns, "addr", "add", want_inet, "dev", ifname}, error)) return false;
      ++report->commands;
    }
  }
  return true;
}

std::string host_cidr(const LabConfig& lab, uint32_t h, uint32_t p) {
  return ip_to_string(host_ip(lab, h, p)) + "/" + std::to_string(lab.subnets[p].prefix_len);
}

}  // namespace

bool list_netns(const Ip& ip, std::vector<std::string>* names, std::string* error) {
  std::string out;
  const std::vector<std::string> args{"-j", "netns", "list"};
  if (!ip.check(args, error, &out)) return false;
  json list;
  if (!parse_json_list(Ip::describe(args), out, &list, error)) return false;
  names->clear();
  for (const auto& n : list)
    if (n.is_object() && n.contains("name")) names->push_back(n["name"].get<std::string>());
  return true;
}

// ---------------------------------------------------------------------------
// up

bool lab_up(const LabConfig& lab, const Ip& ip, UpReport* report, std::string* error) {
  UpReport scratch;
  if (!report) report = &scratch;
  *report = UpReport{};
  std::vector<std::string> existing;
  if (!list_netns(ip, &existing, error)) return false;
  const std::set<std::string> have(existing.begin(), existing.end());

  const std::string fab = fabric_netns(lab.name);
  std::vector<std::string> hosts;
  for (uint32_t h = 0; h < lab.hosts; ++h) hosts.push_back(host_netns(lab.name, h));
  for (const auto& n : existing) {
    const auto idx = parse_lab_netns(lab.name, n);
    if (idx && *idx >= static_cast<int>(lab.hosts))
      report->warnings.push_back(n + ": exists but the description has " + std::to_string(lab.hosts) +
                                 " hosts (left alone; `down` removes it)");
  }

  std::vector<std::string> all{fab};
  all.insert(all.end(), hosts.begin(), hosts.end());
  for (const auto& ns : all) {
    if (!have.count(ns)) {
      if (!ip.check({"netns", "add", ns}, error)) return false;
      ++report->namespaces_created;
      ++report->commands;
    }
    if (!ensure_netns_basics(ip, ns, report, error)) return false;
  }

  // veth pairs: created inside their namespaces; a lone end (its pair half
  // deleted by hand) is removed and the pair made again.
  LinkMap fab_links;
  std::vector<LinkMap> host_links(lab.hosts);
  if (!read_links(ip, fab, &fab_links, error)) return false;
  for (uint32_t h = 0; h < lab.hosts; ++h)
    if (!read_links(ip, hosts[h], &host_links[h], error)) return false;
  bool created = false;
  for (uint32_t h = 0; h < lab.hosts; ++h) {
    for (uint32_t p = 0; p < lab.planes; ++p) {
      const std::string hif = host_ifname(p), fif = fabric_ifname(h, p);
      const bool host_has = host_links[h].count(hif) > 0, fab_has = fab_links.count(fif) > 0;
      if (host_has && fab_has) continue;
      if (host_has) {
        if (!ip.check({"-n", hosts[h], "link", "del", "dev", hif}, error)) return false;
        ++report->commands;
      }
      if (fab_has) {
        if (!ip.check({"-n", fab, "link", "del", "dev", fif}, error)) return false;
        ++report->commands;
      }
      const std::string mtu = std::to_string(lab.mtu);
      if (!ip.check({"link", "add", hif, "netns", hosts[h], "mtu", mtu, "address", mac_to_string(host_mac(lab, h, p)),
                     "type", "veth", "peer", "name", fif, "netns", fab, "mtu", mtu, "address",
                     mac_to_string(fabric_mac(lab, h, p))},
                    error))
        return false;
      ++report->links_created;
      ++report->commands;
      created = true;
    }
  }
  if (created) {
    if (!read_links(ip, fab, &fab_links, error)) return false;
    for (uint32_t h = 0; h < lab.hosts; ++h)
      if (!read_links(ip, hosts[h], &host_links[h], error)) return false;
  }

  // Link settings and addresses.
  for (uint32_t h = 0; h < lab.hosts; ++h) {
    for (uint32_t p = 0; p < lab.planes; ++p) {
      if (!ensure_end(ip, fab, fabric_ifname(h, p), fab_links[fabric_ifname(h, p)], lab.mtu,
                      mac_to_string(fabric_mac(lab, h, p)), "", report, error))
        return false;
      if (!ensure_end(ip, hosts[h], host_ifname(p), host_links[h][host_ifname(p)], lab.mtu,
                      mac_to_string(host_mac(lab, h, p)), host_cidr(lab, h, p), report, error))
        return false;
    }
  }

  // Static neighbours: every other host on each plane.
  for (uint32_t h = 0; h < lab.hosts; ++h) {
    NeighMap neigh;
    if (!read_neighbours(ip, hosts[h], &neigh, error)) return false;
    for (uint32_t p = 0; p < lab.planes; ++p) {
      for (uint32_t k = 0; k < lab.hosts; ++k) {
        if (k == h) continue;
        const std::string dst = ip_to_string(host_ip(lab, k, p)), mac = mac_to_string(host_mac(lab, k, p));
        if (has_neighbour(neigh, dst, host_ifname(p), mac)) continue;
        if (!ip.check({"-n", hosts[h], "neigh", "replace", dst, "lladdr", mac, "dev", host_ifname(p), "nud",
                       "permanent"},
                      error))
          return false;
        ++report->commands;
      }
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// down

bool lab_down(const std::string& prefix, const Ip& ip, std::vector<std::string>* removed, std::string* error) {
  std::vector<std::string> scratch;
  if (!removed) removed = &scratch;
  removed->clear();
  if (auto why = check_lab_name(prefix, "prefix"); !why.empty()) {
    *error = why;
    return false;
  }
  std::vector<std::string> existing;
  if (!list_netns(ip, &existing, error)) return false;
  // Hosts first, the fabric last (the reverse of up).
  std::vector<std::string> doomed;
  for (const auto& n : existing)
    if (auto idx = parse_lab_netns(prefix, n); idx && *idx >= 0) doomed.push_back(n);
  for (const auto& n : existing)
    if (auto idx = parse_lab_netns(prefix, n); idx && *idx < 0) doomed.push_back(n);
  std::string first_error;
  for (const auto& n : doomed) {
    std::string why;
    if (ip.check({"netns", "del", n}, &why)) {
      removed->push_back(n);
    } else if (first_error.empty()) {
      first_error = why;  // keep going: remove as much as possible
    }
  }
  if (!first_error.empty()) {
    *error = first_error;
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// status

bool lab_status(const std::string& prefix, const LabConfig* lab, const Ip& ip, LabStatus* st, std::string* error) {
  *st = LabStatus{};
  st->prefix = prefix;
  st->has_description = lab != nullptr;
  if (auto why = check_lab_name(prefix, "prefix"); !why.empty()) {
    *error = why;
    return false;
  }
  std::vector<std::string> existing;
  if (!list_netns(ip, &existing, error)) return false;
  std::map<int, std::string> present;  // -1 fabric, else host index
  for (const auto& n : existing)
    if (auto idx = parse_lab_netns(prefix, n)) present[*idx] = n;
  st->any = !present.empty();

  auto describe_links = [&](NetnsStatus& ns, const LinkMap& links, const NeighMap& neigh) {
    for (const auto& [name, l] : links) {
      if (name == "lo") continue;
      InterfaceStatus i;
      i.netns = ns.name;
      i.ifname = name;
      i.present = true;
      i.up = l.up;
      i.lower_up = l.lower_up;
      i.mtu = l.mtu;
      i.mac = l.mac;
      i.addresses = l.inet;
      for (const auto& [dst, entries] : neigh)
        for (const auto& e : entries) i.neighbours += e.dev == name && e.permanent;
      ns.interfaces.push_back(std::move(i));
    }
  };

  bool complete = lab != nullptr;
  std::vector<int> order;
  if (lab) {
    order.push_back(-1);
    for (uint32_t h = 0; h < lab->hosts; ++h) order.push_back(static_cast<int>(h));
  }
  for (const auto& [idx, name] : present)
    if (std::find(order.begin(), order.end(), idx) == order.end()) order.push_back(idx);
  for (int idx : order) {
    NetnsStatus ns;
    ns.name = idx < 0 ? fabric_netns(prefix) : host_netns(prefix, static_cast<uint32_t>(idx));
    ns.present = present.count(idx) > 0;
    ns.expected = lab && (idx < 0 || idx < static_cast<int>(lab->hosts));
    LinkMap links;
    NeighMap neigh;
    if (ns.present) {
      if (!read_links(ip, ns.name, &links, error)) return false;
      if (!read_neighbours(ip, ns.name, &neigh, error)) return false;
    }
    if (!ns.expected) {
      describe_links(ns, links, neigh);
    } else {
      complete = complete && ns.present;
      for (uint32_t h = 0; h < lab->hosts; ++h) {
        if (idx >= 0 && h != static_cast<uint32_t>(idx)) continue;
        for (uint32_t p = 0; p < lab->planes; ++p) {
          InterfaceStatus i;
          i.netns = ns.name;
          i.ifname = idx < 0 ? fabric_ifname(h, p) : host_ifname(p);
          auto it = links.find(i.ifname);
          i.present = it != links.end();
          const std::string want_mac = mac_to_string(idx < 0 ? fabric_mac(*lab, h, p) : host_mac(*lab, h, p));
          const std::vector<std::string> want_inet =
              idx < 0 ? std::vector<std::string>{} : std::vector<std::string>{host_cidr(*lab, h, p)};
          uint32_t want_neigh = 0;
          if (i.present) {
            const LinkState& l = it->second;
            i.up = l.up;
            i.lower_up = l.lower_up;
            i.mtu = l.mtu;
            i.mac = l.mac;
            i.addresses = l.inet;
            if (idx >= 0) {
              for (uint32_t k = 0; k < lab->hosts; ++k) {
                if (k == h) continue;
                ++want_neigh;
                if (has_neighbour(neigh, ip_to_string(host_ip(*lab, k, p)), i.ifname,
                                  mac_to_string(host_mac(*lab, k, p))))
                  ++i.neighbours;
              }
            }
          }
          i.matches = i.present && i.up && i.mtu == lab->mtu && i.mac == want_mac && i.addresses == want_inet &&
                      i.neighbours == want_neigh;
          complete = complete && i.matches;
          ns.interfaces.push_back(std::move(i));
          links.erase(ns.interfaces.back().ifname);
        }
      }
      links.erase("lo");
      if (ns.present) {
        LinkMap extra = links;  // interfaces the description does not have
        NetnsStatus tmp;
        tmp.name = ns.name;
        describe_links(tmp, extra, neigh);
        for (auto& i : tmp.interfaces) {
          i.matches = false;
          ns.interfaces.push_back(std::move(i));
        }
      }
    }
    st->namespaces.push_back(std::move(ns));
  }
  st->complete = complete;
  return true;
}

std::string lab_status_json(const LabStatus& st, int indent) {
  json nss = json::array();
  for (const auto& ns : st.namespaces) {
    json ifs = json::array();
    for (const auto& i : ns.interfaces) {
      ifs.push_back({{"ifname", i.ifname},
                     {"present", i.present},
                     {"up", i.up},
                     {"lower_up", i.lower_up},
                     {"mtu", i.mtu},
                     {"mac", i.mac},
                     {"addresses", i.addresses},
                     {"neighbours", i.neighbours},
                     {"matches", i.matches}});
    }
    nss.push_back({{"name", ns.name}, {"present", ns.present}, {"expected", ns.expected}, {"interfaces", ifs}});
  }
  json j = {{"prefix", st.prefix},
            {"has_description", st.has_description},
            {"complete", st.complete},
            {"any", st.any},
            {"namespaces", nss}};
  return j.dump(indent);
}

std::string lab_status_text(const LabStatus& st) {
  std::ostringstream o;
  o << "lab '" << st.prefix << "': ";
  if (!st.any)
    o << "absent";
  else if (!st.has_description)
    o << "present";
  else
    o << (st.complete ? "complete" : "incomplete");
  o << "\n";
  if (st.namespaces.empty()) return o.str();
  char line[256];
  std::snprintf(line, sizeof line, "%-14s %-8s %-8s %-5s %-17s %-18s %-5s %s\n", "NETNS", "IFNAME", "STATE", "MTU",
                "MAC", "ADDRESS", "NEIGH", "OK");
  o << line;
  for (const auto& ns : st.namespaces) {
    if (!ns.present) {
      std::snprintf(line, sizeof line, "%-14s %-8s %-8s\n", ns.name.c_str(), "-", "missing");
      o << line;
      continue;
    }
    if (ns.interfaces.empty()) {
      std::snprintf(line, sizeof line, "%-14s %-8s %-8s %-5s %-17s %-18s %-5s %s\n", ns.name.c_str(), "-", "-", "-",
                    "-", "-", "-", !st.has_description ? "-" : ns.expected ? "yes" : "extra");
      o << line;
    }
    for (const auto& i : ns.interfaces) {
      const char* state = !i.present ? "missing" : i.lower_up ? "up" : i.up ? "no-carr" : "down";
      std::string addr = i.addresses.empty() ? "-" : i.addresses[0];
      for (size_t k = 1; k < i.addresses.size(); ++k) addr += "," + i.addresses[k];
      const char* ok = !st.has_description ? "-" : !ns.expected ? "extra" : i.matches ? "yes" : "NO";
      std::snprintf(line, sizeof line, "%-14s %-8s %-8s %-5s %-17s %-18s %-5s %s\n", ns.name.c_str(),
                    i.ifname.c_str(), state, i.present ? std::to_string(i.mtu).c_str() : "-",
                    i.present ? i.mac.c_str() : "-", addr.c_str(),
                    i.present ? std::to_string(i.neighbours).c_str() : "-", ok);
      o << line;
    }
  }
  return o.str();
}

}  // namespace metaroce::lab
