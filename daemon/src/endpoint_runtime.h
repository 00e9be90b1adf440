// The endpoint role: one transport::Endpoint on this host's ports, driven by
// one EndpointWorker thread. Everything the worker owns is changed through
// WorkerChannel commands; traffic drivers and responders registered here are
// pumped by the worker every iteration.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "metaroce/daemon/config.h"
#include "metaroce/daemon/traffic.h"
#include "metaroce/datapath/memory_port.h"
#include "metaroce/datapath/port.h"
#include "metaroce/datapath/worker.h"
#include "metaroce/transport/endpoint.h"
#include "worker_channel.h"

namespace metaroce::daemon {

class FabricRuntime;

struct PortSnapshot {
  std::string name, kind, interface;
  uint32_t plane = 0;
  datapath::PortStats stats;
  std::optional<datapath::UdpPortInfo> udp;  // the udp datapath's own counters
};

class EndpointRuntime {
 public:
  // Opens the ports and starts the worker; nullptr and *error on failure.
  // With shared_fabric (a fabric role started without its own thread), the
  // worker thread runs the fabric node too (datapath::run_loops).
  static std::unique_ptr<EndpointRuntime> start(const EndpointSection& config, const std::string& daemon_name,
                                                std::string* error, FabricRuntime* shared_fabric = nullptr);
  ~EndpointRuntime();  // stops the worker, closes the ports (detaching XDP programs)

  const EndpointSection& config() const { return config_; }
  uint32_t planes() const { return static_cast<uint32_t>(config_.interfaces.size()); }
  WorkerChannel& channel() { return channel_; }

  // Worker-side registries (call only inside channel commands).
  void add_driver(TrafficDriver* d) { drivers_.push_back(d); }
  void remove_driver(TrafficDriver* d);
  void add_responder(Responder* r) { responders_[r->conn()] = r; }
  void remove_responder(uint32_t conn) { responders_.erase(conn); }
  transport::Endpoint& endpoint() { return *endpoint_; }  // worker side only

  // Snapshots taken on the worker (control side; false if the worker is stuck).
  bool snapshot_ports(std::vector<PortSnapshot>* out);
  bool snapshot_counters(transport::EndpointCounters* ep, datapath::WorkerStats* worker);
  // Installs a capture tap on the worker (nullptr removes it); false if the
  // worker did not answer. The runtime keeps a reference until the tap is
  // removed, so a worker that answers late never sees a freed tap.
  bool attach_capture(std::shared_ptr<datapath::CaptureTap> tap);
  void stop();

 private:
  explicit EndpointRuntime(const EndpointSection& config);
  void on_iteration(transport::Nanos now);

  EndpointSection config_;
  std::unique_ptr<transport::Endpoint> endpoint_;
  std::vector<std::unique_ptr<datapath::Port>> ports_;
  std::unique_ptr<datapath::EndpointWorker> worker_;
  WorkerChannel channel_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  FabricRuntime* shared_fabric_ = nullptr;  // runs on thread_ too
  // Worker thread only.
  std::vector<TrafficDriver*> drivers_;
  std::unordered_map<uint32_t, Responder*> responders_;
  std::shared_ptr<datapath::CaptureTap> capture_;
  std::array<transport::Completion, 64> completions_{};
};

// Port configuration for a datapath kind and interface (shared with the fabric
// role). dpdk_device: the interface's DPDK device (endpoint.dpdk_devices), ""
// for net_af_packet on ifname.
datapath::PortConfig make_port_config(const std::string& datapath, const std::string& ifname, const std::string& name,
                                      uint32_t frame_size, const std::string& xdp_mode, bool bridge,
                                      const std::vector<uint16_t>& udp_ports, const std::vector<std::string>& eal_args,
                                      uint32_t dpdk_index, const std::string& file_prefix,
                                      const std::string& dpdk_device = "");

// Closes ports inside the namespace they were opened in ("" = the daemon's
// own): an XDP program is detached by interface index, which in another
// namespace names another interface. A namespace already gone took its
// interfaces (and their programs) with it.
void close_ports_in(const std::string& netns, std::vector<std::unique_ptr<datapath::Port>>& ports);

}  // namespace metaroce::daemon
