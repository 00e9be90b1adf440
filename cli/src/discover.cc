#include "discover.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>

namespace v1 = metaroce::v1;

namespace metarocectl {

ServiceAddress parse_service_address(std::string_view flag, std::string_view text) {
  const auto bad = [&] {
    return UsageError(fmt::format("{}: must be NAME:PORT, e.g. metaroce-endpoint:7443 (got '{}')", flag, text));
  };
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) throw bad();
  std::string host(text.substr(0, colon));
  const std::string port(text.substr(colon + 1));
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') throw bad();
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    throw bad();  // an IPv6 address needs its brackets
  }
  const bool digits = std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || port.size() > 5 || std::stoul(port) == 0 || std::stoul(port) > 65535) throw bad();
  return {host, port};
}

std::string join_host_port(const std::string& host, const std::string& port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

std::vector<std::string> resolve_service(const ServiceAddress& service) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(service.host.c_str(), service.port.c_str(), &hints, &list);
  if (rc != 0)
    throw RpcError("discover", grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                            fmt::format("{} does not resolve: {}", service.host, gai_strerror(rc))));
  std::set<std::string> addresses;
  const int family = list->ai_family;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    if (a->ai_family != family) continue;
    char host[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0)
      addresses.insert(join_host_port(host, service.port));
  }
  freeaddrinfo(list);
  return {addresses.begin(), addresses.end()};
}

ClientOptions options_for_found(const ClientOptions& options, const ServiceAddress& service,
                                const std::vector<std::string>& addresses) {
  ClientOptions out = options;
  if (out.tls && out.tls_server_name.empty())
    for (const std::string& a : addresses) out.tls_server_names[a] = service.host;
  return out;
}

std::vector<FoundDaemon> discover_daemons(const ServiceAddress& service, const ClientOptions& options) {
  const std::vector<std::string> addresses = resolve_service(service);
  const ClientOptions found_options = options_for_found(options, service, addresses);
  std::vector<FoundDaemon> found;
  for (const std::string& address : addresses) {
    FoundDaemon d{address, {}, {}};
    try {
      Client c(address, found_options);
      d.info = c.call<v1::DaemonInfo>(
          "Daemon.GetInfo", [&](auto* ctx, auto* r) { return c.daemon().GetInfo(ctx, v1::GetInfoRequest{}, r); });
    } catch (const RpcError& e) {
      d.error = fmt::format("{}: {}", status_code_name(e.status().error_code()), e.status().error_message());
    }
    found.push_back(std::move(d));
  }
  return found;
}

std::map<std::string, std::string> match_hosts(const std::vector<std::string>& wanted,
                                               const std::vector<FoundDaemon>& found, const std::string& service) {
  std::map<std::string, std::string> by_name;
  std::string seen, silent;
  for (const FoundDaemon& d : found) {
    if (!d.error.empty()) {
      silent += fmt::format("{}{} ({})", silent.empty() ? "" : ", ", d.address, d.error);
      continue;
    }
    seen += fmt::format("{}{} at {}", seen.empty() ? "" : ", ", d.info.name(), d.address);
    const auto [it, added] = by_name.emplace(d.info.name(), d.address);
    if (!added)
      throw UsageError(fmt::format("{}: two daemons answer with the name '{}' ({} and {}); each host's config needs "
                                   "its own name",
                                   service, d.info.name(), it->second, d.address));
  }
  std::map<std::string, std::string> out;
  std::string missing;
  for (const std::string& name : wanted) {
    const auto it = by_name.find(name);
    if (it == by_name.end())
      missing += fmt::format("{}{}", missing.empty() ? "" : ", ", name);
    else
      out[name] = it->second;
  }
  if (!missing.empty())
    throw RpcError("discover",
                   grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                fmt::format("no daemon behind {} is named {} (found: {}{}{})", service, missing,
                                            seen.empty() ? "none" : seen, silent.empty() ? "" : "; not answering: ",
                                            silent)));
  return out;
}

}  // namespace metarocectl
