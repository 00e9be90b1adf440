// GrpcDut: a metaroce.v1 daemon as the device under test (see grpc_dut.h).
#include "metaroce/conformance/grpc_dut.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <utility>

#include "metaroce/security/server_security.h"
#include "metaroce/v1/connection.grpc.pb.h"
#include "metaroce/v1/daemon.grpc.pb.h"
#include "metaroce/v1/traffic.grpc.pb.h"
#include "metaroce/wire/rocev2.h"
#include "metaroce/wire/udp_frame.h"

namespace metaroce::conformance {
namespace {

namespace v1 = metaroce::v1;

constexpr uint32_t kDutBaseSrcPort = 49152;

std::string ip_text(uint32_t ip) {
  in_addr a{htonl(ip)};
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &a, buf, sizeof buf) ? buf : "?";
}

std::string status_text(const std::string& rpc, const grpc::Status& s) {
  static const char* const kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                       "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                                       "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const int code = static_cast<int>(s.error_code());
  const char* name = code >= 0 && code <= 16 ? kNames[code] : "?";
  return rpc + ": " + name + ": " + s.error_message();
}

// "HOST:PORT" or "[IPv6]:PORT" with PORT in [min_port, 65535]; HOST a name or
// an address (printable, no spaces, '/' or '@'). nullopt when malformed.
std::optional<std::pair<std::string, uint32_t>> split_host_port(const std::string& text, uint32_t min_port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() || text.size() - colon - 1 > 5)
    return std::nullopt;
  const std::string port_text = text.substr(colon + 1);
  if (port_text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const uint32_t port = static_cast<uint32_t>(std::stoul(port_text));
  if (port < min_port || port > 65535) return std::nullopt;
  std::string host = text.substr(0, colon);
  for (const char ch : host)
    if (ch <= ' ' || ch > '~' || ch == '/' || ch == '@') return std::nullopt;
  if (host.front() == '[') {
    in6_addr v6{};
    if (host.size() < 3 || host.back() != ']' || inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &v6) != 1)
      return std::nullopt;
  } else if (host.find_first_of(":[]") != std::string::npos) {
    return std::nullopt;  // an IPv6 address needs its brackets
  }
  return std::pair{std::move(host), port};
}

bool job_ended(v1::JobState s) {
  return s == v1::JOB_STATE_DONE || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_STOPPED;
}

// The suite's own Peer service, for the cases where the DUT is the sender:
// the DUT's job calls Peer.Accept here as at any peer daemon, and the suite
// answers with its own endpoint, id and target region.
class SuitePeer final : public v1::Peer::Service {
 public:
  // "" = no token asked for.
  explicit SuitePeer(std::string token) : token_(std::move(token)) {}

  // What the next Peer.Accept is answered with.
  void offer(const v1::AcceptResponse& answer) {
    std::lock_guard<std::mutex> g(mu_);
    offer_ = answer;
    accepted_.reset();
  }
  // The Peer.Accept that took the offer, waiting up to `timeout`.
  std::optional<v1::AcceptRequest> await_accept(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, timeout, [&] { return accepted_.has_value(); });
    return accepted_;
  }

  grpc::Status Accept(grpc::ServerContext* ctx, const v1::AcceptRequest* req, v1::AcceptResponse* resp) override {
    if (!authorized(*ctx)) return unauthenticated();
    std::lock_guard<std::mutex> g(mu_);
    if (!offer_)
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "the conformance suite accepts a connection only while a case waits for one"};
    *resp = *offer_;
    offer_.reset();
    accepted_ = *req;
    cv_.notify_all();
    return grpc::Status::OK;
  }
  grpc::Status Release(grpc::ServerContext* ctx, const v1::ReleaseRequest*, v1::ReleaseResponse*) override {
    if (!authorized(*ctx)) return unauthenticated();
    return grpc::Status::OK;  // the suite keeps no state per connection beyond the case
  }
  grpc::Status Verify(grpc::ServerContext* ctx, const v1::VerifyRequest*, v1::VerifyResponse*) override {
    if (!authorized(*ctx)) return unauthenticated();
    return {grpc::StatusCode::UNIMPLEMENTED,
            "the conformance suite starts its jobs with no_verify: it judges the DUT's packets itself"};
  }

 private:
  bool authorized(const grpc::ServerContext& ctx) const {
    if (token_.empty()) return true;
    const auto it = ctx.client_metadata().find("authorization");
    return it != ctx.client_metadata().end() &&
           security::bearer_matches(std::string_view(it->second.data(), it->second.size()), token_);
  }
  static grpc::Status unauthenticated() {
    return {grpc::StatusCode::UNAUTHENTICATED,
            "the conformance suite's Peer service: missing or wrong bearer token (metarocectl --peer-token-file; a "
            "daemon sends its peers control.peer_token_file, else control.token_file)"};
  }

  const std::string token_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<v1::AcceptResponse> offer_;
  std::optional<v1::AcceptRequest> accepted_;
};

class GrpcDut final : public Dut {
 public:
  GrpcDut(const GrpcDutOptions& o)
      : options_(o),
        daemon_(v1::Daemon::NewStub(o.channel)),
        peer_(v1::Peer::NewStub(o.channel)),
        memory_(v1::Memory::NewStub(o.channel)),
        traffic_(v1::Traffic::NewStub(o.channel)),
        peer_service_(o.peer.token) {}
  ~GrpcDut() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    if (!server_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(server_dir_, ec);
    }
    if (fd_ >= 0) ::close(fd_);
    if (rocev2_fd_ >= 0) ::close(rocev2_fd_);
  }

  void start() {
    check_peer_options();
    v1::DaemonInfo info;
    call("Daemon.GetInfo", [&](grpc::ClientContext* c) { return daemon_->GetInfo(c, v1::GetInfoRequest(), &info); });
    name_ = info.name();
    const auto ep = wire::parse_ipv4(info.endpoint_address().c_str());
    if (!ep || info.endpoint_udp_port() == 0)
      throw DutSetupError("--target: the daemon '" + info.name() + "' has no transport endpoint (role " +
                     v1::Role_Name(info.role()) + "); the suite needs an endpoint to send packets to");
    dut_ip_ = *ep;
    dut_port_ = static_cast<uint16_t>(info.endpoint_udp_port());
    local_ip_ = choose_local_ip();
    open_socket();
    // A TCP listener is started before any case, so that a port in use or
    // an unusable certificate is a usage error, not a failed case.
    if (!options_.peer.listen.empty()) serve_peer();
  }

  std::string describe() const override {
    std::string d = "metaroced '" + name_ + "' at " + options_.target + ", endpoint " + ip_text(dut_ip_) + ":" +
                    std::to_string(dut_port_) + " (suite at " + ip_text(local_ip_) + ":" + std::to_string(local_port_);
    if (!options_.peer.listen.empty()) d += ", its Peer service at " + server_address_ + " (" + peer_security() + ")";
    return d + ")";
  }

  DutConnection open(const ConnectionRequest& r) override {
    if (r.rocev2) open_rocev2_socket();  // before the DUT's QP exists: its answers must find the socket
    v1::AcceptRequest req;
    req.set_requester_name("metaroce-conformance");
    req.set_requester_endpoint(ip_text(local_ip_));
    req.set_requester_mac(mac_text(local_ip_));
    req.set_requester_udp_port(local_port_);
    req.set_requester_id(r.tool_id);
    req.set_seed(r.seed);
    req.set_recv_message_bytes(r.recv_message_bytes);
    req.set_requester_planes(1);
    v1::ConnectionParams& p = *req.mutable_params();
    p.set_transport(r.rocev2 ? v1::TRANSPORT_ROCEV2 : v1::TRANSPORT_METAROCE);
    p.set_paths(r.paths);
    p.set_streams(r.streams);
    p.set_queue_depth(r.queue_depth);
    p.set_mtu_payload_bytes(r.mtu_payload);
    p.set_max_message_bytes(r.max_message_bytes);
    // The DUT's own source ports for its responses (ECMP entropy): the same
    // for every connection the suite opens. metaroced's UDP datapath opens a
    // socket per source port it sends from and never closes one; past 256 it
    // sends from its main socket (UdpPortInfo::tx_entropy_fallback), so ports
    // derived per connection would, after about 128 runs of the suite, change
    // the source ports the cases see.
    p.set_base_src_port(kDutBaseSrcPort);
    v1::AcceptResponse resp;
    call("Peer.Accept", [&](grpc::ClientContext* c) { return peer_->Accept(c, req, &resp); });
    DutConnection out;
    out.dut_id = resp.responder_id();
    out.tool_id = r.tool_id;
    out.remote_addr = resp.remote_addr();
    out.rkey = resp.rkey();
    out.remote_length = resp.remote_length_bytes();
    out.request = r;
    const auto ip = wire::parse_ipv4(resp.responder_endpoint().c_str());
    if (!ip || *ip != dut_ip_ || resp.responder_udp_port() != dut_port_) {
      close(out);
      throw DutError("Peer.Accept: the DUT answered endpoint " + resp.responder_endpoint() + ":" +
                     std::to_string(resp.responder_udp_port()) + ", Daemon.GetInfo said " + ip_text(dut_ip_) + ":" +
                     std::to_string(dut_port_));
    }
    return out;
  }

  void close(const DutConnection& c) override {
    v1::ReleaseRequest req;
    req.set_responder_id(c.dut_id);
    v1::ReleaseResponse resp;
    grpc::ClientContext ctx;
    options_.prepare(ctx);
    (void)peer_->Release(&ctx, req, &resp);  // best effort: the DUT also expires half-open connections
  }

  VerifyOutcome verify(const DutConnection& c, const std::string& operation, uint32_t message_bytes,
                       const std::vector<uint64_t>& stream_end) override {
    v1::VerifyRequest req;
    req.set_responder_id(c.dut_id);
    req.set_operation(operation);
    v1::VerifyPhase& ph = *req.add_phases();
    ph.set_message_bytes(message_bytes);
    for (uint64_t e : stream_end) ph.add_stream_end(e);
    v1::VerifyResponse resp;
    call("Peer.Verify", [&](grpc::ClientContext* ctx) { return peer_->Verify(ctx, req, &resp); });
    VerifyOutcome v;
    v.ok = resp.ok();
    v.checked_bytes = resp.checked_bytes();
    v.mismatches = resp.mismatches();
    v.received_messages = resp.received_messages();
    v.detail = resp.detail();
    return v;
  }

  DutRegion register_region(uint64_t length, const std::vector<std::string>& access) override {
    v1::RegisterRegionRequest req;
    req.set_length_bytes(length);
    for (const auto& a : access) req.add_access(a);
    v1::RegionInfo info;
    call("Memory.Register", [&](grpc::ClientContext* c) { return memory_->Register(c, req, &info); });
    return DutRegion{info.key(), info.addr(), info.length_bytes()};
  }

  void deregister_region(uint32_t key) override {
    v1::DeregisterRegionRequest req;
    req.set_key(key);
    v1::DeregisterRegionResponse resp;
    grpc::ClientContext ctx;
    options_.prepare(ctx);
    (void)memory_->Deregister(&ctx, req, &resp);
  }

  double inbound_capacity_bps() override {
    v1::DaemonConfig cfg;
    call("Daemon.GetConfig", [&](grpc::ClientContext* c) { return daemon_->GetConfig(c, v1::GetConfigRequest(), &cfg); });
    const auto j = nlohmann::json::parse(cfg.json(), nullptr, false);
    if (j.is_discarded() || !j.contains("endpoint") || !j["endpoint"].contains("inbound_capacity_bps") ||
        !j["endpoint"]["inbound_capacity_bps"].is_number())
      throw DutError("Daemon.GetConfig: no number at endpoint.inbound_capacity_bps in the effective configuration");
    return j["endpoint"]["inbound_capacity_bps"].get<double>();
  }

  SenderConnection start_sender(const SenderJob& job, std::chrono::milliseconds timeout) override {
    serve_peer();
    v1::AcceptResponse offer;
    offer.set_responder_name("metaroce-conformance");
    offer.set_responder_endpoint(ip_text(local_ip_));
    offer.set_responder_mac(mac_text(local_ip_));
    offer.set_responder_udp_port(local_port_);
    offer.set_responder_id(job.tool_id);
    offer.set_remote_addr(job.region_addr);
    offer.set_rkey(job.rkey);
    offer.set_remote_length_bytes(job.region_bytes);
    offer.set_planes(1);
    peer_service_.offer(offer);
    v1::StartJobRequest req;
    v1::JobSpec& spec = *req.mutable_spec();
    spec.set_operation(job.operation == "read" ? v1::OPERATION_READ : v1::OPERATION_WRITE);
    spec.add_peers(server_address_);
    spec.add_message_bytes(job.message_bytes);
    spec.set_connections(1);
    v1::ConnectionParams& p = *spec.mutable_params();
    p.set_transport(v1::TRANSPORT_METAROCE);
    p.set_paths(job.paths);
    p.set_streams(1);
    p.set_queue_depth(job.queue_depth);
    p.set_mtu_payload_bytes(job.mtu_payload);
    p.set_max_message_bytes(job.max_message_bytes);
    p.set_base_src_port(kDutBaseSrcPort);  // as in open(): the same source ports every time
    p.set_min_rto_ns(job.min_rto_ns);
    spec.set_iterations(job.messages);
    spec.set_interval_ns(10'000'000);  // the shortest: the job notices its end soonest
    spec.set_no_verify(true);          // the suite judges the packets; it has no Peer.Verify
    spec.set_seed(uint64_t{job.tool_id} << 8 | 1);
    v1::JobInfo info;
    call("Traffic.Start", [&](grpc::ClientContext* c) { return traffic_->Start(c, req, &info); });
    SenderConnection out;
    out.tool_id = job.tool_id;
    out.job_id = info.id();
    out.job = job;
    std::string job_end;
    const auto accepted = await_accept(info.id(), timeout, &job_end);
    if (!accepted) {
      stop_sender(out);
      const std::string where = "the suite's Peer service at " + server_address_ + " (" + peer_security() + ")";
      if (!job_end.empty())
        throw DutError("Traffic.Start: job " + std::to_string(info.id()) + " ended before its Peer.Accept reached " +
                       where + ": " + job_end + peer_hint());
      throw DutError("Traffic.Start: job " + std::to_string(info.id()) + " did not call Peer.Accept at " + where +
                     " within " + std::to_string(timeout.count()) + " ms" + peer_hint());
    }
    out.dut_id = accepted->requester_id();
    out.seed = accepted->seed();
    const auto ip = wire::parse_ipv4(accepted->requester_endpoint().c_str());
    if (!ip || *ip != dut_ip_ || accepted->requester_udp_port() != dut_port_) {
      stop_sender(out);
      throw DutError("Peer.Accept from the DUT: requester endpoint " + accepted->requester_endpoint() + ":" +
                     std::to_string(accepted->requester_udp_port()) + ", Daemon.GetInfo said " + ip_text(dut_ip_) +
                     ":" + std::to_string(dut_port_));
    }
    return out;
  }

  SenderOutcome finish_sender(const SenderConnection& c, std::chrono::milliseconds timeout) override {
    v1::WatchJobRequest req;
    req.set_id(c.job_id);
    grpc::ClientContext ctx;
    options_.prepare(ctx);
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    auto reader = traffic_->Watch(&ctx, req);
    SenderOutcome o;
    v1::JobProgress ev;
    while (reader->Read(&ev)) {
      o.state = v1::JobState_Name(ev.state()).substr(std::string("JOB_STATE_").size());
      if (!job_ended(ev.state())) continue;
      o.ended = true;
      o.completion_errors = ev.result().completion_errors();
      o.retransmits = ev.result().retransmits();
      o.rtos = ev.result().rtos();
      o.error = ev.result().first_error();
      ctx.TryCancel();
      break;
    }
    (void)reader->Finish();
    if (o.state.empty()) o.state = "unknown (Traffic.Watch answered nothing)";
    return o;
  }

  void stop_sender(const SenderConnection& c) override {
    v1::StopJobRequest req;
    req.set_id(c.job_id);
    v1::JobInfo info;
    grpc::ClientContext ctx;
    options_.prepare(ctx);
    (void)traffic_->Stop(&ctx, req, &info);
  }

  void send(std::span<const uint8_t> packet, wire::Ecn ecn) override {
    send_with_tos(fd_, packet, dut_port_, static_cast<int>(ecn));
  }

  void send_rocev2(std::span<const uint8_t> frame) override {
    const auto udp = wire::decode_udp_frame(frame);
    if (!udp || rocev2_fd_ < 0)
      throw DutError("internal: a RoCEv2 frame that is not Eth/IPv4/UDP, or no RoCEv2 connection opened");
    // The frame's DSCP and ECN as it was built (the ICRC masks them, §12).
    send_with_tos(rocev2_fd_, udp->payload, wire::rocev2::kUdpPort, (udp->dscp << 2) | static_cast<int>(udp->ecn));
  }

  // One UDP datagram to the DUT's `port` from socket `fd`, with the IP TOS
  // byte (DSCP and ECN codepoint) set per packet as an IP_TOS control message.
  void send_with_tos(int fd, std::span<const uint8_t> payload, uint16_t port, int tos) {
    const sockaddr_in to = address(dut_ip_, port);
    iovec iov{const_cast<uint8_t*>(payload.data()), payload.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_name = const_cast<sockaddr_in*>(&to);
    msg.msg_namelen = sizeof to;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = IPPROTO_IP;
    cm->cmsg_type = IP_TOS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &tos, sizeof tos);
    if (sendmsg(fd, &msg, 0) != static_cast<ssize_t>(payload.size()))
      throw DutError("sending to " + ip_text(dut_ip_) + ":" + std::to_string(port) + " failed: " + std::strerror(errno));
  }

  // The frame as the DUT sent it: a UDP socket does not show the IPv4
  // header, so it is rebuilt as kernel UDP sockets send it (id 0, DF; TOS,
  // TTL and checksum are masked in the ICRC) around the datagram.
  std::optional<std::vector<uint8_t>> receive_rocev2(std::chrono::milliseconds timeout) override {
    if (rocev2_fd_ < 0) return std::nullopt;
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      pollfd p{rocev2_fd_, POLLIN, 0};
      const int n = poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      if (n <= 0) return std::nullopt;
      std::vector<uint8_t> frame(wire::kUdpFrameHeaderBytes + wire::kMaxFrameBytes);
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const ssize_t got = recvfrom(rocev2_fd_, frame.data() + wire::kUdpFrameHeaderBytes, wire::kMaxFrameBytes, 0,
                                   reinterpret_cast<sockaddr*>(&from), &len);
      if (got < 0) continue;
      if (ntohl(from.sin_addr.s_addr) != dut_ip_) continue;  // only the DUT's endpoint speaks to the suite
      wire::UdpFlow back = rocev2_flow_to_dut();
      std::swap(back.src_ip, back.dst_ip);
      std::swap(back.src_mac, back.dst_mac);
      back.src_port = ntohs(from.sin_port);
      back.dst_port = wire::rocev2::kUdpPort;
      frame.resize(wire::kUdpFrameHeaderBytes + static_cast<size_t>(got));
      wire::encode_udp_headers(frame, back, wire::Ecn::kNotEct, 0, static_cast<size_t>(got));
      return frame;
    }
  }

  wire::UdpFlow flow_to_dut() const override {
    wire::UdpFlow f;
    f.src_ip = local_ip_;
    f.dst_ip = dut_ip_;
    f.src_port = local_port_;
    f.dst_port = dut_port_;
    f.src_mac = {0x02, 0x00, static_cast<uint8_t>(local_ip_ >> 24), static_cast<uint8_t>(local_ip_ >> 16),
                 static_cast<uint8_t>(local_ip_ >> 8), static_cast<uint8_t>(local_ip_)};
    f.dst_mac = {0x02, 0x00, static_cast<uint8_t>(dut_ip_ >> 24), static_cast<uint8_t>(dut_ip_ >> 16),
                 static_cast<uint8_t>(dut_ip_ >> 8), static_cast<uint8_t>(dut_ip_)};
    return f;
  }

  std::optional<std::vector<uint8_t>> receive(std::chrono::milliseconds timeout) override {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      const int n = poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      if (n <= 0) return std::nullopt;
      std::vector<uint8_t> buf(wire::kMaxFrameBytes);
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const ssize_t got = recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (got < 0) continue;
      if (ntohl(from.sin_addr.s_addr) != dut_ip_) continue;  // only the DUT's endpoint speaks to the suite
      buf.resize(static_cast<size_t>(got));
      return buf;
    }
  }

 private:
  template <typename Invoke>
  void call(const std::string& rpc, Invoke&& invoke) {
    grpc::ClientContext ctx;
    options_.prepare(ctx);
    const grpc::Status s = invoke(&ctx);
    if (!s.ok()) throw DutError(status_text(rpc, s));
  }

  uint32_t choose_local_ip() const {
    if (!options_.local_ip.empty()) {
      const auto ip = wire::parse_ipv4(options_.local_ip.c_str());
      if (!ip) throw DutSetupError("--local-ip: must be an IPv4 address (got '" + options_.local_ip.substr(0, 64) + "')");
      if (*ip == dut_ip_)
        throw DutSetupError("--local-ip: must differ from the DUT's endpoint address " + ip_text(dut_ip_) +
                       " (the DUT answers from a socket on its own address and the suite's source port)");
      return *ip;
    }
    if ((dut_ip_ >> 24) == 127) return dut_ip_ ^ 0x3;  // 127.0.0.1 <-> 127.0.0.2: both on lo
    // The address the kernel would send to the DUT from.
    const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(dut_ip_);
    to.sin_port = htons(dut_port_);
    sockaddr_in me{};
    socklen_t len = sizeof me;
    const bool ok = s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 &&
                    getsockname(s, reinterpret_cast<sockaddr*>(&me), &len) == 0;
    if (s >= 0) ::close(s);
    if (!ok) throw DutSetupError("--local-ip: no route to the DUT's endpoint " + ip_text(dut_ip_) + "; give --local-ip");
    const uint32_t ip = ntohl(me.sin_addr.s_addr);
    if (ip == dut_ip_)
      throw DutSetupError("--local-ip: the DUT's endpoint " + ip_text(dut_ip_) +
                     " is this host's own address; give the suite another address of this host with --local-ip");
    return ip;
  }

  void open_socket() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw DutError(std::string("socket() failed: ") + std::strerror(errno));
    // §1.2: both ends of a connection use the same MetaRoCE port; an
    // endpoint answers a packet for a connection it does not have at the
    // sender's address and its own port (it knows no other).
    sockaddr_in me{};
    me.sin_family = AF_INET;
    me.sin_addr.s_addr = htonl(local_ip_);
    me.sin_port = htons(dut_port_);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0)
      throw DutSetupError("--local-ip: binding " + ip_text(local_ip_) + ":" + std::to_string(dut_port_) +
                          " failed: " + std::strerror(errno) +
                          " (the suite sends and listens on the DUT's MetaRoCE port, §1.2)");
    local_port_ = dut_port_;
  }

  // The suite's RoCEv2 socket on its own address and UDP 4791, where the
  // DUT's RoCEv2 answers go (§12: RoCEv2 always goes to 4791), opened the
  // first time a case opens a RoCEv2 QP.
  void open_rocev2_socket() {
    if (rocev2_fd_ >= 0) return;
    rocev2_fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (rocev2_fd_ < 0) throw DutError(std::string("socket() failed: ") + std::strerror(errno));
    const sockaddr_in me = address(local_ip_, wire::rocev2::kUdpPort);
    if (bind(rocev2_fd_, reinterpret_cast<const sockaddr*>(&me), sizeof me) != 0) {
      const std::string why = std::strerror(errno);
      ::close(rocev2_fd_);
      rocev2_fd_ = -1;
      throw DutSetupError("--local-ip: binding " + ip_text(local_ip_) + ":" + std::to_string(wire::rocev2::kUdpPort) +
                          " failed: " + why + " (the DUT sends its RoCEv2 answers to UDP " +
                          std::to_string(wire::rocev2::kUdpPort) + " of the suite's address, §12)");
    }
  }

  static sockaddr_in address(uint32_t ip, uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(ip);
    a.sin_port = htons(port);
    return a;
  }

  // The Peer.Accept of the DUT's job `job_id`, waiting up to `timeout`. A job
  // that ends first (it could not reach the suite's Peer service, or was
  // refused there) ends the wait at once: *job_end = "FAILED: <its error>".
  std::optional<v1::AcceptRequest> await_accept(uint64_t job_id, std::chrono::milliseconds timeout,
                                                std::string* job_end) {
    // How often the job's state is read while no Peer.Accept has come.
    constexpr std::chrono::milliseconds kJobCheckEvery{50};
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (auto a = peer_service_.await_accept(std::clamp(left, std::chrono::milliseconds{0}, kJobCheckEvery))) return a;
      v1::GetJobRequest req;
      req.set_id(job_id);
      v1::JobInfo info;
      grpc::ClientContext ctx;
      options_.prepare(ctx);
      if (traffic_->Get(&ctx, req, &info).ok() && job_ended(info.state())) {
        // Its Peer.Accept may have come between the wait and the read.
        if (auto a = peer_service_.await_accept(std::chrono::milliseconds{0})) return a;
        *job_end = v1::JobState_Name(info.state()).substr(std::string("JOB_STATE_").size()) + ": " +
                   (info.error().empty() ? "(no error given)" : info.error());
        return std::nullopt;
      }
      if (left.count() <= 0) return std::nullopt;
    }
  }

  // "mutual TLS", "TLS", "plain TCP" or "Unix socket": how the DUT reaches the suite's Peer service.
  std::string peer_security() const {
    if (options_.peer.listen.empty()) return "Unix socket";
    if (!options_.peer.tls) return "plain TCP";
    return options_.peer.tls->client_ca.empty() ? "TLS" : "mutual TLS";
  }
  // What the DUT needs to reach the suite's Peer service, for a failure to.
  std::string peer_hint() const {
    if (options_.peer.listen.empty())
      return "; a Unix socket reaches only a DUT on this host (give --peer-listen for one on another host)";
    std::string h = "; the DUT's daemon dials TCP peers with its control.peer_tls";
    if (options_.peer.tls) {
      h += ", whose ca must trust --peer-tls-cert";
      if (!options_.peer.tls->client_ca.empty()) h += " and whose cert and key --peer-tls-client-ca must have signed";
    } else {
      h += ", which must have no ca for a plain-TCP peer";
    }
    if (!options_.peer.token.empty()) h += "; its peer token must be --peer-token-file's";
    return h;
  }

  // --peer-listen and --peer-address, before anything is asked of the DUT.
  void check_peer_options() const {
    const PeerServiceOptions& p = options_.peer;
    if (p.listen.empty()) {
      if (!p.address.empty() || p.tls || !p.token.empty())
        throw DutSetupError(std::string(!p.address.empty() ? "--peer-address" : p.tls ? "--peer-tls-cert" : "--peer-token-file") +
                            ": needs --peer-listen (the suite's Peer service is otherwise a Unix socket under /tmp)");
      return;
    }
    if (!split_host_port(p.listen, 0))
      throw DutSetupError("--peer-listen: must be HOST:PORT with PORT in [0, 65535] (0: a free port), HOST an "
                          "address of this host, [IPv6] or a name, e.g. 0.0.0.0:7444 or 127.0.0.1:0 (got '" +
                          p.listen.substr(0, 64) + "')");
    if (!p.tls && !security::is_loopback_listen(p.listen))
      throw DutSetupError("--peer-listen: refusing plain TCP on the non-loopback address '" + p.listen +
                          "' (give --peer-tls-cert and --peer-tls-key)");
    if (!p.address.empty() && !split_host_port(p.address, 1))
      throw DutSetupError("--peer-address: must be HOST:PORT with PORT in [1, 65535], the address the DUT's daemon "
                          "dials, e.g. 192.0.2.7:7444 (got '" + p.address.substr(0, 64) + "')");
  }

  // The suite's Peer service: on TCP as options_.peer says, else on a Unix
  // socket in a directory of its own (mode 0700) at the first case that needs
  // the DUT as a sender.
  void serve_peer() {
    if (server_) return;
    grpc::ServerBuilder b;
    int bound_port = 0;
    const PeerServiceOptions& p = options_.peer;
    if (p.listen.empty()) {
      char dir[] = "/tmp/metaroce-conformance-XXXXXX";
      if (!mkdtemp(dir))
        throw DutError(std::string("mkdtemp for the suite's Peer socket failed: ") + std::strerror(errno));
      server_dir_ = dir;
      server_address_ = "unix://" + server_dir_ + "/peer.sock";
      b.AddListeningPort(server_address_, grpc::InsecureServerCredentials());
    } else {
      // gRPC shares a TCP port with any other socket that allows it (two
      // suites, two daemons): each would get some of the DUT's calls.
      b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
      b.AddListeningPort(p.listen, p.tls ? security::server_tls_credentials(*p.tls) : grpc::InsecureServerCredentials(),
                         &bound_port);
    }
    b.RegisterService(&peer_service_);
    server_ = b.BuildAndStart();
    if (p.listen.empty()) {
      if (!server_) throw DutError("the suite's Peer service could not listen on " + server_address_);
      return;
    }
    if (!server_ || bound_port <= 0) {
      server_.reset();
      throw DutSetupError("--peer-listen: the suite's Peer service cannot listen on " + p.listen +
                          " (the port is in use or the address is not this host's" +
                          (p.tls ? std::string(", or --peer-tls-cert/--peer-tls-key/--peer-tls-client-ca are not PEM "
                                               "certificates and the certificate's private key")
                                 : std::string()) +
                          "; gRPC's log above says which)");
    }
    if (!p.address.empty()) {
      server_address_ = p.address;
      return;
    }
    std::string host = split_host_port(p.listen, 0)->first;
    if (host == "0.0.0.0" || host == "[::]" || host == "[::0]") host = ip_text(local_ip_);
    server_address_ = host + ":" + std::to_string(bound_port);
  }

  static std::string mac_text(uint32_t ip) {
    char t[18];
    std::snprintf(t, sizeof t, "02:00:%02x:%02x:%02x:%02x", ip >> 24, (ip >> 16) & 0xFF, (ip >> 8) & 0xFF, ip & 0xFF);
    return t;
  }

  GrpcDutOptions options_;
  std::unique_ptr<v1::Daemon::Stub> daemon_;
  std::unique_ptr<v1::Peer::Stub> peer_;
  std::unique_ptr<v1::Memory::Stub> memory_;
  std::unique_ptr<v1::Traffic::Stub> traffic_;
  SuitePeer peer_service_;
  std::unique_ptr<grpc::Server> server_;
  std::string server_dir_, server_address_;
  std::string name_;
  uint32_t dut_ip_ = 0, local_ip_ = 0;
  uint16_t dut_port_ = 0, local_port_ = 0;
  int fd_ = -1;
  int rocev2_fd_ = -1;  // the suite's RoCEv2 socket, local_ip:4791 (open_rocev2_socket)
};

}  // namespace

std::unique_ptr<Dut> connect_grpc_dut(const GrpcDutOptions& options) {
  auto dut = std::make_unique<GrpcDut>(options);
  dut->start();
  return dut;
}

}  // namespace metaroce::conformance
