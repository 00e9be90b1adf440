#include "core.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <random>
#include <sstream>

#include "metaroce/lab/config.h"
#include "request_limits.h"

namespace metaroce::daemon {
namespace {

// The token of a configured file (config.h: read_token_file); "" when none is
// configured. An unusable file sets *error: the daemon must not start with
// authentication silently off.
std::string read_token(const std::string& file, const char* key, std::string* error) {
  if (file.empty()) return {};
  std::string t;
  if (std::string e = read_token_file(file, key, &t); !e.empty() && error && error->empty()) *error = e;
  return t;
}

// A PEM file validate_daemon_config has already read once; "" (and a log
// line) if it has become unreadable since, which the TLS handshake reports.
std::string pem(const std::string& path, const char* key) {
  std::string text;
  if (std::string e = read_pem_file(path, key, &text); !e.empty()) spdlog::error("{}", e);
  return text;
}

std::string range_text(uint64_t lo, uint64_t hi, uint64_t got) {
  return "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + std::to_string(got) + ")";
}

void fill_port_stats(const datapath::PortStats& st, v1::PortInfo* p) {
  p->set_rx_frames(st.rx_frames), p->set_rx_bytes(st.rx_bytes), p->set_tx_frames(st.tx_frames);
  p->set_tx_bytes(st.tx_bytes), p->set_tx_ring_full(st.tx_ring_full), p->set_rx_dropped(st.rx_dropped);
  p->set_rx_truncated(st.rx_truncated), p->set_wakeups(st.wakeups);
}

}  // namespace

v1::PathState to_proto(transport::PathState s) {
  switch (s) {
    case transport::PathState::kActive: return v1::PATH_STATE_ACTIVE;
    case transport::PathState::kDegraded: return v1::PATH_STATE_DEGRADED;
    case transport::PathState::kDown: return v1::PATH_STATE_DOWN;
  }
  return v1::PATH_STATE_UNSPECIFIED;
}

// A caller's string is echoed only through quote_value (request_limits.h),
// which bounds it, so a message stays well inside gRPC's metadata limit.
grpc::Status invalid(const std::string& field, const std::string& what) {
  return {grpc::StatusCode::INVALID_ARGUMENT, field + ": " + what};
}

grpc::Status check_src_ports(const std::string& field, const google::protobuf::RepeatedField<uint32_t>& ports) {
  for (int i = 0; i < ports.size(); ++i)
    if (ports.Get(i) < 1024 || ports.Get(i) > 65535)
      return invalid(field + "[" + std::to_string(i) + "]", range_text(1024, 65535, ports.Get(i)));
  return grpc::Status::OK;
}

// ------------------------------------------------------------------ peers

PeerDialer::PeerDialer(const ControlConfig& control)
    : control_(control), token_(read_token(control.peer_token_file, "control.peer_token_file", nullptr)) {
  // The same token on every daemon by default (validate_daemon_config checked both files).
  if (token_.empty()) token_ = read_token(control.token_file, "control.token_file", nullptr);
}

std::shared_ptr<grpc::Channel> PeerDialer::channel(const std::string& address) {
  std::lock_guard<std::mutex> g(mu_);
  auto& ch = channels_[address];
  if (!ch) {
    std::string target = address;
    if (target.rfind("unix:", 0) == 0 && target.rfind("unix://", 0) != 0) target = "unix://" + target.substr(5);
    std::shared_ptr<grpc::ChannelCredentials> creds;
    const bool is_unix = target.rfind("unix:", 0) == 0;
    if (!is_unix && !control_.peer_tls.ca.empty()) {
      grpc::SslCredentialsOptions o;
      o.pem_root_certs = pem(control_.peer_tls.ca, "control.peer_tls.ca");
      if (!control_.peer_tls.cert.empty()) {
        o.pem_cert_chain = pem(control_.peer_tls.cert, "control.peer_tls.cert");
        o.pem_private_key = pem(control_.peer_tls.key, "control.peer_tls.key");
      }
      creds = grpc::SslCredentials(o);
    } else {
      creds = grpc::InsecureChannelCredentials();
    }
    grpc::ChannelArguments args;
    if (!control_.peer_tls.server_name.empty()) args.SetSslTargetNameOverride(control_.peer_tls.server_name);
    ch = grpc::CreateCustomChannel(target, creds, args);
  }
  return ch;
}

void PeerDialer::prepare(grpc::ClientContext* ctx, int timeout_ms) const {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
}

// ------------------------------------------------------------------ lifecycle

DaemonCore::DaemonCore(DaemonConfig config, bool insecure)
    : config_(std::move(config)), insecure_(insecure), token_(read_token(config_.control.token_file, "control.token_file", &token_error_)),
      dialer_(config_.control),
      memory_budget_(config_.endpoint ? config_.endpoint->memory_budget_bytes : 0) {
  started_ns_ = datapath::monotonic_ns();
}

DaemonCore::~DaemonCore() { shutdown(); }

std::string DaemonCore::start() {
  if (!token_error_.empty()) return token_error_;
  std::string err;
  if (config_.fabric) {
    // With both roles the endpoint's worker thread runs the fabric node too:
    // one busy thread, not two (docs/architecture.md, "Threads and cores").
    fabric_ = FabricRuntime::start(*config_.fabric, config_.name, &err, /*own_thread=*/!config_.endpoint);
    if (!fabric_) return err;
    spdlog::info("fabric: {} hosts x {} planes x {} ECMP links on {} ports", config_.fabric->hosts,
                 config_.fabric->planes, config_.fabric->ecmp_links, config_.fabric->datapath);
  }
  if (config_.endpoint) {
    endpoint_ = EndpointRuntime::start(*config_.endpoint, config_.name, &err, fabric_.get());
    if (!endpoint_) return err;
    spdlog::info("endpoint: {} {} on {} planes ({})", lab::ip_to_string(config_.endpoint->ip),
                 lab::mac_to_string(endpoint_->config().mac), endpoint_->planes(), config_.endpoint->datapath);
    housekeeping_ = std::thread([this] {
      std::unique_lock<std::mutex> lk(housekeeping_mu_);
      while (!housekeeping_cv_.wait_for(lk, std::chrono::seconds(1), [this] { return housekeeping_stop_; })) {
        lk.unlock();
        expire_half_open(datapath::monotonic_ns());
        lk.lock();
      }
    });
  }
  return {};
}

size_t DaemonCore::expire_half_open(int64_t now_ns) {
  if (!endpoint_) return 0;
  const int64_t period = config_.endpoint->half_open_timeout_ns;
  struct Due {
    uint32_t id, requester_id;
    std::string address;
  };
  std::vector<Due> due;
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    for (const auto& [id, r] : conns_)
      if (!r.requester && now_ns - r.checked_ns >= period) due.push_back({id, r.remote_id, r.peer_address});
  }
  size_t released = 0;
  for (const Due& d : due) {
    grpc::ClientContext ctx;
    dialer_.prepare(&ctx, 2000);
    v1::GetConnectionRequest q;
    q.set_id(d.requester_id);
    v1::ConnectionInfo info;
    const grpc::Status s = v1::Connections::NewStub(dialer_.channel(d.address))->Get(&ctx, q, &info);
    // The requester still has its half when it answers with a requester record
    // that points back at this one.
    const bool alive = s.ok() && info.role() == "requester" && info.remote_id() == d.id;
    bool expire = false;
    std::string why;
    {
      std::lock_guard<std::mutex> g(conns_mu_);
      auto it = conns_.find(d.id);
      if (it == conns_.end()) continue;  // released meanwhile
      ConnectionRecord& r = it->second;
      r.checked_ns = now_ns;
      if (alive) {
        r.unanswered_ns = 0;
      } else if (s.ok() || s.error_code() == grpc::StatusCode::NOT_FOUND) {
        expire = true;
        why = "the requester no longer has it";
      } else {
        if (r.unanswered_ns == 0) r.unanswered_ns = now_ns;
        if (now_ns - r.unanswered_ns >= period) {
          expire = true;
          why = "the requester has not answered for " + std::to_string((now_ns - r.unanswered_ns) / 1'000'000) +
                " ms (" + s.error_message().substr(0, 80) + ")";
        }
      }
    }
    if (!expire) continue;
    if (release(d.id).ok()) {
      ++released;
      half_open_expired_.fetch_add(1);
      spdlog::warn("connection {}: accepted from {} but half-open, released: {}", d.id, d.address.substr(0, 80), why);
    }
  }
  return released;
}

void DaemonCore::shutdown() {
  if (shutting_down_.exchange(true)) return;
  for (const auto& hook : shutdown_hooks_) hook();
  {
    std::lock_guard<std::mutex> g(housekeeping_mu_);
    housekeeping_stop_ = true;
  }
  housekeeping_cv_.notify_all();
  if (housekeeping_.joinable()) housekeeping_.join();
  // Jobs first: they stop posting, drain and release their connections.
  std::vector<std::shared_ptr<JobRecord>> jobs;
  {
    std::lock_guard<std::mutex> g(jobs_mu_);
    for (auto& [id, j] : jobs_) jobs.push_back(j);
  }
  for (auto& j : jobs) stop_job_for_shutdown(j);
  for (auto& j : jobs) join_job(j);
  std::vector<uint32_t> ids;
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    for (auto& [id, r] : conns_) ids.push_back(id);
  }
  for (uint32_t id : ids) {
    bool released = false;
    delete_connection(id, &released);
  }
  if (endpoint_ || fabric_) spdlog::info("final counters:\n{}", prometheus_text());
  if (endpoint_) endpoint_->stop();
  if (fabric_) fabric_->stop();
  spdlog::info("stopped: ports released, XDP programs detached");
}

int64_t DaemonCore::uptime_ns() const { return datapath::monotonic_ns() - started_ns_; }

std::string DaemonCore::peer_address() const {
  if (!config_.control.peer_address.empty()) return config_.control.peer_address;
  if (!config_.control.unix_socket.empty()) return "unix://" + config_.control.unix_socket;
  return config_.control.tcp;
}

bool DaemonCore::authorized(const grpc::ServerContext* ctx) const {
  if (token_.empty()) return true;
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return false;
  return bearer_matches(std::string(it->second.data(), it->second.size()));
}

bool DaemonCore::bearer_matches(const std::string& v) const { return security::bearer_matches(v, token_); }

grpc::Status DaemonCore::need_endpoint() const {
  if (endpoint_) return grpc::Status::OK;
  return {grpc::StatusCode::FAILED_PRECONDITION,
          "role: this daemon has role " + std::string(role_name(config_.role)) +
              " and no endpoint (connections, memory and traffic need role endpoint or both)"};
}

grpc::Status DaemonCore::need_fabric() const {
  if (fabric_) return grpc::Status::OK;
  return {grpc::StatusCode::FAILED_PRECONDITION,
          "role: this daemon has role " + std::string(role_name(config_.role)) +
              " and no fabric (fabric calls need role fabric or both)"};
}

// ------------------------------------------------------------------ daemon

void DaemonCore::info(v1::DaemonInfo* out) {
  out->set_name(config_.name);
  out->set_version(METAROCE_VERSION);
  out->set_role(config_.role == DaemonRole::kEndpoint ? v1::ROLE_ENDPOINT
                : config_.role == DaemonRole::kFabric ? v1::ROLE_FABRIC
                                                      : v1::ROLE_BOTH);
  out->set_uptime_ns(uptime_ns());
  for (const auto& k : datapath::supported_port_kinds()) out->add_port_kinds(k);
  if (endpoint_) {
    out->set_endpoint_address(lab::ip_to_string(config_.endpoint->ip));
    out->set_endpoint_udp_port(config_.endpoint->udp_port);
    out->set_endpoint_mac(lab::mac_to_string(endpoint_->config().mac));
    out->set_planes(endpoint_->planes());
  } else if (fabric_) {
    out->set_planes(config_.fabric->planes);
  }
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    out->set_connections(static_cast<uint32_t>(conns_.size()));
  }
  if (endpoint_) {
    out->set_max_connections(config_.endpoint->max_connections);
    transport::EndpointCounters c;
    datapath::WorkerStats w;
    if (endpoint_->snapshot_counters(&c, &w)) out->set_connection_state_bytes(c.connection_state_bytes);
  }
  out->set_jobs_running(jobs_running());
  out->set_peer_address(peer_address());
}

grpc::Status DaemonCore::ports(v1::ListPortsResponse* out) {
  if (endpoint_) {
    std::vector<PortSnapshot> snap;
    if (!endpoint_->snapshot_ports(&snap)) return {grpc::StatusCode::UNAVAILABLE, "endpoint worker did not answer"};
    for (const auto& s : snap) {
      auto* p = out->add_ports();
      p->set_name(s.name), p->set_kind(s.kind), p->set_interface(s.interface), p->set_plane(s.plane);
      p->set_host(-1), p->set_use("endpoint");
      fill_port_stats(s.stats, p);
    }
  }
  if (fabric_) {
    FabricSnapshot snap;
    if (!fabric_->snapshot(&snap)) return {grpc::StatusCode::UNAVAILABLE, "fabric worker did not answer"};
    const auto& f = *config_.fabric;
    for (size_t i = 0; i < snap.ports.size(); ++i) {
      const auto& [name, st] = snap.ports[i];
      auto* p = out->add_ports();
      p->set_name(name), p->set_kind(f.datapath), p->set_interface(name);
      p->set_plane(static_cast<uint32_t>(i / f.hosts)), p->set_host(static_cast<int32_t>(i % f.hosts));
      p->set_use("fabric");
      fill_port_stats(st, p);
    }
  }
  return grpc::Status::OK;
}

// ------------------------------------------------------------------ connections

uint32_t DaemonCore::allocate_id(size_t* held) {
  // 24-bit ids (RoCEv2 QP numbers, MetaRoCE connection ids), never 0, drawn
  // at random so a host that does not see them on the wire cannot guess a
  // live one; ids in use are skipped. The limit is checked under the same
  // lock, so concurrent creations (gRPC calls, a job's setup) never pass it.
  std::lock_guard<std::mutex> g(conns_mu_);
  *held = conns_.size();
  if (conns_.size() >= config_.endpoint->max_connections) return 0;
  for (;;) {
    const uint32_t id = static_cast<uint32_t>(id_random_() % 0xFFFFFF) + 1;
    if (!conns_.count(id)) {
      conns_[id].id = id;  // reserved; filled in by the caller
      return id;
    }
  }
}

grpc::Status resolve_connection_params(const v1::ConnectionParams& in, const EndpointSection& e, uint32_t planes,
                                       v1::ConnectionParams* out) {
  namespace t = transport;
  *out = in;
  if (in.transport() == v1::TRANSPORT_UNSPECIFIED) out->set_transport(v1::TRANSPORT_METAROCE);
  if (!v1::Transport_IsValid(out->transport())) return invalid("params.transport", "must be metaroce or rocev2");
  const bool rocev2 = out->transport() == v1::TRANSPORT_ROCEV2;
  // Ranges and defaults: transport/connection_params.h; 0 = the default.
  auto check = [](const t::ConnectionParam& p, int64_t v) {
    return p.accepts(v) ? grpc::Status::OK
                        : grpc::Status{grpc::StatusCode::INVALID_ARGUMENT, p.refusal("params." + std::string(p.name), v)};
  };
  if (in.paths() == 0) out->set_paths(rocev2 ? 1 : static_cast<uint32_t>(t::kDefaultPathsPerPlane) * planes);
  if (rocev2 && out->paths() != 1)
    return invalid("params.paths", "rocev2 connections have exactly 1 path (got " + std::to_string(out->paths()) + ")");
  if (auto s = check(t::kParamPaths, out->paths()); !s.ok()) return s;
  if (in.streams() == 0) out->set_streams(static_cast<uint32_t>(t::kParamStreams.default_value));
  if (auto s = check(t::kParamStreams, out->streams()); !s.ok()) return s;
  if (in.queue_depth() == 0) out->set_queue_depth(static_cast<uint32_t>(t::kParamQueueDepth.default_value));
  if (auto s = check(t::kParamQueueDepth, out->queue_depth()); !s.ok()) return s;
  if (in.mtu_payload_bytes() == 0) out->set_mtu_payload_bytes(e.mtu_payload);
  if (auto s = check(t::kParamMtuPayload, out->mtu_payload_bytes()); !s.ok()) return s;
  if (out->mtu_payload_bytes() > e.frame_size - 128)
    return invalid("params.mtu_payload_bytes", "must be at most endpoint.frame_size - 128 = " +
                                                   std::to_string(e.frame_size - 128) + " (got " +
                                                   std::to_string(out->mtu_payload_bytes()) + ")");
  if (in.max_message_bytes() == 0) out->set_max_message_bytes(static_cast<uint32_t>(t::kParamMaxMessage.default_value));
  if (auto s = check(t::kParamMaxMessage, out->max_message_bytes()); !s.ok()) return s;
  if (in.min_rto_ns() == 0) out->set_min_rto_ns(e.min_rto_ns);
  if (auto s = check(t::kParamMinRto, out->min_rto_ns()); !s.ok()) return s;
  if (in.base_src_port() != 0 && (in.base_src_port() < 1024 || in.base_src_port() + out->paths() > 65536))
    return invalid("params.base_src_port",
                   range_text(1024, 65536 - out->paths(), in.base_src_port()) + " so that every path has a port");
  if (out->first_plane() >= 16) return invalid("params.first_plane", range_text(0, 15, out->first_plane()));
  if (in.path_src_ports_size() > 0) {
    if (in.base_src_port() != 0)
      return invalid("params.path_src_ports", "set base_src_port or path_src_ports, not both");
    if (static_cast<uint32_t>(in.path_src_ports_size()) != out->paths())
      return invalid("params.path_src_ports", "one port per path: " + std::to_string(out->paths()) + " (got " +
                                                  std::to_string(in.path_src_ports_size()) + ")");
    if (auto s = check_src_ports("params.path_src_ports", in.path_src_ports()); !s.ok()) return s;
  }
  const SlotLayout layout = make_layout(out->streams(), out->queue_depth(), out->max_message_bytes());
  if (layout.bytes() + 8ull * out->streams() > e.max_region_bytes)
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "params: streams x 2 x queue_depth x max_message_bytes = " + std::to_string(layout.bytes()) +
                " bytes exceeds endpoint.max_region_bytes " + std::to_string(e.max_region_bytes) +
                " (lower queue_depth, streams or max_message_bytes)"};
  return grpc::Status::OK;
}

grpc::Status DaemonCore::resolve_params(const v1::ConnectionParams& in, v1::ConnectionParams* out) const {
  return resolve_connection_params(in, *config_.endpoint, endpoint_->planes(), out);
}

transport::ConnectionConfig connection_config(const v1::ConnectionParams& p, const EndpointSection& e,
                                              uint32_t local_id, uint32_t remote_id, uint32_t peer_ip,
                                              const wire::MacAddr& peer_mac, uint16_t peer_port, uint32_t planes) {
  transport::ConnectionConfig c;
  c.transport = p.transport() == v1::TRANSPORT_ROCEV2 ? transport::TransportKind::kRoCEv2
                                                      : transport::TransportKind::kMetaRoCE;
  c.local_id = local_id;
  c.remote_id = remote_id;
  c.peer_ip = peer_ip;
  c.peer_mac = peer_mac;
  // RoCEv2 always goes to its well-known port 4791 (0 = the transport's default).
  c.peer_udp_port = c.transport == transport::TransportKind::kRoCEv2 ? 0 : peer_port;
  for (uint32_t i = 0; i < p.paths(); ++i)
    c.paths.push_back({static_cast<uint8_t>((p.first_plane() + i) % planes),
                       static_cast<uint16_t>(static_cast<int>(i) < p.path_src_ports_size() ? p.path_src_ports(static_cast<int>(i))
                                                                                          : p.base_src_port() + i)});
  c.streams = static_cast<uint16_t>(p.streams());
  c.max_outstanding_per_stream = p.queue_depth();
  c.recv_window_messages = std::max<uint32_t>(2 * p.queue_depth(), 128);
  c.max_message_bytes = p.max_message_bytes();
  c.mtu_payload = p.mtu_payload_bytes();
  c.tuning.min_rto_ns = p.min_rto_ns();
  c.tuning.min_pto_ns = std::min<transport::Nanos>(e.min_pto_ns, p.min_rto_ns());
  return c;
}

grpc::Status DaemonCore::create_connection(const v1::CreateConnectionRequest& req, uint64_t job_id,
                                           uint32_t recv_bytes, v1::ConnectionInfo* out) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  if (req.peer_address().empty()) return invalid("peer_address", "is required (unix:///path or host:port of the peer daemon)");
  v1::CreateConnectionRequest resolved = req;
  if (auto s = resolve_params(req.params(), resolved.mutable_params()); !s.ok()) return s;
  return create_resolved_connection(resolved, job_id, recv_bytes, out);
}

grpc::Status DaemonCore::create_resolved_connection(const v1::CreateConnectionRequest& req, uint64_t job_id,
                                                    uint32_t recv_bytes, v1::ConnectionInfo* out) {
  v1::ConnectionParams params = req.params();
  size_t held = 0;
  const uint32_t id = allocate_id(&held);
  if (id == 0)
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "connections: the daemon already has " + std::to_string(held) + " (endpoint.max_connections)"};
  auto forget = [&] {
    std::lock_guard<std::mutex> g(conns_mu_);
    conns_.erase(id);
  };
  if (params.base_src_port() == 0 && params.path_src_ports_size() == 0)
    params.set_base_src_port(49152 + (id * 64) % 16000);
  const uint64_t seed = req.seed() != 0 ? req.seed() : std::random_device{}() | 1;

  v1::AcceptRequest areq;
  areq.set_requester_name(config_.name);
  areq.set_requester_address(peer_address());
  areq.set_requester_endpoint(lab::ip_to_string(config_.endpoint->ip));
  areq.set_requester_mac(lab::mac_to_string(endpoint_->config().mac));
  areq.set_requester_udp_port(config_.endpoint->udp_port);
  areq.set_requester_id(id);
  *areq.mutable_params() = params;
  areq.set_seed(seed);
  areq.set_recv_message_bytes(recv_bytes);
  areq.set_requester_planes(endpoint_->planes());
  v1::AcceptResponse aresp;
  {
    grpc::ClientContext ctx;
    dialer_.prepare(&ctx);
    auto stub = v1::Peer::NewStub(dialer_.channel(req.peer_address()));
    const grpc::Status s = stub->Accept(&ctx, areq, &aresp);
    if (!s.ok()) {
      forget();
      const auto code = s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                            ? grpc::StatusCode::UNAVAILABLE
                            : s.error_code();
      return {code, "peer " + req.peer_address() + ": " + s.error_message()};
    }
  }
  const auto peer_ip = wire::parse_ipv4(aresp.responder_endpoint().c_str());
  const auto peer_mac = wire::parse_mac(aresp.responder_mac().c_str());
  auto release_remote = [&] { release_at_peer(req.peer_address(), aresp.responder_id(), 5000); };
  if (!peer_ip || !peer_mac) {
    release_remote();
    forget();
    return {grpc::StatusCode::INTERNAL, "peer " + req.peer_address() + ": answered with a malformed endpoint address"};
  }
  const uint32_t planes = std::max<uint32_t>(1, std::min(endpoint_->planes(), aresp.planes()));
  const transport::ConnectionConfig cc = connection_config(params, *config_.endpoint, id, aresp.responder_id(), *peer_ip, *peer_mac,
                                                           static_cast<uint16_t>(aresp.responder_udp_port()), planes);
  auto err = std::make_shared<std::string>();
  if (!endpoint_->channel().call([this, cc, err](transport::Nanos) {
        if (!endpoint_->endpoint().create_connection(cc, err.get()) && err->empty()) *err = "refused";
      }))
    *err = "endpoint worker did not answer";
  if (!err->empty()) {
    release_remote();
    forget();
    return invalid("params", *err);
  }
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    ConnectionRecord& r = conns_[id];
    r.id = id;
    r.remote_id = aresp.responder_id();
    r.requester = true;
    r.peer_address = req.peer_address();
    r.peer_name = aresp.responder_name();
    r.peer_endpoint = aresp.responder_endpoint();
    r.params = params;
    r.job_id = job_id;
    r.seed = seed;
    r.remote_addr = aresp.remote_addr();
    r.rkey = aresp.rkey();
    r.remote_length = aresp.remote_length_bytes();
    fill_info(r, nullptr, out);
  }
  // A job's connections (up to 16,384 of them) log at debug; the job logs itself.
  spdlog::log(job_id ? spdlog::level::debug : spdlog::level::info, "connection {}: {} to {} ({}), {} paths, {} streams", id,
               params.transport() == v1::TRANSPORT_ROCEV2 ? "rocev2" : "metaroce", aresp.responder_name(),
               req.peer_address(), params.paths(), params.streams());
  return grpc::Status::OK;
}

grpc::Status DaemonCore::accept(const v1::AcceptRequest& req, v1::AcceptResponse* out) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  v1::ConnectionParams params;
  if (auto s = resolve_params(req.params(), &params); !s.ok()) return s;
  const auto peer_ip = wire::parse_ipv4(req.requester_endpoint().c_str());
  if (!peer_ip) return invalid("requester_endpoint", "must be an IPv4 address (got " + quote_value(req.requester_endpoint()) + ")");
  const auto peer_mac = wire::parse_mac(req.requester_mac().c_str());
  if (!peer_mac) return invalid("requester_mac", "must be a MAC address (got " + quote_value(req.requester_mac()) + ")");
  if (req.requester_id() == 0 || req.requester_id() > 0xFFFFFF)
    return invalid("requester_id", range_text(1, 0xFFFFFF, req.requester_id()));
  if (req.requester_udp_port() == 0 || req.requester_udp_port() > 65535)
    return invalid("requester_udp_port", range_text(1, 65535, req.requester_udp_port()));
  if (req.recv_message_bytes() > params.max_message_bytes())
    return invalid("recv_message_bytes",
                   range_text(0, params.max_message_bytes(), req.recv_message_bytes()) + " (max_message_bytes)");
  Responder::Spec rs;
  rs.streams = static_cast<uint16_t>(params.streams());
  rs.queue_depth = params.queue_depth();
  rs.max_message_bytes = params.max_message_bytes();
  rs.recv_message_bytes = req.recv_message_bytes();
  rs.seed = req.seed();
  // The responder's memory, held against the budget for as long as the connection lives.
  std::string budget_error;
  auto reservation =
      memory_budget_.reserve(Responder::memory_bytes(rs), "accepting this connection", &budget_error);
  if (!reservation) return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_error};
  size_t held = 0;
  const uint32_t id = allocate_id(&held);
  if (id == 0) return {grpc::StatusCode::RESOURCE_EXHAUSTED, "connections: endpoint.max_connections reached"};
  rs.conn = id;
  const uint32_t planes =
      std::max<uint32_t>(1, std::min(endpoint_->planes(), req.requester_planes() ? req.requester_planes() : 1u));
  const transport::ConnectionConfig cc =
      connection_config(params, *config_.endpoint, id, req.requester_id(), *peer_ip, *peer_mac,
                        static_cast<uint16_t>(req.requester_udp_port()), planes);
  struct Result {
    std::string error;
    std::shared_ptr<Responder> responder;
  };
  auto r = std::make_shared<Result>();
  // Buffers are allocated and filled here; the worker only registers them.
  std::shared_ptr<Responder> prepared = Responder::prepare(endpoint_->endpoint(), rs, &r->error);
  if (prepared && !endpoint_->channel().call([this, cc, prepared, r](transport::Nanos) {
        auto& ep = endpoint_->endpoint();
        if (!ep.create_connection(cc, &r->error)) {
          if (r->error.empty()) r->error = "refused";
          return;
        }
        if (!prepared->attach(&r->error)) {
          ep.destroy_connection(cc.local_id);
          return;
        }
        r->responder = prepared;
        endpoint_->add_responder(r->responder.get());
      }))
    r->error = "endpoint worker did not answer";
  if (!r->error.empty()) {
    std::lock_guard<std::mutex> g(conns_mu_);
    conns_.erase(id);
    return invalid("params", r->error);
  }
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    ConnectionRecord& rec = conns_[id];
    rec.id = id;
    rec.remote_id = req.requester_id();
    rec.requester = false;
    rec.peer_address = req.requester_address();
    rec.peer_name = req.requester_name();
    rec.peer_endpoint = req.requester_endpoint();
    rec.params = params;
    rec.seed = req.seed();
    rec.remote_addr = r->responder->target_addr();
    rec.rkey = r->responder->target_rkey();
    rec.remote_length = r->responder->target_bytes();
    rec.responder = r->responder;
    rec.memory = std::make_shared<MemoryBudget::Reservation>(std::move(*reservation));
    rec.checked_ns = datapath::monotonic_ns();
  }
  out->set_responder_name(config_.name);
  out->set_responder_endpoint(lab::ip_to_string(config_.endpoint->ip));
  out->set_responder_mac(lab::mac_to_string(endpoint_->config().mac));
  out->set_responder_udp_port(config_.endpoint->udp_port);
  out->set_responder_id(id);
  out->set_remote_addr(r->responder->target_addr());
  out->set_rkey(r->responder->target_rkey());
  out->set_remote_length_bytes(r->responder->target_bytes());
  out->set_planes(endpoint_->planes());
  spdlog::info("connection {}: accepted from {} ({}), {} paths", id, req.requester_name(), req.requester_address(),
               params.paths());
  return grpc::Status::OK;
}

grpc::Status DaemonCore::release(uint32_t responder_id) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  std::shared_ptr<Responder> resp;
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    auto it = conns_.find(responder_id);
    if (it == conns_.end() || it->second.requester)
      return {grpc::StatusCode::NOT_FOUND, "responder_id: no accepted connection " + std::to_string(responder_id)};
    resp = it->second.responder;
    conns_.erase(it);
  }
  // The responder's memory is deregistered on the worker, after the connection
  // is gone, and freed wherever the last reference goes, off the worker.
  endpoint_->channel().call([this, responder_id, resp](transport::Nanos) {
    endpoint_->remove_responder(responder_id);
    endpoint_->endpoint().destroy_connection(responder_id);
    if (resp) resp->detach();
  });
  spdlog::info("connection {}: released", responder_id);
  return grpc::Status::OK;
}

bool DaemonCore::release_at_peer(const std::string& address, uint32_t responder_id, int timeout_ms) {
  grpc::ClientContext ctx;
  dialer_.prepare(&ctx, timeout_ms);
  v1::ReleaseRequest r;
  r.set_responder_id(responder_id);
  v1::ReleaseResponse ignored;
  return v1::Peer::NewStub(dialer_.channel(address))->Release(&ctx, r, &ignored).ok();
}

grpc::Status DaemonCore::delete_connection(uint32_t id, bool* peer_released) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  ConnectionRecord rec;
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.remote_id == 0)
      return {grpc::StatusCode::NOT_FOUND, "id: no connection " + std::to_string(id)};
    if (it->second.job_id != 0 && !shutting_down_)
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "id: connection " + std::to_string(id) + " belongs to job " + std::to_string(it->second.job_id) +
                  " (stop the job instead)"};
    rec = it->second;
  }
  if (!rec.requester) {
    *peer_released = false;
    return release(id);
  }
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    conns_.erase(id);
  }
  endpoint_->channel().call([this, id](transport::Nanos) { endpoint_->endpoint().destroy_connection(id); });
  *peer_released = release_at_peer(rec.peer_address, rec.remote_id, 2000);
  spdlog::info("connection {}: deleted (peer released: {})", id, *peer_released);
  return grpc::Status::OK;
}

bool DaemonCore::connection_stats(const std::vector<uint32_t>& ids, std::vector<transport::ConnectionStats>* out) {
  auto snap = std::make_shared<std::vector<transport::ConnectionStats>>(ids.size());
  const bool ok = endpoint_->channel().call([this, ids, snap](transport::Nanos) {
    for (size_t i = 0; i < ids.size(); ++i) (*snap)[i] = endpoint_->endpoint().stats(ids[i]);
  });
  if (ok) *out = *snap;
  return ok;
}

void DaemonCore::fill_info(const ConnectionRecord& r, const transport::ConnectionStats* st,
                           v1::ConnectionInfo* out) const {
  out->set_id(r.id);
  out->set_remote_id(r.remote_id);
  out->set_peer_address(r.peer_address);
  out->set_peer_name(r.peer_name);
  out->set_peer_endpoint(r.peer_endpoint);
  *out->mutable_params() = r.params;
  out->set_role(r.requester ? "requester" : "responder");
  out->set_job_id(r.job_id);
  out->set_remote_addr(r.remote_addr);
  out->set_rkey(r.rkey);
  out->set_remote_length_bytes(r.remote_length);
  if (!st) return;
  out->set_data_packets_sent(st->data_packets_sent);
  out->set_retransmits(st->retransmits);
  out->set_spurious_retransmits(st->spurious_retransmits);
  out->set_messages_completed(st->messages_completed);
  out->set_payload_bytes_completed(st->payload_bytes_completed);
  out->set_duplicates_received(st->duplicates_received);
  for (size_t i = 0; i < st->paths.size(); ++i) {
    const auto& p = st->paths[i];
    auto* pi = out->add_paths();
    pi->set_index(static_cast<uint32_t>(i));
    pi->set_plane(p.plane);
    pi->set_src_port(p.src_port);
    pi->set_state(to_proto(p.state));
    pi->set_packets_sent(p.packets_sent);
    pi->set_payload_bytes_acked(p.payload_bytes_acked);
    pi->set_retransmits(p.retransmits);
    pi->set_spurious_retransmits(p.spurious_retransmits);
    pi->set_rtos(p.rtos);
    pi->set_state_changes(p.state_changes);
    pi->set_srtt_ns(p.srtt_ns);
    pi->set_cwnd_bytes(p.cwnd_bytes);
    pi->set_loss_ewma(p.loss_ewma);
    pi->set_entropy_rotations(p.entropy_rotations);
  }
}

grpc::Status DaemonCore::get_connection(uint32_t id, v1::ConnectionInfo* out) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  ConnectionRecord rec;
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.remote_id == 0)
      return {grpc::StatusCode::NOT_FOUND, "id: no connection " + std::to_string(id)};
    rec = it->second;
  }
  std::vector<transport::ConnectionStats> st;
  if (!connection_stats({id}, &st)) return {grpc::StatusCode::UNAVAILABLE, "endpoint worker did not answer"};
  fill_info(rec, &st[0], out);
  return grpc::Status::OK;
}

grpc::Status DaemonCore::list_connections(const v1::ListConnectionsRequest& req, v1::ListConnectionsResponse* out) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  const auto& page = kListConnectionsPage;
  if (req.page_size() != 0 && (req.page_size() < page.min || req.page_size() > page.max))
    return invalid("page_size", range_text(page.min, page.max, req.page_size()) + "; 0 = " +
                                    std::to_string(page.default_value));
  const uint32_t size = req.page_size() ? req.page_size() : static_cast<uint32_t>(page.default_value);
  // The token is the last id of the previous page: this page starts after it.
  uint32_t after = 0;
  if (!req.page_token().empty()) {
    const std::string& t = req.page_token();
    const bool digits = t.size() <= 8 && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoul(t) > 0xFFFFFF)
      return invalid("page_token", "must be the next_page_token of a previous answer (got " + quote_value(t) + ")");
    after = static_cast<uint32_t>(std::stoul(t));
  }
  std::vector<ConnectionRecord> recs;
  bool more = false;
  uint32_t total = 0;
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    for (auto it = conns_.upper_bound(after); it != conns_.end(); ++it) {
      if (it->second.remote_id == 0) continue;  // being set up
      if (recs.size() == size) {
        more = true;
        break;
      }
      recs.push_back(it->second);
    }
    for (const auto& [id, r] : conns_) total += r.remote_id != 0 ? 1 : 0;
  }
  std::vector<uint32_t> ids;
  for (const auto& r : recs) ids.push_back(r.id);
  std::vector<transport::ConnectionStats> st;
  if (!ids.empty() && !connection_stats(ids, &st)) return {grpc::StatusCode::UNAVAILABLE, "endpoint worker did not answer"};
  for (size_t i = 0; i < recs.size(); ++i) fill_info(recs[i], &st[i], out->add_connections());
  if (more) out->set_next_page_token(std::to_string(recs.back().id));
  out->set_total(total);
  return grpc::Status::OK;
}

grpc::Status DaemonCore::verify(const v1::VerifyRequest& req, v1::VerifyResponse* out) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  std::shared_ptr<Responder> resp;
  {
    std::lock_guard<std::mutex> g(conns_mu_);
    auto it = conns_.find(req.responder_id());
    if (it == conns_.end() || it->second.requester || !it->second.responder)
      return {grpc::StatusCode::NOT_FOUND, "responder_id: no accepted connection " + std::to_string(req.responder_id())};
    resp = it->second.responder;
  }
  const auto op = parse_operation(req.operation());
  if (!op) return invalid("operation", "must be one of " + transport::operation_names(", ") + " (got " + quote_value(req.operation()) + ")");
  if (req.phases_size() == 0) return invalid("phases", "needs at least one phase (the job's sizes in order)");
  std::vector<VerifyPhase> phases;
  for (int i = 0; i < req.phases_size(); ++i) {
    const auto& p = req.phases(i);
    const std::string f = "phases[" + std::to_string(i) + "]";
    if (static_cast<uint32_t>(p.stream_end_size()) != resp->layout().streams)
      return invalid(f + ".stream_end", "must have one entry per stream (" + std::to_string(resp->layout().streams) +
                                            ", got " + std::to_string(p.stream_end_size()) + ")");
    if (p.message_bytes() == 0 || p.message_bytes() > resp->layout().slot_bytes)
      return invalid(f + ".message_bytes", range_text(1, resp->layout().slot_bytes, p.message_bytes()));
    VerifyPhase vp;
    vp.message_bytes = p.message_bytes();
    vp.stream_end.assign(p.stream_end().begin(), p.stream_end().end());
    for (size_t s = 0; s < vp.stream_end.size(); ++s)
      if (!phases.empty() && vp.stream_end[s] < phases.back().stream_end[s])
        return invalid(f + ".stream_end", "must not decrease from one phase to the next (cumulative counts)");
    phases.push_back(std::move(vp));
  }
  auto result = std::make_shared<VerifyResult>();
  auto duplicates = std::make_shared<uint64_t>(0);
  const uint32_t conn = req.responder_id();
  if (!endpoint_->channel().call([this, resp, op, phases, result, duplicates, conn](transport::Nanos) {
        *result = resp->verify(*op, phases);
        *duplicates = endpoint_->endpoint().stats(conn).duplicates_received;
      }))
    return {grpc::StatusCode::UNAVAILABLE, "endpoint worker did not answer"};
  out->set_duplicates_received(*duplicates);
  out->set_ok(result->ok);
  out->set_checked_bytes(result->checked_bytes);
  out->set_mismatches(result->mismatches);
  out->set_received_messages(result->received_messages);
  out->set_detail(result->detail);
  return grpc::Status::OK;
}

// ------------------------------------------------------------------ memory

namespace {
const std::pair<const char*, uint32_t> kAccessNames[] = {{"local_write", transport::kAccessLocalWrite},
                                                         {"remote_write", transport::kAccessRemoteWrite},
                                                         {"remote_read", transport::kAccessRemoteRead},
                                                         {"remote_atomic", transport::kAccessRemoteAtomic}};
}

grpc::Status DaemonCore::register_region(const v1::RegisterRegionRequest& req, v1::RegionInfo* out) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  const uint64_t max = config_.endpoint->max_region_bytes;
  if (req.length_bytes() == 0 || req.length_bytes() > max)
    return invalid("length_bytes", range_text(1, max, req.length_bytes()) + " (endpoint.max_region_bytes)");
  uint32_t access = 0;
  for (const auto& a : req.access()) {
    bool known = false;
    for (const auto& [name, bit] : kAccessNames)
      if (a == name) access |= bit, known = true;
    if (!known) return invalid("access", "must be among local_write, remote_write, remote_read, remote_atomic (got " + quote_value(a) + ")");
  }
  std::string budget_error;
  auto reservation = memory_budget_.reserve(req.length_bytes(), "this region", &budget_error);
  if (!reservation) return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_error};
  auto region = std::make_shared<Region>();
  region->memory = std::move(*reservation);
  region->bytes.assign(req.length_bytes(), 0);
  region->access = access;
  auto key = std::make_shared<std::optional<uint32_t>>();
  if (!endpoint_->channel().call([this, region, key](transport::Nanos) {
        *key = endpoint_->endpoint().register_memory(region->bytes.data(), region->bytes.size(), region->access);
      }))
    return {grpc::StatusCode::UNAVAILABLE, "endpoint worker did not answer"};
  if (!*key) return {grpc::StatusCode::RESOURCE_EXHAUSTED, "memory: the endpoint refused the registration"};
  region->key = **key;
  {
    std::lock_guard<std::mutex> g(regions_mu_);
    regions_[region->key] = region;
  }
  out->set_key(region->key);
  out->set_addr(reinterpret_cast<uint64_t>(region->bytes.data()));
  out->set_length_bytes(region->bytes.size());
  for (const auto& [name, bit] : kAccessNames)
    if (access & bit) out->add_access(name);
  out->set_owner("operator");
  return grpc::Status::OK;
}

grpc::Status DaemonCore::deregister_region(uint32_t key) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  std::shared_ptr<Region> region;
  {
    std::lock_guard<std::mutex> g(regions_mu_);
    auto it = regions_.find(key);
    if (it == regions_.end())
      return {grpc::StatusCode::NOT_FOUND, "key: no operator region " + std::to_string(key) +
                                               " (connection and job regions go with them)"};
    region = it->second;
    regions_.erase(it);
  }
  // The buffer is freed only after the worker has deregistered it.
  endpoint_->channel().call([this, region](transport::Nanos) { endpoint_->endpoint().deregister_memory(region->key); });
  return grpc::Status::OK;
}

grpc::Status DaemonCore::list_regions(v1::ListRegionsResponse* out) {
  if (auto s = need_endpoint(); !s.ok()) return s;
  {
    std::lock_guard<std::mutex> g(regions_mu_);
    for (const auto& [key, r] : regions_) {
      auto* ri = out->add_regions();
      ri->set_key(key);
      ri->set_addr(reinterpret_cast<uint64_t>(r->bytes.data()));
      ri->set_length_bytes(r->bytes.size());
      for (const auto& [name, bit] : kAccessNames)
        if (r->access & bit) ri->add_access(name);
      ri->set_owner("operator");
    }
  }
  std::lock_guard<std::mutex> g(conns_mu_);
  for (const auto& [id, r] : conns_) {
    if (!r.responder) continue;
    auto* ri = out->add_regions();
    ri->set_key(r.responder->target_rkey());
    ri->set_addr(r.responder->target_addr());
    ri->set_length_bytes(r.responder->target_bytes());
    for (const char* a : {"remote_write", "remote_read", "remote_atomic"}) ri->add_access(a);
    ri->set_owner("connection " + std::to_string(id));
  }
  return grpc::Status::OK;
}

}  // namespace metaroce::daemon
