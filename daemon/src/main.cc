// metaroced: the per-host daemon. Loads and validates its YAML config, opens
// its datapath ports (endpoint and/or fabric role), serves the metaroce.v1
// gRPC API on a Unix socket (and optionally TCP with TLS) plus /metrics, and
// shuts down cleanly on SIGTERM/SIGINT.
#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <httplib.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core.h"
#include "metaroce/security/server_security.h"
#include "metaroce/security/tls_credentials.h"
#include "request_limits.h"
#include "services.h"

namespace md = metaroce::daemon;

namespace {

// A PEM file validate_daemon_config has already read once; "" (and a log
// line) if it has become unreadable since, which the TLS handshake reports.
std::string pem(const std::string& path, const char* key) {
  std::string text;
  if (std::string e = md::read_pem_file(path, key, &text); !e.empty()) spdlog::error("{}", e);
  return text;
}

// True when something accepts connections on the Unix socket (another daemon).
bool socket_in_use(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  const bool used = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return used;
}

std::pair<std::string, int> split_host_port(const std::string& hp) {
  const auto colon = hp.rfind(':');
  std::string host = hp.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return {host, std::atoi(hp.substr(colon + 1).c_str())};
}

}  // namespace

int main(int argc, char** argv) {
  // Signals are taken by sigwait() in main only: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  CLI::App app{"metaroced: MetaRoCE / RoCEv2 endpoints and the lossy-fabric emulator behind a gRPC API"};
  std::string config_path, log_level, peer_host;
  bool check_only = false, insecure = false;
  app.add_option("-c,--config", config_path, "YAML configuration file")->required();
  app.add_flag("--check-config", check_only, "Validate the configuration, print it with defaults, and exit");
  app.add_flag("--insecure", insecure, "Allow a plain-TCP listener (loopback only); Unix sockets need no TLS");
  app.add_option("--log-level", log_level, "Override log_level (trace, debug, info, warn, error, off)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--peer-host", peer_host,
                 "How peers reach this daemon: HOST with control.tcp's port becomes control.peer_address "
                 "(e.g. a pod's IP from the Kubernetes downward API)");
  app.footer(
      "Examples:\n"
      "  metaroced --config configs/daemon/lab-h0.yaml --check-config\n"
      "  ip netns exec mrlab-h0 metaroced --config configs/daemon/lab-h0.yaml\n"
      "  metaroced --config /etc/metaroce/config/$(NODE_NAME).yaml --peer-host $(POD_IP)   # deploy/k8s\n"
      "Exit codes: 0 clean shutdown or valid config; 1 runtime failure (ports, listen); 2 invalid config or usage.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, as the footer says.
    return app.exit(e) == 0 ? 0 : 2;
  }

  std::string error;
  auto config = md::load_daemon_file(config_path, &error);
  if (!config) {
    std::fprintf(stderr, "metaroced: %s\n", error.c_str());
    return 2;
  }
  if (!log_level.empty()) config->log_level = log_level;
  if (insecure) config->control.insecure = true;
  if (!peer_host.empty()) {
    std::string address;
    if (auto e = md::peer_address_for_host(*config, peer_host, &address); !e.empty()) {
      std::fprintf(stderr, "metaroced: %s\n", e.c_str());
      return 2;
    }
    config->control.peer_address = address;
  }
  if (auto e = md::validate_daemon_config(*config, insecure); !e.empty()) {
    std::fprintf(stderr, "metaroced: %s\n", e.c_str());
    return 2;
  }
  if (check_only) {
    std::printf("%s", md::daemon_config_yaml(*config).c_str());
    std::fprintf(stderr, "metaroced: %s: configuration is valid\n", config_path.c_str());
    return 0;
  }
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [" + config->name + "] %v");

  const auto& ctl = config->control;
  if (!ctl.unix_socket.empty()) {
    if (socket_in_use(ctl.unix_socket)) {
      spdlog::error("control.unix_socket: {} is in use by a running daemon", ctl.unix_socket);
      return 1;
    }
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(ctl.unix_socket).parent_path(), ec);
    std::filesystem::remove(ctl.unix_socket, ec);  // stale, from a crashed run
  }

  md::DaemonCore core(*config, insecure);
  if (auto e = core.start(); !e.empty()) {
    spdlog::error("{}", e);
    core.shutdown();
    return 1;
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (!ctl.unix_socket.empty()) builder.AddListeningPort("unix://" + ctl.unix_socket, grpc::InsecureServerCredentials());
  int tcp_port = -1;
  if (!ctl.tcp.empty()) {
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (!ctl.tls.cert.empty()) {
      metaroce::security::ServerTlsPem tls;
      tls.cert_chain = pem(ctl.tls.cert, "control.tls.cert");
      tls.private_key = pem(ctl.tls.key, "control.tls.key");
      if (!ctl.tls.client_ca.empty()) tls.client_ca = pem(ctl.tls.client_ca, "control.tls.client_ca");
      creds = metaroce::security::server_tls_credentials(tls);
    } else {
      spdlog::warn("control.tcp: {} without TLS (--insecure, loopback only)", ctl.tcp);
      creds = grpc::InsecureServerCredentials();
    }
    builder.AddListeningPort(ctl.tcp, creds, &tcp_port);
  }
  {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(std::make_unique<md::UndecodableRequestInterceptorFactory>());
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  auto services = md::make_services(core);
  for (auto& s : services) builder.RegisterService(s.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || (!ctl.tcp.empty() && tcp_port <= 0)) {
    spdlog::error("control: cannot listen on {}{}", ctl.unix_socket, ctl.tcp.empty() ? "" : " / " + ctl.tcp);
    core.shutdown();
    return 1;
  }
  if (!ctl.unix_socket.empty()) chmod(ctl.unix_socket.c_str(), ctl.unix_mode);
  spdlog::info("listening on unix://{}{} (peers reach us at {})", ctl.unix_socket,
               ctl.tcp.empty() ? "" : ", tcp " + ctl.tcp + (ctl.tls.cert.empty() ? " (insecure)" : " (TLS)"),
               core.peer_address());

  httplib::Server metrics;
  std::thread metrics_thread;
  if (!config->metrics.listen.empty()) {
    // With control.token_file set, /metrics asks for the same bearer token
    // (Prometheus: authorization.credentials_file); without one it is open,
    // so metrics.listen should then be a loopback address (docs/control-plane.md).
    metrics.Get("/metrics", [&core](const httplib::Request& req, httplib::Response& res) {
      if (!core.bearer_matches(req.get_header_value("Authorization"))) {
        res.status = 401;
        res.set_header("WWW-Authenticate", "Bearer");
        res.set_content("metrics: missing or wrong bearer token (header 'Authorization: Bearer <token>')\n",
                        "text/plain");
        return;
      }
      res.set_content(core.prometheus_text(), "text/plain; version=0.0.4");
    });
    const auto [host, port] = split_host_port(config->metrics.listen);
    if (!metrics.bind_to_port(host, port)) {
      spdlog::error("metrics.listen: cannot bind {}", config->metrics.listen);
      server->Shutdown();
      core.shutdown();
      return 1;
    }
    if (ctl.token_file.empty() && !md::is_loopback_listen(config->metrics.listen))
      spdlog::warn("metrics.listen: {} is not a loopback address and control.token_file is not set: anyone who can "
                   "reach it can read /metrics (set a token, or listen on 127.0.0.1)",
                   config->metrics.listen);
    metrics_thread = std::thread([&metrics] { metrics.listen_after_bind(); });
    spdlog::info("metrics on http://{}/metrics", config->metrics.listen);
  }

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("{}: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  if (auto* health = server->GetHealthCheckService()) health->Shutdown();
  // Jobs stop and release their peers before the server goes, so peers can
  // still reach us for the duration of the drain.
  core.shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (metrics_thread.joinable()) {
    metrics.stop();
    metrics_thread.join();
  }
  if (!ctl.unix_socket.empty()) {
    std::error_code ec;
    std::filesystem::remove(ctl.unix_socket, ec);
  }
  spdlog::info("bye");
  return 0;
}
