#include "fabric_runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <optional>

#include "endpoint_runtime.h"
#include "metaroce/datapath/netns.h"
#include "metaroce/datapath/scheduling.h"

namespace metaroce::daemon {

std::unique_ptr<FabricRuntime> FabricRuntime::start(const FabricSection& config, const std::string& daemon_name,
                                                    std::string* error, bool own_thread) {
  std::unique_ptr<FabricRuntime> rt(new FabricRuntime(config));
  std::optional<datapath::ScopedNetns> in;  // the ports bind to interfaces of this namespace
  try {
    if (!config.netns.empty()) in.emplace(config.netns);
  } catch (const std::exception& e) {
    *error = "fabric.netns: " + std::string(e.what());
    return nullptr;
  }
  std::vector<std::vector<datapath::Port*>> ports(config.planes, std::vector<datapath::Port*>(config.hosts));
  for (uint32_t p = 0; p < config.planes; ++p)
    for (uint32_t h = 0; h < config.hosts; ++h) {
      const std::string& ifname = config.interfaces[p][h];
      std::string err;
      auto port = datapath::open_port(
          make_port_config(config.datapath, ifname, ifname, config.frame_size, "skb", true, {}, config.eal_args,
                           p * config.hosts + h, "mrf-" + daemon_name + "-" + std::to_string(getpid())),
          &err);
      if (!port) {
        *error = "fabric.interfaces[" + std::to_string(p) + "][" + std::to_string(h) + "] (" + ifname + "): " + err;
        return nullptr;
      }
      ports[p][h] = port.get();
      rt->ports_.push_back(std::move(port));
    }
  datapath::FabricNode::Config nc;
  nc.fabric.hosts = config.hosts;
  nc.fabric.planes = config.planes;
  nc.fabric.ecmp_links = config.ecmp_links;
  nc.fabric.port = config.port;
  nc.fabric.ecmp = config.ecmp;
  nc.fabric.seed = config.seed;
  nc.host_macs.assign(config.planes, config.host_macs);
  nc.interface_macs = config.interface_macs;
  nc.frame_size = config.frame_size;
  nc.idle.busy_poll = config.busy_poll;
  nc.idle.realtime_share = config.realtime_share;
  if (auto e = emulator::validate(nc.fabric)) {
    *error = "fabric: " + *e;
    return nullptr;
  }
  rt->node_ = std::make_unique<datapath::FabricNode>(nc, ports);
  rt->channel_.set_running(true);
  rt->started_ = true;
  FabricRuntime* self = rt.get();
  rt->node_->set_on_iteration([self](transport::Nanos now) { self->channel_.drain(now); });
  if (own_thread)
    rt->thread_ = std::thread([self] {
      pthread_setname_np(pthread_self(), "mr-fabric");
      datapath::PolledLoop* loop = self->node_.get();
      datapath::run_loops({&loop, 1}, self->stop_, self->node_->idle());
    });
  if (own_thread && config.worker_cpu >= 0)
    if (std::string e = datapath::pin_thread(rt->thread_.native_handle(), config.worker_cpu); !e.empty()) {
      *error = "fabric.worker_cpu: " + e;
      return nullptr;
    }
  return rt;
}

FabricRuntime::~FabricRuntime() {
  stop();
  close_ports_in(config_.netns, ports_);  // a start that failed half-way
}

void FabricRuntime::stop() {
  if (!started_) return;
  started_ = false;
  channel_.set_running(false);
  stop_ = true;
  if (thread_.joinable()) thread_.join();  // else the endpoint role's thread ran the node, and has stopped
  channel_.drain(0);
  node_.reset();
  close_ports_in(config_.netns, ports_);  // detaches the XDP programs
}

std::string FabricRuntime::apply(const emulator::LinkSelector& sel, const emulator::LinkPatch& patch,
                                 transport::Nanos* at, uint32_t* links_changed) {
  struct Result {
    std::string error;
    transport::Nanos at = 0;
    uint32_t changed = 0;
  };
  auto r = std::make_shared<Result>();
  if (!channel_.call([this, r, sel, patch](transport::Nanos now) {
        r->at = now;
        if (auto e = node_->fabric().apply(sel, patch, now, &r->changed)) r->error = *e;
      }))
    return "fabric worker did not answer within 5 s";
  *at = r->at;
  *links_changed = r->changed;
  return r->error;
}

std::string FabricRuntime::reset(transport::Nanos* at, uint32_t* links_changed) {
  struct Result {
    std::string error;
    transport::Nanos at = 0;
    uint32_t changed = 0;
  };
  auto r = std::make_shared<Result>();
  if (!channel_.call([this, r](transport::Nanos now) {
        r->at = now;
        node_->load_timeline(emulator::Timeline{});
        r->changed = node_->fabric().reset_ecmp_links(now);
      }))
    return "fabric worker did not answer within 5 s";
  *at = r->at;
  *links_changed = r->changed;
  return r->error;
}

std::string FabricRuntime::load_timeline(std::vector<emulator::TimelineEvent> events, transport::Nanos* base,
                                         transport::Nanos* base_monotonic) {
  struct Result {
    std::string error;
    transport::Nanos base = 0, base_monotonic = 0;
  };
  auto r = std::make_shared<Result>();
  auto evs = std::make_shared<std::vector<emulator::TimelineEvent>>(std::move(events));
  if (!channel_.call([this, r, evs](transport::Nanos now) {
        r->base = now;
        r->base_monotonic = node_->origin() + now;
        emulator::Timeline t;
        for (const auto& e : *evs) t.set(now + e.at_ns, e.selector, e.patch, e.label);
        if (auto err = t.validate(node_->fabric().config())) {
          r->error = *err;
          return;
        }
        node_->load_timeline(std::move(t));
      }))
    return "fabric worker did not answer within 5 s";
  *base = r->base;
  if (base_monotonic) *base_monotonic = r->base_monotonic;
  return r->error;
}

bool FabricRuntime::attach_capture(std::shared_ptr<datapath::CaptureTap> tap) {
  return channel_.call([this, tap](transport::Nanos) {
    node_->set_capture(tap.get());
    capture_ = tap;
  });
}

bool FabricRuntime::snapshot(FabricSnapshot* out) {
  auto snap = std::make_shared<FabricSnapshot>();
  const bool ok = channel_.call([this, snap](transport::Nanos now) {
    auto& f = node_->fabric();
    snap->now = now;
    for (uint32_t p = 0; p < config_.planes; ++p)
      for (uint32_t a = 0; a < config_.hosts; ++a)
        for (uint32_t b = 0; b < config_.hosts; ++b) {
          if (a == b) continue;
          for (uint32_t k = 0; k < config_.ecmp_links; ++k) {
            emulator::Link& l = f.ecmp_link(p, a, b, k);
            FabricLinkSnapshot s;
            s.plane = p, s.ecmp = k, s.a = a, s.b = b;
            s.config = l.config();
            s.counters = l.counters();
            s.up = l.is_up(now);
            s.backlog_bytes = l.backlog_bytes(now);
            s.p50_ns = l.delay_histogram().percentile(0.5);
            s.p99_ns = l.delay_histogram().percentile(0.99);
            snap->links.push_back(s);
          }
        }
    snap->counters = f.counters();
    snap->worker = node_->stats();
    datapath::sample_schedule(snap->worker);
    for (const auto& port : ports_) snap->ports.emplace_back(port->name(), port->stats());
    snap->timeline_pending = static_cast<uint32_t>(node_->timeline_pending());
  });
  if (ok) *out = *snap;
  return ok;
}

}  // namespace metaroce::daemon
