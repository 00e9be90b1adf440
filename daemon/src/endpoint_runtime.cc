#include "endpoint_runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <random>

#include "fabric_runtime.h"
#include "metaroce/datapath/dpdk_device_name.h"
#include "metaroce/datapath/netns.h"
#include "metaroce/datapath/scheduling.h"
#include "metaroce/lab/config.h"
#include "metaroce/wire/rocev2.h"

namespace metaroce::daemon {

datapath::PortConfig make_port_config(const std::string& datapath, const std::string& ifname, const std::string& name,
                                      uint32_t frame_size, const std::string& xdp_mode, bool bridge,
                                      const std::vector<uint16_t>& udp_ports, const std::vector<std::string>& eal_args,
                                      uint32_t dpdk_index, const std::string& file_prefix,
                                      const std::string& dpdk_device) {
  datapath::PortConfig c;
  c.kind = datapath;
  c.name = name;
  c.ifname = ifname;
  c.frame_size = frame_size;
  if (datapath == "afxdp" || datapath == "udp") c.udp_ports = udp_ports;  // afxdp: redirected to us; udp: bound and read
  if (datapath == "afxdp") {
    c.xdp_mode = xdp_mode;
    c.bridge_mode = bridge;
  } else if (datapath == "dpdk") {
    // The EAL is set up once per process. The defaults suit veth lab hosts;
    // a PCI device needs the PCI bus and hugepages (its DMA memory), so it
    // gets neither --no-pci nor --no-huge.
    c.eal_args = eal_args;
    if (c.eal_args.empty() && datapath::is_dpdk_pci_address(dpdk_device))
      c.eal_args = {"--file-prefix=" + file_prefix, "--no-telemetry", "-l", "0", "--log-level=*:warning"};
    else if (c.eal_args.empty())
      c.eal_args = {"--no-huge", "-m", "512", "--no-shconf", "--file-prefix=" + file_prefix,
                    "--no-pci", "--no-telemetry", "-l", "0", "--log-level=*:warning"};
    c.dpdk_device = dpdk_device.empty() ? "net_af_packet" + std::to_string(dpdk_index) + ",iface=" + ifname : dpdk_device;
  }
  return c;
}

void close_ports_in(const std::string& netns, std::vector<std::unique_ptr<datapath::Port>>& ports) {
  std::optional<datapath::ScopedNetns> in;
  if (!netns.empty()) {
    try {
      in.emplace(netns);
    } catch (const std::exception&) {
      // The namespace was deleted: closing only frees our memory and sockets.
    }
  }
  ports.clear();
}

EndpointRuntime::EndpointRuntime(const EndpointSection& config) : config_(config) {}

std::unique_ptr<EndpointRuntime> EndpointRuntime::start(const EndpointSection& config, const std::string& daemon_name,
                                                        std::string* error, FabricRuntime* shared_fabric) {
  std::unique_ptr<EndpointRuntime> rt(new EndpointRuntime(config));
  transport::EndpointConfig ec;
  ec.ip = config.ip;
  ec.mac = config.mac;
  if (config.datapath == "udp") ec.mac = wire::MacAddr{0x02, 0x00, uint8_t(config.ip >> 24), uint8_t(config.ip >> 16),
                                                       uint8_t(config.ip >> 8), uint8_t(config.ip)};
  ec.metaroce_udp_port = config.udp_port;
  ec.inbound_capacity_bps = config.inbound_capacity_bps;
  // Memory keys with random bits from the OS: unguessable by a host that does not see them.
  std::random_device os_random;
  ec.key_seed = (static_cast<uint64_t>(os_random()) << 32) ^ os_random();
  if (auto e = transport::validate(ec); !e.empty()) {
    *error = "endpoint: " + e;
    return nullptr;
  }
  rt->config_.mac = ec.mac;
  rt->endpoint_ = std::make_unique<transport::Endpoint>(ec);
  std::vector<datapath::Port*> ports;
  std::optional<datapath::ScopedNetns> in;  // the ports bind to interfaces of this namespace
  try {
    if (!config.netns.empty()) in.emplace(config.netns);
  } catch (const std::exception& e) {
    *error = "endpoint.netns: " + std::string(e.what());
    return nullptr;
  }
  std::vector<std::string> dpdk_devices;  // env:NAME entries read now, where the pod's devices are known
  if (std::string e = resolve_dpdk_devices(config, [](const char* name) { return std::getenv(name); }, &dpdk_devices);
      !e.empty()) {
    *error = e;
    return nullptr;
  }
  for (size_t p = 0; p < config.interfaces.size(); ++p) {
    datapath::PortConfig pc = make_port_config(
        config.datapath, config.interfaces[p], "plane" + std::to_string(p), config.frame_size, config.xdp_mode, false,
        {config.udp_port, wire::rocev2::kUdpPort}, config.eal_args, static_cast<uint32_t>(p),
        "mrd-" + daemon_name + "-" + std::to_string(getpid()), p < dpdk_devices.size() ? dpdk_devices[p] : "");
    if (config.datapath == "udp") {
      pc.local_ip = lab::ip_to_string(config.ip);
      pc.local_port = config.udp_port;
    }
    std::string err;
    auto port = datapath::open_port(pc, &err);
    if (!port && config.datapath == "udp" && err.starts_with(datapath::kUdpPortsError)) {
      // Not a port the operator chose: the fixed RoCEv2 port on the endpoint's own address.
      *error = "endpoint.address: " + pc.local_ip + " cannot take RoCEv2's UDP port " +
               std::to_string(wire::rocev2::kUdpPort) + " (" + err.substr(datapath::kUdpPortsError.size()) +
               "); the udp datapath listens there besides endpoint.udp_port, so every endpoint on a host needs an "
               "address of its own (on lo any 127.x.y.z)";
      return nullptr;
    }
    if (!port) {
      *error = "endpoint.interfaces[" + std::to_string(p) + "] (" + config.interfaces[p] + "): " + err;
      return nullptr;
    }
    ports.push_back(port.get());
    rt->ports_.push_back(std::move(port));
  }
  datapath::IdlePolicy idle;
  idle.busy_poll = config.busy_poll;
  idle.realtime_share = config.realtime_share;
  rt->worker_ = std::make_unique<datapath::EndpointWorker>(*rt->endpoint_, ports, std::nullopt, idle,
                                                           config.port_rate_bps);
  rt->channel_.set_running(true);
  rt->shared_fabric_ = shared_fabric;
  EndpointRuntime* self = rt.get();
  rt->worker_->set_on_iteration([self](transport::Nanos now) { self->on_iteration(now); });
  rt->thread_ = std::thread([self] {
    // Named for top -H and for the tests that count the daemon's busy threads.
    pthread_setname_np(pthread_self(), self->shared_fabric_ ? "mr-endpt+fabric" : "mr-endpoint");
    // The fabric node first: each iteration forwards what is due (ACKs
    // among it) before the endpoint reads its rx rings and services its
    // timers, so a worker that was descheduled does not declare a timeout
    // for an ACK waiting in its own fabric node.
    std::vector<datapath::PolledLoop*> loops;
    if (self->shared_fabric_) loops.push_back(&self->shared_fabric_->loop());
    loops.push_back(self->worker_.get());
    datapath::run_loops(loops, self->stop_, self->worker_->idle());
  });
  if (config.worker_cpu >= 0)
    if (std::string e = datapath::pin_thread(rt->thread_.native_handle(), config.worker_cpu); !e.empty()) {
      *error = "endpoint.worker_cpu: " + e;
      return nullptr;
    }
  return rt;
}

EndpointRuntime::~EndpointRuntime() {
  stop();
  close_ports_in(config_.netns, ports_);  // a start that failed half-way
}

void EndpointRuntime::stop() {
  if (!thread_.joinable()) return;
  channel_.set_running(false);
  if (shared_fabric_) shared_fabric_->channel().set_running(false);  // its loop stops with this thread
  stop_ = true;
  thread_.join();
  channel_.drain(datapath::monotonic_ns());  // commands queued before set_running(false)
  drivers_.clear();
  responders_.clear();
  worker_.reset();
  close_ports_in(config_.netns, ports_);  // closes AF_XDP sockets and detaches our XDP programs
}

void EndpointRuntime::remove_driver(TrafficDriver* d) {
  drivers_.erase(std::remove(drivers_.begin(), drivers_.end(), d), drivers_.end());
}

void EndpointRuntime::on_iteration(transport::Nanos now) {
  // Completions before commands: a command that reads what the completions
  // count (Peer.Verify) must see every completion the engine has made, e.g. a
  // WRITE_IMM whose watermark ACK already left (found by the conformance suite).
  // A command that creates a connection and its responder runs before any
  // completion of that connection can exist.
  size_t n;
  while ((n = endpoint_->poll_completions(completions_)) > 0) {
    for (size_t i = 0; i < n; ++i) {
      const transport::Completion& c = completions_[i];
      if (c.verb == transport::Verb::kRecv) {
        if (auto it = responders_.find(c.conn); it != responders_.end()) it->second->on_completion(c, now);
        continue;
      }
      for (TrafficDriver* d : drivers_)
        if (d->owns(c.conn)) {
          d->on_completion(c, now);
          break;
        }
    }
  }
  channel_.drain(now);
  for (TrafficDriver* d : drivers_) d->pump(now);
}

bool EndpointRuntime::snapshot_ports(std::vector<PortSnapshot>* out) {
  // Shared with the command: if the call times out, the worker may still run it later.
  auto snap = std::make_shared<std::vector<PortSnapshot>>(ports_.size());
  const bool ok = channel_.call([this, snap](transport::Nanos) {
    for (size_t p = 0; p < ports_.size(); ++p) {
      (*snap)[p].name = ports_[p]->name();
      (*snap)[p].kind = ports_[p]->kind();
      (*snap)[p].interface = config_.interfaces[p];
      (*snap)[p].plane = static_cast<uint32_t>(p);
      (*snap)[p].stats = ports_[p]->stats();
      (*snap)[p].udp = datapath::udp_port_info(*ports_[p]);
    }
  });
  if (ok) *out = *snap;
  return ok;
}

bool EndpointRuntime::attach_capture(std::shared_ptr<datapath::CaptureTap> tap) {
  return channel_.call([this, tap](transport::Nanos) {
    worker_->set_capture(tap.get());
    capture_ = tap;
  });
}

bool EndpointRuntime::snapshot_counters(transport::EndpointCounters* ep, datapath::WorkerStats* worker) {
  auto snap = std::make_shared<std::pair<transport::EndpointCounters, datapath::WorkerStats>>();
  const bool ok = channel_.call([this, snap](transport::Nanos) {
    snap->first = endpoint_->counters();
    snap->second = worker_->stats();
    datapath::sample_schedule(snap->second);
  });
  if (ok) std::tie(*ep, *worker) = *snap;
  return ok;
}

}  // namespace metaroce::daemon
