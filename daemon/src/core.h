// The daemon's state and operations, independent of how they are called
// (gRPC services in services.cc; /metrics is rendered by prometheus_text() in
// counters.cc and served by main.cc). Every operation
// returns a grpc::Status whose message names the field, the value and what
// is allowed. Control-plane state here is guarded by control-only mutexes;
// the workers are reached only through their WorkerChannels.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <random>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "endpoint_runtime.h"
#include "fabric_runtime.h"
#include "memory_budget.h"
#include "metaroce/daemon/config.h"
#include "metaroce/daemon/traffic.h"
#include "metaroce/v1/connection.grpc.pb.h"
#include "metaroce/v1/daemon.grpc.pb.h"
#include "metaroce/v1/fabric.grpc.pb.h"
#include "metaroce/v1/traffic.grpc.pb.h"

namespace metaroce::daemon {

namespace v1 = ::metaroce::v1;

// Dials other daemons (connection setup, verification) with the configured
// peer credentials; channels are cached per address.
class PeerDialer {
 public:
  explicit PeerDialer(const ControlConfig& control);
  std::shared_ptr<grpc::Channel> channel(const std::string& address);
  void prepare(grpc::ClientContext* ctx, int timeout_ms = 5000) const;

 private:
  ControlConfig control_;
  std::string token_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
};

// One connection as the control plane knows it.
struct ConnectionRecord {
  uint32_t id = 0, remote_id = 0;
  bool requester = true;
  std::string peer_address, peer_name, peer_endpoint;
  v1::ConnectionParams params;  // resolved: no zero defaults left
  uint64_t job_id = 0;
  uint64_t seed = 0;
  uint64_t remote_addr = 0, remote_length = 0;
  uint32_t rkey = 0;
  std::shared_ptr<Responder> responder;  // responder side; lives on the worker
  std::shared_ptr<MemoryBudget::Reservation> memory;  // responder side: its regions' share of the budget
  int64_t checked_ns = 0;      // responder side, monotonic: when the requester was last asked or accepted us
  int64_t unanswered_ns = 0;   // responder side: since when the requester has not answered (0 = it answers)
};

struct JobRecord;

// Connections.List page_size: a page of 1,024 connections with 16 paths each
// is about 1.3 MB, a third of gRPC's 4 MB default message limit.
inline constexpr ConfigRange kListConnectionsPage{.min = 1, .max = 1024, .default_value = 256};

class DaemonCore {
 public:
  DaemonCore(DaemonConfig config, bool insecure);
  ~DaemonCore();
  // Opens ports and starts workers. Error text on failure.
  std::string start();
  // Stops jobs, deletes connections, stops workers (detaching XDP), logs final counters.
  void shutdown();
  // Runs first in shutdown(), while the workers still run (a capture takes its taps off).
  void add_shutdown_hook(std::function<void()> hook) { shutdown_hooks_.push_back(std::move(hook)); }

  const DaemonConfig& config() const { return config_; }
  std::string peer_address() const;
  bool authorized(const grpc::ServerContext* ctx) const;
  // An "authorization" header value against "Bearer <token>" (constant time);
  // true when no token is configured. For /metrics.
  bool bearer_matches(const std::string& header_value) const;

  // Daemon
  void info(v1::DaemonInfo* out);
  grpc::Status ports(v1::ListPortsResponse* out);
  grpc::Status counters(v1::Counters* out);
  std::string prometheus_text();

  // Connections
  grpc::Status create_connection(const v1::CreateConnectionRequest& req, uint64_t job_id, uint32_t recv_bytes,
                                 v1::ConnectionInfo* out);
  grpc::Status accept(const v1::AcceptRequest& req, v1::AcceptResponse* out);
  grpc::Status release(uint32_t responder_id);
  grpc::Status delete_connection(uint32_t id, bool* peer_released);
  grpc::Status get_connection(uint32_t id, v1::ConnectionInfo* out);
  // One page, ascending ids (ListConnectionsRequest); page sizes kListConnectionsPage.
  grpc::Status list_connections(const v1::ListConnectionsRequest& req, v1::ListConnectionsResponse* out);
  grpc::Status verify(const v1::VerifyRequest& req, v1::VerifyResponse* out);
  // Connection stats snapshots taken on the worker (ids unknown are skipped).
  bool connection_stats(const std::vector<uint32_t>& ids, std::vector<transport::ConnectionStats>* out);

  // Memory
  grpc::Status register_region(const v1::RegisterRegionRequest& req, v1::RegionInfo* out);
  grpc::Status deregister_region(uint32_t key);
  grpc::Status list_regions(v1::ListRegionsResponse* out);

  // Fabric
  grpc::Status fabric_show(v1::FabricState* out);
  grpc::Status fabric_set(const v1::LinkSelector& sel, const v1::LinkPatch& patch, v1::SetLinksResponse* out);
  grpc::Status fabric_up_down(const v1::LinkSelector& sel, bool up, v1::SetLinksResponse* out);
  grpc::Status fabric_reset(v1::SetLinksResponse* out);
  grpc::Status fabric_timeline(const v1::LoadTimelineRequest& req, v1::LoadTimelineResponse* out);

  // Traffic
  grpc::Status start_job(const v1::JobSpec& spec, v1::JobInfo* out);
  grpc::Status stop_job(uint64_t id, v1::JobInfo* out);
  grpc::Status get_job(uint64_t id, v1::JobInfo* out);
  grpc::Status list_jobs(v1::ListJobsResponse* out);
  // Blocks until the job has progress after `seen` intervals or ends; false when
  // the job is gone. *events gets the new intervals, *final the result when ended.
  bool wait_job(uint64_t id, size_t seen, std::vector<v1::JobProgress>* events, bool* ended,
                const std::atomic<bool>& cancelled);
  uint32_t jobs_running() const;
  void running_progress(const std::vector<uint64_t>& ids, std::vector<v1::JobProgress>* out);

  EndpointRuntime* endpoint() { return endpoint_.get(); }
  const MemoryBudget& memory_budget() const { return memory_budget_; }
  uint64_t half_open_expired() const { return half_open_expired_.load(); }
  // Half-open connections: every endpoint.half_open_timeout_ns, each responder
  // half asks its requester daemon (Connections.Get of the requester's id)
  // whether the other half exists. It is released when the requester says
  // NOT_FOUND, or has not answered for half_open_timeout_ns. now_ns is
  // monotonic; the housekeeping thread calls this once a second. Returns how
  // many halves it released.
  size_t expire_half_open(int64_t now_ns);
  FabricRuntime* fabric() { return fabric_.get(); }
  int64_t uptime_ns() const;
  // Open Watch streams; services.cc bounds them (WatchSlot).
  std::atomic<int>& watch_streams() { return watch_streams_; }

 private:
  friend struct JobRunner;
  grpc::Status need_endpoint() const;
  grpc::Status need_fabric() const;
  grpc::Status resolve_params(const v1::ConnectionParams& in, v1::ConnectionParams* out) const;
  // create_connection after resolve_params (a job resolves its params once, in start_job).
  grpc::Status create_resolved_connection(const v1::CreateConnectionRequest& req, uint64_t job_id, uint32_t recv_bytes,
                                          v1::ConnectionInfo* out);
  // A free id, reserved in conns_; 0 when endpoint.max_connections are held (*held: how many are).
  uint32_t allocate_id(size_t* held);
  // Peer.Release of the responder half at `address`; true when the peer answered OK.
  bool release_at_peer(const std::string& address, uint32_t responder_id, int timeout_ms);
  // The first `limit` connections (lowest ids) that are set up; *total: how many are.
  std::map<uint32_t, ConnectionRecord> connections_copy(size_t limit, size_t* total) const;
  void fill_info(const ConnectionRecord& r, const transport::ConnectionStats* st, v1::ConnectionInfo* out) const;
  void run_job(std::shared_ptr<JobRecord> job);
  void stop_job_for_shutdown(const std::shared_ptr<JobRecord>& job);
  void join_job(const std::shared_ptr<JobRecord>& job);
  void join_finished_jobs();
  void job_info(const JobRecord& job, v1::JobInfo* out) const;

  DaemonConfig config_;
  std::vector<std::function<void()>> shutdown_hooks_;  // set up before serving; run once by shutdown()
  bool insecure_;
  std::string token_error_;  // set when a configured token file is unusable: start() refuses
  std::string token_;
  int64_t started_ns_ = 0;
  std::unique_ptr<EndpointRuntime> endpoint_;
  std::unique_ptr<FabricRuntime> fabric_;
  PeerDialer dialer_;

  mutable std::mutex conns_mu_;
  std::map<uint32_t, ConnectionRecord> conns_;
  std::random_device id_random_;  // connection ids from the OS (allocate_id), under conns_mu_

  struct Region {
    std::vector<uint8_t> bytes;
    uint32_t key = 0;
    uint32_t access = 0;
    MemoryBudget::Reservation memory;
  };
  MemoryBudget memory_budget_;
  std::atomic<uint64_t> half_open_expired_{0};
  // Housekeeping (half-open expiry), control plane only.
  std::thread housekeeping_;
  std::mutex housekeeping_mu_;
  std::condition_variable housekeeping_cv_;
  bool housekeeping_stop_ = false;
  std::mutex regions_mu_;
  std::map<uint32_t, std::shared_ptr<Region>> regions_;

  mutable std::mutex jobs_mu_;
  std::condition_variable jobs_cv_;
  std::map<uint64_t, std::shared_ptr<JobRecord>> jobs_;
  uint64_t next_job_ = 1;
  std::atomic<bool> shutting_down_{false};
  std::atomic<int> watch_streams_{0};
};

grpc::Status invalid(const std::string& field, const std::string& what);
// The gRPC validation of ConnectionParams: fills in the defaults (0 = default;
// paths from the endpoint's planes) and refuses, naming the field and its
// range, what the engine would refuse (transport/connection_params.h) or the
// endpoint cannot hold (frame_size, max_region_bytes). Runs once per
// connection or job (DaemonCore::resolve_params).
grpc::Status resolve_connection_params(const v1::ConnectionParams& in, const EndpointSection& e, uint32_t planes,
                                       v1::ConnectionParams* out);
// The engine's configuration of one half of a connection with resolved params.
transport::ConnectionConfig connection_config(const v1::ConnectionParams& p, const EndpointSection& e,
                                              uint32_t local_id, uint32_t remote_id, uint32_t peer_ip,
                                              const wire::MacAddr& peer_mac, uint16_t peer_port, uint32_t planes);
// Every entry of a path_src_ports list is a UDP source port in [1024, 65535]
// (ConnectionParams and JobSpec alike); the error names field[i].
grpc::Status check_src_ports(const std::string& field, const google::protobuf::RepeatedField<uint32_t>& ports);
v1::PathState to_proto(transport::PathState s);

}  // namespace metaroce::daemon
