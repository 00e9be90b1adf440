// Two metaroced processes on the UDP datapath over loopback, controlled over
// Unix sockets: unprivileged, no lab, no namespaces. Daemon a (loopback_ip(0))
// is the requester, daemon b (loopback_ip(1)) the responder. Used by the connection
// scale test (daemon_scale_tests) and metaroce_daemon_connections_bench.
// Readiness is gRPC's own WaitForConnected plus GetInfo (no sleeps).
#pragma once

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "metaroce/v1/connection.grpc.pb.h"
#include "metaroce/v1/daemon.grpc.pb.h"
#include "metaroce/v1/traffic.grpc.pb.h"
#include "test_process.h"

namespace daemon_test {

namespace v1 = ::metaroce::v1;

class UdpDaemonPair {
 public:
  // extra_endpoint_yaml: more keys of the endpoint section, each "  key: value\n".
  UdpDaemonPair(const std::string& metaroced, const std::string& tag, const std::string& extra_endpoint_yaml,
                const std::string& extra_top_yaml = "") {
    dir_ = std::filesystem::temp_directory_path() / (tag + "-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    udp_port_ = static_cast<uint16_t>(20000 + (getpid() * 7 + 3) % 20000);
    for (int h = 0; h < 2; ++h) {
      const std::string name = h == 0 ? "a" : "b";
      const auto cfg = dir_ / (name + ".yaml");
      std::ofstream(cfg) << "name: " << name << "\nrole: endpoint\nlog_level: warn\n" << extra_top_yaml
                         << "control:\n  unix_socket: " << (dir_ / (name + ".sock")).string()
                         << "\nendpoint:\n  datapath: udp\n  interfaces: [lo]\n  address: " << loopback_ip(h)
                         << "\n  udp_port: " << udp_port_ << "\n  mac: 02:00:7f:00:00:0" << h + 1 << "\n"
                         << extra_endpoint_yaml;
      address_[h] = "unix://" + (dir_ / (name + ".sock")).string();
      pid_[h] = spawn({metaroced, "--config", cfg.string()}, (dir_ / (name + ".log")).string());
    }
    for (int h = 0; h < 2; ++h) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(-1);  // the tests measure answers' sizes themselves
      channel_[h] = grpc::CreateCustomChannel(address_[h], grpc::InsecureChannelCredentials(), args);
      daemon_[h] = v1::Daemon::NewStub(channel_[h]);
      connections_[h] = v1::Connections::NewStub(channel_[h]);
      traffic_[h] = v1::Traffic::NewStub(channel_[h]);
    }
  }
  ~UdpDaemonPair() { stop(); }

  // Waits (bounded) until both daemons answer GetInfo. "" or what went wrong.
  std::string wait_ready(std::chrono::seconds limit = std::chrono::seconds(30)) {
    for (int h = 0; h < 2; ++h) {
      const auto deadline = std::chrono::system_clock::now() + limit;
      if (!channel_[h]->WaitForConnected(deadline)) return "daemon " + std::to_string(h) + " did not listen:\n" + log(h);
      grpc::ClientContext ctx;
      ctx.set_deadline(deadline);
      v1::DaemonInfo info;
      if (const auto s = daemon_[h]->GetInfo(&ctx, v1::GetInfoRequest{}, &info); !s.ok())
        return "daemon " + std::to_string(h) + ": " + s.error_message() + "\n" + log(h);
    }
    return {};
  }

  // SIGTERM, then (bounded) wait; exit statuses, -1 for a daemon that had to be killed.
  std::vector<int> stop(std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::vector<int> rc(2, 0);
    for (int h = 0; h < 2; ++h)
      if (pid_[h] > 0) kill(pid_[h], SIGTERM);
    for (int h = 0; h < 2; ++h) {
      if (pid_[h] <= 0) continue;
      rc[h] = wait_exit(pid_[h], limit);
      if (rc[h] < 0 && waitpid(pid_[h], nullptr, WNOHANG) == 0) kill(pid_[h], SIGKILL), waitpid(pid_[h], nullptr, 0);
      pid_[h] = -1;
    }
    if (!dir_.empty() && !keep_dir_) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
    return rc;
  }

  // SIGKILL daemon h and reap it: a peer that vanished without a word.
  void kill_now(int h) {
    if (pid_[h] <= 0) return;
    kill(pid_[h], SIGKILL);
    waitpid(pid_[h], nullptr, 0);
    pid_[h] = -1;
  }
  // SIGTERM daemon h alone and wait (bounded): its exit status, -1 if it was
  // still running at the limit (then killed).
  int terminate(int h, std::chrono::seconds limit) {
    if (pid_[h] <= 0) return -1;
    kill(pid_[h], SIGTERM);
    const int rc = wait_exit(pid_[h], limit);
    if (rc < 0 && waitpid(pid_[h], nullptr, WNOHANG) == 0) kill(pid_[h], SIGKILL), waitpid(pid_[h], nullptr, 0);
    pid_[h] = -1;
    return rc;
  }

  void keep_dir() { keep_dir_ = true; }
  const std::string& address(int h) const { return address_[h]; }
  uint16_t udp_port() const { return udp_port_; }
  pid_t pid(int h) const { return pid_[h]; }
  std::string log(int h) const { return slurp((dir_ / (h == 0 ? "a.log" : "b.log")).string()); }
  v1::Daemon::Stub& daemon(int h) { return *daemon_[h]; }
  v1::Connections::Stub& connections(int h) { return *connections_[h]; }
  v1::Traffic::Stub& traffic(int h) { return *traffic_[h]; }

  // VmRSS of daemon h in bytes (0 when unreadable).
  uint64_t rss_bytes(int h) const {
    std::ifstream in("/proc/" + std::to_string(pid_[h]) + "/status");
    std::string key;
    uint64_t kb = 0;
    while (in >> key) {
      if (key == "VmRSS:") {
        in >> kb;
        return kb * 1024;
      }
      in.ignore(1 << 16, '\n');
    }
    return 0;
  }

  // One connection from daemon 0 to daemon 1 (which accepts its other half).
  grpc::Status create_connection(uint32_t seed, const v1::ConnectionParams& params, v1::ConnectionInfo* out) {
    v1::CreateConnectionRequest req;
    req.set_peer_address(address(1));
    *req.mutable_params() = params;
    req.set_seed(seed);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return connections_[0]->Create(&ctx, req, out);
  }

  // Deletes connection id at daemon 0 (which releases the peer's half).
  grpc::Status delete_connection(uint32_t id, v1::DeleteConnectionResponse* out) {
    v1::DeleteConnectionRequest req;
    req.set_id(id);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return connections_[0]->Delete(&ctx, req, out);
  }

  // Every counter of daemon h (name -> samples). *bytes: the answer's size.
  grpc::Status counters(int h, v1::Counters* out, size_t* bytes = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    const grpc::Status s = daemon_[h]->GetCounters(&ctx, v1::GetCountersRequest{}, out);
    if (bytes) *bytes = out->ByteSizeLong();
    return s;
  }
  // The value of the one sample of `name` without labels; -1 when missing.
  static double value(const v1::Counters& c, const std::string& name) {
    for (const auto& k : c.counters())
      if (k.name() == name && k.labels().empty()) return k.value();
    return -1;
  }
  static size_t samples(const v1::Counters& c, const std::string& name) {
    size_t n = 0;
    for (const auto& k : c.counters()) n += k.name() == name ? 1 : 0;
    return n;
  }

 private:
  std::filesystem::path dir_;
  bool keep_dir_ = false;
  uint16_t udp_port_ = 0;
  pid_t pid_[2] = {-1, -1};
  std::string address_[2];
  std::shared_ptr<grpc::Channel> channel_[2];
  std::unique_ptr<v1::Daemon::Stub> daemon_[2];
  std::unique_ptr<v1::Connections::Stub> connections_[2];
  std::unique_ptr<v1::Traffic::Stub> traffic_[2];
};

// The smallest connection a scale run needs: one path, one stream, one
// request in flight, 64-byte messages, every path on the daemons' main UDP
// socket (no entropy socket per source port).
inline v1::ConnectionParams small_params(uint16_t udp_port, uint32_t message_bytes = 64) {
  v1::ConnectionParams p;
  p.set_transport(v1::TRANSPORT_METAROCE);
  p.set_paths(1);
  p.set_streams(1);
  p.set_queue_depth(1);
  p.set_max_message_bytes(message_bytes);
  p.set_base_src_port(udp_port);
  return p;
}

// A verified WRITE job of `connections` connections from a to b, `iterations`
// messages per connection; blocks until it ends (Traffic.Watch). The final JobInfo.
// *setup_s (optional): seconds from Start until the first progress event of the
// running job, less its first interval (the event's end_ns): the connections'
// set-up, to within the 100 ms the job thread may take to notice its start.
inline grpc::Status run_write_job(UdpDaemonPair& d, uint32_t connections, uint64_t iterations, uint32_t message_bytes,
                                  v1::JobInfo* out, std::chrono::seconds limit = std::chrono::seconds(600),
                                  double* setup_s = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  v1::StartJobRequest req;
  v1::JobSpec& spec = *req.mutable_spec();
  spec.set_operation(v1::OPERATION_WRITE);
  spec.add_peers(d.address(1));
  spec.add_message_bytes(message_bytes);
  spec.set_connections(connections);
  *spec.mutable_params() = small_params(d.udp_port(), message_bytes);
  spec.set_iterations(iterations);
  // The job thread looks at its driver every interval: the job's end is seen
  // within 100 ms (each look reads every connection's stats on the worker).
  spec.set_interval_ns(100'000'000);
  spec.set_seed(0x5eed);
  v1::JobInfo started;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (auto s = d.traffic(0).Start(&ctx, req, &started); !s.ok()) return s;
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + limit);
    v1::WatchJobRequest w;
    w.set_id(started.id());
    auto reader = d.traffic(0).Watch(&ctx, w);
    v1::JobProgress p;
    bool first = true;
    while (reader->Read(&p)) {
      if (first && setup_s) {
        *setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() -
                   static_cast<double>(p.end_ns()) / 1e9;
      }
      first = false;
    }
    reader->Finish();  // the stream ends with the job (or the deadline)
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::GetJobRequest g;
  g.set_id(started.id());
  return d.traffic(0).Get(&ctx, g, out);
}

}  // namespace daemon_test
