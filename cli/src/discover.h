// Finding daemons by one DNS name: a Kubernetes headless Service's name
// resolves to the address of every pod behind it (deploy/k8s: the endpoint
// DaemonSet's pods, one per test server), and each daemon answers
// Daemon.GetInfo with its own name (its config's `name`). `metarocectl
// discover` lists them; `scenario run --hosts-from` maps the scenario's host
// names onto them.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "client.h"
#include "units.h"
#include "metaroce/v1/daemon.pb.h"

namespace metarocectl {

struct ServiceAddress {
  std::string host;  // a DNS name (or an address)
  std::string port;
};

// "NAME:PORT" or "[IPv6]:PORT". Throws UsageError naming `flag`.
ServiceAddress parse_service_address(std::string_view flag, std::string_view text);

// "host:port" for gRPC, with brackets around an IPv6 address.
std::string join_host_port(const std::string& host, const std::string& port);

// The addresses `service` resolves to, as "ip:port", sorted and without
// repeats; only the address family of the resolver's first answer, so a
// dual-stack pod (an A and an AAAA record) counts once. Throws RpcError
// (UNAVAILABLE, exit 4) when the name does not resolve.
std::vector<std::string> resolve_service(const ServiceAddress& service);

// `options` for talking to daemons found behind `service` at `addresses`:
// with TLS, each address expects the certificate name `service.host` (a
// certificate cannot name pod IPs in advance; it names the Service), unless
// --tls-server-name says otherwise.
ClientOptions options_for_found(const ClientOptions& options, const ServiceAddress& service,
                                const std::vector<std::string>& addresses);

struct FoundDaemon {
  std::string address;            // "10.1.2.3:7443", "[fd00::3]:7443"
  metaroce::v1::DaemonInfo info;  // when error is empty
  std::string error;              // why it did not answer ("" when it did)
};

// Every daemon behind `service`, each asked Daemon.GetInfo (in address
// order; one that does not answer is listed with its error).
std::vector<FoundDaemon> discover_daemons(const ServiceAddress& service, const ClientOptions& options);

// The address of each of `wanted` (scenario host names) among `found`.
// Throws UsageError (exit 2) when two daemons answer with one name, and
// RpcError (UNAVAILABLE, exit 4: not there yet, e.g. a pod still starting)
// when a wanted name is not among the daemons that answered; the message
// lists what was found and what did not answer.
std::map<std::string, std::string> match_hosts(const std::vector<std::string>& wanted,
                                               const std::vector<FoundDaemon>& found, const std::string& service);

}  // namespace metarocectl
