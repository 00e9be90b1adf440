#include "services.h"

#include "capture.h"
#include "metaroce/v1/capture.grpc.pb.h"

#include "request_limits.h"

#include <thread>

namespace metaroce::daemon {
namespace {

const grpc::Status kUnauthenticated{grpc::StatusCode::UNAUTHENTICATED,
                                    "authorization: missing or wrong bearer token (metadata 'authorization: Bearer <token>')"};

// Every call: the token first, then the bounds on every string in the request
// (request_limits.h), before anything reaches DaemonCore.
#define METAROCE_AUTH(ctx, req)                       \
  if (!core_.authorized(ctx)) return kUnauthenticated; \
  if (auto bounds = check_request_strings(*(req)); !bounds.ok()) return bounds

// One open Watch stream, counted against kMaxWatchStreams for its lifetime.
class WatchSlot {
 public:
  explicit WatchSlot(std::atomic<int>& open) : open_(open), held_(open.fetch_add(1) < kMaxWatchStreams) {}
  ~WatchSlot() { open_.fetch_sub(1); }
  bool held() const { return held_; }
  static grpc::Status refused() {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "Watch: at most " + std::to_string(kMaxWatchStreams) + " streams may be open at once; close one first"};
  }

 private:
  std::atomic<int>& open_;
  bool held_;
};

class DaemonService final : public v1::Daemon::Service {
 public:
  explicit DaemonService(DaemonCore& core) : core_(core) {}
  grpc::Status GetInfo(grpc::ServerContext* ctx, const v1::GetInfoRequest* req, v1::DaemonInfo* out) override {
    METAROCE_AUTH(ctx, req);
    core_.info(out);
    return grpc::Status::OK;
  }
  grpc::Status GetConfig(grpc::ServerContext* ctx, const v1::GetConfigRequest* req, v1::DaemonConfig* out) override {
    METAROCE_AUTH(ctx, req);
    out->set_yaml(daemon_config_yaml(core_.config()));
    out->set_json(daemon_config_json(core_.config()));
    return grpc::Status::OK;
  }
  grpc::Status ListPorts(grpc::ServerContext* ctx, const v1::ListPortsRequest* req, v1::ListPortsResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.ports(out);
  }
  grpc::Status GetCounters(grpc::ServerContext* ctx, const v1::GetCountersRequest* req, v1::Counters* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.counters(out);
  }
  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req,
                     grpc::ServerWriter<v1::WatchEvent>* writer) override {
    METAROCE_AUTH(ctx, req);
    const WatchSlot slot(core_.watch_streams());
    if (!slot.held()) return WatchSlot::refused();
    int64_t interval = req->interval_ns() == 0 ? 1'000'000'000 : req->interval_ns();
    if (interval < 10'000'000 || interval > 60'000'000'000)
      return invalid("interval_ns", "must be in [10 ms, 60 s] = [10000000, 60000000000] (got " + std::to_string(interval) + ")");
    const std::vector<uint64_t> ids(req->job_ids().begin(), req->job_ids().end());
    auto next = std::chrono::steady_clock::now();
    while (!ctx->IsCancelled()) {
      next += std::chrono::nanoseconds(interval);
      v1::WatchEvent ev;
      ev.set_time_ns(core_.uptime_ns());
      if (req->counters()) core_.counters(ev.mutable_counters());
      std::vector<v1::JobProgress> jobs;
      core_.running_progress(ids, &jobs);
      for (auto& j : jobs) *ev.add_jobs() = std::move(j);
      if (!writer->Write(ev)) break;
      // Sleeps in small steps so a cancelled stream ends promptly.
      while (std::chrono::steady_clock::now() < next && !ctx->IsCancelled())
        std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(50),
                                                                       next - std::chrono::steady_clock::now()));
    }
    return grpc::Status::OK;
  }

 private:
  DaemonCore& core_;
};

class ConnectionsService final : public v1::Connections::Service {
 public:
  explicit ConnectionsService(DaemonCore& core) : core_(core) {}
  grpc::Status Create(grpc::ServerContext* ctx, const v1::CreateConnectionRequest* req, v1::ConnectionInfo* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.create_connection(*req, 0, 0, out);
  }
  grpc::Status List(grpc::ServerContext* ctx, const v1::ListConnectionsRequest* req, v1::ListConnectionsResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.list_connections(*req, out);
  }
  grpc::Status Get(grpc::ServerContext* ctx, const v1::GetConnectionRequest* req, v1::ConnectionInfo* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.get_connection(req->id(), out);
  }
  grpc::Status Delete(grpc::ServerContext* ctx, const v1::DeleteConnectionRequest* req,
                      v1::DeleteConnectionResponse* out) override {
    METAROCE_AUTH(ctx, req);
    bool released = false;
    grpc::Status s = core_.delete_connection(req->id(), &released);
    out->set_peer_released(released);
    return s;
  }

 private:
  DaemonCore& core_;
};

class PeerService final : public v1::Peer::Service {
 public:
  explicit PeerService(DaemonCore& core) : core_(core) {}
  grpc::Status Accept(grpc::ServerContext* ctx, const v1::AcceptRequest* req, v1::AcceptResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.accept(*req, out);
  }
  grpc::Status Release(grpc::ServerContext* ctx, const v1::ReleaseRequest* req, v1::ReleaseResponse*) override {
    METAROCE_AUTH(ctx, req);
    return core_.release(req->responder_id());
  }
  grpc::Status Verify(grpc::ServerContext* ctx, const v1::VerifyRequest* req, v1::VerifyResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.verify(*req, out);
  }

 private:
  DaemonCore& core_;
};

class MemoryService final : public v1::Memory::Service {
 public:
  explicit MemoryService(DaemonCore& core) : core_(core) {}
  grpc::Status List(grpc::ServerContext* ctx, const v1::ListRegionsRequest* req, v1::ListRegionsResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.list_regions(out);
  }
  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRegionRequest* req, v1::RegionInfo* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.register_region(*req, out);
  }
  grpc::Status Deregister(grpc::ServerContext* ctx, const v1::DeregisterRegionRequest* req,
                          v1::DeregisterRegionResponse*) override {
    METAROCE_AUTH(ctx, req);
    return core_.deregister_region(req->key());
  }

 private:
  DaemonCore& core_;
};

class FabricService final : public v1::Fabric::Service {
 public:
  explicit FabricService(DaemonCore& core) : core_(core) {}
  grpc::Status Show(grpc::ServerContext* ctx, const v1::ShowFabricRequest* req, v1::FabricState* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.fabric_show(out);
  }
  grpc::Status Set(grpc::ServerContext* ctx, const v1::SetLinksRequest* req, v1::SetLinksResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.fabric_set(req->selector(), req->patch(), out);
  }
  grpc::Status Down(grpc::ServerContext* ctx, const v1::LinkStateRequest* req, v1::SetLinksResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.fabric_up_down(req->selector(), false, out);
  }
  grpc::Status Up(grpc::ServerContext* ctx, const v1::LinkStateRequest* req, v1::SetLinksResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.fabric_up_down(req->selector(), true, out);
  }
  grpc::Status Reset(grpc::ServerContext* ctx, const v1::ResetFabricRequest* req, v1::SetLinksResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.fabric_reset(out);
  }
  grpc::Status LoadTimeline(grpc::ServerContext* ctx, const v1::LoadTimelineRequest* req,
                            v1::LoadTimelineResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.fabric_timeline(*req, out);
  }

 private:
  DaemonCore& core_;
};

class TrafficService final : public v1::Traffic::Service {
 public:
  explicit TrafficService(DaemonCore& core) : core_(core) {}
  grpc::Status Start(grpc::ServerContext* ctx, const v1::StartJobRequest* req, v1::JobInfo* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.start_job(req->spec(), out);
  }
  grpc::Status Stop(grpc::ServerContext* ctx, const v1::StopJobRequest* req, v1::JobInfo* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.stop_job(req->id(), out);
  }
  grpc::Status Get(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::JobInfo* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.get_job(req->id(), out);
  }
  grpc::Status List(grpc::ServerContext* ctx, const v1::ListJobsRequest* req, v1::ListJobsResponse* out) override {
    METAROCE_AUTH(ctx, req);
    return core_.list_jobs(out);
  }
  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchJobRequest* req,
                     grpc::ServerWriter<v1::JobProgress>* writer) override {
    METAROCE_AUTH(ctx, req);
    const WatchSlot slot(core_.watch_streams());
    if (!slot.held()) return WatchSlot::refused();
    size_t seen = 0;
    std::atomic<bool> cancelled{false};
    for (;;) {
      std::vector<v1::JobProgress> events;
      bool ended = false;
      cancelled = ctx->IsCancelled();
      if (!core_.wait_job(req->id(), seen, &events, &ended, cancelled)) {
        if (seen == 0) return {grpc::StatusCode::NOT_FOUND, "id: no job " + std::to_string(req->id())};
        return grpc::Status::OK;
      }
      for (const auto& e : events)
        if (!writer->Write(e)) return grpc::Status::OK;
      seen += events.size();
      if (ended || ctx->IsCancelled()) return grpc::Status::OK;
    }
  }

 private:
  DaemonCore& core_;
};

class CaptureService final : public v1::Capture::Service {
 public:
  explicit CaptureService(DaemonCore& core) : core_(core), captures_(core) {
    core.add_shutdown_hook([this] {
      v1::CaptureInfo ignored;
      captures_.stop(&ignored);
    });
  }
  grpc::Status Start(grpc::ServerContext* ctx, const v1::StartCaptureRequest* req, v1::CaptureInfo* out) override {
    METAROCE_AUTH(ctx, req);
    return captures_.start(req->spec(), out);
  }
  grpc::Status Stop(grpc::ServerContext* ctx, const v1::StopCaptureRequest* req, v1::CaptureInfo* out) override {
    METAROCE_AUTH(ctx, req);
    return captures_.stop(out);
  }
  grpc::Status Get(grpc::ServerContext* ctx, const v1::GetCaptureRequest* req, v1::CaptureInfo* out) override {
    METAROCE_AUTH(ctx, req);
    return captures_.get(out);
  }
  grpc::Status Read(grpc::ServerContext* ctx, const v1::ReadCaptureRequest* req,
                    grpc::ServerWriter<v1::CaptureChunk>* writer) override {
    METAROCE_AUTH(ctx, req);
    return captures_.read(req->file(), [&](const v1::CaptureChunk& c) { return !ctx->IsCancelled() && writer->Write(c); });
  }

 private:
  DaemonCore& core_;
  CaptureManager captures_;
};

}  // namespace

std::vector<std::unique_ptr<grpc::Service>> make_services(DaemonCore& core) {
  std::vector<std::unique_ptr<grpc::Service>> s;
  s.push_back(std::make_unique<DaemonService>(core));
  s.push_back(std::make_unique<ConnectionsService>(core));
  s.push_back(std::make_unique<PeerService>(core));
  s.push_back(std::make_unique<MemoryService>(core));
  s.push_back(std::make_unique<FabricService>(core));
  s.push_back(std::make_unique<TrafficService>(core));
  s.push_back(std::make_unique<CaptureService>(core));
  return s;
}

}  // namespace metaroce::daemon
